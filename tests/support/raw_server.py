"""A raw HTTP server on 127.0.0.1 for tests that need to write exact answer bytes or see exact
request bytes: ``serve(answer)`` runs ``answer(reader, writer)`` for every connection."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

Answer = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def read_head(reader: asyncio.StreamReader) -> bytes:
    """A request's request line and headers, up to and with the blank line."""
    return await reader.readuntil(b"\r\n\r\n")


async def serve(answer: Answer, connections: list[int] | None = None) -> AsyncIterator[str]:
    """Yields the server's base URL (``http://127.0.0.1:<port>``) once, then stops it; each
    connection it accepts appends to ``connections``."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if connections is not None:
            connections.append(1)
        try:
            await answer(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                asyncio.CancelledError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
        await server.wait_closed()
