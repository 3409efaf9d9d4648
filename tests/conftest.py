"""Shared fixtures: a mocked HTTP layer, a recording limiter, clients wired to both, and one
redis-server for the run. The package's pytest plugin (``txc_async.pytest_plugin``, registered
by its entry point) gives every test fresh estimates of servers' clocks."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from aiohttp import web
from aioresponses import aioresponses

import txc_async
from txc_async import Admission, Outcome, RateLimit, RetryPolicy


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

BASE = "https://api.example.test"
KEY = "test-key"
SECRET = "test-secret"


class RecordingLimiter:
    """A limiter that admits at once and records what the client told it."""

    def __init__(self) -> None:
        self.acquired: list[str] = []
        self.paused: list[tuple[str, float | None]] = []
        self.outcomes: list[Outcome] = []

    @property
    def successes(self) -> int:
        return self.outcomes.count(Outcome.ANSWERED)

    def try_acquire(
        self, key_id: str, scope: str, limit: RateLimit, timeout: float
    ) -> Admission | None:
        self.acquired.append(scope)
        now = time.monotonic()
        return Admission(key_id, scope, limit, now, now + timeout)

    async def acquire(
        self, key_id: str, scope: str, limit: RateLimit, timeout: float,
        nonce_clock: Callable[[], int] | None = None,
    ) -> Admission:
        raise AssertionError("try_acquire always admits")

    def settle(
        self, admission: Admission, outcome: Outcome, retry_after: float | None = None
    ) -> float:
        self.outcomes.append(outcome)
        if outcome is Outcome.RATE_LIMITED:
            self.paused.append((admission.scope, retry_after))
        return 0.0

    def effective_limit(self, key_id: str, scope: str, limit: RateLimit) -> RateLimit:
        return limit

    async def aclose(self) -> None:
        pass


def fast_retry(**kwargs: Any) -> RetryPolicy:
    """Retries with no waiting, so tests run at full speed."""
    return RetryPolicy(backoff_base=0.0, max_retry_after=0.0, **kwargs)


def decode_signed(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The JSON body of a request captured by aioresponses, after checking its signature."""
    body: bytes = kwargs["data"]
    headers = kwargs["headers"]
    payload = base64.b64encode(body).decode()
    assert headers["X-TXC-PAYLOAD"] == payload
    expected = hmac.new(SECRET.encode(), payload.encode(), hashlib.sha512).hexdigest()
    assert headers["X-TXC-SIGNATURE"] == expected
    assert headers["X-TXC-APIKEY"] == KEY
    assert headers["Content-Type"] == "application/json"
    assert b" " not in body
    decoded: dict[str, Any] = json.loads(body)
    return decoded


def requests_to(mocked: aioresponses, path: str) -> list[dict[str, Any]]:
    """Every request aioresponses captured for ``path``, oldest first."""
    found: list[dict[str, Any]] = []
    for (_method, url), calls in mocked.requests.items():
        if url.path == path:
            found.extend(call.kwargs for call in calls)
    return found


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """The URL of a redis-server kept for the whole run; each test takes a namespace of its own
    (``fresh_namespace``). Without the binary the test is skipped."""
    from ._redis_server import RedisServer, require_redis_server

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
    async with txc_async.Client(
        api_key=KEY, api_secret=SECRET, base_url=BASE, limiter=limiter, retry=fast_retry()
    ) as c:
        yield c


def serve_rewards(mocked: aioresponses, records: list[dict[str, Any]]) -> None:
    """Answer reward queries like the service: newest first, filtered by account and from/to,
    sliced by offset and limit (offset at most 10,000)."""
    from aioresponses import CallbackResult

    def answer(url: Any, **kwargs: Any) -> CallbackResult:
        body = decode_signed(kwargs)
        chosen = [
            r for r in records
            if body.get("from", 0) <= r["date"] <= body.get("to", 2**62)
            and body.get("account", r["miningAccountName"]) == r["miningAccountName"]
        ]
        chosen.sort(key=lambda r: (-r["date"], r["miningAccountName"]))
        offset, limit = body.get("offset", 0), body.get("limit", 30)
        assert 0 <= offset <= 10000 and 1 <= limit <= 100
        return CallbackResult(
            payload={"offset": offset, "limit": limit, "data": chosen[offset : offset + limit]}
        )

    mocked.post(BASE + "/api/v4/mining/rewards", callback=answer, repeat=True)


def make_rewards(accounts: int, days: int, start: int = 1704067200) -> list[dict[str, Any]]:
    """Daily reward rows of ``accounts`` accounts over ``days`` days."""
    return [
        {
            "miningAccountName": f"acc_{a:03d}", "totalReward": f"0.{a:04d}{d:04d}",
            "reward": f"0.{a:04d}{d:04d}", "fee": "0", "fppsRate": "0.000001",
            "hashRate": "1 TH/s", "date": start + d * 86400,
        }
        for d in range(days)
        for a in range(accounts)
    ]


def nonce_lateness() -> tuple[Any, list[int]]:
    """An aiohttp trace config and the list it fills: for every signed request as it leaves,
    how many milliseconds its nonce is behind this machine's clock."""
    import aiohttp

    late: list[int] = []

    async def on_request_start(session: Any, context: Any,
                               params: aiohttp.TraceRequestStartParams) -> None:
        payload = params.headers.get("X-TXC-PAYLOAD")
        if payload is not None:
            nonce = int(json.loads(base64.b64decode(payload))["nonce"])
            late.append(round(time.time() * 1000) - nonce)

    trace = aiohttp.TraceConfig()
    trace.on_request_start.append(on_request_start)
    return trace, late


#: The request paths of a session the client makes: written on aiohttp's connection and read by
#: its parser (the default, see ``_direct.py``), and ``ClientSession.request`` (an aiohttp
#: whose parts differ). Tests of how a request ends run on both.
REQUEST_PATHS = ["direct", "session.request"]


@pytest.fixture(
    params=[REQUEST_PATHS[0], pytest.param(REQUEST_PATHS[1], marks=pytest.mark.asyncio_only)]
)
def request_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    import txc_async._transports.default as transport
    from txc_async._transports.direct import DIRECT

    if request.param == "session.request":
        monkeypatch.setattr(
            transport.DirectExchange, "for_session", lambda session, max_answer_bytes: None
        )
    elif not DIRECT:
        pytest.skip("this aiohttp's parts cannot make an exchange alone")
    return str(request.param)


@contextlib.asynccontextmanager
async def served(app: web.Application) -> AsyncIterator[str]:
    """``app`` served on a free port of 127.0.0.1: its base URL, until the block ends."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()
