"""Transports: bytes out, bytes in. The interface and the aiohttp transport (``default``), and the
fast path that writes requests on aiohttp's connections itself (``direct``)."""
