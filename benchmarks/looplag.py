"""Event-loop lag per limiter backend: how late a coroutine that sleeps 1 ms again and again wakes
up while the client makes balance calls against the sandbox (in another process), with each
backend: the in-process limiter, SQLiteLimiter on a file (also while another process takes the
file's write lock for 0.3 s every second), RedisLimiter on a redis-server of its own.

    python benchmarks/looplag.py [--calls 3000] [--concurrency 32] [--quick]

Every backend admits freely (the limits are raised out of the way): what is measured is what the
backend's own work costs the loop. Printed per backend: the calls' time, the lag's p50, p99,
p99.9 and maximum, and each percentile's ratio to the in-process limiter's of the same run.
Traffic goes only to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import txc_async  # noqa: E402
from benchmarks._common import load, machine, start_sandbox, table  # noqa: E402
from tests.support.redis_server import RedisServer, find_redis_server, fresh_namespace  # noqa: E402
from txc_async import InProcessLimiter, Limiter, RateLimit, RedisLimiter, SQLiteLimiter  # noqa: E402

#: Limits far above what the run sends: the backends admit at once, and only their cost shows.
OPEN_LIMITS = {
    "main_balance": RateLimit(10**6, 10.0),
    "main_account": RateLimit(10**6, 10.0),
}
#: The ticker's sleep, seconds.
TICK = 0.001

LOCK_HOLDER = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
print("ready", flush=True)
while True:
    time.sleep(0.7)
    db.execute("BEGIN EXCLUSIVE")
    time.sleep(0.3)
    db.execute("COMMIT")
"""


async def ticker(lags: list[float]) -> None:
    loop = asyncio.get_running_loop()
    while True:
        began = loop.time()
        await asyncio.sleep(TICK)
        lags.append(loop.time() - began - TICK)


def percentile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def measure(
    url: str, key: str, secret: str, limiter: Limiter, calls: int, concurrency: int
) -> tuple[float, list[float]]:
    """The seconds ``calls`` balance calls took, ``concurrency`` at a time, and the loop's lag
    (seconds) at every tick meanwhile."""
    lags: list[float] = []
    async with txc_async.Client(
        key, secret, base_url=url, limiter=limiter, rate_limits=OPEN_LIMITS
    ) as client:
        for _ in range(50):  # warm: connections, the clock, the store's tables
            await client.main_balance()
        left = iter(range(calls))

        async def caller() -> None:
            for _ in left:
                await client.main_balance()

        tick = asyncio.create_task(ticker(lags))
        began = time.perf_counter()
        await asyncio.gather(*(caller() for _ in range(concurrency)))
        took = time.perf_counter() - began
        tick.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await tick
    await limiter.aclose()
    return took, sorted(lags)


@contextlib.asynccontextmanager
async def lock_holder(path: Path) -> AsyncIterator[None]:
    """Another process taking the file's write lock for 0.3 s every second."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", LOCK_HOLDER, str(path), stdout=asyncio.subprocess.PIPE
    )
    try:
        assert process.stdout is not None
        await asyncio.wait_for(process.stdout.readline(), 30)
        yield
    finally:
        process.kill()
        await process.wait()


async def main(calls: int, concurrency: int) -> None:
    print(machine())
    print(load())
    print(f"{calls:,} balance calls, {concurrency} at a time, a ticker sleeping {TICK * 1000:g} ms")
    box = await start_sandbox()
    rows: list[tuple[str, float, list[float]]] = []
    try:
        with tempfile.TemporaryDirectory() as folder:
            backends: list[tuple[str, Callable[[], Limiter], Path | None]] = [
                ("InProcessLimiter", InProcessLimiter, None),
                ("SQLiteLimiter", lambda: SQLiteLimiter(Path(folder) / "a.sqlite"), None),
                ("SQLiteLimiter, file locked 0.3 s/s",
                 lambda: SQLiteLimiter(Path(folder) / "b.sqlite", busy_timeout=30.0),
                 Path(folder) / "b.sqlite"),
            ]
            for name, make, locked in backends:
                limiter = make()
                async with lock_holder(locked) if locked else contextlib.nullcontext():
                    took, lags = await measure(
                        box.url, box.api_key, box.api_secret, limiter, calls, concurrency
                    )
                rows.append((name, took, lags))
            binary = find_redis_server()
            if binary is None:
                print("redis-server not found: RedisLimiter left out")
            else:
                with RedisServer(binary) as server:
                    limiter = RedisLimiter(server.url, namespace=fresh_namespace("lag"))
                    took, lags = await measure(
                        box.url, box.api_key, box.api_secret, limiter, calls, concurrency
                    )
                    rows.append(("RedisLimiter", took, lags))
    finally:
        await box.close()
    base = rows[0][2]
    base_points = [percentile(base, q) for q in (0.5, 0.99, 0.999)]

    def ms(value: float) -> str:
        return f"{value * 1000:.2f}"

    printed = []
    for name, took, lags in rows:
        points = [percentile(lags, q) for q in (0.5, 0.99, 0.999)]
        ratios = "/".join(
            f"{p / b:.1f}" if b > 0 else "-" for p, b in zip(points, base_points, strict=True)
        )
        printed.append((name, f"{took:.2f}", *(ms(p) for p in points), ms(lags[-1]), ratios))
    print(table(printed, ("backend", "calls (s)", "p50 ms", "p99 ms", "p99.9 ms", "max ms",
                          "x in-process (p50/p99/p99.9)")))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--quick", action="store_true", help="1,000 calls")
    args = parser.parse_args()
    asyncio.run(main(1000 if args.quick else args.calls, args.concurrency))
