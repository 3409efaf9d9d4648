"""One HTTP/1.1 exchange written on a connection of aiohttp's connector and read by aiohttp's own
answer parser, without the request and response objects around them.

``ClientSession.request`` builds a ``ClientRequest`` (the URL, a ``CIMultiDict`` of headers, a
payload object for the body, and on Python 3.11 a task that writes it) and a ``ClientResponse``
for every request: about a fifth of a signed call's CPU (benchmarks/RESULTS.md). Here the
request's head and body leave in one write, serialized by aiohttp's own header writer (which
refuses a control character in a header as aiohttp does), and the answer is aiohttp's parsed
message and body stream. What stays aiohttp's: the connection pool, DNS, TLS and its
verification, the connection limit, the HTTP parser (sizes, decompression, a body that ends
with the connection's close) and the deadline's timer.

A session the client makes takes this path; it has no cookie jar worth keeping, no redirects,
proxies, traces, middlewares or default headers. Any other session, a transport made with
``direct=False`` (for a test that mocks aiohttp's session), or an aiohttp whose parts differ, goes
through ``ClientSession.request`` (see ``AiohttpTransport``).

The parts used here are aiohttp's private ones, so the path proves itself instead of trusting
their names: a session's first exchange first reads an answer offline with them (the parts that
run after the request is written, where nothing could be taken back), and every exchange runs
the parts before the write under a guard. Any failure of theirs raises `NotReady` before a
byte of the request was written, and the transport then sends that request, and every later one
of the session, through ``ClientSession.request``.
"""

from __future__ import annotations

import asyncio
import inspect
import math
from collections.abc import Mapping
from typing import Any

import aiohttp
from aiohttp import http_writer
from aiohttp.client_proto import ResponseHandler
from aiohttp.client_reqrep import ClientRequest
from aiohttp.connector import Connection
from aiohttp.helpers import BaseTimerContext, TimeoutHandle
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.streams import StreamReader
from multidict import CIMultiDict
from yarl import URL

__all__ = [
    "DIRECT", "DirectExchange", "MalformedAnswer", "NotReady", "Unsendable", "bodyless",
    "read_body",
]

_CHUNK = 64 * 1024
_CONTENT_LENGTH = aiohttp.hdrs.CONTENT_LENGTH
_CONTENT_ENCODING = aiohttp.hdrs.CONTENT_ENCODING
_CONTENT_TYPE = aiohttp.hdrs.CONTENT_TYPE
#: What a request of these methods without a body says of its length, as aiohttp says it.
_NO_BODY_METHODS = frozenset(ClientRequest.GET_METHODS)
#: Statuses whose answers have no body, whatever their headers say.
_BODYLESS_STATUSES = frozenset({204, 304})
#: Methods whose requests aiohttp gives a Content-Type, with or without a body.
_POST_METHODS = frozenset(ClientRequest.POST_METHODS)
#: Headers that depend on the request's body, never taken from the template request.
_BODY_HEADERS = frozenset(
    {_CONTENT_LENGTH.lower(), _CONTENT_TYPE.lower(), aiohttp.hdrs.TRANSFER_ENCODING.lower()}
)


def _takes(function: Any, names: set[str]) -> bool:
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):  # pragma: no cover - aiohttp's functions have signatures
        return False
    return names <= parameters.keys()


#: The session's settings of an answer's reading, by ``set_response_params``' names; all
#: but ``max_headers`` (aiohttp 3.13) are needed.
_SESSION_SETTINGS = {
    "read_bufsize": "_read_bufsize",
    "auto_decompress": "_auto_decompress",
    "max_line_size": "_max_line_size",
    "max_field_size": "_max_field_size",
    "max_headers": "_max_headers",
}
#: Those this aiohttp's ``set_response_params`` takes (a name it does not take is not passed;
#: one it takes that the session lacks fails the session's proof).
_ANSWER_SETTINGS = {
    name: attribute for name, attribute in _SESSION_SETTINGS.items()
    if _takes(ResponseHandler.set_response_params, {name})
}
#: A request's method, and its URL's scheme and authority.
_Origin = tuple[str, str, str | None]
_serialize_headers = getattr(http_writer, "_serialize_headers", None)
#: This aiohttp has the parts an exchange is made of here. Whether they work as this module
#: uses them is proven on a session's first exchange (see `NotReady`), not here.
DIRECT = _serialize_headers is not None and all(
    hasattr(aiohttp, name) for name in ("ClientConnectionResetError", "ConnectionTimeoutError")
)
#: The answer a session's first exchange reads offline, with the parts that read real ones.
_REHEARSED_ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Rehearsal: 1\r\n\r\nok"
#: What the connector raises of a connection it could not make, as ``ClientSession.request``
#: meets it; anything else it raises is one of aiohttp's parts failing this path.
_CONNECT_FAILURES = (aiohttp.ClientError, OSError, TimeoutError, RuntimeError)


class NotReady(Exception):
    """One of aiohttp's private parts failed this path (a changed signature, a missing or
    renamed attribute...) before a byte of the request was written: the request can go through
    ``ClientSession.request`` as if this path had never been tried. ``part`` names the part;
    ``failure`` is the name of the exception's type (its text is not kept: it may quote a
    signed header)."""

    def __init__(self, part: str, failure: BaseException) -> None:
        super().__init__(f"{part}: {type(failure).__name__}")
        self.part = part
        self.failure = type(failure).__name__


class _ExchangeFailure(Exception):
    """An exchange that failed for a ``reason`` the transport words into its error."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class MalformedAnswer(_ExchangeFailure):
    """aiohttp's parser could not read the answer's status line or headers; ``reason`` is its
    reason without the bytes it quotes."""


class Unsendable(_ExchangeFailure):
    """The request cannot be written as HTTP (a control character in a header or the method,
    a URL without a host): refused before it had a connection, so nothing of it was sent."""


async def read_body(
    content: StreamReader, answer: Mapping[str, str], empty: bool, limit: int
) -> bytes | None:
    """An answer's body from aiohttp's stream, or None (not read further) when it is larger
    than ``limit``. An ``empty`` answer (see `bodyless`) has none, whatever its
    Content-Length says."""
    if empty:
        return await content.read()
    declared = answer.get(_CONTENT_LENGTH)
    if declared is not None and answer.get(_CONTENT_ENCODING) is None:
        # The usual answer declares its length and is not compressed: read at once.
        return await content.read() if int(declared) <= limit else None
    return await _read_chunks(content, limit)


def bodyless(method: str, status: int) -> bool:
    """The answer has no body, as HTTP says and aiohttp's parser reads it."""
    return method == "HEAD" or status in _BODYLESS_STATUSES


async def _read_chunks(content: StreamReader, limit: int) -> bytes | None:
    """The whole body of an answer of unknown length (chunked, or compressed: the limit is on
    the decoded bytes), or None once it exceeds ``limit``."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in content.iter_chunked(_CHUNK):
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


class DirectExchange:
    """Exchanges of one session made by the transport, or None from `for_session` when
    this aiohttp or this session cannot take this path."""

    __slots__ = ("_origins", "_settings", "max_answer_bytes")

    def __init__(self, max_answer_bytes: int) -> None:
        # How the session reads an answer (``set_response_params``' keywords), once its first
        # exchange has proven the parts (None until then).
        self._settings: dict[str, Any] | None = None
        self.max_answer_bytes = max_answer_bytes
        # Per method and origin: a request aiohttp built for it (what the connector reads: the
        # connection's key, TLS, the host) and the headers aiohttp gives such a request.
        self._origins: dict[_Origin, tuple[ClientRequest, CIMultiDict[str]]] = {}

    @classmethod
    def for_session(
        cls, session: aiohttp.ClientSession, max_answer_bytes: int
    ) -> DirectExchange | None:
        """The exchanges of ``session``, or None when this aiohttp lacks the parts."""
        if not DIRECT or session.connector is None:
            return None
        return cls(max_answer_bytes)

    def _prove(self, session: aiohttp.ClientSession) -> dict[str, Any]:
        """The session's settings of an answer's reading, once an answer was read offline with
        them as a real one is read: the parts that run after a request is written are proven
        before any is. Raises `NotReady`."""
        try:
            settings = {name: getattr(session, attribute)
                        for name, attribute in _ANSWER_SETTINGS.items()}
            connector: Any = session.connector
            settings["timeout_ceil_threshold"] = connector._timeout_ceil_threshold
            loop = session._loop
        except Exception as exc:
            raise NotReady("the session's settings", exc) from None
        # Run to its end without the event loop: the answer is all there, so nothing in it may
        # wait (a part that does would hold the request past its budget's deadline).
        rehearsal = _read_offline(loop, settings, self.max_answer_bytes)
        try:
            rehearsal.send(None)
        except StopIteration:
            pass
        except Exception as exc:
            raise NotReady("the reading of an answer", exc) from None
        else:
            rehearsal.close()
            raise NotReady("the reading of an answer", RuntimeError("waited for more"))
        self._settings = settings
        return settings

    def _origin(
        self, session: aiohttp.ClientSession, method: str, url: URL
    ) -> tuple[ClientRequest, CIMultiDict[str]]:
        key = (method, url.scheme, url.raw_authority)
        found = self._origins.get(key)
        if found is None:
            if len(self._origins) >= 64:
                self._origins.clear()
            # aiohttp's own request for the origin: it checks the method and the URL, and
            # gives the Host, Accept, Accept-Encoding, User-Agent (and Authorization, for a URL
            # with credentials) that aiohttp sends.
            try:
                template = ClientRequest(
                    method, url.with_path("/").with_query(None).with_fragment(None),
                    loop=session._loop, session=session, ssl=True, traces=[],
                )
            except (ValueError, aiohttp.InvalidURL) as exc:
                raise Unsendable(
                    f"aiohttp refuses its method or URL ({type(exc).__name__})"
                ) from None
            headers: CIMultiDict[str] = CIMultiDict(
                (name, value) for name, value in template.headers.items()
                if name.lower() not in _BODY_HEADERS
            )
            connector = session.connector
            if connector is not None and connector.force_close:
                headers[aiohttp.hdrs.CONNECTION] = "close"
            found = self._origins[key] = (template, headers)
        return found

    def _request_bytes(
        self, method: str, url: URL, base: CIMultiDict[str],
        headers: Mapping[str, str] | None, body: bytes | None,
    ) -> bytes:
        """The request's head and body, as aiohttp writes them for this session."""
        all_headers = base.copy()
        if headers:
            for name, value in headers.items():
                # One header of a name, whatever its case: the last given, as aiohttp sends.
                all_headers[name] = value
        if body is not None:
            all_headers[_CONTENT_LENGTH] = str(len(body))
        elif method not in _NO_BODY_METHODS:
            all_headers[_CONTENT_LENGTH] = "0"
        if (body is not None or method in _POST_METHODS) and _CONTENT_TYPE not in all_headers:
            all_headers[_CONTENT_TYPE] = "application/octet-stream"
        assert _serialize_headers is not None
        try:
            head: bytes = _serialize_headers(
                f"{method} {url.raw_path_qs} HTTP/1.1", all_headers
            )
        except ValueError:
            # aiohttp's writer refuses what could end a header early (CR, LF, other controls).
            raise Unsendable(
                "a header or the request line holds a control character"
            ) from None
        return head + body if body else head

    def _prepare(
        self, session: aiohttp.ClientSession, method: str, url: URL,
        headers: Mapping[str, str] | None, body: bytes | None, total: float | None,
    ) -> tuple[ClientRequest, bytes, TimeoutHandle, asyncio.Handle | None, BaseTimerContext]:
        """The request aiohttp would connect for, the bytes to write and the running deadline.
        Raises `Unsendable`, or `NotReady` when one of aiohttp's parts fails."""
        handle: asyncio.Handle | None = None
        try:
            template, base = self._origin(session, method, url)
            method = template.method  # upper case, as aiohttp sends it
            request = self._request_bytes(method, url, base, headers, body)
            # The whole exchange under one deadline, as aiohttp runs it: the timer cancels the
            # exchange at the deadline and turns the cancellation into TimeoutError.
            deadline = TimeoutHandle(session._loop, total, ceil_threshold=math.inf)
            handle = deadline.start()
            timer = deadline.timer()
        except Unsendable:
            raise
        except Exception as exc:
            if handle is not None:
                handle.cancel()  # or the deadline would cancel the task later
            raise NotReady("the making of the request", exc) from None
        return template, request, deadline, handle, timer

    def _writable(
        self, connection: Connection, method: str, timer: BaseTimerContext,
        timeout: aiohttp.ClientTimeout, settings: dict[str, Any],
    ) -> tuple[ResponseHandler, asyncio.Transport]:
        """The connection's protocol, set to read the answer, and its transport. Raises
        `NotReady` when one of aiohttp's parts fails (the connection closed, nothing
        written on it)."""
        try:
            protocol = connection.protocol
            assert protocol is not None
            # As ClientSession.request reads: an answer of neither declared length nor chunks
            # ends when the server closes the connection (HTTP/1.0, or ``Connection: close``).
            protocol.set_response_params(
                timer=timer, skip_payload=method == "HEAD", read_until_eof=True,
                read_timeout=timeout.sock_read, **settings,
            )
            transport: Any = protocol.transport
            closing = transport is None or transport.is_closing()
        except Exception as exc:
            connection.close()
            raise NotReady("the connection's protocol", exc) from None
        if closing:
            connection.close()
            # As aiohttp's writer says it of a connection closed in the pool.
            raise aiohttp.ClientConnectionResetError("Cannot write to closing transport")
        return protocol, transport

    async def __call__(
        self,
        session: aiohttp.ClientSession,
        method: str,
        url: URL,
        headers: Mapping[str, str] | None,
        body: bytes | None,
        timeout: aiohttp.ClientTimeout,
    ) -> tuple[int, Mapping[str, str], bytes | None]:
        """The status, the headers and the body, or None for the body when it is larger than
        ``max_answer_bytes`` (not read further: the connection is closed). Raises
        `NotReady` when one of aiohttp's parts fails before the request is written."""
        if session.closed:
            raise RuntimeError("Session is closed")  # as aiohttp's own path says it
        settings = self._settings
        if settings is None:
            settings = self._prove(session)
        connector = session.connector
        assert connector is not None
        template, request, deadline, handle, timer = self._prepare(
            session, method, url, headers, body, timeout.total
        )
        method = template.method
        try:
            with timer:
                try:
                    connection = await connector.connect(template, [], timeout)
                except TimeoutError as exc:
                    # The connector's own connect timeout (not the deadline's: that one is a
                    # cancellation until the timer ends).
                    raise aiohttp.ConnectionTimeoutError(f"connection timeout to {url}") from exc
                except _CONNECT_FAILURES:
                    raise
                except Exception as exc:
                    # Not a connection that failed: the connector refused what it was given.
                    raise NotReady("the connector", exc) from None
                protocol, transport = self._writable(connection, method, timer, timeout, settings)
                try:
                    # From here on, the request may have left: no failure is NotReady.
                    transport.write(request)
                    # The answer's read timeout (sock_read) runs from here, as in aiohttp.
                    protocol.start_timeout()
                    while True:
                        try:
                            message, content = await protocol.read()
                        except HttpProcessingError as exc:
                            raise MalformedAnswer(str(exc.message)) from None
                        status = message.code
                        # An interim answer (100 Continue, 103 Early Hints) is skipped.
                        if status < 100 or status > 199 or status == 101:
                            break
                    answer = message.headers
                    payload = await read_body(
                        content, answer, bodyless(method, status), self.max_answer_bytes
                    )
                except BaseException:
                    connection.close()
                    raise
                if payload is None:
                    connection.close()
                else:
                    # Back to the pool unless the answer or the server says it must close.
                    connection.release()
                return status, answer, payload
        finally:
            if handle is not None:
                handle.cancel()
            deadline.close()


async def _read_offline(
    loop: asyncio.AbstractEventLoop, settings: dict[str, Any], limit: int
) -> None:
    """Reads a whole answer with the parts, and in the order, that an exchange reads one with
    (without a connection: the protocol is fed the bytes). Raises when one of them fails or
    misreads it."""
    protocol = ResponseHandler(loop)
    deadline = TimeoutHandle(loop, 60.0, ceil_threshold=math.inf)
    handle = deadline.start()
    try:
        with deadline.timer() as timer:
            protocol.set_response_params(
                timer=timer, skip_payload=False, read_until_eof=True, read_timeout=None,
                **settings,
            )
            protocol.data_received(_REHEARSED_ANSWER)
            protocol.start_timeout()
            message, content = await protocol.read()
            status, answer = message.code, message.headers
            body = await read_body(content, answer, bodyless("GET", status), limit)
    finally:
        protocol.connection_lost(None)
        if handle is not None:
            handle.cancel()
        deadline.close()
    if (status, answer.get("X-Rehearsal"), body) != (200, "1", b"ok"):
        raise ValueError("the answer was misread")
