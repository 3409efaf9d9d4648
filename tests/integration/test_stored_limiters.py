"""What every limiter sharing its budgets through a store keeps to, checked on each backend
(SQLiteLimiter on a fresh file, RedisLimiter on a fresh namespace of the test redis-server):
requests in flight counted until their answer, a second limiter and other processes sharing the
budget (checked at an arrival-recording server), shared pauses, backoff and learned limits, FIFO
waiters and cancellation, and nonces from one counter per key."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from txc_async import Limiter, Outcome, RateLimit, RedisLimiter, SQLiteLimiter
from txc_async._nonces.clock import NONCE_WINDOW_MS, ServerClock
from txc_async._nonces.sources import BaseNonceClock, NonceClock

from ..support.arrival_server import ArrivalServer, excess
from ..support.clocks import clock_ms
from ..support.limit_worker import drain, go, ready_workers
from ..support.redis_server import fresh_namespace


class SharedStore:
    """One store for the test: limiters opened on it (closed at the test's end), the spec a
    worker process (``tests.support.limit_worker``) opens it by, and a look at what it holds."""

    spec: str

    def __init__(self) -> None:
        self._opened: list[Limiter] = []

    def limiter(self) -> Limiter:
        """A new limiter on the store, as another process would open it."""
        box = self._open()
        self._opened.append(box)
        return box

    async def aclose(self) -> None:
        for box in self._opened:
            await box.aclose()

    def _open(self) -> Limiter:
        raise NotImplementedError

    async def anchors(self, key_id: str, scope: str) -> list[float]:
        """The budget's anchors in the store, ascending, in seconds on the store's clock (the
        clock of ``Admission.deadline``)."""
        raise NotImplementedError

    async def set_nonce_counter(self, key_id: str, last: int) -> None:
        """Set the key's nonce counter, the last nonce drawn, as a burst would have left it."""
        raise NotImplementedError


class SQLiteStore(SharedStore):
    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.spec = f"sqlite:{path}"

    def _open(self) -> Limiter:
        return SQLiteLimiter(self.path)

    def _execute(self, sql: str, *args: object) -> list[Any]:
        with contextlib.closing(sqlite3.connect(self.path)) as db, db:
            return db.execute(sql, args).fetchall()

    async def anchors(self, key_id: str, scope: str) -> list[float]:
        rows = self._execute(
            "SELECT at FROM anchors WHERE key_id = ? AND scope = ? ORDER BY at", key_id, scope
        )
        return [at for (at,) in rows]

    async def set_nonce_counter(self, key_id: str, last: int) -> None:
        self._execute("UPDATE nonces SET last = ? WHERE key_id = ?", last, key_id)


class RedisStore(SharedStore):
    def __init__(self, url: str) -> None:
        import redis.asyncio as redis_asyncio

        super().__init__()
        self.url = url
        self.namespace = fresh_namespace()
        self.spec = f"redis:{url}:{self.namespace}"
        self._names = RedisLimiter(url, namespace=self.namespace)  # names keys, never connects
        self._redis = redis_asyncio.Redis.from_url(url, decode_responses=True)

    def _open(self) -> Limiter:
        return RedisLimiter(self.url, namespace=self.namespace)

    async def aclose(self) -> None:
        await super().aclose()
        await self._names.aclose()
        await self._redis.aclose()

    async def anchors(self, key_id: str, scope: str) -> list[float]:
        log = await self._redis.zrange(
            self._names.budget_key(key_id, scope), 0, -1, withscores=True
        )
        return sorted(score / 1_000_000 for _member, score in log)  # microseconds in Redis

    async def set_nonce_counter(self, key_id: str, last: int) -> None:
        await self._redis.set(self._names.nonce_key(key_id), last)


@pytest.fixture(params=["sqlite", pytest.param("redis", marks=pytest.mark.redis)])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SharedStore]:
    shared: SharedStore
    if request.param == "sqlite":
        shared = SQLiteStore(tmp_path / "budgets" / "limits.sqlite")
    else:
        shared = RedisStore(request.getfixturevalue("redis_url"))
    yield shared
    await shared.aclose()


@pytest.fixture
def limiter(store: SharedStore) -> Limiter:
    return store.limiter()


# -- the rule ----------------------------------------------------------------------------------


async def test_a_second_limiter_sees_the_first_ones_requests(
    store: SharedStore, limiter: Limiter
) -> None:
    limit = RateLimit(3, 0.5)
    admissions = [await limiter.acquire("k", "s", limit, 5.0) for _ in range(3)]
    began = time.monotonic()
    for admission in admissions:
        limiter.conclude(admission, Outcome.ANSWERED)
    other = store.limiter()
    await other.acquire("k", "s", limit, 5.0)
    # The answers came at ``began``: the next request waits one window from them.
    assert 0.45 <= time.monotonic() - began < 1.2


async def test_a_request_in_flight_counts_until_its_answer(limiter: Limiter) -> None:
    limit = RateLimit(1, 0.2)
    first = await limiter.acquire("k", "s", limit, 5.0)
    second = asyncio.create_task(limiter.acquire("k", "s", limit, 5.0))
    await asyncio.sleep(0.5)  # more than a window: the deadline, not the admission, holds it
    assert not second.done()
    answered = time.monotonic()
    limiter.conclude(first, Outcome.ANSWERED)
    await second
    assert 0.15 <= time.monotonic() - answered < 1.0


async def test_a_request_not_sent_frees_its_place_and_one_without_answer_keeps_it(
    store: SharedStore, limiter: Limiter
) -> None:
    limit = RateLimit(1, 10)
    first = await limiter.acquire("k", "s", limit, 5.0)
    assert first.local_deadline <= time.monotonic() + 5.0
    limiter.conclude(first, Outcome.NOT_SENT)
    second = await asyncio.wait_for(limiter.acquire("k", "s", limit, 5.0), 1)
    limiter.conclude(second, Outcome.NO_ANSWER)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(limiter.acquire("k", "s", limit, 5.0), 0.3)
    # The one without answer stays anchored at its deadline.
    assert await store.anchors("k", "s") == [pytest.approx(second.deadline)]


# The processes that share the budget run asyncio's loop whatever this one runs.
@pytest.mark.asyncio_only
@pytest.mark.parametrize(
    ("seeds", "each", "limit", "longest"),
    [
        # Close to the least each limit allows (three windows): nothing is wasted either.
        ([0, 1, 2], 20, RateLimit(15, 0.5), 1.5 * 3 * 0.5),
        ([1, 2], 40, RateLimit(20, 1.0), 4.0),
    ],
    ids=["3x20-at-15-per-0.5s", "2x40-at-20-per-1s"],
)
async def test_several_processes_share_one_budget_at_the_server(
    store: SharedStore, seeds: list[int], each: int, limit: RateLimit, longest: float
) -> None:
    async with ArrivalServer() as server, ready_workers(
        store.spec, server.hit_url("b"), each, limit, seeds, "--wait-go"
    ) as workers:
        await go(workers)
        codes = await asyncio.gather(*(drain(w) for w in workers))
    assert codes == [0] * len(seeds)
    arrivals = server.arrivals["b"]
    assert len(arrivals) == len(seeds) * each
    assert excess(arrivals, limit) == (0, 0)
    assert max(arrivals) - min(arrivals) <= longest


# -- pauses and backoff ------------------------------------------------------------------------


async def test_a_refusal_pauses_every_limiter_sharing_the_budget(
    store: SharedStore, limiter: Limiter
) -> None:
    limit = RateLimit(100, 1)
    admission = await limiter.acquire("k", "s", limit, 5.0)
    assert limiter.conclude(admission, Outcome.RATE_LIMITED, retry_after=1.0) == 1.0
    await limiter.aclose()  # the pause has reached the store
    other = store.limiter()
    began = time.monotonic()
    await other.acquire("k", "s", limit, 5.0)
    assert 0.9 <= time.monotonic() - began < 1.5
    began = time.monotonic()
    await other.acquire("k", "other", limit, 5.0)  # another scope does not pause
    assert time.monotonic() - began < 0.5


async def test_concurrent_refusals_are_one_backoff_event_and_the_next_doubles(
    limiter: Limiter,
) -> None:
    limit = RateLimit(100, 1)
    burst = [await limiter.acquire("k", "s", limit, 5.0) for _ in range(5)]
    pauses = [limiter.conclude(a, Outcome.RATE_LIMITED) for a in burst]
    assert 1.0 <= pauses[0] <= 1.25
    assert all(p <= pauses[0] for p in pauses[1:])  # the same event, the same pause
    after = await limiter.acquire("k", "s", limit, 5.0)  # waits for the pause
    assert 2.0 <= limiter.conclude(after, Outcome.RATE_LIMITED) <= 2.5


async def test_a_server_refusing_below_the_limit_lowers_it(limiter: Limiter) -> None:
    limit = RateLimit(10, 60)
    admissions = [await limiter.acquire("k", "s", limit, 5.0) for _ in range(6)]
    for admission in admissions[:4]:
        limiter.conclude(admission, Outcome.ANSWERED)
    for admission in admissions[4:]:
        limiter.conclude(admission, Outcome.RATE_LIMITED, retry_after=0)
    assert limiter.effective_limit("k", "s", limit) == RateLimit(4, 60)
    assert limiter.effective_limit("k", "other", limit) == limit


# -- FIFO and cancellation within a process ----------------------------------------------------


async def test_waiters_are_first_in_first_out_and_a_cancelled_one_takes_nothing(
    store: SharedStore, limiter: Limiter
) -> None:
    limit = RateLimit(2, 0.25)
    order: list[int] = []

    async def one(i: int) -> None:
        admission = await limiter.acquire("k", "s", limit, 10.0)
        limiter.conclude(admission, Outcome.ANSWERED)
        order.append(i)

    tasks = []
    for i in range(8):
        tasks.append(asyncio.create_task(one(i)))
        await asyncio.sleep(0)
    cancelled = asyncio.create_task(limiter.acquire("k", "s", limit, 10.0))
    await asyncio.sleep(0.05)
    cancelled.cancel()
    await asyncio.gather(*tasks)
    assert order == list(range(8))
    assert len(await store.anchors("k", "s")) <= 8


async def test_a_cancelled_waiter_consumes_no_budget_and_the_next_proceeds(
    store: SharedStore, limiter: Limiter
) -> None:
    limit = RateLimit(1, 0.4)
    limiter.conclude(await limiter.acquire("k", "s", limit, 10.0), Outcome.ANSWERED)
    began = time.monotonic()
    head = asyncio.create_task(limiter.acquire("k", "s", limit, 10.0))
    await asyncio.sleep(0.05)
    second = asyncio.create_task(limiter.acquire("k", "s", limit, 10.0))
    await asyncio.sleep(0.05)
    head.cancel()
    await second
    assert 0.35 <= time.monotonic() - began < 0.8  # it took the slot the head gave up
    assert head.cancelled()
    assert len(await store.anchors("k", "s")) == 1


async def test_a_waiter_cancelled_just_after_an_answer_woke_it_stays_cancelled(
    limiter: Limiter,
) -> None:
    """A call waiting on a request in flight is woken by its answer; cancelled at any turn of
    the loop after that, its cancellation goes through (it used to be swallowed while the
    waiter put its sleep away, and the call was then admitted and sent)."""
    for turns in range(8):
        loop = asyncio.get_running_loop()
        woken: asyncio.Future[None] = loop.create_future()
        waiting = asyncio.create_task(
            limiter._sleep_unless_woken(10.0, woken)  # type: ignore[attr-defined]
        )
        await asyncio.sleep(0)
        woken.set_result(None)
        for _ in range(turns):
            await asyncio.sleep(0)
        pending = waiting.cancel()  # False: it had returned already, nothing to cancel
        async with asyncio.timeout(5):
            with contextlib.suppress(asyncio.CancelledError):
                await waiting
        assert waiting.cancelled() == pending, turns


async def test_a_client_with_a_shorter_window_leaves_a_longer_windows_log_whole(
    store: SharedStore,
) -> None:
    """Two clients of one budget count it in windows of different lengths (20 per 4 s, 5 per
    1 s). The shorter one's admissions never drop the anchors the longer one counts: it still
    admits only 20 in its 4 s (before, the store kept only the last admitter's window, and a
    run measured 35 at the server for a limit of 20)."""
    long_limit, short_limit = RateLimit(20, 4.0), RateLimit(5, 1.0)
    longer, shorter = store.limiter(), store.limiter()
    for _ in range(15):
        longer.conclude(await longer.acquire("k", "s", long_limit, 5.0), Outcome.ANSWERED)
    await asyncio.sleep(1.1)  # the 15 leave the shorter window
    shorter.conclude(await shorter.acquire("k", "s", short_limit, 5.0), Outcome.ANSWERED)
    for _ in range(4):  # 20 in the longer window now
        longer.conclude(
            await asyncio.wait_for(longer.acquire("k", "s", long_limit, 5.0), 1.0),
            Outcome.ANSWERED,
        )
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(longer.acquire("k", "s", long_limit, 5.0), 0.5)


async def test_a_longer_window_is_kept_while_its_client_admits_and_forgotten_after(
    store: SharedStore,
) -> None:
    """The store keeps a budget's anchors for the longest window a client counts in until one
    such window has passed since that client's last admission: then a shorter window's client
    prunes them again (the log does not keep the length of a window used once, forever)."""
    long_limit, short_limit = RateLimit(10, 0.6), RateLimit(10, 0.2)
    longer, shorter = store.limiter(), store.limiter()
    for _ in range(3):
        longer.conclude(await longer.acquire("k", "s", long_limit, 5.0), Outcome.ANSWERED)
    await asyncio.sleep(0.3)  # out of the short window, inside the long one
    shorter.conclude(await shorter.acquire("k", "s", short_limit, 5.0), Outcome.ANSWERED)
    await asyncio.sleep(0.2)  # let the answer's anchor land (it moves in the background)
    assert len(await store.anchors("k", "s")) == 4
    await asyncio.sleep(0.5)  # the long window has passed since its client last admitted
    shorter.conclude(await shorter.acquire("k", "s", short_limit, 5.0), Outcome.ANSWERED)
    await asyncio.sleep(0.2)
    assert len(await store.anchors("k", "s")) == 1


# -- nonces ------------------------------------------------------------------------------------


@pytest.mark.parametrize("at_once", [False, True], ids=["one-after-another", "at-once"])
async def test_limiters_sharing_a_key_draw_distinct_increasing_nonces(
    store: SharedStore, at_once: bool
) -> None:
    limiters = [store.limiter() for _ in range(4)]
    limit = RateLimit(10_000, 1)
    draws = [
        limiters[i % 4].acquire("key-hash", f"s{i % 2}", limit, 10.0, clock_ms)
        for i in range(400)
    ]
    admissions = await asyncio.gather(*draws) if at_once else [await draw for draw in draws]
    nonces = [admission.nonce for admission in admissions]
    assert all(isinstance(nonce, int) for nonce in nonces)
    assert len(set(nonces)) == 400
    if not at_once:
        assert nonces == sorted(nonces)
    assert abs(min(n for n in nonces if n is not None) - clock_ms()) < 5000
    no_nonce = await limiters[0].acquire("key-hash", "s0", limit, 10.0)
    assert no_nonce.nonce is None


class BoundedClock(BaseNonceClock):
    """A nonce clock that answers have bounded: the server's time is ``offset`` ms from this
    machine's, give or take ``half`` ms (what ``txc_async._nonces.sources.NonceClock`` gives)."""

    def __init__(self, offset: int = 0, half: int = 50) -> None:
        self.offset, self.half = offset, half

    def __call__(self) -> int:
        return clock_ms() + self.offset

    def known_ceiling_ms(self) -> int:
        return clock_ms() + self.offset + self.half + NONCE_WINDOW_MS


async def test_the_nonce_follows_the_given_clock_and_a_counter_far_ahead_comes_back(
    limiter: Limiter,
) -> None:
    limit = RateLimit(10_000, 1)
    offset = 30_000  # the server's clock, 30 s ahead of this machine's
    ahead = await limiter.acquire("k", "s", limit, 5.0, lambda: clock_ms() + offset)
    assert ahead.nonce is not None and abs(ahead.nonce - (clock_ms() + offset)) < 1000
    # The estimate is corrected by answers: the counter lies 30 s past the clock now given,
    # and far past the highest nonce the server can have accepted.
    began = time.monotonic()
    back = await limiter.acquire("k", "s", limit, 5.0, BoundedClock())
    waited = time.monotonic() - began
    assert back.nonce is not None and back.nonce > ahead.nonce - offset
    assert back.nonce - clock_ms() <= 4000  # within the lead the service allows
    assert waited < 1.5  # brought back to the window's edge, not 30 s of waiting


@pytest.mark.parametrize("fresh", ["no answer yet", "plain function"])
async def test_a_clock_that_bounds_nothing_never_lowers_the_counter(
    store: SharedStore, fresh: str
) -> None:
    """The server's clock is 3.5 s ahead of this machine's. One process, whose answers showed
    that, ran the key's counter 2 s ahead of the server in a burst; a process started meanwhile
    has seen no answer and draws on this machine's clock. The server may have accepted every
    value of the burst: the new process draws above them (after a short wait for the lead),
    never among them."""
    limit = RateLimit(10_000, 1)
    bursting, starting = store.limiter(), store.limiter()
    server = BoundedClock(offset=3_500)
    first = await bursting.acquire("k", "s", limit, 5.0, server)
    assert first.nonce is not None
    used = server() + 2_000  # the burst's last value: 5.5 s past this machine's clock
    await store.set_nonce_counter("k", used)
    clock = NonceClock(ServerClock()) if fresh == "no answer yet" else clock_ms
    admission = await asyncio.wait_for(starting.acquire("k", "s", limit, 5.0, clock), 5.0)
    assert admission.nonce is not None and admission.nonce > used


class AskingClock(BaseNonceClock):
    """A process's clock before any answer: no bound, until it asks the server's time."""

    def __init__(self) -> None:
        self.asked = 0

    def __call__(self) -> int:
        return clock_ms()

    def known_ceiling_ms(self) -> int | None:
        return clock_ms() + 50 + NONCE_WINDOW_MS if self.asked else None

    async def learn(self, timeout: float) -> bool:
        self.asked += 1
        return True


async def test_a_counter_far_ahead_of_a_clock_no_answer_bounds_makes_it_ask_the_server(
    store: SharedStore, limiter: Limiter
) -> None:
    """A clock that ran an hour fast left the counter an hour ahead: a process that knows no
    bound asks the server's time once, then brings the counter back and draws (not an hour's
    wait)."""
    limit = RateLimit(10_000, 1)
    await limiter.acquire("k", "s", limit, 5.0, clock_ms)
    await store.set_nonce_counter("k", clock_ms() + 3_600_000)
    clock = AskingClock()
    admission = await asyncio.wait_for(limiter.acquire("k", "s", limit, 5.0, clock), 5.0)
    assert clock.asked == 1
    assert admission.nonce is not None and admission.nonce - clock_ms() <= 4_000


class Asker:
    """What asks the server's time for a NonceClock: counts the asks, each taking ``takes``
    seconds and teaching nothing (a server whose answers carry no usable Date)."""

    def __init__(self, takes: float) -> None:
        self.takes, self.asks = takes, 0

    async def ask(self, timeout: float) -> None:
        self.asks += 1
        await asyncio.sleep(self.takes)


@pytest.mark.parametrize("takes", [0.0, 30.0], ids=["taught-nothing", "never-answered"])
async def test_the_server_s_time_is_asked_once_and_never_makes_a_draw_wait_longer(
    store: SharedStore, limiter: Limiter, takes: float
) -> None:
    """A counter 5 s ahead of a clock no answer bounds: the plain wait is about a second. An
    ask that never answers is given no more than that second; one that taught nothing is not
    asked again, by later calls or by calls waiting at the same time."""
    limit = RateLimit(10_000, 1)
    await limiter.acquire("k", "s", limit, 5.0, clock_ms)
    asker = Asker(takes)
    clock = NonceClock(ServerClock(), asker.ask)
    began = time.monotonic()
    for _ in range(2):
        await store.set_nonce_counter("k", clock_ms() + 5_000)
        draws = [limiter.acquire("k", f"s{i}", limit, 5.0, clock) for i in range(3)]
        admissions = await asyncio.wait_for(asyncio.gather(*draws), 10.0)
        assert all(a.nonce is not None for a in admissions)
    assert asker.asks == 1
    assert time.monotonic() - began < 6.0  # two plain waits of about a second, and the draws


async def test_a_burst_waits_rather_than_run_the_nonce_past_the_lead(
    store: SharedStore, limiter: Limiter
) -> None:
    frozen = clock_ms()
    limit = RateLimit(100_000, 1)
    first = await limiter.acquire("k", "s", limit, 5.0, lambda: frozen)
    assert first.nonce == frozen
    await store.set_nonce_counter("k", frozen + 3999)  # as after a burst on a clock standing still
    last = await limiter.acquire("k", "s", limit, 5.0, lambda: frozen)
    assert last.nonce == frozen + 4000
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(limiter.acquire("k", "s", limit, 5.0, lambda: frozen), 0.2)
    # Once the clock moves on, it goes.
    moved = await limiter.acquire("k", "s", limit, 5.0, lambda: frozen + 2)
    assert moved.nonce == frozen + 4001


async def test_a_nonce_drawn_before_a_long_wait_for_a_connection_is_drawn_again(
    limiter: Limiter,
) -> None:
    """The store draws the nonce at admission; a request that then waits for a connection
    longer than a nonce may age (slow answers hold every connection) is admitted again for a
    new one, so what leaves is never more than MAX_NONCE_AGE_MS behind the server's clock (a
    wait past the 5 s window was refused at the server)."""
    import aiohttp

    import txc_async
    from txc_async._nonces.clock import MAX_NONCE_AGE_MS
    from txc_async.sandbox import Sandbox

    from ..support.common import nonce_lateness

    trace, late = nonce_lateness()

    async with Sandbox() as box, aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=1), trace_configs=[trace]
    ) as session:
        client = txc_async.Client(api_key=box.api_key, api_secret=box.api_secret,
                                  base_url=box.url, limiter=limiter, session=session)
        await client.main_balance()  # an answer bounds the server's clock
        late.clear()
        box.faults.add("/api/v4/main-account/balance", "slow", delay=0.8, times=2)
        await asyncio.gather(*(client.main_balance() for _ in range(3)))
        await client.close()
    # The third waited 1.6 s for the one connection: its first nonce was too old by then.
    assert len(late) == 3
    assert max(late) < MAX_NONCE_AGE_MS, late
    assert box.stats.nonce_refused == 0


async def test_requests_that_wait_for_connections_and_budget_at_once_never_stall(
    limiter: Limiter,
) -> None:
    """Slow answers hold both connections and the budget is spent: requests whose nonces aged
    while they waited for a connection draw new ones from the store without giving up their
    place or holding a connection through a wait for budget (which stalled every request for
    about three timeouts)."""
    import txc_async
    from txc_async.sandbox import Sandbox

    limits = {"mining_hashrate": RateLimit(5, 1.0)}
    async with Sandbox(rate_limits=limits) as box:
        box.faults.add("/api/v4/mining/hashrate", "slow", delay=0.75, times=100)
        async with txc_async.Client(
            box.api_key, box.api_secret, base_url=box.url, limiter=limiter,
            rate_limits=limits, max_connections=2, timeout=10.0,
        ) as client:
            started = time.monotonic()
            name = box.mining_account_names[0]
            await asyncio.gather(*(client.mining_hashrate(account=name) for _ in range(16)))
            took = time.monotonic() - started
        arrivals = box.stats.arrivals["mining_hashrate"]
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    assert took < 12.0 and max(gaps) < 2.0, (took, gaps)
    assert box.stats.nonce_refused == 0 and box.stats.rate_limited == 0
