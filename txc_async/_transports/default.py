"""The transport: sends bytes and returns the status, headers and body bytes. Nothing else."""

from __future__ import annotations

import asyncio
import errno
import functools
import logging
import math
import select
import ssl
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

import aiohttp
from aiohttp.client_reqrep import ClientRequest
from aiohttp.connector import Connection
from aiohttp.tracing import Trace
from yarl import URL

from .._errors import InvalidParameterError, RequestTimeout, TransportError, client_closed
from .._validate import check_bool
from .base import BaseTransport, ConnectionSlots, RawResponse
from .direct import (
    DirectExchange,
    MalformedAnswer,
    NotReady,
    Unsendable,
    bodyless,
    read_body,
)

__all__ = ["DEFAULT_MAX_ANSWER_BYTES", "AiohttpTransport", "map_aiohttp_error"]

#: Answers larger than this are refused: far above the largest page of any operation (a
#: 100-record investments page is about 40 KB), far below what would strain memory.
DEFAULT_MAX_ANSWER_BYTES = 8 * 1024 * 1024


#: Builds a RawResponse from a tuple, without the generated ``__new__`` (a Python function).
_raw_response = functools.partial(tuple.__new__, RawResponse)

#: How far a request got with its connection: not to the connector yet (``_UNKNOWN``: nothing
#: can be said of it), waiting for one (``_CONNECTING``: not a byte of it has left this
#: machine), or given one (``_CONNECTED``).
_UNKNOWN, _CONNECTING, _CONNECTED = 0, 1, 2
#: The request the current task is sending, as ``[task, stage]``: the transport sets it, the
#: connector (which aiohttp calls in the same task) moves its stage on. Tasks may share one
#: context (``create_task(..., context=...)``): a record is only ever read or moved on by the
#: task it names, so another task's request is never taken for this one's.
_request_record: ContextVar[list[Any]] = ContextVar("txc_async_request_record")
_current_task = asyncio.current_task
_CLOSED_IN_FLIGHT = "the client was closed while the request was in flight"
logger = logging.getLogger("txc_async")


def _own_record() -> list[Any] | None:
    """The record of the request the current task is sending, if it has one (never another
    task's, in a context the tasks share)."""
    record = _request_record.get(None)
    return record if record is not None and record[0] is _current_task() else None


class _Connector(aiohttp.TCPConnector):
    """aiohttp's TCP connector, marking the moment a request has its connection.

    A timeout (or a cancellation) that ends a request before then is one that was certainly not
    sent: aiohttp reports both the same way, and only its own connect timeout, which a deadline
    on the whole exchange never reaches, as a connection timeout. It also refuses a second
    connection for one request, with which aiohttp would send a GET again out of the budget's
    sight.
    """

    async def connect(
        self, req: ClientRequest, traces: list[Trace], timeout: aiohttp.ClientTimeout
    ) -> Connection:
        record = _own_record()
        if record is not None:
            if record[1] == _CONNECTED:
                # A second connection for the same request: aiohttp sends a GET again by itself
                # when its connection closed or was reset before the answer. The first may
                # have reached the server, and the budget counts it once: the request ends
                # here, as the first ended, and only the client sends it again.
                raise aiohttp.ServerDisconnectedError()
            record[1] = _CONNECTING
        connection = await super().connect(req, traces, timeout)
        # A connection from the pool that its server has closed since its last answer (a
        # keep-alive that ended as it answered, the event loop not yet told): nothing of this
        # request was written on it, so it is closed and another taken, instead of a request
        # written into it and reported as maybe sent. A close that comes later than this look
        # cannot be told from one that came after the request (no HTTP client can).
        for _ in range(_DEAD_CONNECTIONS_SKIPPED):
            if not _peer_closed(connection):
                break
            connection.close()
            connection = await super().connect(req, traces, timeout)
        # Nothing runs between the return and this line: no cancellation can fall between.
        if record is not None:
            record[1] = _CONNECTED
        return connection


#: How many closed connections from the pool one request passes over before it takes the next
#: as it comes (each one passed over is closed, so the pool empties of them).
_DEAD_CONNECTIONS_SKIPPED = 8
_HAS_POLL = hasattr(select, "poll")
#: The peer closed its side (Linux says so apart from readable bytes: POLLRDHUP); elsewhere any
#: readable event on an idle connection means it cannot carry a request.
_POLL_RDHUP = getattr(select, "POLLRDHUP", 0)
_POLL_ASK = (_POLL_RDHUP or select.POLLIN) if _HAS_POLL else 0
_POLL_CLOSED = (_POLL_ASK | select.POLLHUP | select.POLLERR) if _HAS_POLL else 0


def _peer_closed(connection: Connection) -> bool:
    """The connection's peer has closed it, or it is closing (False when it cannot be told)."""
    transport = connection.transport
    if transport is None or transport.is_closing():
        return True
    sock = transport.get_extra_info("socket")
    fileno = getattr(sock, "fileno", None)
    if fileno is None:
        return False
    try:
        fd = fileno()
        if fd < 0:
            return True
        if _HAS_POLL:
            poller = select.poll()
            poller.register(fd, _POLL_ASK)
            return any(events & _POLL_CLOSED for _, events in poller.poll(0))
        readable, _, _ = select.select([fd], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


class AiohttpTransport(BaseTransport):
    """The client's default transport: one `aiohttp.ClientSession`, kept for the client's life.

    The session is made on first use (inside the running loop) unless ``session`` gives one;
    a session given belongs to the caller and is not closed here, and its requests go through
    ``ClientSession.request`` so that its cookie jar, trace configs, middlewares, default headers
    and proxy apply. ``verify_tls`` (True, False or an ``ssl.SSLContext``) and
    ``max_connections`` set up the session made here.

    ``direct``: the requests of the session made here are written on aiohttp's connections and
    read by its parser, without the request and response objects of ``ClientSession.request``
    (about a fifth of a call's CPU, as the documentation's page on the transport tells). That path
    uses aiohttp's private parts, so it is taken only once they have proven themselves on the
    session's first request; when they do not, the session's requests go through
    ``ClientSession.request`` as they would otherwise. ``direct=False`` sends every request
    through ``ClientSession.request``. A test that replaces part of aiohttp's session (as
    ``aioresponses`` does) needs it, since the direct path does not go through the part it
    replaces: ``Client(..., transport=AiohttpTransport(direct=False))``.

    An answer larger than ``max_answer_bytes`` is not read further: the connection is closed and
    the request fails with [`TransportError`][txc_async.TransportError]. Every error is raised
    outside the ``except`` clause that caught aiohttp's: aiohttp's exceptions carry the
    request's headers (key, payload, signature), and none of them may be reachable from what
    the caller gets.
    """

    def __init__(
        self,
        session: aiohttp.ClientSession | None = None,
        *,
        direct: bool = True,
        verify_tls: bool | ssl.SSLContext = True,
        max_connections: int = 100,
        max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES,
    ) -> None:
        if (
            isinstance(max_answer_bytes, bool)
            or not isinstance(max_answer_bytes, int)
            or max_answer_bytes < 1024
        ):
            raise InvalidParameterError("max_answer_bytes", "must be an integer of at least 1024")
        check_bool("direct", direct)
        self.max_answer_bytes = max_answer_bytes
        self._session = session
        self._max_connections = max_connections
        # As many as the connector opens connections: its own limit for an injected session
        # (none when it has none).
        if session is None:
            limit = max_connections
        else:
            connector = session.connector
            limit = connector.limit if connector is not None else 0
        #: The connection slots requests take before they go to aiohttp (None: unlimited).
        self.slots = ConnectionSlots(limit) if limit else None
        self._timeouts: dict[float, aiohttp.ClientTimeout] = {}
        # Only a session made here has the connector that says when a request has its
        # connection (see _Connector): an injected one's does not.
        self._owns_session = session is None
        self._verify_tls = verify_tls
        self._closed = False
        self._wants_direct = direct
        # The exchanges of the session made here, written on its connections (None: that path
        # is not taken; see direct.py).
        self._direct_exchange: DirectExchange | None = None

    def _get_session(self) -> aiohttp.ClientSession:
        if self._closed:
            raise client_closed()
        session = self._session
        if session is None:
            # A request admitted by its budget may wait here for a connection; the timeout
            # covers that wait, so it still arrives before the deadline its budget counts.
            connector = _Connector(limit=self._max_connections, ssl=self._verify_tls)
            session = aiohttp.ClientSession(connector=connector)
            self._session = session
            if self._wants_direct:
                self._direct_exchange = DirectExchange.for_session(session, self.max_answer_bytes)
        return session

    async def send(
        self, method: str, url: URL, *, headers: Mapping[str, str] | None, body: bytes | None,
        timeout: float,
    ) -> RawResponse:
        """Send one request and read its whole answer within ``timeout`` seconds; raises
        [`TransportError`][txc_async.TransportError] or
        [`RequestTimeout`][txc_async.RequestTimeout]."""
        session = self._session
        if session is None or self._closed:
            session = self._get_session()
        # The pipeline passes whole milliseconds, so the same few values come back: one object
        # each (the cache is emptied past 64 values).
        client_timeout = self._timeouts.get(timeout)
        if client_timeout is None:
            client_timeout = self._new_timeout(timeout)
        record: list[Any] | None = None
        direct: DirectExchange | None = None
        if self._owns_session:
            record = [_current_task(), _UNKNOWN]
            _request_record.set(record)
            direct = self._direct_exchange
        try:
            if direct is not None:
                try:
                    status, answer, payload = await direct(
                        session, method, url, headers, body, client_timeout
                    )
                except NotReady as exc:
                    # Nothing of the request was written: it goes as if this path had never
                    # been tried, and so does every later request of the session.
                    self._leave_direct_path(exc, record)
                    direct = None
            if direct is None:
                async with session.request(
                    method, url, headers=headers, data=body, timeout=client_timeout,
                    allow_redirects=False,
                ) as response:
                    status, answer = response.status, response.headers
                    payload = await self._payload(response)
            if payload is not None:
                return _raw_response((status, answer, payload))
            failure = self._too_large(status)
        except Exception as exc:
            found = map_aiohttp_error(
                exc, url, timeout, connecting=record is not None and record[1] == _CONNECTING,
                closed=self._closed, session_closed=session.closed,
            )
            if found is None:
                raise
            failure = found
        # Raised here, outside the clause that caught aiohttp's error: see the class's words.
        raise failure

    def _new_timeout(self, timeout: float) -> aiohttp.ClientTimeout:
        """The aiohttp timeout of ``timeout`` seconds, kept for the next requests."""
        if len(self._timeouts) >= 64:
            self._timeouts.clear()
        # Never rounded up: aiohttp rounds a timeout of 5 s or more up to the loop clock's next
        # whole second unless told otherwise, and the request could then still leave up to a
        # second after the deadline its budget counts it until.
        client_timeout = self._timeouts[timeout] = aiohttp.ClientTimeout(
            total=timeout, ceil_threshold=math.inf
        )
        return client_timeout

    def _leave_direct_path(self, exc: NotReady, record: list[Any] | None) -> None:
        """This session's requests go through ``ClientSession.request`` from now on."""
        self._direct_exchange = None
        if record is not None:
            # The failed path may have had a connection: the request has none yet, and the
            # connector must not take its next for a second one (see _Connector).
            record[1] = _UNKNOWN
        logger.debug(
            "aiohttp %s: %s failed the direct request path (%s); this session sends its "
            "requests through ClientSession.request", aiohttp.__version__, exc.part, exc.failure,
        )

    def _too_large(self, status: int) -> TransportError:
        return TransportError(
            f"the answer is larger than max_answer_bytes ({self.max_answer_bytes} bytes); it "
            "was not read further",
            status=status,
        )

    def sent_nothing(self) -> bool:
        """True when the request the current task was sending when it ended (cancelled, say)
        certainly never left this machine: it never had a connection. False when it may have
        left, or when the transport cannot tell (an injected session)."""
        # Only a request seen waiting for its connection: one the connector never saw (aiohttp
        # reached it another way, say) is not known to be unsent.
        if not self._owns_session:
            return False
        record = _own_record()
        return record is not None and record[1] == _CONNECTING

    async def _payload(self, response: aiohttp.ClientResponse) -> bytes | None:
        """The answer's body, or None (the response closed) when it is larger than
        ``max_answer_bytes``."""
        payload = await read_body(
            response.content, response.headers, bodyless(response.method, response.status),
            self.max_answer_bytes,
        )
        if payload is None:
            response.close()
        return payload

    async def aclose(self) -> None:
        """Close the session made here (a session given is left open); no request is sent
        afterwards."""
        self._closed = True
        session = self._session
        if session is not None and self._owns_session and not session.closed:
            await session.close()
            # Let the connector finish closing its transports (aiohttp's documented idiom).
            await asyncio.sleep(0)


def map_aiohttp_error(
    exc: Exception, url: URL, timeout: float, *, connecting: bool, closed: bool,
    session_closed: bool,
) -> TransportError | None:
    """The library's error for a request that failed with ``exc`` (aiohttp's, asyncio's or the
    direct path's), or None for an exception that is not the transport's to word (it goes on as
    it is). ``connecting``: the request was waiting for its connection, so nothing of it left;
    ``closed``: the transport was closed meanwhile; ``session_closed``: the session was."""
    if isinstance(exc, TimeoutError):
        # aiohttp's own connect timeout, or the deadline before a connection: the request
        # never left.
        if isinstance(exc, aiohttp.ConnectionTimeoutError) or connecting:
            return RequestTimeout(
                f"no connection to {_where(url)} within {timeout:g} s",
                may_have_reached_server=False,
            )
        return RequestTimeout(f"no answer within {timeout:g} s")
    if isinstance(exc, Unsendable):
        return TransportError(
            f"the request to {_where(url)} was not sent: {exc.reason}",
            may_have_reached_server=False,
        )
    if isinstance(exc, aiohttp.ClientConnectorError):
        return TransportError(_connect_failure(exc, url), may_have_reached_server=False)
    if isinstance(exc, aiohttp.ClientResponseError | MalformedAnswer):
        # aiohttp's HTTP parser could not read the status line or the headers (through
        # ClientSession.request, its error's request_info holds the signed headers).
        reason = exc.message if isinstance(exc, aiohttp.ClientResponseError) else exc.reason
        return TransportError(f"malformed HTTP answer from {_where(url)}: "
                              f"{_first_words(reason)}")
    if isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError):
        return TransportError(_CLOSED_IN_FLIGHT if closed else _cut_off(exc, url))
    if isinstance(exc, aiohttp.ClientError | OSError | ValueError):
        return TransportError(_CLOSED_IN_FLIGHT if closed else _connection_failure(exc, url))
    if isinstance(exc, RuntimeError):
        if session_closed:
            # aiohttp refuses a request on a closed session before sending anything; it
            # checks that itself on every request, so it is not checked here as well.
            return TransportError("the HTTP session is closed", may_have_reached_server=False)
        # An aiohttp session (so a client) serves the event loop it was first used in; from
        # another loop, or once that loop closed, asyncio refuses its work.
        return TransportError(
            f"the request could not be made from this event loop ({type(exc).__name__}"
            "): a client and its HTTP session serve the event loop they were first "
            "used in; make one client per event loop"
        )
    return None


def _cut_off(exc: Exception, url: URL) -> str:
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return f"{_where(url)} closed the connection before answering"
    return f"the answer from {_where(url)} was cut off or malformed before its end"


def _connection_failure(exc: Exception, url: URL) -> str:
    if isinstance(exc, ConnectionResetError) or (
        isinstance(exc, OSError) and exc.errno == errno.ECONNRESET
    ):
        return f"connection reset by {_where(url)}"
    if isinstance(exc, ValueError) and not isinstance(exc, OSError):
        return f"the request to {_where(url)} could not be sent: {type(exc).__name__}"
    return f"connection to {_where(url)} failed: {type(exc).__name__}"


def _where(url: URL) -> str:
    return f"{url.host}:{url.port}"


def _connect_failure(exc: aiohttp.ClientConnectorError, url: URL) -> str:
    where = _where(url)
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return f"could not resolve {url.host}"
    if isinstance(exc, aiohttp.ClientSSLError):
        return f"TLS handshake with {where} failed: {type(exc).__name__}"
    os_error = exc.os_error
    if isinstance(os_error, ConnectionRefusedError) or os_error.errno == errno.ECONNREFUSED:
        return f"connection refused by {where}"
    reason = os_error.strerror or type(os_error).__name__
    return f"could not connect to {where}: {reason}"


def _first_words(message: str) -> str:
    """The parser's reason without the answer bytes it quotes."""
    text = message.split(":", 1)[0].split("\n", 1)[0].strip()
    return text[:80] if text else "unreadable status line or headers"
