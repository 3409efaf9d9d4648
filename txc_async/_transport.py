"""The transport: sends bytes and returns the status, headers and body bytes. Nothing else."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import NamedTuple, Protocol

import aiohttp
from yarl import URL

from ._errors import RequestTimeout, TransportError

__all__ = ["AiohttpTransport", "RawResponse", "Transport"]


class RawResponse(NamedTuple):
    """What came back: the HTTP status, the headers and the undecoded body."""

    status: int
    headers: Mapping[str, str]
    body: bytes


class Transport(Protocol):
    """Sends one HTTP request. Raises only :class:`TransportError` (or :class:`RequestTimeout`)."""

    async def send(
        self,
        method: str,
        url: URL,
        *,
        headers: Mapping[str, str] | None,
        body: bytes | None,
        timeout: float,
    ) -> RawResponse: ...

    async def aclose(self) -> None: ...


class AiohttpTransport:
    """A transport over one :class:`aiohttp.ClientSession`, kept for the client's life.

    The session is created on first use (inside the running loop) unless one is injected; an
    injected session belongs to the caller and is not closed here.
    """

    def __init__(
        self,
        session: aiohttp.ClientSession | None = None,
        *,
        verify_tls: bool = True,
        max_connections: int = 100,
    ) -> None:
        self._session = session
        self._max_connections = max_connections
        self._owns_session = session is None
        self._verify_tls = verify_tls
        self._closed = False

    def _get_session(self) -> aiohttp.ClientSession:
        if self._closed:
            raise TransportError("the client is closed", may_have_reached_server=False)
        session = self._session
        if session is None:
            # A request admitted by its budget may wait here for a connection; the timeout
            # covers that wait, so it still arrives before the deadline its budget counts.
            connector = aiohttp.TCPConnector(limit=self._max_connections, ssl=self._verify_tls)
            session = aiohttp.ClientSession(connector=connector)
            self._session = session
        elif session.closed:
            raise TransportError("the HTTP session is closed", may_have_reached_server=False)
        return session

    async def send(
        self,
        method: str,
        url: URL,
        *,
        headers: Mapping[str, str] | None,
        body: bytes | None,
        timeout: float,
    ) -> RawResponse:
        session = self._get_session()
        client_timeout = aiohttp.ClientTimeout(total=timeout)
        try:
            async with session.request(
                method, url, headers=headers, data=body, timeout=client_timeout,
                allow_redirects=False,
            ) as response:
                payload = await response.read()
                return RawResponse(response.status, response.headers, payload)
        except TimeoutError:
            raise RequestTimeout(
                f"no answer within {timeout:g} s", may_have_reached_server=True
            ) from None
        except aiohttp.ClientConnectorError as exc:
            raise TransportError(
                f"could not connect to {url.host}: {type(exc).__name__}",
                may_have_reached_server=False,
            ) from None
        except (aiohttp.ClientError, OSError) as exc:
            if self._closed:
                raise TransportError(
                    "the client was closed while the request was in flight"
                ) from None
            raise TransportError(f"connection failed: {type(exc).__name__}") from None

    async def aclose(self) -> None:
        self._closed = True
        session = self._session
        if session is not None and self._owns_session and not session.closed:
            await session.close()
            # Let the connector finish closing its transports (aiohttp's documented idiom).
            await asyncio.sleep(0)
