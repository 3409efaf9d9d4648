"""What many tests share: the mocked service's address and key, a limiter that records what
the client tells it, signed-body decoding, reward rows, and a local aiohttp server."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from aiohttp import web
from aioresponses import aioresponses

from txc_async import Admission, Outcome, RateLimit, RetryPolicy

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

    def conclude(
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
#: its parser (the default, see ``_transports/direct.py``), and ``ClientSession.request``
#: (``AiohttpTransport(direct=False)``, or an aiohttp whose parts differ). Tests of how a
#: request ends run on both.
REQUEST_PATHS = ["direct", "session.request"]


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
