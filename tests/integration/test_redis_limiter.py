"""RedisLimiter against a real redis-server on a free loopback port, in what only Redis has (the
contract every shared store keeps is in ``test_shared_limiters``): one budget shared by several
limiters (checked at a real server), a store restarted without its data, a lowered limit, a waiter
cancelled while Redis answers, key names and expiry, an unreachable store, and the import without
redis-py."""

from __future__ import annotations

import asyncio
import math
import random
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

import txc_async
from txc_async import Outcome, RateLimit, RedisLimiter, TransportError
from txc_async.sandbox import Sandbox

from ..support.arrival_server import ArrivalServer, excess
from ..support.clocks import clock_ms
from ..support.limit_worker import drain, read_until, ready_workers
from ..support.redis_server import RedisServer, free_port, fresh_namespace, require_redis_server

pytestmark = pytest.mark.redis

ROOT = Path(__file__).resolve().parents[2]


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


async def fire(server: ArrivalServer, limiters: list[RedisLimiter], limit: RateLimit,
               count: int, seed: int, key_id: str = "key-hash", scope: str = "mining_rewards",
               budget: str = "b") -> None:
    """``count`` requests at once, taking turns on ``limiters``: each waits for its budget, then
    a random 0-30 ms (an uneven network), then reaches the server; its answer concludes it."""
    rng = random.Random(seed)
    delays = [rng.uniform(0, 0.03) for _ in range(count)]
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

        async def one(i: int, delay: float) -> None:
            box = limiters[i % len(limiters)]
            admission = await box.acquire(key_id, scope, limit, 10.0)
            await asyncio.sleep(delay)
            async with session.post(server.hit_url(budget)) as answer:
                await answer.read()
            box.conclude(admission, Outcome.ANSWERED)

        await asyncio.gather(*(one(i, d) for i, d in enumerate(delays)))


# -- the guarantee -----------------------------------------------------------------------------


async def test_several_limiters_share_one_budget_at_the_server(redis_url: str) -> None:
    namespace = fresh_namespace()
    limiters = [RedisLimiter(redis_url, namespace=namespace) for _ in range(3)]
    limit = RateLimit(20, 0.5)
    count = 60
    async with ArrivalServer() as server:
        await fire(server, limiters, limit, count, seed=1)
    for box in limiters:
        await box.aclose()
    arrivals = server.arrivals["b"]
    assert len(arrivals) == count
    assert excess(arrivals, limit) == (0, 0)
    least = (count // 20 - 1) * 0.5
    assert max(arrivals) - min(arrivals) <= 1.5 * least


@pytest.mark.parametrize("after", [3, 15])  # in the first window; in the second
async def test_a_store_restarted_without_its_data_lets_no_burst_past_the_limit(
    after: int,
) -> None:
    limit = RateLimit(20, 1.0)
    with RedisServer(require_redis_server()) as redis:
        spec = f"redis:{redis.url}:{fresh_namespace()}"
        # Every sender stays until the end: what a sender knows is lost with it when it exits,
        # and only the senders still running can write it back.
        async with ArrivalServer() as server, ready_workers(
            spec, server.hit_url("b"), 24, limit, range(3), "--linger"
        ) as workers:
            await read_until(workers[0], f"sent {after}".encode())
            redis.restart_empty()
            for worker in workers:
                await read_until(worker, b"done")
            for worker in workers:
                assert worker.stdin is not None
                worker.stdin.close()
            codes = await asyncio.gather(*(drain(w) for w in workers))
    assert codes == [0, 0, 0]
    arrivals = server.arrivals["b"]
    assert len(arrivals) == 72
    assert excess(arrivals, limit) == (0, 0)


async def test_after_a_loss_of_data_nonces_continue_past_those_already_drawn() -> None:
    frozen = clock_ms()
    limit = RateLimit(100_000, 10)
    with RedisServer(require_redis_server()) as redis:
        namespace = fresh_namespace()
        running = RedisLimiter(redis.url, namespace=namespace)
        first = await running.acquire("k", "s", limit, 5.0, lambda: frozen)
        ahead = await running.acquire("k", "s", limit, 5.0, lambda: frozen)
        assert (first.nonce, ahead.nonce) == (frozen, frozen + 1)
        redis.restart_empty()
        # A process starting now cannot tell the loss from a first use; the running one writes
        # back what it knows while admissions hold.
        starting = RedisLimiter(redis.url, namespace=namespace)
        began = time.monotonic()
        after = await starting.acquire("k", "s", limit, 5.0, lambda: frozen)
        assert time.monotonic() - began >= 0.4  # the hold
        assert after.nonce is not None and after.nonce > frozen + 1
        # The running process's requests count again in the window.
        import redis.asyncio as redis_asyncio

        store = redis_asyncio.Redis.from_url(redis.url)
        assert await store.zcard(running.budget_key("k", "s")) == 3
        await store.aclose()
        for box in (running, starting):
            await box.aclose()


async def test_a_counter_left_by_the_previous_version_is_carried_over(
    redis_url: str, store: Any
) -> None:
    """Version 0.2 kept one nonce counter per API key, under the key's own hash tag, which a
    burst can leave seconds ahead of the clock: the first signed admission of a key carries it
    over, so no nonce it gave is given again (the first callers of a burst all wait for it)."""
    namespace = fresh_namespace()
    frozen = clock_ms()
    ahead = frozen + 1_000  # an old burst left its counter 1 s ahead of the clock
    await store.set(f"{namespace}:{{api-key-id}}:nonce", ahead, px=60_000)
    limiter = RedisLimiter(redis_url, namespace=namespace)
    limit = RateLimit(100_000, 10)
    admissions = await asyncio.gather(*(
        limiter.acquire("server-id", "s", limit, 5.0, lambda: frozen, nonce_key="api-key-id")
        for _ in range(20)
    ))
    nonces = sorted(a.nonce for a in admissions if a.nonce is not None)
    assert len(nonces) == 20 and nonces[0] == ahead + 1 and len(set(nonces)) == 20
    # Another key, with no counter of the previous version, starts at the clock.
    other = await limiter.acquire("server-id", "s", limit, 5.0, lambda: frozen,
                                  nonce_key="other-key-id")
    assert other.nonce == frozen
    # The previous counter is read once per key and process: a later value is not looked at.
    await store.set(f"{namespace}:{{api-key-id}}:nonce", ahead + 1_500, px=60_000)
    later = await limiter.acquire("server-id", "s", limit, 5.0, lambda: frozen,
                                  nonce_key="api-key-id")
    assert later.nonce == ahead + 21
    # Another process carries it again, and never lowers the counter.
    second = RedisLimiter(redis_url, namespace=namespace)
    raised = await second.acquire("server-id", "s", limit, 5.0, lambda: frozen,
                                  nonce_key="api-key-id")
    assert raised.nonce == ahead + 1_501
    await store.set(f"{namespace}:{{other-key-id}}:nonce", frozen - 50_000, px=60_000)
    kept = await second.acquire("server-id", "s", limit, 5.0, lambda: frozen,
                                nonce_key="other-key-id")
    assert kept.nonce == frozen + 1
    for box in (limiter, second):
        await box.aclose()


async def test_a_lowered_limit_counts_what_the_log_already_holds(
    limiter: RedisLimiter, store: Any
) -> None:
    admissions = await asyncio.gather(
        *(limiter.acquire("k", "s", RateLimit(5, 1), 10.0) for _ in range(5))
    )
    for admission in admissions:
        limiter.conclude(admission, Outcome.ANSWERED)
    began = time.monotonic()
    await limiter.acquire("k", "s", RateLimit(2, 1), 10.0)
    assert time.monotonic() - began >= 0.9  # until the 4th of 5 answers left the window
    assert 1 <= await store.zcard(limiter.budget_key("k", "s")) <= 2


# -- cancellation while Redis answers ----------------------------------------------------------


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


async def test_keys_hold_the_namespace_key_id_as_hash_tag_and_scope_and_expire(
    limiter: RedisLimiter, store: Any
) -> None:
    limit = RateLimit(10, 2)
    ns = limiter.namespace
    await limiter.acquire("a1b2c3", "main_balance", limit, 3.0, clock_ms)
    await limiter.acquire("a1b2c3", "public", limit, 3.0)
    keys = sorted(await store.keys(f"{ns}:*"))
    prefix = f"{ns}:{{a1b2c3}}"
    # The nonce counter is the API key's, under the server's tag (here both ids are one).
    assert keys == [f"{prefix}:generation", f"{prefix}:main_balance",
                    f"{prefix}:main_balance:window", f"{prefix}:nonce:a1b2c3",
                    f"{prefix}:public", f"{prefix}:public:window"]
    assert 5000 < await store.pttl(f"{prefix}:public") <= 6000  # timeout + window + 1 s
    # The longest window is kept one window (2 s) past its client's last admission.
    assert 2000 < await store.pttl(f"{prefix}:public:window") <= 3000
    assert 0 < await store.pttl(f"{prefix}:nonce:a1b2c3") <= 86_400_000
    assert 0 < await store.pttl(f"{prefix}:generation") <= 86_400_000
    members = await store.zrange(f"{prefix}:main_balance", 0, -1)
    assert len(members) == 1 and "a1b2c3" not in members[0]
    for scope in ("nonce", "generation", "a:b", ""):
        with pytest.raises(ValueError, match="scope"):
            limiter.budget_key("a1b2c3", scope)


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
    # The nonce counter too (its API key's id after ``nonce:``): the client draws signed
    # requests' nonces from it; and each budget's longest window.
    names = [k.split(":", 2)[2] for k in keys]
    # The balance and the ping draw on their groups' budgets too.
    assert [name.partition(":")[0] if name.startswith("nonce:") else name for name in names] == [
        "generation", "main_account", "main_account:window", "main_balance",
        "main_balance:window", "nonce", "public", "public:window", "public_group",
        "public_group:window",
    ]
    for key in keys:
        assert box.api_key not in key and box.api_secret not in key
    assert len({k.split(":")[1] for k in keys}) == 1  # one server id for every budget
    for key in ("main_balance", "public"):
        budget = next(k for k in keys if k.endswith(key))
        ((_, score),) = await store.zrange(budget, 0, -1, withscores=True)
        assert score <= time.time() * 1_000_000  # answered: anchored at the answer


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
    for namespace in ("", "a:b", "a{b}"):
        with pytest.raises(ValueError, match="namespace"):
            RedisLimiter("redis://127.0.0.1:1/0", namespace=namespace)
    for timeout in (0, -1, math.inf, math.nan):
        with pytest.raises(ValueError, match="timeout"):
            RedisLimiter("redis://127.0.0.1:1/0", timeout=timeout)
    with pytest.raises(ValueError) as caught:
        RedisLimiter("http://:hunter2@127.0.0.1:1/0")
    assert "hunter2" not in str(caught.value)
    limiter = RedisLimiter("redis://:hunter2@127.0.0.1:1/0", cluster=True)
    assert "hunter2" not in repr(limiter) and "cluster=True" in repr(limiter)
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


async def test_a_call_whose_connection_closed_under_it_goes_again() -> None:
    limiter = RedisLimiter("redis://127.0.0.1:1/0", timeout=2.0)
    failures = [
        RuntimeError("unable to perform operation on <TCPTransport closed=True>; the handler is "
                     "closed"),
        AttributeError("'NoneType' object has no attribute 'writelines'"),
    ]
    calls = 0

    async def script(keys: list[str], args: list[Any]) -> int:
        nonlocal calls
        calls += 1
        if failures:
            raise failures.pop(0)
        return 7

    assert await limiter._run(script, [], []) == 7  # type: ignore[arg-type]
    assert calls == 3

    async def always_closed(keys: list[str], args: list[Any]) -> int:
        raise AttributeError("'NoneType' object has no attribute 'writelines'")

    with pytest.raises(TransportError, match="unreachable"):
        await limiter._run(always_closed, [], [])  # type: ignore[arg-type]

    async def a_bug(keys: list[str], args: list[Any]) -> int:
        raise AttributeError("'Admission' object has no attribute 'nonce_'")

    with pytest.raises(AttributeError, match="nonce_"):
        await limiter._run(a_bug, [], [])  # type: ignore[arg-type]
    await limiter.aclose()


async def test_no_nonce_is_drawn_again_while_a_new_generation_holds_admissions(
    limiter: RedisLimiter, store: Any
) -> None:
    """After the store lost its data, a new generation holds admissions while every process
    writes its nonces back; a nonce drawn again meanwhile could repeat one another process sent
    before the loss, so none is (the request is admitted again instead, which waits out the
    hold)."""
    limit = RateLimit(100, 10.0)

    def clock() -> int:
        return int(time.time() * 1000)

    admission = await limiter.acquire("key", "main_balance", limit, 10.0, clock)
    seconds, micros = await store.time()
    held = f"token/{seconds * 1_000_000 + micros + 400_000}/0"
    await store.set(limiter.generation_key("key"), held, px=60_000)
    limiter._key_state("key").generation = held  # as if this process wrote its nonces back
    assert await limiter.redraw_nonce(admission, clock) is None
    await asyncio.sleep(0.5)
    assert await limiter.redraw_nonce(admission, clock) is not None
