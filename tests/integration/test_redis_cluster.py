"""RedisLimiter(cluster=True) against a real local Redis Cluster of three masters that the tests
start: every key of one API key in one hash slot, budgets of several keys and scopes spread over
the nodes, each exact at an arrival-recording server, and nonces drawn per key."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import pytest

from txc_async import Outcome, RateLimit, RedisLimiter

from ..support.arrival_server import ArrivalServer, excess
from ..support.clocks import clock_ms
from ..support.redis_server import RedisClusterServers, fresh_namespace, require_redis_server

pytestmark = pytest.mark.redis


@pytest.fixture(scope="module")
def cluster_url() -> Iterator[str]:
    with RedisClusterServers(require_redis_server()) as servers:
        yield servers.url


@pytest.fixture
async def cluster(cluster_url: str) -> AsyncIterator[Any]:
    """A plain cluster connection, to look at where the limiter's keys went."""
    from redis.asyncio.cluster import RedisCluster

    connection = RedisCluster.from_url(cluster_url, decode_responses=True)
    yield connection
    await connection.aclose()


KEY_IDS = ["alpha", "bravo", "charlie", "delta"]


async def test_every_key_of_one_api_key_is_in_one_slot_and_keys_spread(
    cluster_url: str, cluster: Any
) -> None:
    from redis.cluster import key_slot

    limiter = RedisLimiter(cluster_url, namespace=fresh_namespace("c"), cluster=True)
    slots_by_key = {}
    for key_id in KEY_IDS:
        for scope in ("public", "main_balance"):
            admission = await limiter.acquire(key_id, scope, RateLimit(10, 1), 5.0, clock_ms)
            limiter.conclude(admission, Outcome.ANSWERED)
        names = [limiter.budget_key(key_id, "public"), limiter.budget_key(key_id, "main_balance"),
                 limiter.budget_key(key_id, "public") + ":pause", limiter.nonce_key(key_id),
                 limiter.generation_key(key_id), limiter.budget_key(key_id, "public") + ":window"]
        slots = {key_slot(name.encode()) for name in names}
        assert len(slots) == 1
        slots_by_key[key_id] = slots.pop()
        for name in names[:2] + names[3:]:
            assert await cluster.exists(name) == 1, name
    await limiter.aclose()
    # The API keys' budgets are not all on one node: the cluster spreads them.
    nodes = {
        cluster.get_node_from_key(limiter.budget_key(k, "public")).name for k in KEY_IDS
    }
    assert len(set(slots_by_key.values())) == len(KEY_IDS)
    assert len(nodes) >= 2


async def test_budgets_across_slots_stay_exact_at_the_server(cluster_url: str) -> None:
    namespace = fresh_namespace("c")
    limiters = [RedisLimiter(cluster_url, namespace=namespace, cluster=True) for _ in range(2)]
    limit = RateLimit(10, 0.5)
    budgets = [(key_id, scope) for key_id in KEY_IDS[:3] for scope in ("public", "main_balance")]
    per_budget = 30
    rng = random.Random(3)
    nonces: dict[str, list[int]] = {key_id: [] for key_id in KEY_IDS}
    async with ArrivalServer() as server, aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0)
    ) as session:

        async def one(i: int, key_id: str, scope: str, delay: float) -> None:
            box = limiters[i % 2]
            admission = await box.acquire(key_id, scope, limit, 5.0, clock_ms)
            assert admission.nonce is not None
            nonces[key_id].append(admission.nonce)
            await asyncio.sleep(delay)
            async with session.post(server.hit_url(f"{key_id}-{scope}")) as answer:
                await answer.read()
            box.conclude(admission, Outcome.ANSWERED)

        await asyncio.gather(*(
            one(i, key_id, scope, rng.uniform(0, 0.03))
            for key_id, scope in budgets for i in range(per_budget)
        ))
    for box in limiters:
        await box.aclose()
    for key_id, scope in budgets:
        arrivals = server.arrivals[f"{key_id}-{scope}"]
        assert len(arrivals) == per_budget
        assert excess(arrivals, limit) == (0, 0), (key_id, scope)
        # Budgets do not slow each other: each takes about its own least time (1 s), not the
        # six budgets' one after another (6 s).
        assert max(arrivals) - min(arrivals) <= 3.0
    for key_id in KEY_IDS[:3]:
        assert len(set(nonces[key_id])) == 2 * per_budget


async def test_a_node_that_cannot_be_reached_fails_the_request() -> None:
    from txc_async import TransportError

    from ..support.redis_server import free_port

    limiter = RedisLimiter(
        f"redis://:hunter2@127.0.0.1:{free_port()}/0", cluster=True, timeout=1.0
    )
    with pytest.raises(TransportError, match="rate-limit store unreachable") as caught:
        await limiter.acquire("k", "public", RateLimit(10, 1), 5.0)
    assert "hunter2" not in str(caught.value) and "hunter2" not in repr(limiter)
    await limiter.aclose()
