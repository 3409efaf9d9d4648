"""The request path of the client's own session (``_direct.py``) against
``ClientSession.request``, input by input and answer by answer: the same bytes reach the
server, every kind of answer is read alike, no connection is left held, deadlines and
cancellation end an exchange alike, and no secret is reachable from any error."""

from __future__ import annotations

import asyncio
import gzip
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp import http_writer
from multidict import CIMultiDict
from yarl import URL

from txc_async import RequestTimeout, TransportError
from txc_async.transports import AiohttpTransport

from ..support.raw_server import serve
from ..support.reachable import reachable_text
from ..support.waiting import until

PATHS = ["direct", "session.request"]
SECRETS = {"KEY-s3cr3t-Zq81", "PAYLOAD-s3cr3t-Wm42", "SIG-s3cr3t-Px07", "BODY-s3cr3t-Lk55"}
SIGNED = {
    "X-TXC-APIKEY": "KEY-s3cr3t-Zq81",
    "X-TXC-PAYLOAD": "PAYLOAD-s3cr3t-Wm42",
    "X-TXC-SIGNATURE": "SIG-s3cr3t-Px07",
    "Content-Type": "application/json",
}
BODY = b'{"request":"BODY-s3cr3t-Lk55"}'

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def _transport(path: str, **kwargs: Any) -> AiohttpTransport:
    """A transport whose own session takes ``path`` (call inside the running loop)."""
    transport = AiohttpTransport(direct=path == "direct", **kwargs)
    transport._get_session()
    assert (transport._direct_exchange is not None) is (path == "direct")
    return transport


def _acquired(transport: AiohttpTransport) -> int:
    session = transport._session
    assert session is not None and session.connector is not None
    return len(session.connector._acquired)  # type: ignore[attr-defined]


def _pooled_and_open(transport: AiohttpTransport) -> int:
    """How many connections lie in the pool that the client still sees open."""
    session = transport._session
    assert session is not None and session.connector is not None
    pool = session.connector._conns  # type: ignore[attr-defined]
    return sum(protocol.is_connected() for kept in pool.values() for protocol, _ in kept)


async def _server(handle: Handler) -> AsyncIterator[tuple[str, list[int]]]:
    connections: list[int] = []
    async for url in serve(handle, connections):
        yield url, connections


async def _play(script: list[bytes | str], writer: asyncio.StreamWriter) -> bool:
    """Writes an answer's script: bytes, then ``"CLOSE"`` (the connection closed) or
    ``"RESET"`` (reset). False once the connection ended."""
    for part in script:
        if part == "CLOSE":
            return False
        if part == "RESET":
            writer.transport.abort()
            return False
        assert isinstance(part, bytes)
        writer.write(part)
        await writer.drain()
    return True


async def _read_request(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return head, (await reader.readexactly(length) if length else b"")


def _normalized(head: bytes) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    line, *rest = head.rstrip(b"\r\n").split(b"\r\n")
    return line, sorted(
        (name.strip().lower(), value.strip())
        for name, _, value in (h.partition(b":") for h in rest)
    )


async def _recorded(path: str, method: str, url_tail: str, headers: dict[str, str] | None,
                    body: bytes | None) -> list[tuple[Any, bytes]]:
    seen: list[tuple[Any, bytes]] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head, got = await _read_request(reader)
        seen.append((head, got))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()

    async for url, _ in _server(handle):
        transport = _transport(path)
        try:
            raw = await transport.send(method, URL(url + url_tail), headers=headers, body=body,
                                       timeout=3.0)
            assert raw.status == 200
        finally:
            await transport.aclose()
        port = url.rsplit(":", 1)[1].encode()
        seen[:] = [(_normalized(head.replace(port, b"PORT")), got) for head, got in seen]
    return seen


# -- 1. The bytes the server receives --------------------------------------------------------


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH"])
async def test_a_request_without_a_body_has_aiohttp_s_headers(method: str) -> None:
    """aiohttp gives a POST, PUT or PATCH without a body ``Content-Type:
    application/octet-stream`` (ClientRequest.send); so does the direct path."""
    direct = await _recorded("direct", method, "/api/v4/x", None, None)
    through_session = await _recorded("session.request", method, "/api/v4/x", None, None)
    assert direct == through_session


async def test_header_names_differing_only_in_case_are_sent_as_aiohttp_sends_them() -> None:
    """Two names that differ only in case (a plain dict allows it): the last value, once."""
    headers = {"X-Tag": "1", "x-tag": "2"}
    direct = await _recorded("direct", "GET", "/x", headers, None)
    through_session = await _recorded("session.request", "GET", "/x", headers, None)
    assert direct == through_session


# Verified: these are byte-for-byte the same header set and request line on both paths.
SAME_REQUESTS = [
    ("GET", "/a/b?x=1&y=%20z", None, None),
    ("POST", "/api/v4/main-account/balance", SIGNED, BODY),
    ("POST", "/x", None, b""),
    ("post", "/x", {"Content-Type": "application/json"}, b"{}"),
    ("get", "/x", None, None),
    ("DELETE", "/x", None, None),
    ("DELETE", "/x", None, b"abc"),
    ("GET", "/x", None, b"abc"),
    ("OPTIONS", "/x", None, None),
    ("GET", "/p%C3%A4th/\u00e4/%2F?q=\u00e4", None, None),
    ("GET", "", None, None),
    ("GET", "/x#fragment", None, None),
    ("GET", "/x", {"host": "example.com"}, None),
    ("GET", "/x", {"User-Agent": "mine", "accept": "application/json"}, None),
    ("GET", "/x", {"Connection": "close"}, None),
    ("GET", "/x", {"X-U": "\u00fcn\u00ef", "X-E": ""}, None),
]


@pytest.mark.parametrize(("method", "tail", "headers", "body"), SAME_REQUESTS)
async def test_the_request_is_what_session_request_sends(
    method: str, tail: str, headers: dict[str, str] | None, body: bytes | None
) -> None:
    direct = await _recorded("direct", method, tail, headers, body)
    through_session = await _recorded("session.request", method, tail, headers, body)
    assert direct == through_session and len(direct) == 1


async def test_credentials_ipv6_and_default_ports_are_sent_as_session_request_sends() -> None:
    seen: list[Any] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head, _ = await _read_request(reader)
        seen.append(_normalized(head))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()

    try:
        server6 = await asyncio.start_server(handle, "::1", 0)
    except OSError:
        pytest.skip("no IPv6 loopback")
    port6 = server6.sockets[0].getsockname()[1]
    server4 = await asyncio.start_server(handle, "127.0.0.1", 0)
    port4 = server4.sockets[0].getsockname()[1]
    urls = [f"http://[::1]:{port6}/x?y=1", f"http://user:pa%20ss@127.0.0.1:{port4}/x"]
    try:
        for url in urls:
            results = []
            for path in PATHS:
                seen.clear()
                transport = _transport(path)
                try:
                    await transport.send("GET", URL(url), headers=None, body=None, timeout=3)
                finally:
                    await transport.aclose()
                results.append(list(seen))
            assert results[0] == results[1] and len(results[0]) == 1
    finally:
        server6.close()
        server4.close()


# -- 2. Control characters in a header --------------------------------------------------------


def _writer_refuses(value: str) -> bool:
    try:
        http_writer._serialize_headers("GET / HTTP/1.1", CIMultiDict(X=value))
    except ValueError:
        return True
    return False


@pytest.mark.parametrize("bad", [
    "a\r\nX-Evil: 1", "a\nb",
    # aiohttp's writer refuses every control character since 3.13, CR and LF before (on both
    # paths alike).
    *(pytest.param(bad, marks=pytest.mark.skipif(
        not _writer_refuses(bad), reason="this aiohttp sends it, on both paths"))
      for bad in ("a\x00b", "a\x7fb", "a\x1bb")),
])
async def test_a_control_character_in_a_header_is_refused_before_anything_is_sent(
    request_path: str, bad: str
) -> None:
    received: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received.append(await reader.read(65536))

    async for url, connections in _server(handle):
        transport = AiohttpTransport()
        try:
            with pytest.raises(TransportError) as caught:
                await transport.send(
                    "POST", URL(url + "/x"),
                    headers={**SIGNED, "X-TXC-APIKEY": SIGNED["X-TXC-APIKEY"] + bad},
                    body=BODY, timeout=2.0,
                )
            assert _acquired(transport) == 0
        finally:
            await transport.aclose()
        await asyncio.sleep(0.05)
        assert all(not data for data in received)  # not a byte of the request
        if request_path == "direct":
            assert connections == []  # refused before a connection is even taken
    if request_path == "direct":
        assert "was not sent: a header or the request line holds a control character" in str(
            caught.value
        )
        assert caught.value.may_have_reached_server is False
    else:
        assert "could not be sent" in str(caught.value)
    text = reachable_text(caught.value)
    assert not any(secret in text for secret in SECRETS)


# -- 3. Answers -------------------------------------------------------------------------------

BIG = b"x" * 5000
ZIPPED = gzip.compress(b"a" * 5000)
ANSWERS: dict[str, list[bytes | str]] = {
    "length": [b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"],
    "chunked": [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"],
    "gzip": [b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n"
             % len(gzip.compress(b"hello")) + gzip.compress(b"hello")],
    "gzip past the limit": [b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d"
                            b"\r\n\r\n" % len(ZIPPED) + ZIPPED],
    "broken gzip": [b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 5\r\n\r\n"
                    b"hello"],
    "HTTP/1.0": [b"HTTP/1.0 200 OK\r\n\r\nhello", "CLOSE"],
    "close": [b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nhello", "CLOSE"],
    "close past the limit": [b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + BIG, "CLOSE"],
    "100 then 200": [b"HTTP/1.1 100 Continue\r\n\r\n"
                     b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"],
    "103 then 200": [b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
                     b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"],
    "204": [b"HTTP/1.1 204 No Content\r\n\r\n"],
    "304": [b"HTTP/1.1 304 Not Modified\r\nContent-Length: 100\r\n\r\n"],
    "bad status": [b"HTTP/1.1 abc OK\r\n\r\n"],
    "bad header": [b"HTTP/1.1 200 OK\r\nBad Header\r\nContent-Length: 0\r\n\r\n"],
    "cut short": [b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello", "CLOSE"],
    "cut chunk": [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", "CLOSE"],
    "nothing": ["CLOSE"],
    "reset": ["RESET"],
    "declared past the limit": [b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n" + BIG],
    "chunked past the limit": [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n"
                               % len(BIG) + BIG + b"\r\n0\r\n\r\n"],
}


async def _exchange_twice(path: str, script: list[bytes | str], method: str) -> list[Any]:
    """The first answer is ``script``, later ones a plain 200 (a HEAD's without a body): what
    each path makes of it, the connections left acquired, and whether the next one works."""
    scripts = [script]

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            head, _ = await _read_request(reader)
            nxt = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n"
            nxt += b"" if head.startswith(b"HEAD") else b"next"
            current, scripts[0] = scripts[0], [nxt]
            if not await _play(current, writer):
                return

    out: list[Any] = []
    async for url, _ in _server(handle):
        transport = _transport(path, max_answer_bytes=1024)
        try:
            for _ in range(2):
                try:
                    raw = await transport.send(method, URL(url + "/x"), headers=None, body=None,
                                               timeout=2.0)
                    out.append((raw.status, raw.body))
                except TransportError as exc:
                    out.append(str(exc).replace(url[len("http://"):], "HOST"))
                out.append(_acquired(transport))
        finally:
            await transport.aclose()
    return out


@pytest.mark.parametrize("method", ["GET", "HEAD"])
@pytest.mark.parametrize("name", list(ANSWERS))
async def test_every_answer_is_read_as_through_session_request(name: str, method: str) -> None:
    direct = await _exchange_twice("direct", ANSWERS[name], method)
    through_session = await _exchange_twice("session.request", ANSWERS[name], method)
    assert direct == through_session
    assert direct[1] == 0 and direct[3] == 0  # nothing stays acquired
    assert isinstance(direct[2], tuple) and direct[2][0] == 200  # the next request works


# -- 4. Connections ----------------------------------------------------------------------------


async def test_a_server_that_closes_right_after_its_answer_fails_no_request(
    request_path: str,
) -> None:
    """A server that closes a keep-alive connection at once after answering (no ``Connection:
    close``): the next request, taking that connection from the pool before the event loop has
    seen the close, is never written into it (where it would fail as maybe sent though the
    server never saw it): the connector passes over it and takes another."""
    seen: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head, _ = await _read_request(reader)
        seen.append(head)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()

    failures: list[str] = []
    async for url, _ in _server(handle):
        transport = AiohttpTransport()
        try:
            for _ in range(10):
                try:
                    await transport.send("GET", URL(url + "/x"), headers=None, body=None,
                                         timeout=2.0)
                except TransportError as exc:
                    failures.append(str(exc))
        finally:
            await transport.aclose()
    assert failures == [], f"{len(failures)} of 10 failed; the server saw {len(seen)}"


async def test_a_server_closing_idle_connections_later_fails_no_request(
    request_path: str,
) -> None:
    """A server that closes a keep-alive connection a while after its answer, once it lies
    idle in the pool and the client has seen it close: the next request takes a new one."""
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        await asyncio.sleep(0.02)  # then closes the idle connection

    async for url, connections in _server(handle):
        transport = AiohttpTransport()
        try:
            for _ in range(5):
                raw = await transport.send("GET", URL(url + "/x"), headers=None, body=None,
                                           timeout=2.0)
                assert raw.body == b"ok"
                # "A while after": until the client has seen the close, however long the event
                # loop takes to get there (a fixed pause may not be enough on a busy machine).
                await until(lambda t=transport: not _pooled_and_open(t),
                            "the client sees the server close its idle connection")
            assert _acquired(transport) == 0
        finally:
            await transport.aclose()
        assert len(connections) == 5


# -- 5. Deadlines, cancellation ------------------------------------------------------------------


async def _silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await _read_request(reader)
    await asyncio.sleep(10)


async def _trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await _read_request(reader)
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n")
    for _ in range(100):
        writer.write(b"x")
        await writer.drain()
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("handle", [_silent, _trickle], ids=["never answers", "slow body"])
async def test_the_deadline_bounds_the_whole_exchange(request_path: str, handle: Handler) -> None:
    async for url, _ in _server(handle):
        transport = AiohttpTransport()
        try:
            started = time.monotonic()
            with pytest.raises(RequestTimeout) as caught:
                await transport.send("POST", URL(url + "/x"), headers=SIGNED, body=BODY,
                                     timeout=0.5)
            took = time.monotonic() - started
            assert 0.45 <= took < 0.9
            assert "no answer within" in str(caught.value)
            assert caught.value.may_have_reached_server is True
            assert _acquired(transport) == 0
            assert not any(secret in reachable_text(caught.value) for secret in SECRETS)
        finally:
            await transport.aclose()


async def test_a_wait_for_a_connection_past_the_deadline_is_no_connection(
    request_path: str,
) -> None:
    async for url, _ in _server(_silent):
        transport = AiohttpTransport(max_connections=1)
        try:
            holder = asyncio.create_task(transport.send(
                "GET", URL(url + "/x"), headers=None, body=None, timeout=3.0))
            await asyncio.sleep(0.1)
            with pytest.raises(RequestTimeout) as caught:
                await transport.send("GET", URL(url + "/x"), headers=None, body=None,
                                     timeout=0.3)
            assert "no connection" in str(caught.value)
            assert caught.value.may_have_reached_server is False
            holder.cancel()
            with pytest.raises(asyncio.CancelledError):
                await holder
            assert _acquired(transport) == 0
        finally:
            await transport.aclose()


@pytest.mark.parametrize("stage", ["waiting for a connection", "waiting for the status",
                                   "reading the body"])
async def test_a_cancel_at_each_await_leaves_nothing_acquired(
    request_path: str, stage: str
) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            head, _ = await _read_request(reader)
            if b"/slow" not in head:
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                await writer.drain()
                continue
            if stage == "reading the body":
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhel")
                await writer.drain()
            await asyncio.sleep(10)

    said: list[bool] = []
    async for url, _ in _server(handle):
        transport = AiohttpTransport(max_connections=1)
        try:
            holder = None
            if stage == "waiting for a connection":
                holder = asyncio.create_task(transport.send(
                    "GET", URL(url + "/slow"), headers=None, body=None, timeout=5.0))
                await asyncio.sleep(0.1)

            async def call(transport: AiohttpTransport = transport, url: str = url) -> None:
                try:
                    await transport.send("POST", URL(url + "/slow"), headers=SIGNED, body=BODY,
                                         timeout=5.0)
                finally:
                    said.append(transport.sent_nothing())

            task = asyncio.create_task(call())
            await asyncio.sleep(0.2)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            if holder is not None:
                holder.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await holder
            assert _acquired(transport) == 0
            raw = await transport.send("GET", URL(url + "/x"), headers=None, body=None,
                                       timeout=2.0)
            assert raw.body == b"ok"
        finally:
            await transport.aclose()
    assert said == [stage == "waiting for a connection"]


# -- 6. Secrets --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["bad status", "cut short", "reset", "nothing",
                                  "declared past the limit", "broken gzip"])
async def test_no_secret_is_reachable_from_any_failure(request_path: str, name: str) -> None:
    script = ANSWERS[name]

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        await _play(script, writer)

    async for url, _ in _server(handle):
        transport = AiohttpTransport(max_answer_bytes=1024)
        try:
            with pytest.raises(TransportError) as caught:
                await transport.send("POST", URL(url + "/x"), headers=SIGNED, body=BODY,
                                     timeout=2.0)
        finally:
            await transport.aclose()
    text = reachable_text(caught.value)
    assert not any(secret in text for secret in SECRETS)


# -- Findings shared by both paths (not introduced by e3f033f) -------------------------------------


@pytest.mark.parametrize(("method", "status_line"), [
    ("HEAD", b"HTTP/1.1 200 OK"), ("GET", b"HTTP/1.1 304 Not Modified"),
])
async def test_an_answer_without_a_body_is_not_too_large_for_its_content_length(
    request_path: str, method: str, status_line: bytes
) -> None:
    """A HEAD answer, or a 304, carries no body whatever its Content-Length says: never
    refused as larger than max_answer_bytes."""
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(status_line + b"\r\nContent-Length: 100000\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(1)

    async for url, _ in _server(handle):
        transport = AiohttpTransport(max_answer_bytes=1024)
        try:
            raw = await transport.send(method, URL(url + "/x"), headers=None, body=None,
                                       timeout=2.0)
        finally:
            await transport.aclose()
        assert raw.body == b""


async def test_a_request_ended_by_the_client_s_close_says_so(request_path: str) -> None:
    """Closing the transport while a request waits for its answer is reported as the
    client's close, not as the server's doing."""
    async for url, _ in _server(_silent):
        transport = AiohttpTransport()
        task = asyncio.create_task(transport.send("GET", URL(url + "/x"), headers=None,
                                                  body=None, timeout=3.0))
        await asyncio.sleep(0.1)
        await transport.aclose()
        with pytest.raises(TransportError) as caught:
            await task
    assert "client was closed" in str(caught.value)
