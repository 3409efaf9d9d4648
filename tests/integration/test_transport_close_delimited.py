"""Answers whose body ends when the server closes the connection (no Content-Length, not
chunked: HTTP/1.0, or HTTP/1.1 with ``Connection: close``) are read whole on both request
paths, and held to ``max_answer_bytes``; a HEAD answer carries no body, whatever the case of
the method the transport is given."""

from __future__ import annotations

import asyncio

import pytest
from yarl import URL

import txc_async
from txc_async import RetryPolicy, TransportError
from txc_async.transports import AiohttpTransport

from ..support.raw_server import read_head as _read_head
from ..support.raw_server import serve as _serve


@pytest.mark.parametrize("first_line", [b"HTTP/1.0 200 OK", b"HTTP/1.1 200 OK"])
async def test_an_answer_ended_by_the_connection_s_close_is_read_whole(
    request_path: str, first_line: bytes
) -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_head(reader)
        writer.write(first_line + b"\r\nContent-Type: application/json\r\nConnection: close"
                     b"\r\n\r\n" + b'["pong"]')
        await writer.drain()

    async for url in _serve(answer):
        client = txc_async.Client(base_url=url, retry=RetryPolicy(max_retries=0))
        try:
            assert await client.ping() is True
            assert await client.ping() is True  # on a new connection: the first was closed
        finally:
            await client.close()


async def test_an_answer_ended_by_the_close_is_held_to_max_answer_bytes(
    request_path: str,
) -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_head(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                     b"Connection: close\r\n\r\n[")
        for _ in range(64):  # 4 MiB, past a limit of 1 MiB
            writer.write(b'"x",' * 16384)
            await writer.drain()

    async for url in _serve(answer):
        client = txc_async.Client(base_url=url, retry=RetryPolicy(max_retries=0),
                                  max_answer_bytes=2**20)
        try:
            with pytest.raises(TransportError, match="max_answer_bytes"):
                await client.ping()
        finally:
            await client.close()


@pytest.mark.parametrize("method", ["HEAD", "head"])
async def test_a_head_answer_has_no_body_whatever_the_method_s_case(
    request_path: str, method: str
) -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_head(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 8\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(5)  # the body a GET would get never comes

    async for url in _serve(answer):
        transport = AiohttpTransport()
        try:
            raw = await transport.send(method, URL(url + "/api/v4/public/ping"), headers=None,
                                       body=None, timeout=2.0)
        finally:
            await transport.aclose()
        assert (raw.status, raw.body) == (200, b"")
