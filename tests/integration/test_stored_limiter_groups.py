"""Group budgets in the limiters shared by processes (SQLiteLimiter on a fresh file, RedisLimiter
on a fresh namespace of the test redis-server and of a Redis Cluster): a request takes from its
scope's budget and its groups' at once or from none, a group shared by operations, keys and
processes keeps to its limit at the server, a refusal pauses the budget it is blamed on, and
nonces come from one counter per API key while the budgets are the server's."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from txc_async import Limiter, Outcome, RateLimit, RedisLimiter, SQLiteLimiter

from ..support.arrival_server import ArrivalServer, excess, max_in_window
from ..support.clocks import clock_ms
from ..support.limit_worker import go, reaping, start_worker
from ..support.redis_server import RedisClusterServers, fresh_namespace, require_redis_server
from .test_stored_limiters import RedisStore, SharedStore, SQLiteStore

SERVER = "server-id"
GROUP = RateLimit(8, 0.5)
OWN = RateLimit(6, 0.5)


class RedisClusterStore(RedisStore):
    """A fresh namespace on the test Redis Cluster."""

    def __init__(self, url: str) -> None:
        from redis.asyncio.cluster import RedisCluster

        super().__init__(url)
        self.spec = f"redis-cluster:{url}:{self.namespace}"
        self._plain = self._redis
        self._redis = RedisCluster.from_url(  # type: ignore[assignment]  # the same commands
            url, decode_responses=True
        )

    def _open(self) -> Limiter:
        return RedisLimiter(self.url, namespace=self.namespace, cluster=True)

    async def aclose(self) -> None:
        await super().aclose()
        await self._plain.aclose()


@pytest.fixture(scope="module")
def cluster_url() -> Iterator[str]:
    with RedisClusterServers(require_redis_server()) as servers:
        yield servers.url


@pytest.fixture(params=[
    "sqlite",
    pytest.param("redis", marks=pytest.mark.redis),
    pytest.param("redis-cluster", marks=pytest.mark.redis),
])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SharedStore]:
    shared: SharedStore
    if request.param == "sqlite":
        shared = SQLiteStore(tmp_path / "budgets" / "limits.sqlite")
    elif request.param == "redis":
        shared = RedisStore(request.getfixturevalue("redis_url"))
    else:
        shared = RedisClusterStore(request.getfixturevalue("cluster_url"))
    yield shared
    await shared.aclose()


def grouped(name: str = "group", limit: RateLimit = GROUP) -> tuple[tuple[str, RateLimit]]:
    return ((name, limit),)


# -- all or none -------------------------------------------------------------------------------


async def test_a_request_its_group_refuses_leaves_no_anchor_in_its_scope(
    store: SharedStore,
) -> None:
    limiter, other = store.limiter(), store.limiter()
    group = grouped(limit=RateLimit(1, 10))
    own = RateLimit(5, 10)
    first = await limiter.acquire(SERVER, "a", own, 5.0, groups=group)
    # The group is full: a request of another operation waits, and its scope holds nothing.
    waiting = asyncio.create_task(other.acquire(SERVER, "b", own, 5.0, groups=group))
    await asyncio.sleep(0.3)
    assert not waiting.done()
    assert await store.anchors(SERVER, "b") == []
    assert await store.anchors(SERVER, "group") == [pytest.approx(first.deadline)]
    # Given back, the first leaves every budget it drew on, and the waiter takes both.
    limiter.conclude(first, Outcome.NOT_SENT)
    second = await asyncio.wait_for(waiting, 2.0)
    assert await store.anchors(SERVER, "a") == []
    assert await store.anchors(SERVER, "b") == [pytest.approx(second.deadline)]
    assert await store.anchors(SERVER, "group") == [pytest.approx(second.deadline)]


async def test_a_request_its_scope_refuses_leaves_no_anchor_in_its_group(
    store: SharedStore,
) -> None:
    limiter, other = store.limiter(), store.limiter()
    own = RateLimit(1, 10)
    await limiter.acquire(SERVER, "a", own, 5.0)  # the scope's only place, without the group
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(other.acquire(SERVER, "a", own, 5.0, groups=grouped()), 0.3)
    assert await store.anchors(SERVER, "group") == []
    # The group had room all along: another operation takes from it meanwhile.
    await asyncio.wait_for(other.acquire(SERVER, "b", OWN, 5.0, groups=grouped()), 1.0)
    assert len(await store.anchors(SERVER, "group")) == 1


async def test_an_answer_moves_the_anchor_in_every_budget(store: SharedStore) -> None:
    limiter = store.limiter()
    admission = await limiter.acquire(SERVER, "a", OWN, 5.0, groups=grouped())
    limiter.conclude(admission, Outcome.ANSWERED)
    await limiter.aclose()  # the answer has reached the store
    for budget in ("a", "group"):
        (at,) = await store.anchors(SERVER, budget)
        assert at < admission.deadline - 4.0, budget


# -- the group at the server -------------------------------------------------------------------


async def test_a_group_shared_by_two_operations_keeps_to_its_limit_and_each_to_its_own(
    store: SharedStore,
) -> None:
    """Two limiters (as two processes) send two operations at once, 6 per 0.5 s each and 8 per
    0.5 s together: at the server neither exceeds its own limit, nor both the group's."""
    limiters = [store.limiter(), store.limiter()]
    each = 24
    async with ArrivalServer() as server:
        import aiohttp

        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

            async def one(i: int, scope: str) -> None:
                box = limiters[i % 2]
                admission = await box.acquire(SERVER, scope, OWN, 5.0, groups=grouped())
                await asyncio.sleep(0.01 * (i % 3))  # an uneven network
                async with session.post(server.hit_url(scope)) as answer:
                    await answer.read()
                box.conclude(admission, Outcome.ANSWERED)

            await asyncio.wait_for(asyncio.gather(
                *(one(i, scope) for i in range(each) for scope in ("a", "b"))
            ), 30)
    a, b = server.arrivals["a"], server.arrivals["b"]
    assert len(a) == len(b) == each
    assert excess(a, OWN) == (0, 0)
    assert excess(b, OWN) == (0, 0)
    assert excess(a + b, GROUP) == (0, 0)


# -- refusals ----------------------------------------------------------------------------------


async def test_a_refusal_blamed_on_the_scope_leaves_the_group_s_other_operation_alone(
    store: SharedStore,
) -> None:
    """Nothing else was answered in the group: the refusal is the operation's own, and pauses
    its scope alone, here and in every process."""
    limiter = store.limiter()
    refused = await limiter.acquire(SERVER, "a", OWN, 5.0, groups=grouped())
    assert limiter.conclude(refused, Outcome.RATE_LIMITED, retry_after=1.0) == 1.0
    began = time.monotonic()
    await limiter.acquire(SERVER, "b", OWN, 5.0, groups=grouped())
    assert time.monotonic() - began < 0.5
    await limiter.aclose()  # the pause has reached the store
    other = store.limiter()
    began = time.monotonic()
    await other.acquire(SERVER, "b", OWN, 5.0, groups=grouped())
    assert time.monotonic() - began < 0.5
    await other.acquire(SERVER, "a", OWN, 5.0, groups=grouped())
    assert 0.7 <= time.monotonic() - began < 1.5


async def test_a_refusal_blamed_on_the_group_pauses_the_group(store: SharedStore) -> None:
    """Another operation was answered in the group's window: its traffic may be what the server
    refused, so the group pauses (in every process), and the operation's own scope does not."""
    limiter = store.limiter()
    assert isinstance(limiter, SQLiteLimiter | RedisLimiter)
    limiter.conclude(
        await limiter.acquire(SERVER, "b", OWN, 5.0, groups=grouped()), Outcome.ANSWERED
    )
    pending = await limiter.acquire(SERVER, "c", OWN, 5.0, groups=grouped())
    refused = await limiter.acquire(SERVER, "a", OWN, 5.0, groups=grouped())
    assert limiter.conclude(refused, Outcome.RATE_LIMITED, retry_after=1.0) == 1.0
    assert not limiter.holds(pending)
    await limiter.aclose()  # the pause has reached the store
    other = store.limiter()
    began = time.monotonic()
    await other.acquire(SERVER, "a", OWN, 5.0)  # the scope alone is not paused
    assert time.monotonic() - began < 0.5
    await other.acquire(SERVER, "d", OWN, 5.0, groups=grouped())
    assert 0.7 <= time.monotonic() - began < 1.5


# -- nonces ------------------------------------------------------------------------------------


async def test_two_api_keys_share_the_server_s_budget_and_draw_from_two_counters(
    store: SharedStore,
) -> None:
    limiter, other = store.limiter(), store.limiter()
    assert isinstance(limiter, SQLiteLimiter | RedisLimiter)
    frozen = clock_ms()

    def clock() -> int:
        return frozen

    drawn = {}
    for name, box, key in (("a1", limiter, "key-a"), ("b1", other, "key-b"),
                           ("a2", other, "key-a"), ("b2", limiter, "key-b")):
        drawn[name] = await box.acquire(SERVER, "s", RateLimit(4, 10), 5.0, clock,
                                        groups=grouped(), nonce_key=key)
    nonces = {name: admission.nonce for name, admission in drawn.items()}
    assert nonces == {"a1": frozen, "a2": frozen + 1, "b1": frozen, "b2": frozen + 1}
    # One budget for both keys: it is full now.
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(limiter.acquire(SERVER, "s", RateLimit(4, 10), 5.0), 0.3)
    assert await limiter.redraw_nonce(drawn["b2"], clock) == frozen + 2
    assert await limiter.redraw_nonce(drawn["a1"], clock) == frozen + 2


# -- processes ---------------------------------------------------------------------------------


async def run_senders(
    senders: list[tuple[str, str, str, str]], each: int, *extra: str
) -> dict[str, list[int]]:
    """One worker process a ``(store spec, hit URL, scope, API key)``, all sending at once
    ``each`` requests within :data:`OWN` and the group :data:`GROUP`; the nonces each key drew."""
    nonces: dict[str, list[int]] = {}
    async with reaping() as workers:
        for seed, (spec, hit_url, scope, key) in enumerate(senders):
            workers.append(await start_worker(
                spec, hit_url, each, OWN, seed, "--wait-go", "--nonces", f"--scope={scope}",
                f"--group=group:{GROUP.max_requests}:{GROUP.per_seconds}", f"--key={key}",
                *extra,
            ))
        outputs = [collect(worker) for worker in workers]
        await asyncio.wait_for(asyncio.gather(*(ready for ready, _ in outputs)), 30)
        await go(workers)
        for (_, _, _, key), (_, lines) in zip(senders, outputs, strict=True):
            drawn = [int(line.split()[1]) for line in await lines if line.startswith("nonce ")]
            nonces.setdefault(key, []).extend(drawn)
        codes = await asyncio.gather(*(asyncio.wait_for(w.wait(), 30) for w in workers))
    assert codes == [0] * len(senders)
    return nonces


def collect(
    process: asyncio.subprocess.Process,
) -> tuple[asyncio.Future[None], asyncio.Task[list[str]]]:
    """A future resolved once the worker is ready, and the lines it prints after, to its end."""
    ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def read() -> list[str]:
        assert process.stdout is not None
        lines = []
        while line := await asyncio.wait_for(process.stdout.readline(), 60):
            text = line.decode().strip()
            if text == "ready" and not ready.done():
                ready.set_result(None)
            lines.append(text)
        if not ready.done():
            ready.set_exception(AssertionError("the worker ended before it was ready"))
        return lines

    return ready, asyncio.create_task(read())


def check_ip(arrivals: dict[str, list[float]], scopes: dict[str, list[str]]) -> list[float]:
    """Every scope of one IP address (its budgets' arrivals, whoever sent them) kept to its
    limit, and all together to the group's; all its arrivals."""
    everything: list[float] = []
    for scope, budgets in scopes.items():
        sent = [moment for budget in budgets for moment in arrivals[budget]]
        assert excess(sent, OWN) == (0, 0), scope
        everything += sent
    assert excess(everything, GROUP) == (0, 0)
    return everything


@pytest.mark.asyncio_only
async def test_two_keys_in_two_processes_share_one_sqlite_file(tmp_path: Path) -> None:
    """The service counts per IP address: two processes of one machine, each with its own API
    key and operation, keep to the group together; each key's nonces from its own counter."""
    path = tmp_path / "limits.sqlite"
    spec = f"sqlite:{path}"
    each = 24
    async with ArrivalServer() as server:
        nonces = await run_senders([
            (spec, server.hit_url("a"), "main_balance", "key-a"),
            (spec, server.hit_url("b"), "investments", "key-b"),
        ], each)
    check_ip(server.arrivals, {"main_balance": ["a"], "investments": ["b"]})
    assert sorted(nonces) == ["key-a", "key-b"]
    for drawn in nonces.values():
        assert len(drawn) == each and drawn == sorted(set(drawn))
    with contextlib.closing(sqlite3.connect(path)) as db:
        counters = db.execute("SELECT key_id FROM nonces ORDER BY key_id").fetchall()
    assert counters == [("key-a",), ("key-b",)]


@pytest.mark.redis
@pytest.mark.asyncio_only
@pytest.mark.parametrize(
    ("backend", "addresses"),
    [("redis", 2), ("redis", 1), ("redis-cluster", 2)],
    ids=["redis-two-ips", "redis-one-ip", "cluster-two-ips"],
)
async def test_two_machines_of_processes_share_redis(
    request: pytest.FixtureRequest, backend: str, addresses: int
) -> None:
    """Two machines, each running a process of each of two API keys (balance with one,
    investments with the other). Leaving through two IP addresses, they use two namespaces
    and one namespace of nonces: each address keeps to its own budgets, the two together
    exceed one address's group, and each key's nonces never repeat across machines. Leaving
    through one, they share one namespace, and all four processes keep to one group."""
    url = request.getfixturevalue("cluster_url" if backend == "redis-cluster" else "redis_url")
    namespaces = [fresh_namespace("ip") for _ in range(addresses)]
    machines = {"m1": namespaces[0], "m2": namespaces[-1]}
    each = 16
    async with ArrivalServer() as server:
        nonces = await run_senders([
            (f"{backend}:{url}:{namespace}", server.hit_url(f"{machine}-{scope}"), scope, key)
            for machine, namespace in machines.items()
            for scope, key in (("main_balance", "key-a"), ("investments", "key-b"))
        ], each, f"--nonce-namespace={fresh_namespace('nonces')}")
    arrivals = server.arrivals
    if addresses == 2:
        everything = []
        for machine in machines:
            everything += check_ip(arrivals, {
                "main_balance": [f"{machine}-main_balance"],
                "investments": [f"{machine}-investments"],
            })
        assert max_in_window(everything, GROUP.per_seconds) > GROUP.max_requests
    else:
        check_ip(arrivals, {
            scope: [f"{machine}-{scope}" for machine in machines]
            for scope in ("main_balance", "investments")
        })
    for drawn in nonces.values():
        assert len(drawn) == 2 * each and len(set(drawn)) == 2 * each


def test_a_server_s_keys_share_one_slot_and_nonce_counters_may_have_a_namespace_of_their_own(
) -> None:
    """Budgets under the machine's namespace, nonce counters under the namespace every machine
    using the key shares: all in the server's one hash slot, so one script reaches them."""
    from redis.crc import key_slot

    limiter = RedisLimiter("redis://127.0.0.1:1/0", namespace="ip1", nonce_namespace="keys")
    names = [limiter.budget_key(SERVER, "main_balance"), limiter.budget_key(SERVER, "group"),
             limiter.generation_key(SERVER), limiter.nonce_key(SERVER, "key-a"),
             limiter.nonce_key(SERVER, "key-b")]
    assert names[3:] == [f"keys:{{{SERVER}}}:nonce:key-a", f"keys:{{{SERVER}}}:nonce:key-b"]
    assert names[0] == f"ip1:{{{SERVER}}}:main_balance"
    assert len({key_slot(name.encode()) for name in names}) == 1
    for bad in ("", "a:b", "a{b}"):
        with pytest.raises(ValueError, match="nonce_namespace"):
            RedisLimiter("redis://127.0.0.1:1/0", nonce_namespace=bad)


@pytest.mark.redis
async def test_after_a_loss_of_data_every_budget_and_every_key_s_counter_is_written_back(
) -> None:
    """The store restarts empty while a process has requests in a scope and its group, drawn
    with two API keys: before anyone is admitted again, that process writes back its anchors in
    both budgets and both keys' counters, past the nonces it drew."""
    from ..support.redis_server import RedisServer

    frozen = clock_ms()
    # The nonce clock stands still while the first nonces are compared, then runs. Which
    # process finds the loss first is a race: when the running one does, it knows the store
    # lost data and writes its counters back the whole lead past its clock, which the starting
    # one waits out (a millisecond of a running clock; forever on a stopped one).
    started_running: list[float] = []

    def clock() -> int:
        if not started_running:
            return frozen
        return frozen + int((time.monotonic() - started_running[0]) * 1000)

    with RedisServer(require_redis_server()) as redis:
        namespace = fresh_namespace()
        running = RedisLimiter(redis.url, namespace=namespace)
        # In flight for a minute: the anchors are still in their window when the store is back,
        # however long its restart takes.
        drawn = [
            await running.acquire(SERVER, "a", OWN, 60.0, clock, groups=grouped(),
                                  nonce_key=key)
            for key in ("key-a", "key-b", "key-b")
        ]
        assert [admission.nonce for admission in drawn] == [frozen, frozen, frozen + 1]
        started_running.append(time.monotonic())
        redis.restart_empty()
        starting = RedisLimiter(redis.url, namespace=namespace)
        began = time.monotonic()
        after = await starting.acquire(SERVER, "b", OWN, 5.0, clock, groups=grouped(),
                                       nonce_key="key-b")
        assert time.monotonic() - began >= 0.4  # the hold while processes write back
        assert after.nonce is not None and after.nonce > frozen + 1
        import redis.asyncio as redis_asyncio

        store = redis_asyncio.Redis.from_url(redis.url)
        try:
            assert await store.zcard(running.budget_key(SERVER, "a")) == 3
            assert await store.zcard(running.budget_key(SERVER, "group")) == 4
            counter = await store.get(running.nonce_key(SERVER, "key-a"))
            assert counter is not None and int(counter) >= frozen
        finally:
            await store.aclose()
            for box in (running, starting):
                await box.aclose()
