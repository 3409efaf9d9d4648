"""Shared fixtures: a mocked HTTP layer, a recording limiter, clients wired to both, and one
redis-server for the run. The package's pytest plugin (``txc_async.pytest_plugin``, registered
by its entry point) gives every test a runtime of its own (fresh estimates of servers' clocks,
nonce sources and default limiter)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from aioresponses import aioresponses

import txc_async
from txc_async.transports import AiohttpTransport

from .support.common import BASE, KEY, REQUEST_PATHS, SECRET, RecordingLimiter, fast_retry


def _allow_aiohttp_3_14() -> None:
    """aiohttp 3.14 added a required ``stream_writer`` argument to ClientResponse that
    aioresponses 0.7 does not pass; give its mocked responses one."""
    import inspect
    import types

    import aiohttp
    import aioresponses.core

    if "stream_writer" not in inspect.signature(aiohttp.ClientResponse.__init__).parameters:
        return

    class _Response(aiohttp.ClientResponse):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.setdefault("stream_writer", types.SimpleNamespace(output_size=0))
            super().__init__(*args, **kwargs)

    aioresponses.core.ClientResponse = _Response  # type: ignore[misc]


_allow_aiohttp_3_14()


def _choose_event_loop() -> None:
    """``TXC_TEST_LOOP=uvloop`` runs the whole suite on uvloop: every loop the tests create,
    pytest-asyncio's and ``asyncio.run``'s alike, comes from the policy set here."""
    import asyncio
    import os

    choice = os.environ.get("TXC_TEST_LOOP", "asyncio")
    if choice == "uvloop":
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    elif choice != "asyncio":
        raise pytest.UsageError(f"TXC_TEST_LOOP must be 'asyncio' or 'uvloop', not {choice!r}")


_choose_event_loop()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The uvloop pass leaves out tests marked ``asyncio_only``: those that run no event loop in
    this process (a subprocess runs asyncio's loop whatever this one runs), and the second
    request path's run of tests the uvloop pass runs on the first."""
    import os

    if os.environ.get("TXC_TEST_LOOP") != "uvloop":
        return
    kept = [item for item in items if item.get_closest_marker("asyncio_only") is None]
    if len(kept) != len(items):
        config.hook.pytest_deselected(
            items=[item for item in items if item.get_closest_marker("asyncio_only") is not None]
        )
        items[:] = kept

@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """The URL of a redis-server kept for the whole run; each test takes a namespace of its own
    (``fresh_namespace``). Without the binary the test is skipped."""
    from .support.redis_server import RedisServer, require_redis_server

    with RedisServer(require_redis_server()) as server:
        yield server.url


@pytest.fixture
def mocked() -> Iterator[aioresponses]:
    with aioresponses() as m:
        yield m


@pytest.fixture
def limiter() -> RecordingLimiter:
    return RecordingLimiter()


@pytest.fixture
async def client(limiter: RecordingLimiter) -> AsyncIterator[txc_async.Client]:
    """A client of the mocked service: its requests go through ``ClientSession.request``, which
    aioresponses replaces (``mocked``), or to the address its test gives it."""
    async with txc_async.Client(
        api_key=KEY, api_secret=SECRET, base_url=BASE, limiter=limiter, retry=fast_retry(),
        transport=AiohttpTransport(direct=False),
    ) as c:
        yield c


@pytest.fixture(
    params=[REQUEST_PATHS[0], pytest.param(REQUEST_PATHS[1], marks=pytest.mark.asyncio_only)]
)
def request_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a test on each request path: every ``AiohttpTransport`` made in the test without a
    ``direct=`` of its own, the one a ``Client`` makes for itself included, takes the path."""
    from txc_async._transports.direct import DIRECT

    if request.param == "session.request":
        defaults = AiohttpTransport.__init__.__kwdefaults__
        assert defaults is not None
        monkeypatch.setitem(defaults, "direct", False)
    elif not DIRECT:
        pytest.skip("this aiohttp's parts cannot make an exchange alone")
    return str(request.param)
