"""A sender process for the shared-limiter tests and the benchmark: it takes its budget from a
limiter shared through a store, then posts to an arrival-recording server, and tells the limiter
how each request ended.

    python -m tests.support.limit_worker STORE HIT_URL COUNT MAX_REQUESTS PER_SECONDS SEED
        [--wait-go] [--linger] [--scope=NAME] [--group=NAME:MAX_REQUESTS:PER_SECONDS]
        [--key=API_KEY_ID]
        [--nonce-namespace=NAMESPACE] [--nonces]

``STORE`` is ``sqlite:PATH``, ``redis:URL:NAMESPACE``, ``redis-cluster:URL:NAMESPACE`` or
``memory:`` (an in-process limiter, forgotten when the process ends). It prints
``ready`` once connected (and with ``--wait-go`` waits for a line on stdin before sending), then
``sent N`` after each request answered, then ``done`` (and with ``--linger`` stays, its limiter
open, until stdin closes). While the store cannot be reached (restarting, say) it asks again
every 50 ms; it exits 0 once every request was answered. Its requests draw on the scope
``main_balance`` of the server ``worker-key`` unless ``--scope`` says another, on the groups
``--group`` names (repeated for several), and take their nonces from the counter of the API key
``--key`` (the server's id when not given); ``--nonces`` prints ``nonce N`` for each (``--nonce-
namespace``: a Redis store's namespace of nonce counters).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import sys
import time
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

import aiohttp

from txc_async import (
    InProcessLimiter,
    Limiter,
    Outcome,
    RateLimit,
    RedisLimiter,
    SQLiteLimiter,
    TransportError,
)


def open_store(spec: str, nonce_namespace: str | None = None) -> Limiter:
    kind, _, rest = spec.partition(":")
    if kind == "memory":
        return InProcessLimiter()
    if kind == "sqlite":
        return SQLiteLimiter(rest)
    url, _, namespace = rest.rpartition(":")
    return RedisLimiter(url, namespace=namespace, nonce_namespace=nonce_namespace,
                        cluster=kind == "redis-cluster")


def options(argv: list[str], name: str) -> list[str]:
    """The values of every ``--name=value`` in ``argv``."""
    prefix = f"--{name}="
    return [arg[len(prefix):] for arg in argv if arg.startswith(prefix)]


def parse_group(text: str) -> tuple[str, RateLimit]:
    name, n, per = text.split(":")
    return name, RateLimit(int(n), float(per))


def nonce_clock() -> int:
    return time.time_ns() // 1_000_000


async def send(
    limiter: Limiter, hit_url: str, count: int, limit: RateLimit, seed: int, concurrency: int = 50,
    *, scope: str = "main_balance", groups: tuple[tuple[str, RateLimit], ...] = (),
    nonce_key: str | None = None, show_nonces: bool = False,
) -> None:
    rng = random.Random(seed)
    left = iter(range(count))
    sent = 0
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

        async def one() -> None:
            nonlocal sent
            for _ in left:
                while True:
                    try:
                        admission = await limiter.acquire(
                            "worker-key", scope, limit, 5.0, nonce_clock, groups=groups,
                            nonce_key=nonce_key,
                        )
                    except TransportError:  # the store is away for a moment
                        await asyncio.sleep(0.05)
                        continue
                    break
                if show_nonces:
                    print(f"nonce {admission.nonce}", flush=True)
                try:
                    await asyncio.sleep(rng.uniform(0, 0.02))  # an uneven network
                    async with session.post(hit_url) as answer:
                        await answer.read()
                except BaseException:
                    limiter.conclude(admission, Outcome.NO_ANSWER)
                    raise
                limiter.conclude(admission, Outcome.ANSWERED)
                sent += 1
                print(f"sent {sent}", flush=True)

        await asyncio.gather(*(one() for _ in range(concurrency)))


async def main(argv: list[str]) -> None:
    spec, hit_url, count, n, per, seed = argv[:6]
    limiter = open_store(spec, next(iter(options(argv, "nonce-namespace")), None))
    try:
        warm = await limiter.acquire("warm-up", "public", RateLimit(10**6, 1), 5.0)
        limiter.conclude(warm, Outcome.ANSWERED)
        print("ready", flush=True)
        if "--wait-go" in argv:
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        await send(
            limiter, hit_url, int(count), RateLimit(int(n), float(per)), int(seed),
            scope=next(iter(options(argv, "scope")), "main_balance"),
            groups=tuple(parse_group(group) for group in options(argv, "group")),
            nonce_key=next(iter(options(argv, "key")), None), show_nonces="--nonces" in argv,
        )
        print("done", flush=True)
        if "--linger" in argv:
            # Stay until stdin closes: the limiter stays open and keeps what it sent.
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    finally:
        await limiter.aclose()



# -- the parent's side: start a worker and follow what it prints --------------------------------


async def start_worker(store_spec: str, hit_url: str, count: int, limit: RateLimit, seed: int,
                       *extra: str) -> asyncio.subprocess.Process:
    """A worker process sending ``count`` requests to ``hit_url`` within ``limit``."""
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.support.limit_worker", store_spec, hit_url,
        str(count), str(limit.max_requests), str(limit.per_seconds), str(seed), *extra,
        cwd=_ROOT, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )


async def read_until(process: asyncio.subprocess.Process, line: bytes) -> None:
    """Wait (at most 30 s a line) until the worker prints ``line``."""
    assert process.stdout is not None
    while True:
        got = await asyncio.wait_for(process.stdout.readline(), 30)
        if not got:
            raise AssertionError(f"the worker ended before printing {line!r}")
        if got.strip() == line:
            return


async def drain(process: asyncio.subprocess.Process) -> int:
    """Read the worker's output to its end; its exit status."""
    assert process.stdout is not None
    while await process.stdout.readline():
        pass
    return await asyncio.wait_for(process.wait(), 60)


@contextlib.asynccontextmanager
async def reaping() -> AsyncIterator[list[asyncio.subprocess.Process]]:
    """A list to put worker processes in; those still running when the block ends are killed."""
    processes: list[asyncio.subprocess.Process] = []
    try:
        yield processes
    finally:
        for process in processes:
            if process.returncode is None:
                process.kill()
                await process.wait()


@contextlib.asynccontextmanager
async def ready_workers(store_spec: str, hit_url: str, count: int, limit: RateLimit,
                        seeds: Iterable[int], *extra: str,
                        ) -> AsyncIterator[list[asyncio.subprocess.Process]]:
    """One worker a seed, as :func:`start_worker` starts them, each connected (``ready``);
    those still running when the block ends are killed."""
    async with reaping() as workers:
        for seed in seeds:
            workers.append(await start_worker(store_spec, hit_url, count, limit, seed, *extra))
        for worker in workers:
            await read_until(worker, b"ready")
        yield workers


async def go(workers: list[asyncio.subprocess.Process]) -> None:
    """Let workers started with ``--wait-go`` send."""
    for worker in workers:
        assert worker.stdin is not None
        worker.stdin.write(b"go\n")
        await worker.stdin.drain()

_ROOT = Path(__file__).resolve().parents[2]

if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
