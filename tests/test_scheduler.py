"""InProcessLimiter: window arithmetic, allowance, FIFO, cancellation, pauses, idle gaps, the fast
path and the efficiency bounds on a fake clock; then the guarantee measured at a real server."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import random
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any

import aiohttp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import txc_async
from txc_async import InProcessLimiter, RateLimit
from txc_async._scheduler import default_jitter_allowance, default_limiter

from ._arrival_server import ArrivalServer, max_in_window, strict_refusals


class FakeClock:
    """A clock that moves only when told, and a ``sleep`` that waits on it.

    With ``auto=True`` a sleeper moves the clock itself, after letting every task that is ready
    run first (right when a single sleeper exists, which the limiter promises: only the head of a
    queue sleeps). Otherwise :meth:`advance_to` moves it, waking sleepers in deadline order.
    """

    def __init__(self, *, auto: bool = True, start: float = 1000.0) -> None:
        self.now = start
        self.auto = auto
        self.sleeps: list[float] = []
        self.sleeping = 0
        self.most_sleeping = 0
        self._timers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.sleeping += 1
        self.most_sleeping = max(self.most_sleeping, self.sleeping)
        try:
            if self.auto:
                for _ in range(3):
                    await asyncio.sleep(0)
                self.now += max(0.0, seconds)
            else:
                timer: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                heapq.heappush(self._timers, (self.now + seconds, next(self._order), timer))
                await timer
        finally:
            self.sleeping -= 1

    def next_deadline(self) -> float | None:
        while self._timers and self._timers[0][2].done():
            heapq.heappop(self._timers)  # a cancelled sleeper
        return self._timers[0][0] if self._timers else None

    async def advance_to(self, moment: float, progress: Callable[[], object] = lambda: None
                         ) -> None:
        """Move the clock to ``moment``, waking each sleeper at its deadline and letting the
        tasks run until they stop making progress before moving on."""
        await settle(progress)
        while (deadline := self.next_deadline()) is not None and deadline <= moment:
            _, _, timer = heapq.heappop(self._timers)
            self.now = max(self.now, deadline)
            timer.set_result(None)
            await settle(progress)
        self.now = max(self.now, moment)
        await settle(progress)

    async def advance(self, seconds: float) -> None:
        await self.advance_to(self.now + seconds)


async def settle(progress: Callable[[], object] = lambda: None, quiet: int = 6) -> None:
    """Let the loop run until ``progress()`` has not changed for ``quiet`` turns in a row."""
    seen, still = progress(), 0
    while still < quiet:
        await asyncio.sleep(0)
        now = progress()
        still = still + 1 if now == seen else 0
        seen = now


def limiter_on(clock: FakeClock, *, allowance: float | None = None,
               jitter: float = 0.5) -> InProcessLimiter:
    return InProcessLimiter(clock=clock, sleep=clock.sleep, random=lambda: jitter,
                            jitter_allowance=allowance)


async def burst(limiter: InProcessLimiter, clock: FakeClock, limit: RateLimit, count: int,
                key: str = "k", scope: str = "s") -> list[float]:
    """``count`` requests at once; their admission times, in admission order."""
    admitted: list[float] = []

    async def one() -> None:
        await limiter.acquire(key, scope, limit)
        admitted.append(clock.now)

    await asyncio.gather(*(one() for _ in range(count)))
    return admitted


def least_time(count: int, limit: RateLimit) -> float:
    """The least time from the first to the last of ``count`` requests the limit allows."""
    return (math.ceil(count / limit.max_requests) - 1) * limit.per_seconds


def closest_spacing(times: list[float], n: int) -> float:
    """The shortest span holding n + 1 of ``times``: at least the window when the log holds."""
    ordered = sorted(times)
    return min((ordered[i + n] - ordered[i] for i in range(len(ordered) - n)), default=math.inf)


# -- the allowance -----------------------------------------------------------------------------


def test_the_default_allowance_is_5_percent_between_50_and_250_ms() -> None:
    assert default_jitter_allowance(0.1) == 0.05
    assert default_jitter_allowance(1) == 0.05
    assert default_jitter_allowance(2) == pytest.approx(0.1)
    assert default_jitter_allowance(5) == 0.25
    assert default_jitter_allowance(10) == 0.25
    assert default_jitter_allowance(3600) == 0.25
    limiter = InProcessLimiter()
    assert limiter.window(RateLimit(10, 2)) == pytest.approx(2.1)
    assert limiter.window(RateLimit(10, 10)) == 10.25


def test_the_allowance_can_be_set_and_is_checked() -> None:
    assert InProcessLimiter(jitter_allowance=0).window(RateLimit(1, 3)) == 3
    assert InProcessLimiter(jitter_allowance=0.5).window(RateLimit(1, 3)) == 3.5
    for bad in (-0.1, math.nan, math.inf, True):
        with pytest.raises(ValueError, match="jitter_allowance"):
            InProcessLimiter(jitter_allowance=bad)


# -- window arithmetic -------------------------------------------------------------------------


async def test_one_more_goes_exactly_when_the_oldest_leaves_the_window() -> None:
    clock = FakeClock(auto=False, start=0.0)
    limiter = limiter_on(clock, allowance=0.1)  # window 1.1 s
    limit = RateLimit(3, 1)
    times: list[float] = []

    async def one() -> None:
        await limiter.acquire("k", "s", limit)
        times.append(clock.now)

    for moment in (0.0, 0.5, 0.9):
        await clock.advance_to(moment)
        await one()  # budget to spare: at once
    waiting = [asyncio.create_task(one()) for _ in range(3)]
    await clock.advance_to(1.1 - 1e-6)
    assert times == [0.0, 0.5, 0.9]  # the admission at 0.0 is still in (t - 1.1, t]
    await clock.advance_to(5.0)
    await asyncio.gather(*waiting)
    assert times == pytest.approx([0.0, 0.5, 0.9, 1.1, 1.6, 2.0])


async def test_the_admission_log_never_holds_more_than_the_limit_in_any_window() -> None:
    clock = FakeClock()
    limit = RateLimit(50, 10)
    limiter = limiter_on(clock)
    admitted = await burst(limiter, clock, limit, 420)
    window = limiter.window(limit)
    assert closest_spacing(admitted, 50) >= window - 1e-9
    # So a server that receives them with any delays of 0..allowance sees at most 50 in 10 s.
    rng = random.Random(7)
    for _ in range(20):
        arrivals = [t + rng.uniform(0, window - limit.per_seconds) for t in admitted]
        assert max_in_window(arrivals, limit.per_seconds) <= 50
    # The worst case: the earlier request of every pair delayed the most, the later not at all.
    ordered = sorted(admitted)
    worst = [t + (0.25 if i % 100 < 50 else 0.0) for i, t in enumerate(ordered)]
    assert max_in_window(worst, limit.per_seconds) <= 50
    assert len(limiter._budgets[("k", "s")].admitted) == 50  # memory: N floats, not K


async def test_an_idle_gap_does_not_let_a_double_burst_through() -> None:
    clock = FakeClock(auto=False, start=0.0)
    limiter = limiter_on(clock)
    limit = RateLimit(10, 1)  # window 1.05 s
    times: list[float] = []

    async def one() -> None:
        await limiter.acquire("k", "s", limit)
        times.append(clock.now)

    await asyncio.gather(*(one() for _ in range(10)))
    await clock.advance_to(0.9)  # idle, but less than a window
    second = [asyncio.create_task(one()) for _ in range(10)]
    await clock.advance_to(0.95)
    assert len(times) == 10
    await clock.advance_to(1.05)
    await asyncio.gather(*second)
    assert times[10:] == [1.05] * 10
    # A long idle gap: a whole budget at once again, on the fast path.
    await clock.advance_to(60.0)
    sleeps = len(clock.sleeps)
    await asyncio.gather(*(one() for _ in range(10)))
    assert times[20:] == [60.0] * 10 and len(clock.sleeps) == sleeps
    assert max_in_window(times, limiter.window(limit) - 1e-9) <= 10


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    max_requests=st.integers(1, 8),
    per_seconds=st.sampled_from([0.5, 1.0, 3.0, 10.0]),
    groups=st.lists(
        st.tuples(st.floats(0, 25, allow_nan=False), st.integers(1, 20)), min_size=1, max_size=8
    ),
)
def test_every_request_goes_at_the_first_moment_the_window_and_its_turn_allow(
    max_requests: int, per_seconds: float, groups: list[tuple[float, int]]
) -> None:
    """Admission k happens at max(its arrival, admission k-1, admission k-N + window): FIFO,
    never early (the guarantee), never later than needed (efficiency)."""
    limit = RateLimit(max_requests, per_seconds)

    async def scenario() -> tuple[list[tuple[int, float]], list[float], float]:
        clock = FakeClock(auto=False, start=0.0)
        limiter = limiter_on(clock)
        admitted: list[tuple[int, float]] = []
        arrived: list[float] = []
        tasks: list[asyncio.Task[None]] = []

        async def one(index: int) -> None:
            await limiter.acquire("k", "s", limit)
            admitted.append((index, clock.now))

        moment = 0.0
        for gap, count in groups:
            moment += gap
            await clock.advance_to(moment, progress=admitted.__len__)
            for _ in range(count):
                arrived.append(clock.now)
                tasks.append(asyncio.create_task(one(len(tasks))))
            await settle(admitted.__len__)
        while (deadline := clock.next_deadline()) is not None:
            await clock.advance_to(deadline, progress=admitted.__len__)
        assert all(task.done() for task in tasks)
        assert clock.most_sleeping == 1 or not clock.sleeps
        return admitted, arrived, limiter.window(limit)

    admitted, arrived, window = asyncio.run(scenario())
    assert [index for index, _ in admitted] == list(range(len(arrived)))  # FIFO
    expected: list[float] = []
    for k, arrival in enumerate(arrived):
        earliest = arrival
        if k:
            earliest = max(earliest, expected[k - 1])
        if k >= max_requests:
            earliest = max(earliest, expected[k - max_requests] + window)
        expected.append(earliest)
    assert [moment for _, moment in admitted] == pytest.approx(expected, abs=1e-9)
    assert closest_spacing([m for _, m in admitted], max_requests) >= window - 1e-9


# -- efficiency --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("limit", "count"),
    [(RateLimit(50, 10), 420), (RateLimit(1, 1), 30), (RateLimit(1000, 10), 5000),
     (RateLimit(200, 1), 1000), (RateLimit(20, 0.5), 85), (RateLimit(2000, 10), 20_001)],
)
async def test_a_burst_finishes_within_20_percent_of_the_least_possible_time(
    limit: RateLimit, count: int
) -> None:
    clock = FakeClock()
    limiter = limiter_on(clock)
    start = clock.now
    admitted = await burst(limiter, clock, limit, count)
    took = admitted[-1] - start
    # Exactly one window plus the allowance per budget's worth after the first.
    assert took == pytest.approx(
        (math.ceil(count / limit.max_requests) - 1) * limiter.window(limit)
    )
    assert took <= 1.2 * least_time(count, limit)
    assert clock.most_sleeping == 1  # only the head of the queue sleeps


@pytest.mark.parametrize(
    "limit", [RateLimit(1000, 10), RateLimit(200, 1), RateLimit(20, 0.5), RateLimit(1, 1)]
)
async def test_a_long_run_sustains_at_least_90_percent_of_the_limit(limit: RateLimit) -> None:
    clock = FakeClock()
    limiter = limiter_on(clock)
    count = 40 * limit.max_requests
    admitted = await burst(limiter, clock, limit, count)
    # Requests per window after the first budget's worth, over the whole run.
    rate = (count - limit.max_requests) / (admitted[-1] - admitted[0]) * limit.per_seconds
    assert rate >= 0.9 * limit.max_requests


async def test_requests_trickling_in_below_the_limit_never_wait() -> None:
    clock = FakeClock()
    limiter = limiter_on(clock)
    limit = RateLimit(10, 1)
    for _ in range(1000):
        await limiter.acquire("k", "s", limit)
        clock.now += 0.11  # 9.1 per second: under the limit of 10 per 1.05 s
    assert clock.sleeps == []


# -- the fast path -----------------------------------------------------------------------------


async def test_with_budget_and_no_waiter_acquire_completes_without_suspending(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = FakeClock(auto=False)
    limiter = limiter_on(clock)
    limit = RateLimit(100, 1)
    loop = asyncio.get_running_loop()
    created = 0
    original = loop.create_future

    def counting() -> asyncio.Future[Any]:
        nonlocal created
        created += 1
        return original()

    monkeypatch.setattr(loop, "create_future", counting)
    for _ in range(100):
        coroutine = limiter.acquire("k", "s", limit)
        # Driven by hand: a coroutine that finishes on its first step never suspended.
        with pytest.raises(StopIteration):
            coroutine.send(None)
    assert created == 0 and clock.sleeps == []
    # The 101st must wait: it suspends, and closing it leaves the queue empty again.
    waiting: Coroutine[Any, Any, None] = limiter.acquire("k", "s", limit)
    waiting.send(None)
    assert clock.sleeps == [pytest.approx(1.05)]
    waiting.close()
    assert not limiter._budgets[("k", "s")].turns


# -- FIFO and cancellation ---------------------------------------------------------------------


async def test_waiters_are_admitted_first_in_first_out() -> None:
    clock = FakeClock()
    limiter = limiter_on(clock)
    limit = RateLimit(2, 1)
    order: list[int] = []

    async def one(i: int) -> None:
        await limiter.acquire("k", "s", limit)
        order.append(i)

    tasks = []
    for i in range(30):
        tasks.append(asyncio.create_task(one(i)))
        await asyncio.sleep(0)
    await asyncio.gather(*tasks)
    assert order == list(range(30))
    assert clock.most_sleeping == 1


async def test_a_cancelled_head_consumes_no_budget_and_the_next_waiter_proceeds() -> None:
    clock = FakeClock(auto=False, start=0.0)
    limiter = limiter_on(clock)
    limit = RateLimit(1, 1)  # window 1.05 s
    await limiter.acquire("k", "s", limit)
    head = asyncio.create_task(limiter.acquire("k", "s", limit))
    await settle()
    second = asyncio.create_task(limiter.acquire("k", "s", limit))
    third = asyncio.create_task(limiter.acquire("k", "s", limit))
    await clock.advance_to(0.5)
    assert clock.sleeping == 1  # the head sleeps on the clock; the others wait their turn
    head.cancel()
    await settle()
    assert head.cancelled()
    assert clock.sleeping == 1  # the second is the head now, and sleeps in its place
    await clock.advance_to(1.05)
    assert second.done() and not third.done()
    await clock.advance_to(2.1)
    assert third.done()
    budget = limiter._budgets[("k", "s")]
    assert list(budget.admitted) == pytest.approx([2.1])  # N = 1: the last admission only
    assert not budget.turns


async def test_a_waiter_cancelled_just_as_its_turn_comes_passes_the_turn_on() -> None:
    clock = FakeClock(auto=False, start=0.0)
    limiter = limiter_on(clock)
    limit = RateLimit(1, 1)
    await limiter.acquire("k", "s", limit)

    async def head() -> None:
        await limiter.acquire("k", "s", limit)
        # Its turn was handed to the second one a moment ago; the second has not run yet.
        second.cancel()

    first = asyncio.create_task(head())
    await settle()
    second = asyncio.create_task(limiter.acquire("k", "s", limit))
    third = asyncio.create_task(limiter.acquire("k", "s", limit))
    await clock.advance_to(1.05)
    assert first.done() and second.cancelled() and not third.done()
    await clock.advance_to(2.1)
    assert third.done()
    assert list(limiter._budgets[("k", "s")].admitted) == pytest.approx([2.1])


async def test_a_cancelled_waiter_in_the_middle_of_the_queue_blocks_no_one() -> None:
    clock = FakeClock(auto=False, start=0.0)
    limiter = limiter_on(clock)
    limit = RateLimit(2, 1)
    order: list[str] = []

    async def one(name: str) -> None:
        await limiter.acquire("k", "s", limit)
        order.append(f"{name}@{clock.now:.2f}")

    await asyncio.gather(one("a"), one("b"))
    tasks = {name: asyncio.create_task(one(name)) for name in "cdef"}
    await settle()
    tasks["d"].cancel()
    await clock.advance_to(3.0)
    assert order == ["a@0.00", "b@0.00", "c@1.05", "e@1.05", "f@2.10"]
    assert tasks["d"].cancelled()


async def test_a_timed_out_waiter_leaves_the_queue_and_wakes_the_next() -> None:
    clock = FakeClock(auto=False, start=0.0)
    limiter = limiter_on(clock)
    limit = RateLimit(1, 1)
    await limiter.acquire("k", "s", limit)
    # The fake clock never moves here, so real timeouts expire while these wait.
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.01):
            await limiter.acquire("k", "s", limit)  # the head, sleeping on the clock
    behind = asyncio.create_task(limiter.acquire("k", "s", limit))
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(limiter.acquire("k", "s", limit), 0.01)  # behind the head
    await settle()
    budget = limiter._budgets[("k", "s")]
    assert len(budget.turns) == 1 and clock.sleeping == 1
    await clock.advance_to(1.05)
    await behind
    assert list(budget.admitted) == [1.05] and not budget.turns


# -- pauses after a rate-limit refusal ---------------------------------------------------------


async def test_backoff_doubles_from_1_s_to_30_s_with_jitter_and_success_resets_it() -> None:
    clock = FakeClock()
    limit = RateLimit(100, 10)
    low = limiter_on(clock, jitter=0.0)
    assert [await low.rate_limited("k", "s", limit, None) for _ in range(7)] == [
        1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0
    ]
    high = limiter_on(clock, jitter=0.999999)
    pauses = [await high.rate_limited("k", "s", limit, None) for _ in range(6)]
    assert pauses == pytest.approx([1.25, 2.5, 5.0, 10.0, 20.0, 30.0], rel=1e-5)
    high.succeeded("k", "s")
    assert await high.rate_limited("k", "s", limit, None) == pytest.approx(1.25, rel=1e-5)
    for _ in range(2000):  # a very long streak stays at the cap
        await low.rate_limited("k", "s", limit, None)
    assert await low.rate_limited("k", "s", limit, None) == 30.0
    default_random = InProcessLimiter(clock=clock, sleep=clock.sleep)
    for _ in range(50):
        first = await default_random.rate_limited("j", "s", limit, None)
        default_random.succeeded("j", "s")
        assert 1.0 <= first <= 1.25


async def test_retry_after_sets_the_pause_up_to_300_s() -> None:
    clock = FakeClock()
    limiter = limiter_on(clock, jitter=0.0)
    limit = RateLimit(100, 10)
    assert await limiter.rate_limited("k", "s", limit, 7.0) == 7.0
    assert await limiter.rate_limited("k", "s", limit, 0.0) == 0.0
    assert await limiter.rate_limited("k", "s", limit, 10_000.0) == 300.0
    assert await limiter.rate_limited("k", "s", limit, math.inf) == 300.0
    # Nonsense falls back to the backoff (the fifth refusal in a row here: 16 s).
    assert await limiter.rate_limited("k", "s", limit, math.nan) == 16.0
    assert await limiter.rate_limited("k", "s", limit, -1.0) == 30.0


async def test_a_pause_holds_the_whole_budget_and_waiters_keep_their_order() -> None:
    clock = FakeClock(auto=False, start=0.0)
    limiter = limiter_on(clock, jitter=0.0)
    limit = RateLimit(3, 1)
    order: list[str] = []

    async def one(name: str) -> None:
        await limiter.acquire("k", "s", limit)
        order.append(f"{name}@{clock.now:g}")

    await asyncio.gather(*(one(n) for n in "abc"))  # the budget is spent until 1.05
    queued = [asyncio.create_task(one(n)) for n in "de"]
    await clock.advance_to(0.5)
    assert await limiter.rate_limited("k", "s", limit, 2.0) == 2.0  # until 2.5
    await clock.advance_to(1.5)
    late = [asyncio.create_task(one(n)) for n in "fg"]
    await clock.advance_to(2.5 - 1e-6)
    assert order == ["a@0", "b@0", "c@0"]  # the window had room from 1.05, but the pause holds
    await clock.advance_to(4.0)
    await asyncio.gather(*queued, *late)
    assert order == ["a@0", "b@0", "c@0", "d@2.5", "e@2.5", "f@2.5", "g@3.55"]
    # A shorter pause does not cut a longer one short.
    await limiter.rate_limited("k", "s", limit, 5.0)  # until 9
    await limiter.rate_limited("k", "s", limit, 0.5)
    task = asyncio.create_task(one("h"))
    await clock.advance_to(8.9)
    assert not task.done()
    await clock.advance_to(9.0)
    await task
    assert order[-1] == "h@9"


async def test_a_pause_applies_to_its_budget_only() -> None:
    clock = FakeClock(auto=False)
    limiter = limiter_on(clock)
    limit = RateLimit(10, 1)
    await limiter.rate_limited("k", "paused", limit, 60.0)
    await limiter.acquire("k", "other", limit)
    await limiter.acquire("other-key", "paused", limit)
    assert clock.sleeps == []


async def test_budgets_are_separate_per_key_and_scope() -> None:
    clock = FakeClock()
    limiter = limiter_on(clock)
    limit = RateLimit(1, 10)
    for key, scope in (("a", "x"), ("a", "y"), ("b", "x")):
        await limiter.acquire(key, scope, limit)
    assert clock.sleeps == []


async def test_a_new_limit_for_a_budget_counts_what_was_already_admitted() -> None:
    clock = FakeClock()
    limiter = limiter_on(clock)
    await burst(limiter, clock, RateLimit(5, 1), 5)
    start = clock.now
    await limiter.acquire("k", "s", RateLimit(2, 1))  # 5 in the window already: wait
    assert clock.now - start == pytest.approx(1.05)
    await limiter.acquire("k", "s", RateLimit(6, 1))  # the same budget, now with room
    assert clock.now - start == pytest.approx(1.05)


# -- event loops and threads -------------------------------------------------------------------


def test_the_default_limiter_is_one_for_the_process_and_outlives_event_loops() -> None:
    assert default_limiter() is default_limiter()
    assert isinstance(default_limiter(), txc_async.Limiter)
    limiter = InProcessLimiter()
    limit = RateLimit(1, 30)
    asyncio.run(limiter.acquire("k", "s", limit))  # no loop is bound at construction
    # A loop closed while its task is the head of a queue, asleep: the task never leaves.
    loop = asyncio.new_event_loop()
    loop.set_exception_handler(lambda loop, context: None)
    abandoned = loop.create_task(limiter.acquire("k", "s", limit))
    loop.run_until_complete(asyncio.sleep(0.01))
    loop.close()
    assert len(limiter._budgets[("k", "s")].turns) == 1

    async def later() -> None:
        await limiter.rate_limited("k", "s", limit, 0.0)
        # The budget is spent for 30 s; asked with a new scope it goes at once, and the old
        # queue, whose head belongs to a dead loop, does not block a new waiter.
        await limiter.acquire("k", "t", limit)
        waiter = asyncio.create_task(limiter.acquire("k", "s", limit))
        await asyncio.sleep(0.01)
        assert len(limiter._budgets[("k", "s")].turns) == 1  # only the new waiter
        waiter.cancel()

    asyncio.run(later())
    del abandoned


def test_one_limiter_serves_event_loops_in_several_threads() -> None:
    limiter = InProcessLimiter()
    limit = RateLimit(10, 0.1)  # window 0.15 s
    admitted: list[float] = []
    errors: list[BaseException] = []

    async def requests(count: int) -> None:
        async def one() -> None:
            await limiter.acquire("k", "s", limit)
            admitted.append(time.monotonic())

        await asyncio.gather(*(one() for _ in range(count)))

    def thread_main() -> None:
        try:
            asyncio.run(requests(20))
        except BaseException as exc:  # reported by the test below
            errors.append(exc)

    threads = [threading.Thread(target=thread_main, daemon=True) for _ in range(3)]
    began = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert not errors and not any(t.is_alive() for t in threads)
    assert len(admitted) == 60
    assert max_in_window(admitted, limit.per_seconds) <= 10
    assert time.monotonic() - began < 5 * 0.15 + 0.5


# -- at a real server --------------------------------------------------------------------------


async def _fire(server: ArrivalServer, acquire: Callable[[], Coroutine[Any, Any, object]],
                budget: str, count: int, seed: int) -> None:
    """``count`` requests at once: each waits for ``acquire``, then for a random 0-30 ms (an
    uneven network), then reaches the server."""
    rng = random.Random(seed)
    delays = [rng.uniform(0, 0.03) for _ in range(count)]
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

        async def one(delay: float) -> None:
            await acquire()
            await asyncio.sleep(delay)
            async with session.post(server.hit_url(budget)) as answer:
                await answer.read()

        await asyncio.gather(*(one(d) for d in delays))


async def test_the_server_never_sees_more_than_the_limit_in_any_window() -> None:
    import aiolimiter

    limit = RateLimit(20, 0.5)
    count = 80
    limiter = InProcessLimiter()
    async with ArrivalServer() as server:
        await _fire(server, lambda: limiter.acquire("k", "s", limit), "ours", count, seed=1)
        # The same traffic through a leaky bucket shows the check can fail.
        bucket = aiolimiter.AsyncLimiter(limit.max_requests, limit.per_seconds)
        await _fire(server, bucket.acquire, "aiolimiter", 40, seed=2)
    arrivals = server.arrivals["ours"]
    assert len(arrivals) == count
    assert max_in_window(arrivals, limit.per_seconds) <= limit.max_requests
    assert strict_refusals(arrivals, limit.max_requests, limit.per_seconds) == 0
    span = max(arrivals) - min(arrivals)
    assert span <= 1.2 * least_time(count, limit)
    assert max_in_window(server.arrivals["aiolimiter"], limit.per_seconds) > limit.max_requests
