"""Rate-limit benchmark: bursts through each limiter against a local server that records arrivals.

For each contender it prints the most arrivals the server saw in any window against the limit,
how many requests a strict server would have refused (429s), the elapsed time against the least
the limit allows, and the sustained rate. Requests reach the server after a random 0-30 ms delay,
like an uneven network. Contenders: txc_async's in-process scheduler, aiolimiter's AsyncLimiter
(the leaky bucket named by the design card), and RedisLimiter from one and from four processes.

    python benchmarks/ratelimit.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiolimiter

import txc_async
from txc_async import RateLimit
from txc_async._transport import AiohttpTransport
from txc_async.sandbox import Sandbox

SCOPE = "main_balance"
PATH = "/api/v4/main-account/balance"


class JitteryTransport:
    """Sends each request after a random delay (0-30 ms by default), like an uneven network, so
    requests reach the server in another order than the limiter admitted them."""

    def __init__(self, seed: int, max_delay: float = 0.03) -> None:
        self._inner = AiohttpTransport()
        self._random = random.Random(seed)
        self._max_delay = max_delay

    async def send(self, method: str, url: Any, *, headers: Any, body: bytes | None,
                   timeout: float) -> Any:
        await asyncio.sleep(self._random.uniform(0, self._max_delay))
        return await self._inner.send(method, url, headers=headers, body=body, timeout=timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()


class AiolimiterBudget:
    """aiolimiter.AsyncLimiter behind the library's Limiter interface, for comparison."""

    def __init__(self) -> None:
        self._limiters: dict[tuple[str, str], aiolimiter.AsyncLimiter] = {}

    async def acquire(self, key_id: str, scope: str, limit: RateLimit) -> None:
        limiter = self._limiters.get((key_id, scope))
        if limiter is None:
            limiter = self._limiters[(key_id, scope)] = aiolimiter.AsyncLimiter(
                limit.max_requests, limit.per_seconds
            )
        await limiter.acquire()

    async def rate_limited(self, key_id: str, scope: str, limit: RateLimit,
                           retry_after: float | None) -> float:
        return 0.0

    def succeeded(self, key_id: str, scope: str) -> None:
        pass

    async def aclose(self) -> None:
        pass


@dataclass
class Result:
    name: str
    requests: int
    peak: int
    refused: int
    elapsed: float
    least: float
    sustained: float


def strict_refusals(arrivals: list[float], limit: RateLimit) -> int:
    """How many arrivals a server admitting at most N in any window would refuse."""
    window: deque[float] = deque()
    refused = 0
    for moment in sorted(arrivals):
        while window and window[0] <= moment - limit.per_seconds:
            window.popleft()
        if len(window) >= limit.max_requests:
            refused += 1
        else:
            window.append(moment)
    return refused


def summarise(name: str, arrivals: list[float], limit: RateLimit, elapsed: float) -> Result:
    stats = txc_async.sandbox.SandboxStats(arrivals={"s": arrivals})
    times = sorted(arrivals)
    count = len(times)
    least = (math.ceil(count / limit.max_requests) - 1) * limit.per_seconds
    # Measured at the server, from the first arrival to the last: process start-up and the
    # last answer's way back are not the limiter's doing.
    span = times[-1] - times[0]
    sustained = (count - limit.max_requests) / span * limit.per_seconds if span > 0 else 0.0
    return Result(name, count, stats.max_in_window("s", limit.per_seconds),
                  strict_refusals(times, limit), span, least, sustained)


async def burst(box: Sandbox, limiter: Any, limit: RateLimit, count: int, seed: int) -> float:
    async with txc_async.Client(
        api_key=box.api_key, api_secret=box.api_secret, base_url=box.url, limiter=limiter,
        rate_limits={SCOPE: limit}, transport=JitteryTransport(seed),
    ) as client:
        began = time.monotonic()
        await asyncio.gather(*(client.main_balance() for _ in range(count)))
        return time.monotonic() - began


_WORKER = """
import asyncio, random, sys, time
sys.path.insert(0, sys.argv[5])
import txc_async
from txc_async import RateLimit, RedisLimiter
from benchmarks.ratelimit import JitteryTransport

async def main():
    url, key, secret, redis_url, _, count, n, w, ns = sys.argv[1:10]
    limit = RateLimit(int(n), float(w))
    limiter = RedisLimiter(redis_url, namespace=ns)
    async with txc_async.Client(api_key=key, api_secret=secret, base_url=url, limiter=limiter,
                                rate_limits={"main_balance": limit},
                                transport=JitteryTransport(int(count))) as client:
        await asyncio.gather(*(client.main_balance() for _ in range(int(count))))
    await limiter.aclose()

asyncio.run(main())
"""


ROOT = str(Path(__file__).resolve().parent.parent)


def _write_worker(folder: str) -> str:
    script = Path(folder) / "worker.py"
    script.write_text(_WORKER)
    return str(script)


async def redis_processes(box: Sandbox, redis_url: str, limit: RateLimit, count: int,
                          processes: int) -> float:
    namespace = f"bench{time.monotonic_ns()}"
    with tempfile.TemporaryDirectory() as folder:
        script = _write_worker(folder)
        began = time.monotonic()
        children = [
            await asyncio.create_subprocess_exec(
                sys.executable, script, box.url, box.api_key, box.api_secret, redis_url,
                ROOT, str(count // processes), str(limit.max_requests), str(limit.per_seconds),
                namespace,
            )
            for _ in range(processes)
        ]
        codes = await asyncio.wait_for(asyncio.gather(*(c.wait() for c in children)), 300)
        elapsed = time.monotonic() - began
    if any(codes):
        raise RuntimeError(f"a worker failed: {codes}")
    return elapsed


def start_redis() -> tuple[subprocess.Popen[bytes], str] | None:
    binary = shutil.which("redis-server")
    if binary is None:
        return None
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return server, f"redis://127.0.0.1:{port}/0"
        except OSError:
            time.sleep(0.05)
    server.terminate()
    return None


async def acquire_cost(rounds: int = 200_000) -> float:
    """Microseconds per admission when there is budget (the fast path)."""
    limiter = txc_async.InProcessLimiter()
    limit = RateLimit(10**9, 1)
    began = time.perf_counter()
    for _ in range(rounds):
        await limiter.acquire("k", "s", limit)
    return (time.perf_counter() - began) / rounds * 1e6


async def main(quick: bool) -> list[Result]:
    limit = RateLimit(100, 0.5) if quick else RateLimit(200, 1.0)
    count = 500 if quick else 1000
    results: list[Result] = []
    contenders: list[tuple[str, Any]] = [
        ("txc_async InProcessLimiter", txc_async.InProcessLimiter()),
        ("aiolimiter.AsyncLimiter", AiolimiterBudget()),
    ]
    for name, limiter in contenders:
        async with Sandbox(enforce_limits=False) as box:
            elapsed = await burst(box, limiter, limit, count, seed=1)
            results.append(summarise(name, box.stats.arrivals[SCOPE], limit, elapsed))
    redis = start_redis()
    if redis is None:
        print("redis-server not found: RedisLimiter rows skipped")
    else:
        server, url = redis
        try:
            for processes in (1, 4):
                async with Sandbox(enforce_limits=False) as box:
                    elapsed = await redis_processes(box, url, limit, count, processes)
                    name = f"txc_async RedisLimiter x{processes} process"
                    name += "es" if processes > 1 else ""
                    results.append(summarise(name, box.stats.arrivals[SCOPE], limit, elapsed))
        finally:
            server.terminate()
            server.wait()
    print(f"limit {limit.max_requests} per {limit.per_seconds:g} s, bursts of {count} requests, "
          f"0-30 ms network jitter; {os.cpu_count()} cores")
    print("span: first to last arrival at the server; least: (ceil(requests/limit) - 1) windows; "
          "efficiency: least / span; sustained: arrivals per window after the first, / limit")
    header = (f"{'limiter':34} {'peak/window':>11} {'limit':>6} {'429s':>5} {'span':>8} "
              f"{'least':>6} {'efficiency':>10} {'sustained':>10}")
    print(header)
    print("-" * len(header))
    for r in results:
        efficiency = r.least / r.elapsed if r.elapsed else 0.0
        print(f"{r.name:34} {r.peak:>11} {limit.max_requests:>6} {r.refused:>5} "
              f"{r.elapsed:>7.2f}s {r.least:>5.1f}s {efficiency:>10.1%} "
              f"{r.sustained / limit.max_requests:>10.1%}")
    print(f"admission with budget to spare: {await acquire_cost():.2f} µs "
          "(InProcessLimiter.acquire, awaited in a loop)")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller bursts, about 15 s")
    asyncio.run(main(parser.parse_args().quick))
