"""The direct request path (``_transports/direct.py``) uses aiohttp's private parts only once
they proved themselves: on an aiohttp whose parts differ from those it was written for, a
session's calls go through ``ClientSession.request`` instead, each reaching the server once; a
failure after the request may have been written is not taken for one of those."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp.client_proto import ResponseHandler
from aiohttp.client_reqrep import ClientRequest
from yarl import URL

import txc_async
from txc_async import TransportError
from txc_async._transports import direct as _direct
from txc_async.sandbox import Sandbox
from txc_async.transports import AiohttpTransport

from ..support.raw_server import serve

PING = "/api/v4/public/ping"
BALANCE = "/api/v4/main-account/balance"
FALLBACK_LOG = "this session sends its requests through ClientSession.request"

pytestmark = pytest.mark.skipif(
    not _direct.DIRECT, reason="this aiohttp's parts cannot make an exchange alone"
)


class _RequestWithANewArgument(ClientRequest):
    """aiohttp's request as a later aiohttp may make it (its development branch does): one
    more required keyword-only argument, which its own ClientSession passes."""

    def __init__(self, *args: Any, writer_factory: object, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)


def _nothing_differs(monkeypatch: pytest.MonkeyPatch) -> None:
    pass


def _client_request_takes_a_new_argument(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_direct, "ClientRequest", _RequestWithANewArgument)


def _a_session_attribute_is_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    # The session no longer has the attribute the direct path reads (renamed, say).
    monkeypatch.setitem(_direct._ANSWER_SETTINGS, "read_bufsize", "_read_buffer_size")


def _the_parser_waits_for_bytes_it_was_given(monkeypatch: pytest.MonkeyPatch) -> None:
    # A protocol without a connection (the offline proof's) loses what it is fed, so that its
    # read waits: the proof must not wait with the request in hand.
    received = ResponseHandler.data_received

    def data_received(self: ResponseHandler, data: bytes) -> None:
        if self.transport is not None:
            received(self, data)

    monkeypatch.setattr(ResponseHandler, "data_received", data_received)


DIFFERENCES: dict[str, Callable[[pytest.MonkeyPatch], None]] = {
    "nothing differs": _nothing_differs,
    "ClientRequest takes a new argument": _client_request_takes_a_new_argument,
    "a session attribute is gone": _a_session_attribute_is_gone,
    "the parser waits for bytes it was given": _the_parser_waits_for_bytes_it_was_given,
}


@pytest.mark.txc_client(retry=txc_async.RetryPolicy(max_retries=0))
@pytest.mark.parametrize("difference", list(DIFFERENCES))
async def test_a_client_on_an_aiohttp_whose_parts_differ_sends_each_call_once(
    difference: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
    txc_sandbox: Sandbox, txc_client: txc_async.Client,
) -> None:
    DIFFERENCES[difference](monkeypatch)
    caplog.set_level(logging.DEBUG, logger="txc_async")
    assert await txc_client.ping() is True
    assert await txc_client.main_balance()
    assert await txc_client.ping() is True
    assert txc_sandbox.stats.received[PING] == 2
    assert txc_sandbox.stats.received[BALANCE] == 1
    fallbacks = [r for r in caplog.records if FALLBACK_LOG in r.getMessage()]
    transport: Any = txc_client._pipeline.transport
    if difference == "nothing differs":
        assert not fallbacks and transport._direct_exchange is not None
    else:
        # Said once, at debug level, for the session's life.
        assert len(fallbacks) == 1 and fallbacks[0].levelno == logging.DEBUG
        assert transport._direct_exchange is None


async def _answering_server(requests: list[bytes]) -> AsyncIterator[str]:
    """A server that answers every request with ``200 ok`` and records its head."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            requests.append(head)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            await writer.drain()

    async for url in serve(handle):
        yield url


def _acquired(transport: AiohttpTransport) -> int:
    session = transport._session
    assert session is not None and session.connector is not None
    return len(session.connector._acquired)  # type: ignore[attr-defined]


async def test_a_failure_after_the_connection_is_taken_and_before_the_write_falls_back() -> None:
    """A part that fails on a connection taken for the request (not on the offline proof's):
    nothing was written on it, so the request goes through ClientSession.request, on a
    connection of its own, and reaches the server once."""
    requests: list[bytes] = []
    async for url in _answering_server(requests):
        transport = AiohttpTransport()
        try:
            raw = await transport.send("GET", URL(url + "/a"), headers=None, body=None,
                                       timeout=3.0)
            assert raw.body == b"ok" and len(requests) == 1
            exchange = transport._direct_exchange
            assert exchange is not None and exchange._settings is not None
            # As if aiohttp's protocol stopped taking a keyword the session's proof passed.
            exchange._settings["no_such_setting"] = 1
            raw = await transport.send("POST", URL(url + "/b"), headers=None, body=b"{}",
                                       timeout=3.0)
            assert raw.body == b"ok" and len(requests) == 2
            assert requests[1].startswith(b"POST /b ")
            assert transport._direct_exchange is None and _acquired(transport) == 0
        finally:
            await transport.aclose()


async def test_a_failure_after_the_write_is_not_taken_for_an_unready_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A part that fails once the request was written: the request may have reached the
    server, so it is neither sent again nor said to be unsent, and the path stays."""
    started = ResponseHandler.start_timeout

    def start_timeout(self: ResponseHandler) -> None:
        if self.transport is not None:  # on a connection, not in the offline proof
            raise AttributeError("_read_timeout_handle")
        started(self)

    requests: list[bytes] = []
    async for url in _answering_server(requests):
        transport = AiohttpTransport()
        try:
            monkeypatch.setattr(ResponseHandler, "start_timeout", start_timeout)
            with pytest.raises(Exception) as caught:
                await transport.send("POST", URL(url + "/w"), headers=None, body=b"{}",
                                     timeout=3.0)
            await asyncio.sleep(0.05)  # a second request would have arrived by now
            assert len(requests) == 1
            assert not (
                isinstance(caught.value, TransportError)
                and not caught.value.may_have_reached_server
            )
            assert transport._direct_exchange is not None and _acquired(transport) == 0
        finally:
            await transport.aclose()
