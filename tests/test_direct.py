"""The request the client's own session writes on aiohttp's connection carries what aiohttp's
``ClientSession.request`` sends for the same inputs, and the answers it reads are read as
aiohttp reads them (see ``txc_async/_direct.py``)."""

from __future__ import annotations

import asyncio
import gzip
from typing import Any

import pytest
from aiohttp import http_writer
from multidict import CIMultiDict
from yarl import URL

from txc_async import TransportError
from txc_async._direct import DIRECT, DirectExchange
from txc_async._transport import AiohttpTransport

from ._raw_server import read_head, serve

pytestmark = pytest.mark.skipif(not DIRECT, reason="this aiohttp lacks a part of the exchange")

Received = tuple[str, dict[str, str], bytes]


def _parse(head: bytes, body: bytes) -> Received:
    lines = head.decode("utf-8").split("\r\n")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            assert name.lower() not in headers, f"{name} sent twice"
            headers[name.lower()] = value.strip()
    return lines[0], headers, body


async def _recording(answer: bytes, received: list[Received]) -> Any:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                head = await read_head(reader)
            except asyncio.IncompleteReadError:
                return
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            received.append(_parse(head, await reader.readexactly(length)))
            writer.write(answer)
            await writer.drain()

    return serve(handle)


_OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"

#: (method, path and query, headers, body) as the pipeline and other callers give them.
CASES: list[tuple[str, str, dict[str, str] | None, bytes | None]] = [
    ("POST", "/api/v4/main-account/balance",
     {"Content-Type": "application/json", "X-TXC-APIKEY": "key", "X-TXC-PAYLOAD": "cGF5",
      "X-TXC-SIGNATURE": "ab12", "User-Agent": "txc_async/test"}, b'{"request":"x"}'),
    ("GET", "/api/v4/public/ping", {"User-Agent": "txc_async/test"}, None),
    ("GET", "/api/v4/public/history?market=BTC_USDT&limit=10&x=a%20b", None, None),
    ("POST", "/api/v4/order/new", {"content-type": "application/x-www-form-urlencoded"},
     b"a=1&b=2"),
    ("POST", "/api/v4/raw", None, b"\x00\x01bytes"),
    ("POST", "/api/v4/empty", None, None),
    ("DELETE", "/api/v4/empty", None, None),
    ("post", "/api/v4/lower", {"host": "other.example"}, b"{}"),
    ("GET", "/api/v4/caf%C3%A9/%2Fslash", {"Accept": "application/json"}, None),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{m} {p[:30]}" for m, p, _, _ in CASES])
async def test_the_request_carries_what_aiohttp_s_own_path_sends(
    case: tuple[str, str, dict[str, str] | None, bytes | None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    method, target, headers, body = case
    received: list[Received] = []
    async for base in await _recording(_OK, received):
        url = URL(base + target, encoded=True)
        direct = AiohttpTransport()
        try:
            raw = await direct.send(method, url, headers=headers, body=body, timeout=5.0)
            assert direct._direct is True
        finally:
            await direct.aclose()
        with monkeypatch.context() as patched:
            patched.setattr(DirectExchange, "for_session",
                            lambda session, max_answer_bytes: None)
            through_aiohttp = AiohttpTransport()
            try:
                again = await through_aiohttp.send(
                    method, url, headers=headers, body=body, timeout=5.0
                )
                assert through_aiohttp._direct is False
            finally:
                await through_aiohttp.aclose()
    assert raw.status == again.status == 200 and raw.body == again.body == b"{}"
    assert len(received) == 2
    assert received[0] == received[1]
    assert received[0][0] == f"{method.upper()} {target} HTTP/1.1"


async def test_a_url_with_credentials_sends_them_as_aiohttp_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    received: list[Received] = []
    async for base in await _recording(_OK, received):
        url = URL(base.replace("http://", "http://user:pa%20ss@") + "/api/v4/public/ping")
        for direct in (True, False):
            with monkeypatch.context() as patched:
                if not direct:
                    patched.setattr(DirectExchange, "for_session",
                                    lambda session, max_answer_bytes: None)
                transport = AiohttpTransport()
                try:
                    await transport.send("GET", url, headers=None, body=None, timeout=5.0)
                    assert transport._direct is direct
                finally:
                    await transport.aclose()
    assert received[0] == received[1]
    assert received[0][1]["authorization"].startswith("Basic ")


def _writer_refuses(value: str) -> bool:
    try:
        http_writer._serialize_headers("GET / HTTP/1.1", CIMultiDict(X=value))
    except ValueError:
        return True
    return False


@pytest.mark.parametrize("bad", [
    "a\r\nX-Injected: 1", "a\nb", "a\rb",
    # aiohttp's writer refuses every control character since 3.13, CR and LF before.
    pytest.param("a\x00b", marks=pytest.mark.skipif(
        not _writer_refuses("\x00"), reason="this aiohttp sends a NUL, on both paths")),
])
async def test_a_control_character_in_a_header_is_refused_before_anything_is_sent(
    bad: str,
) -> None:
    received: list[Received] = []
    async for base in await _recording(_OK, received):
        transport = AiohttpTransport()
        try:
            with pytest.raises(TransportError) as caught:
                await transport.send(
                    "POST", URL(base + "/api/v4/x"),
                    headers={"X-TXC-APIKEY": "secret-" + bad}, body=b"{}", timeout=5.0,
                )
            assert caught.value.may_have_reached_server is False
            assert "control character" in str(caught.value)
            assert "secret" not in repr(caught.value)
            assert caught.value.__cause__ is None and caught.value.__context__ is None
            assert transport._direct is True
            # The connection (none was taken) and the next request are unharmed.
            ok = await transport.send("GET", URL(base + "/ping"), headers=None, body=None,
                                      timeout=5.0)
            assert ok.status == 200
        finally:
            await transport.aclose()
    assert [line for line, _, _ in received] == ["GET /ping HTTP/1.1"]


async def test_interim_answers_are_skipped_and_the_connection_is_used_again() -> None:
    connections = 0

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        for _ in range(3):
            await read_head(reader)
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n"
                         b"HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n" + _OK)
            await writer.drain()

    async for base in serve(answer):
        transport = AiohttpTransport()
        try:
            for _ in range(3):
                raw = await transport.send("GET", URL(base + "/x"), headers=None, body=None,
                                           timeout=5.0)
                assert (raw.status, raw.body) == (200, b"{}")
            assert transport._direct is True
        finally:
            await transport.aclose()
    assert connections == 1


@pytest.mark.parametrize("limit_kib", [1, 64])
async def test_a_compressed_answer_is_decoded_and_held_to_max_answer_bytes(
    limit_kib: int,
) -> None:
    body = b"[" + b'"0.00000001",' * 2000 + b'"0"]'  # 26 KB, a few hundred bytes compressed
    packed = gzip.compress(body)

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await read_head(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: "
                         + str(len(packed)).encode() + b"\r\n\r\n" + packed)
            await writer.drain()

    async for base in serve(answer):
        transport = AiohttpTransport(max_answer_bytes=limit_kib * 1024)
        try:
            if limit_kib * 1024 < len(body):
                with pytest.raises(TransportError, match="max_answer_bytes"):
                    await transport.send("GET", URL(base + "/x"), headers=None, body=None,
                                         timeout=5.0)
            else:
                raw = await transport.send("GET", URL(base + "/x"), headers=None, body=None,
                                           timeout=5.0)
                assert raw.body == body
            assert transport._direct is True
            assert not transport._session.connector._acquired  # type: ignore[union-attr]
        finally:
            await transport.aclose()


async def test_a_malformed_status_line_is_a_transport_error_without_the_answer_s_bytes() -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_head(reader)
        writer.write(b"HTTP/1.1 2x0 secret-token-in-answer\r\n\r\n")
        await writer.drain()

    async for base in serve(answer):
        transport = AiohttpTransport()
        try:
            with pytest.raises(TransportError, match="malformed HTTP answer") as caught:
                await transport.send("GET", URL(base + "/x"), headers=None, body=None,
                                     timeout=5.0)
            assert "secret-token" not in repr(caught.value)
            assert caught.value.__cause__ is None and caught.value.__context__ is None
            assert not transport._session.connector._acquired  # type: ignore[union-attr]
        finally:
            await transport.aclose()
