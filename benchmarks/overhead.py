"""The client's own cost per call, by part, with the network cut out: main_balance through an
in-memory transport that returns a recorded answer, against the lean typed code doing the same
(sign, send, decode), with one part of the client taken away at a time. Each figure is measured
twice: with warm caches (calls back to back), and with the CPU caches evicted before every call,
which is what a real call finds after aiohttp, the kernel and the event loop have run.

    python benchmarks/overhead.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import dataclasses
import hashlib
import hmac
import itertools
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from yarl import URL

import txc_async
from txc_async._limiters.base import Admission, BaseLimiter, Groups, Outcome, RateLimit
from txc_async._models import _Balance
from txc_async._nonces.clock import MAX_NONCE_LEAD_MS, ServerClock
from txc_async._nonces.sources import NonceSource
from txc_async._operations import BALANCE
from txc_async._signing import Signer
from txc_async._transports.base import RawResponse
from txc_async._transports.mock import MockRequest

try:
    from benchmarks._common import load, machine
except ImportError:  # run as a script from the benchmarks folder
    from _common import load, machine  # type: ignore[no-redef]

ANSWER = RawResponse(
    200,
    {"Date": "Sun, 22 Nov 2026 22:00:00 GMT", "Content-Type": "application/json"},
    b'{"BTC":{"main_balance":"0.5"},"ETH":{"main_balance":"1.25"},'
    b'"USDT":{"main_balance":"1000"},"XRP":{"main_balance":"10"},"TRX":{"main_balance":"3.3"}}',
)
UNLIMITED = {scope: RateLimit(10**9, 1.0) for scope in txc_async.DEFAULT_RATE_LIMITS}
SECRET = "s" * 32
#: Bigger than the CPU's last-level cache: writing one byte per line of it evicts the caches.
_EVICT = bytearray(16 * 2**20)
_EVICT_ZEROS = bytes(len(_EVICT[::64]))


def answer_at_once(request: MockRequest) -> RawResponse:
    """Answers every request with the recorded answer, at once."""
    return ANSWER


class NoLimiter(BaseLimiter):
    """Admits everything and keeps nothing: the limiter taken away. It takes groups (and drops
    them), as the package's limiters do, so that the client calls it as it calls them."""

    takes_groups = True

    def try_acquire(self, key_id: str, scope: str, limit: RateLimit, timeout: float, *,
                    groups: Groups = ()) -> Admission:
        return Admission(key_id, scope, limit, 0.0, time.monotonic() + timeout)

    async def acquire(self, key_id: str, scope: str, limit: RateLimit, timeout: float,
                      nonce_clock: Callable[[], int] | None = None, *, groups: Groups = (),
                      nonce_key: str | None = None) -> Admission:
        return self.try_acquire(key_id, scope, limit, timeout)

    def conclude(self, admission: Admission, outcome: Outcome,
                 retry_after: float | None = None) -> float:
        return 0.0

    def effective_limit(self, key_id: str, scope: str, limit: RateLimit) -> RateLimit:
        return limit

    async def aclose(self) -> None:
        pass


class Lean:
    """The lean typed code: nonce, compact JSON, base64, HMAC-SHA512, send, cached decoder."""

    def __init__(self) -> None:
        self.url = URL("http://127.0.0.1/api/v4/main-account/balance")
        self.secret = SECRET.encode()
        self.last_nonce = 0
        self.transport = txc_async.MockTransport(answer_at_once)

    async def post(self, path: str, params: dict[str, Any]) -> Any:
        now = time.time_ns() // 1_000_000
        nonce = self.last_nonce = now if now > self.last_nonce else self.last_nonce + 1
        body = _encode({**params, "request": path, "nonce": str(nonce), "nonceWindow": True})
        payload = base64.b64encode(body)
        headers = {
            "Content-Type": "application/json",
            "X-TXC-APIKEY": "k",
            "X-TXC-PAYLOAD": payload.decode("ascii"),
            "X-TXC-SIGNATURE": hmac.new(self.secret, payload, hashlib.sha512).hexdigest(),
        }
        raw = await self.transport.send("POST", self.url, headers=headers, body=body, timeout=10)
        return _decode_balance(raw.body)

    def main_balance(self) -> Awaitable[Any]:
        return self.post(BALANCE.path, {})


_decode_balance = msgspec.json.Decoder(dict[str, _Balance]).decode


class TickingClock(ServerClock):
    """A server clock that moves one millisecond per reading: the nonces never run ahead of it,
    so that no call waits for the clock (millions of calls per second on one key)."""

    def __init__(self) -> None:
        super().__init__()
        self._ticks = itertools.count(time.time_ns() // 1_000_000)

    def reading(self) -> tuple[int, int]:
        return next(self._ticks), MAX_NONCE_LEAD_MS


def _encoder() -> Callable[[Any], bytes]:
    import msgspec

    return msgspec.json.Encoder().encode


_encode = _encoder()


def client(limiter: Any = None) -> txc_async.Client:
    made = txc_async.Client(
        api_key="k", api_secret=SECRET, base_url="http://127.0.0.1", rate_limits=UNLIMITED,
        limiter=limiter or txc_async.InProcessLimiter(),
        transport=txc_async.MockTransport(answer_at_once),
    )
    made._pipeline.signer = Signer("k", SECRET, nonces=NonceSource(TickingClock()))
    return made


async def measure(calls: dict[str, Callable[[], Awaitable[Any]]], rounds: int, count: int,
                  evict: bool) -> dict[str, float]:
    """Median seconds per call of each contender, alternating round by round."""
    seconds: dict[str, list[float]] = {name: [] for name in calls}
    order = list(calls)
    for number in range(rounds):
        for name in order if number % 2 == 0 else order[::-1]:
            call = calls[name]
            spent = 0.0
            for _ in range(count):
                if evict:
                    _EVICT[::64] = _EVICT_ZEROS
                began = time.perf_counter()
                await call()
                spent += time.perf_counter() - began
            seconds[name].append(spent / count)
    return {name: statistics.median(values) for name, values in seconds.items()}


async def run(quick: bool) -> dict[str, dict[str, float]]:
    full = client()
    bare = client(NoLimiter())
    pipeline = bare._pipeline
    retry = txc_async.RetryPolicy()
    raw_balance = dataclasses.replace(BALANCE, decode=_decode_balance)
    lean = Lean()
    calls: dict[str, Callable[[], Awaitable[Any]]] = {
        "txc_async": full.main_balance,
        "without the limiter": bare.main_balance,
        "pipeline alone": lambda: pipeline.call(raw_balance, {}, 10.0, retry),
        "lean": lean.main_balance,
    }
    rounds = 8 if quick else 30
    figures = {
        "warm": await measure(calls, rounds, 500 if quick else 2000, evict=False),
        "evicted": await measure(calls, rounds, 50 if quick else 200, evict=True),
    }
    await full.close()
    await bare.close()
    return figures


def main(quick: bool) -> dict[str, dict[str, float]]:
    figures = asyncio.run(run(quick))
    print(f"the client's own cost per main_balance call, network cut out; {machine()}; {load()}")
    print("medians of alternating rounds; 'evicted': the CPU caches evicted before every call")
    parts = (
        ("limiter: budget log, locks, Admission, settle", "txc_async", "without the limiter"),
        ("client method, balance's second walk", "without the limiter", "pipeline alone"),
        ("pipeline: call registry, counters, deadline, classifier, Signer",
         "pipeline alone", "lean"),
    )
    print(f"  {'part of the client':66} {'warm':>9} {'evicted':>9}")
    for label, ours, without in parts:
        cells = "".join(
            f" {(figures[kind][ours] - figures[kind][without]) * 1e6:7.2f}µs"
            for kind in ("warm", "evicted")
        )
        print(f"  {label:66}{cells}")
    total = [figures[kind]["txc_async"] - figures[kind]["lean"] for kind in ("warm", "evicted")]
    print(f"  {'total over the lean code':66} {total[0] * 1e6:7.2f}µs {total[1] * 1e6:7.2f}µs")
    lean = [figures[kind]["lean"] for kind in ("warm", "evicted")]
    print(f"  {'the lean code itself (sign, send, decode)':66} {lean[0] * 1e6:7.2f}µs "
          f"{lean[1] * 1e6:7.2f}µs")
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    main(parser.parse_args().quick)
