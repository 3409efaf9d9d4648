"""RedisLimiter against a real redis-server on a free loopback port: one budget shared by several
limiters and several processes, pauses, key names, and an unreachable store."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

import txc_async
from txc_async import RateLimit, RedisLimiter, TransportError
from txc_async.sandbox import Sandbox, SandboxStats

pytestmark = pytest.mark.redis


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is not installed; CI must install it (apt-get)")
        pytest.skip("redis-server is not installed")
    port = _free_port()
    folder = tmp_path_factory.mktemp("redis")
    server = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(folder)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture
async def limiter(redis_url: str) -> AsyncIterator[RedisLimiter]:
    box = RedisLimiter(redis_url, namespace=f"t{time.monotonic_ns()}")
    yield box
    await box.aclose()


def max_in_window(times: list[float], span: float) -> int:
    return SandboxStats(arrivals={"s": times}).max_in_window("s", span)


async def test_several_limiters_share_one_budget(redis_url: str) -> None:
    namespace = f"shared{time.monotonic_ns()}"
    limiters = [RedisLimiter(redis_url, namespace=namespace) for _ in range(3)]
    limit = RateLimit(20, 0.5)
    admitted: list[float] = []

    async def one(box: RedisLimiter) -> None:
        await box.acquire("key-hash", "mining_rewards", limit)
        admitted.append(time.monotonic())

    began = time.monotonic()
    await asyncio.gather(*(one(limiters[i % 3]) for i in range(90)))
    elapsed = time.monotonic() - began
    for box in limiters:
        await box.aclose()
    assert max_in_window(admitted, 0.5) <= 20
    least = (90 // 20) * 0.5  # (ceil(90/20) - 1) windows
    assert elapsed <= least * 1.25 + 0.3


_WORKER = """
import asyncio, json, sys, time
from txc_async import RateLimit, RedisLimiter

async def main():
    box = RedisLimiter(sys.argv[1], namespace=sys.argv[2])
    limit = RateLimit(15, 0.5)
    times = []
    async def one():
        await box.acquire("key-hash", "main_balance", limit)
        times.append(time.time())
    await asyncio.gather(*(one() for _ in range(30)))
    await box.aclose()
    print(json.dumps(times))

asyncio.run(main())
"""


async def test_several_processes_share_one_budget(redis_url: str, tmp_path: Path) -> None:
    script = tmp_path / "worker.py"
    script.write_text(_WORKER)
    namespace = f"procs{time.monotonic_ns()}"
    processes = [
        await asyncio.create_subprocess_exec(
            sys.executable, str(script), redis_url, namespace, stdout=asyncio.subprocess.PIPE
        )
        for _ in range(3)
    ]
    outputs = await asyncio.wait_for(
        asyncio.gather(*(p.communicate() for p in processes)), timeout=60
    )
    times = [t for out, _ in outputs for t in json.loads(out)]
    assert len(times) == 90
    assert max_in_window(times, 0.5) <= 15


async def test_a_pause_holds_every_process(limiter: RedisLimiter, redis_url: str) -> None:
    limit = RateLimit(100, 1)
    await limiter.acquire("k", "public", limit)
    pause = await limiter.rate_limited("k", "public", limit, 0.4)
    assert pause == 0.4
    other = RedisLimiter(redis_url, namespace=limiter._namespace)
    began = time.monotonic()
    await other.acquire("k", "public", limit)
    assert time.monotonic() - began >= 0.35
    await other.aclose()
    # Backoff without Retry-After: 1 s doubling, with jitter; success ends the streak.
    limiter._random = lambda: 0.0
    assert await limiter.rate_limited("k", "s", limit, None) == 1.0
    assert await limiter.rate_limited("k", "s", limit, None) == 2.0
    limiter.succeeded("k", "s")
    assert await limiter.rate_limited("k", "s", limit, None) == 1.0


async def test_budget_keys_hold_a_key_hash_never_the_key(redis_url: str) -> None:
    import redis.asyncio as redis_asyncio

    namespace = f"names{time.monotonic_ns()}"
    limiter = RedisLimiter(redis_url, namespace=namespace)
    async with Sandbox() as box, txc_async.Client(
        api_key=box.api_key, api_secret=box.api_secret, base_url=box.url, limiter=limiter
    ) as client:
        await client.main_balance()
        await client.ping()
    connection = redis_asyncio.Redis.from_url(redis_url)
    keys = sorted(k.decode() for k in await connection.keys(f"{namespace}:*"))
    await connection.aclose()
    await limiter.aclose()
    assert len(keys) == 3
    assert [k.split(":")[1] for k in keys] == ["main_balance", "nonce", "public"]
    for key in keys:
        assert box.api_key not in key and box.api_secret not in key
        assert len(key.split(":")[2]) == 32
    assert len({k.split(":")[2] for k in keys}) == 1


async def test_an_unreachable_store_fails_the_request_not_the_limit() -> None:
    limiter = RedisLimiter(f"redis://:hunter2@127.0.0.1:{_free_port()}/0")
    with pytest.raises(TransportError) as caught:
        await limiter.acquire("k", "public", RateLimit(10, 1))
    assert "rate-limit store unreachable" in str(caught.value)
    assert "hunter2" not in str(caught.value) and "hunter2" not in repr(limiter)
    assert caught.value.may_have_reached_server is False
    async with Sandbox() as box, txc_async.Client(base_url=box.url, limiter=limiter) as client:
        with pytest.raises(TransportError, match="rate-limit store"):
            await client.ping()
        assert box.stats.received["/api/v4/public/ping"] == 0
    await limiter.aclose()


async def test_a_client_on_redis_never_exceeds_the_limit_at_the_server(redis_url: str) -> None:
    limit = RateLimit(15, 0.5)
    namespace = f"client{time.monotonic_ns()}"
    async with Sandbox(rate_limits={"main_balance": limit}) as box:
        limiters = [RedisLimiter(redis_url, namespace=namespace) for _ in range(2)]
        clients = [
            txc_async.Client(api_key=box.api_key, api_secret=box.api_secret, base_url=box.url,
                             limiter=lim, rate_limits={"main_balance": limit})
            for lim in limiters
        ]
        await asyncio.gather(*(clients[i % 2].main_balance() for i in range(60)))
        for client in clients:
            await client.close()
        for lim in limiters:
            await lim.aclose()
        assert box.stats.rate_limited == 0
        assert box.stats.max_in_window("main_balance", 0.5) <= 15


async def test_processes_sharing_a_key_draw_distinct_nonces(redis_url: str) -> None:
    namespace = f"nonces{time.monotonic_ns()}"
    limiters = [RedisLimiter(redis_url, namespace=namespace) for _ in range(4)]
    limit = RateLimit(10_000, 1)
    nonces = await asyncio.gather(
        *(limiters[i % 4].acquire("key-hash", "main_balance", limit) for i in range(400))
    )
    for box in limiters:
        await box.aclose()
    assert len(set(nonces)) == 400
    assert abs(min(nonces) / 1000 - time.time()) < 5


async def test_sandbox_sees_no_nonce_refused_from_four_clients_on_one_key(redis_url: str) -> None:
    namespace = f"fourclients{time.monotonic_ns()}"
    async with Sandbox() as box:
        limiters = [RedisLimiter(redis_url, namespace=namespace) for _ in range(4)]
        # Separate nonce sources stand for separate processes.
        from txc_async._signing import NonceSource, Signer

        clients = []
        for lim in limiters:
            client = txc_async.Client(api_key=box.api_key, api_secret=box.api_secret,
                                      base_url=box.url, limiter=lim)
            client._signer = Signer(box.api_key, box.api_secret, NonceSource())
            clients.append(client)
        await asyncio.gather(*(clients[i % 4].main_balance() for i in range(200)))
        for client in clients:
            await client.close()
        for lim in limiters:
            await lim.aclose()
        assert box.stats.nonce_refused == 0
