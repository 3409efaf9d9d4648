"""Transports: bytes out, bytes in. The interface and its declared abilities (``base``), the aiohttp
transport (``default``), the fast path that writes requests on aiohttp's connections itself
(``direct``), and the public mock transport for tests (``mock``)."""
