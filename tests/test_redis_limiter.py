"""RedisLimiter against a real redis-server on a free loopback port: one budget shared by several
limiters and several processes (checked at a real server), FIFO and cancellation, pauses, key
names and expiry, nonces, an unreachable store, and the import without redis-py."""

from __future__ import annotations

import asyncio
import math
import os
import random
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

import txc_async
from txc_async import RateLimit, RedisLimiter, TransportError
from txc_async.sandbox import Sandbox

from ._arrival_server import ArrivalServer, max_in_window, strict_refusals
from ._redis_server import RedisServer, free_port, require_redis_server

pytestmark = pytest.mark.redis

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with RedisServer(require_redis_server()) as server:
        yield server.url


_namespaces = iter(range(10**9))


def fresh_namespace() -> str:
    """A namespace of its own for each test, so budgets never carry over."""
    return f"t{os.getpid()}n{next(_namespaces)}"


@pytest.fixture
async def limiter(redis_url: str) -> AsyncIterator[RedisLimiter]:
    box = RedisLimiter(redis_url, namespace=fresh_namespace())
    yield box
    await box.aclose()


@pytest.fixture
async def store(redis_url: str) -> AsyncIterator[Any]:
    """A plain connection to the test Redis, to look at what the limiter wrote."""
    import redis.asyncio as redis_asyncio

    connection = redis_asyncio.Redis.from_url(redis_url, decode_responses=True)
    yield connection
    await connection.aclose()


async def _fire(server: ArrivalServer, acquire: Callable[[], Coroutine[Any, Any, object]],
                count: int, seed: int) -> None:
    """``count`` requests at once: each waits for ``acquire``, then a random 0-30 ms (an uneven
    network), then reaches the server."""
    rng = random.Random(seed)
    delays = [rng.uniform(0, 0.03) for _ in range(count)]
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

        async def one(delay: float) -> None:
            await acquire()
            await asyncio.sleep(delay)
            async with session.post(server.hit_url("b")) as answer:
                await answer.read()

        await asyncio.gather(*(one(d) for d in delays))


# -- the guarantee -----------------------------------------------------------------------------


async def test_several_limiters_share_one_budget_at_the_server(redis_url: str) -> None:
    namespace = fresh_namespace()
    limiters = [RedisLimiter(redis_url, namespace=namespace) for _ in range(3)]
    limit = RateLimit(20, 0.5)
    count = 60
    turn = iter(range(count))

    async def acquire() -> object:
        return await limiters[next(turn) % 3].acquire("key-hash", "mining_rewards", limit, 10.0)

    async with ArrivalServer() as server:
        await _fire(server, acquire, count, seed=1)
    for box in limiters:
        await box.aclose()
    arrivals = server.arrivals["b"]
    assert len(arrivals) == count
    assert max_in_window(arrivals, 0.5) <= 20
    assert strict_refusals(arrivals, 20, 0.5) == 0
    least = (count // 20 - 1) * 0.5
    assert max(arrivals) - min(arrivals) <= 1.2 * least


_WORKER = """
import asyncio, random, sys
import aiohttp
from txc_async import RateLimit, RedisLimiter

async def main():
    redis_url, namespace, hit_url, count, n, w, seed = sys.argv[1:8]
    limit = RateLimit(int(n), float(w))
    box = RedisLimiter(redis_url, namespace=namespace)
    rng = random.Random(int(seed))
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        await box.acquire("warm-up", "public", limit, 10.0)  # connected before the start
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)

        async def one():
            await box.acquire("key-hash", "main_balance", limit, 10.0)
            await asyncio.sleep(rng.uniform(0, 0.03))
            async with session.post(hit_url) as answer:
                await answer.read()

        await asyncio.gather(*(one() for _ in range(int(count))))
    await box.aclose()

asyncio.run(main())
"""


async def test_several_processes_share_one_budget_at_the_server(redis_url: str) -> None:
    namespace = fresh_namespace()
    limit = RateLimit(15, 0.5)
    async with ArrivalServer() as server:
        workers = [
            await asyncio.create_subprocess_exec(
                sys.executable, "-c", _WORKER, redis_url, namespace, server.hit_url("b"), "20",
                str(limit.max_requests), str(limit.per_seconds), str(seed), cwd=ROOT,
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            )
            for seed in range(3)
        ]
        try:
            for worker in workers:
                assert worker.stdout is not None
                assert await asyncio.wait_for(worker.stdout.readline(), 20) == b"ready\n"
            for worker in workers:
                assert worker.stdin is not None
                worker.stdin.write(b"go\n")
                await worker.stdin.drain()
            codes = await asyncio.wait_for(asyncio.gather(*(w.wait() for w in workers)), 20)
        finally:
            for worker in workers:
                if worker.returncode is None:
                    worker.kill()
                    await worker.wait()
    assert codes == [0, 0, 0]
    arrivals = server.arrivals["b"]
    assert len(arrivals) == 60
    assert max_in_window(arrivals, 0.5) <= 15
    assert strict_refusals(arrivals, 15, 0.5) == 0
    assert max(arrivals) - min(arrivals) <= 1.2 * (60 // 15 - 1) * 0.5


async def test_a_lowered_limit_counts_what_the_log_already_holds(
    limiter: RedisLimiter, store: Any
) -> None:
    await asyncio.gather(*(limiter.acquire("k", "s", RateLimit(5, 1), 10.0) for _ in range(5)))
    began = time.monotonic()
    await limiter.acquire("k", "s", RateLimit(2, 1), 10.0)
    assert time.monotonic() - began >= 1.0  # until the 4th of 5 left the window of 1.05 s
    assert 1 <= await store.zcard(limiter.budget_key("k", "s")) <= 2


# -- FIFO and cancellation within a process ----------------------------------------------------


async def test_waiters_of_one_process_are_admitted_first_in_first_out(
    limiter: RedisLimiter,
) -> None:
    limit = RateLimit(2, 0.25)
    order: list[int] = []

    async def one(i: int) -> None:
        await limiter.acquire("k", "s", limit, 10.0)
        order.append(i)

    tasks = []
    for i in range(8):
        tasks.append(asyncio.create_task(one(i)))
        await asyncio.sleep(0)
    await asyncio.gather(*tasks)
    assert order == list(range(8))


async def test_a_cancelled_waiter_consumes_no_budget_and_the_next_proceeds(
    limiter: RedisLimiter, store: Any
) -> None:
    limit = RateLimit(1, 0.4)  # window 0.45 s
    await limiter.acquire("k", "s", limit, 10.0)
    began = time.monotonic()
    head = asyncio.create_task(limiter.acquire("k", "s", limit, 10.0))
    await asyncio.sleep(0.05)
    second = asyncio.create_task(limiter.acquire("k", "s", limit, 10.0))
    await asyncio.sleep(0.05)
    head.cancel()
    await second
    assert 0.4 <= time.monotonic() - began < 0.8  # it took the slot the head gave up
    assert head.cancelled()
    assert await store.zcard(limiter.budget_key("k", "s")) == 1


async def test_a_waiter_cancelled_while_redis_answers_gives_its_slot_back(
    redis_url: str, store: Any
) -> None:
    limiter = RedisLimiter(redis_url, namespace=fresh_namespace())
    limit = RateLimit(5, 10)
    await limiter.acquire("warm-up", "s", limit, 10.0)  # a connection is open: the next call sends
    key = limiter.budget_key("k", "s")
    for _ in range(5):
        task = asyncio.create_task(limiter.acquire("k", "s", limit, 10.0))
        await asyncio.sleep(0)  # the script is on its way to Redis, the answer is not back
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    await limiter.aclose()  # waits for the slots to be given back
    assert await store.zcard(key) == 0


# -- keys --------------------------------------------------------------------------------------


async def test_keys_hold_the_namespace_scope_and_key_id_only_and_expire(
    limiter: RedisLimiter, store: Any
) -> None:
    limit = RateLimit(10, 2)  # window 2.1 s
    ns = limiter.namespace
    await limiter.acquire("a1b2c3", "main_balance", limit, 10.0)
    await limiter.acquire("a1b2c3", "public", limit, 10.0)
    keys = sorted(await store.keys(f"{ns}:*"))
    assert keys == [f"{ns}:main_balance:a1b2c3", f"{ns}:nonce:a1b2c3", f"{ns}:public:a1b2c3"]
    assert 2100 < await store.pttl(f"{ns}:public:a1b2c3") <= 3100
    assert 0 < await store.pttl(f"{ns}:nonce:a1b2c3") <= 60_000
    members = await store.zrange(f"{ns}:main_balance:a1b2c3", 0, -1)
    assert len(members) == 1 and "a1b2c3" not in members[0]


async def test_a_client_keys_its_budgets_by_a_hash_never_the_api_key(
    redis_url: str, store: Any
) -> None:
    limiter = RedisLimiter(redis_url, namespace=fresh_namespace())
    async with Sandbox() as box, txc_async.Client(
        api_key=box.api_key, api_secret=box.api_secret, base_url=box.url, limiter=limiter
    ) as client:
        await client.main_balance()
        await client.ping()
    await limiter.aclose()
    keys = sorted(await store.keys(f"{limiter.namespace}:*"))
    assert [k.split(":")[1] for k in keys] == ["main_balance", "nonce", "public"]
    for key in keys:
        assert box.api_key not in key and box.api_secret not in key
    assert len({k.split(":")[2] for k in keys}) == 1  # one key id for every scope


# -- nonces ------------------------------------------------------------------------------------


async def test_limiters_sharing_a_key_draw_distinct_increasing_nonces(redis_url: str) -> None:
    namespace = fresh_namespace()
    limiters = [RedisLimiter(redis_url, namespace=namespace) for _ in range(4)]
    limit = RateLimit(10_000, 1)
    admissions = await asyncio.gather(
        *(limiters[i % 4].acquire("key-hash", "main_balance", limit, 10.0) for i in range(400))
    )
    nonces = [admission.nonce for admission in admissions if admission.nonce is not None]
    for box in limiters:
        await box.aclose()
    assert len(set(nonces)) == 400
    assert abs(min(nonces) / 1000 - time.time()) < 5


async def test_four_clients_on_one_key_get_no_nonce_refused(redis_url: str) -> None:
    from txc_async._signing import NonceSource, Signer

    namespace = fresh_namespace()
    async with Sandbox() as box:
        limiters = [RedisLimiter(redis_url, namespace=namespace) for _ in range(4)]
        clients = []
        for lim in limiters:
            client = txc_async.Client(api_key=box.api_key, api_secret=box.api_secret,
                                      base_url=box.url, limiter=lim)
            # Separate nonce sources stand for separate processes.
            client._signer = Signer(box.api_key, box.api_secret, NonceSource())
            clients.append(client)
        await asyncio.gather(*(clients[i % 4].main_balance() for i in range(200)))
        for client in clients:
            await client.close()
        for lim in limiters:
            await lim.aclose()
        assert box.stats.nonce_refused == 0 and box.stats.rate_limited == 0


# -- an unreachable store ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    ["redis://:hunter2@127.0.0.1:{port}/0", "redis://user:hunter2@127.0.0.1:{port}/0",
     "redis://127.0.0.1:{port}/0?password=hunter2"],
)
async def test_an_unreachable_store_fails_the_request_rather_than_the_limit(url: str) -> None:
    limiter = RedisLimiter(url.format(port=free_port()))
    with pytest.raises(TransportError) as caught:
        await limiter.acquire("k", "public", RateLimit(10, 1), 10.0)
    assert str(caught.value).startswith("rate-limit store unreachable: ")
    assert caught.value.may_have_reached_server is False
    assert "hunter2" not in str(caught.value) and "hunter2" not in repr(limiter)
    await limiter.aclose()


async def test_a_store_that_does_not_answer_fails_within_the_timeout() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # reads the commands, never answers
        writer.close()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    limiter = RedisLimiter(f"redis://127.0.0.1:{port}/0", timeout=0.2)
    began = time.monotonic()
    with pytest.raises(TransportError, match=r"unreachable: .*no answer within 0.2 s"):
        await limiter.acquire("k", "public", RateLimit(10, 1), 10.0)
    assert time.monotonic() - began < 2
    await limiter.aclose()
    server.close()
    await server.wait_closed()


async def test_a_client_sends_nothing_when_the_store_is_unreachable() -> None:
    limiter = RedisLimiter(f"redis://127.0.0.1:{free_port()}/0")
    async with Sandbox() as box, txc_async.Client(
        base_url=box.url, limiter=limiter, retry=txc_async.RetryPolicy(backoff_base=0.0)
    ) as client:
        with pytest.raises(TransportError, match="rate-limit store unreachable"):
            await client.ping()
        assert box.stats.received["/api/v4/public/ping"] == 0
    await limiter.aclose()


async def test_aclose_closes_the_connections(redis_url: str, store: Any) -> None:
    name_count = len(await store.client_list())
    limiter = RedisLimiter(redis_url, namespace=fresh_namespace())
    await asyncio.gather(*(limiter.acquire(f"k{i}", "s", RateLimit(10, 1), 10.0) for i in range(3)))
    assert len(await store.client_list()) > name_count
    await limiter.aclose()
    for _ in range(50):
        if len(await store.client_list()) == name_count:
            break
        await asyncio.sleep(0.01)
    assert len(await store.client_list()) == name_count


# -- construction ------------------------------------------------------------------------------


def test_arguments_are_checked_without_revealing_the_password() -> None:
    for namespace in ("", "a:b"):
        with pytest.raises(ValueError, match="namespace"):
            RedisLimiter("redis://127.0.0.1:1/0", namespace=namespace)
    with pytest.raises(ValueError, match="jitter_allowance"):
        RedisLimiter("redis://127.0.0.1:1/0", jitter_allowance=-1)
    for timeout in (0, -1, math.inf, math.nan):
        with pytest.raises(ValueError, match="timeout"):
            RedisLimiter("redis://127.0.0.1:1/0", timeout=timeout)
    with pytest.raises(ValueError) as caught:
        RedisLimiter("http://:hunter2@127.0.0.1:1/0")
    assert "hunter2" not in str(caught.value)
    limiter = RedisLimiter("redis://127.0.0.1:1/0", jitter_allowance=0.1)
    assert limiter.window(RateLimit(1, 2)) == pytest.approx(2.1)
    assert RedisLimiter("redis://127.0.0.1:1/0").window(RateLimit(1, 10)) == 10.25
    assert isinstance(limiter, txc_async.Limiter)


def test_without_redis_py_the_package_imports_and_the_limiter_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)
    monkeypatch.setitem(sys.modules, "redis.asyncio", None)
    with pytest.raises(ImportError, match=r"pip install 'txc_async\[redis\]'"):
        RedisLimiter("redis://127.0.0.1:6379/0")
    check = "import sys; sys.modules['redis'] = None; import txc_async; print('imported')"
    result = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True,
                            cwd=ROOT, timeout=60)
    assert result.stdout.strip() == "imported", result.stderr
