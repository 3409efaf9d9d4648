"""The suite runs on the event loop ``TXC_TEST_LOOP`` names, and the sandbox and the client work
on each: asyncio's own loop and uvloop."""

from __future__ import annotations

import asyncio
import os

import txc_async
from txc_async.sandbox import Sandbox


async def test_the_suite_runs_on_the_chosen_loop() -> None:
    loop_module = type(asyncio.get_running_loop()).__module__
    if os.environ.get("TXC_TEST_LOOP", "asyncio") == "uvloop":
        assert loop_module.startswith("uvloop")
    else:
        assert loop_module.startswith("asyncio")


def test_asyncio_run_uses_the_chosen_loop_too() -> None:
    async def loop_module() -> str:
        return type(asyncio.get_running_loop()).__module__

    expected = "uvloop" if os.environ.get("TXC_TEST_LOOP") == "uvloop" else "asyncio"
    assert asyncio.run(loop_module()).startswith(expected)


async def test_sandbox_serves_a_client_on_this_loop() -> None:
    async with Sandbox() as box, txc_async.Client(
        api_key=box.api_key, api_secret=box.api_secret, base_url=box.url,
        limiter=txc_async.InProcessLimiter(),
    ) as client:
        assert box.port > 0 and box.url == f"http://127.0.0.1:{box.port}"
        assert await client.ping() is True
        assert await client.main_balance()


def test_a_client_used_from_a_second_event_loop_fails_with_a_transport_error() -> None:
    """A client (its aiohttp session) serves the event loop it was first used in. Used from
    another one (a second asyncio.run), the call fails with a TransportError that says so,
    not with asyncio's RuntimeError."""
    import threading
    import warnings

    from txc_async import TransportError

    ready = threading.Event()
    address: list[str] = []
    stops: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    def serve() -> None:
        async def main() -> None:
            stop = asyncio.Event()
            async with Sandbox() as box:
                address.append(box.url)
                stops.append((asyncio.get_running_loop(), stop))
                ready.set()
                await stop.wait()

        asyncio.run(main())

    server = threading.Thread(target=serve)
    server.start()
    try:
        assert ready.wait(10)
        client = txc_async.Client(base_url=address[0], limiter=txc_async.InProcessLimiter())
        assert asyncio.run(client.ping())

        async def again() -> None:
            try:
                await client.ping()
            finally:
                await client.close()

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)  # the first loop's socket
            try:
                asyncio.run(again())
            except TransportError as error:
                assert "serve the event loop they were first used in" in str(error)
            else:
                raise AssertionError("a call from a second event loop succeeded")
    finally:
        for loop, stop in stops:
            loop.call_soon_threadsafe(stop.set)
        server.join(10)
