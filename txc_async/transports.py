"""The transport seam: the interface a transport implements
([`Transport`][txc_async.transports.Transport], with the optional abilities of
[`BaseTransport`][txc_async.transports.BaseTransport] to derive from), what it returns, the
client's default transport on aiohttp, and the mock transport for tests.

Importing this module imports aiohttp (``import txc_async`` alone does not)."""

from __future__ import annotations

from ._transports.base import BaseTransport, ConnectionSlots, RawResponse, Transport
from ._transports.default import AiohttpTransport
from ._transports.mock import MockRequest, MockTransport

__all__ = [
    "AiohttpTransport",
    "BaseTransport",
    "ConnectionSlots",
    "MockRequest",
    "MockTransport",
    "RawResponse",
    "Transport",
]
