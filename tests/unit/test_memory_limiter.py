"""InProcessLimiter on a fake clock: the window arithmetic of anchors (a request counts from its
admission until one window after its answer, or after its deadline when no answer came), FIFO,
cancellation, the fast path, wake-ups by answers, separate and idle budgets, threads and loops."""

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

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import txc_async
from txc_async import Admission, InProcessLimiter, Outcome, RateLimit

from ..support.arrival_server import max_in_window

TIMEOUT = 10.0


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
        await quiet(progress)
        while (deadline := self.next_deadline()) is not None and deadline <= moment:
            _, _, timer = heapq.heappop(self._timers)
            self.now = max(self.now, deadline)
            timer.set_result(None)
            await quiet(progress)
        self.now = max(self.now, moment)
        await quiet(progress)


async def quiet(progress: Callable[[], object] = lambda: None, turns: int = 8) -> None:
    """Let the loop run until ``progress()`` has not changed for ``turns`` turns in a row."""
    seen, still = progress(), 0
    while still < turns:
        await asyncio.sleep(0)
        now = progress()
        still = still + 1 if now == seen else 0
        seen = now


def limiter_on(clock: FakeClock, jitter: float = 0.5) -> InProcessLimiter:
    return InProcessLimiter(clock=clock, sleep=clock.sleep, random=lambda: jitter)


def anchors(limiter: InProcessLimiter, key: str = "k", scope: str = "s") -> list[float]:
    """The budget's log: the latest moment each counted request could have reached the server."""
    budget = limiter._budgets[(key, scope)]
    now = limiter._clock()
    return [moment for moment in budget.log[budget.start:] if moment > now - budget.per_max]


async def admitted_now(limiter: InProcessLimiter, limit: RateLimit, timeout: float = TIMEOUT,
                       key: str = "k", scope: str = "s") -> Admission:
    admission = limiter.try_acquire(key, scope, limit, timeout)
    assert admission is not None, "the budget had room"
    return admission


# -- the window arithmetic of anchors ----------------------------------------------------------


async def test_a_request_in_flight_counts_until_its_answer_then_one_window_after_it() -> None:
    clock = FakeClock(auto=False, start=0.0)
    limiter = limiter_on(clock)
    limit = RateLimit(2, 1)
    first = await admitted_now(limiter, limit, timeout=5)
    await admitted_now(limiter, limit, timeout=5)
    assert anchors(limiter) == [5.0, 5.0]  # in flight: counted until the deadline
    assert limiter.try_acquire("k", "s", limit, 5) is None
    clock.now = 3.0  # long after a window, but both may still reach the server
    assert limiter.try_acquire("k", "s", limit, 5) is None
    assert limiter.conclude(first, Outcome.ANSWERED) == 0.0
    assert anchors(limiter) == [3.0, 5.0]  # answered: it arrived no later than now
    clock.now = 4.0 - 1e-9
    assert limiter.try_acquire("k", "s", limit, 5) is None
    clock.now = 4.0  # one window after the answer: (3, 4] no longer holds it
    third = await admitted_now(limiter, limit, timeout=5)
    assert third.admitted == 4.0 and third.deadline == 9.0
    assert anchors(limiter) == [5.0, 9.0]


async def test_a_request_that_never_left_frees_its_place_at_once() -> None:
    clock = FakeClock(auto=False, start=0.0)
    limiter = limiter_on(clock)
    limit = RateLimit(2, 1)
    kept = await admitted_now(limiter, limit)
    unsent = await admitted_now(limiter, limit)
    assert limiter.try_acquire("k", "s", limit, TIMEOUT) is None
    limiter.conclude(unsent, Outcome.NOT_SENT)
    assert anchors(limiter) == [10.0]
    again = await admitted_now(limiter, limit)
    assert again.admitted == 0.0
    limiter.conclude(kept, Outcome.ANSWERED)
    assert anchors(limiter) == [0.0, 10.0]


async def test_a_request_without_answer_counts_until_one_window_after_its_deadline() -> None:
    clock = FakeClock(auto=False, start=0.0)
    limiter = limiter_on(clock)
    limit = RateLimit(1, 1)
    lost = await admitted_now(limiter, limit, timeout=5)
    clock.now = 1.0
    limiter.conclude(lost, Outcome.NO_ANSWER)  # timed out: it may still arrive until 5
    assert anchors(limiter) == [5.0]
    clock.now = 6.0 - 1e-9
    assert limiter.try_acquire("k", "s", limit, 5) is None
    clock.now = 6.0
    assert limiter.try_acquire("k", "s", limit, 5) is not None


async def test_a_refused_request_counts_from_its_answer_and_pauses_the_budget() -> None:
    clock = FakeClock(auto=False, start=0.0)
    limiter = limiter_on(clock, jitter=0.0)
    limit = RateLimit(5, 1)
    refused = await admitted_now(limiter, limit)
    clock.now = 0.2
    assert limiter.conclude(refused, Outcome.RATE_LIMITED) == 1.0
    assert anchors(limiter) == [0.2]
    clock.now = 1.2 - 1e-9  # four places free in the window, but the pause holds
    assert limiter.try_acquire("k", "s", limit, TIMEOUT) is None
    clock.now = 1.2
    assert limiter.try_acquire("k", "s", limit, TIMEOUT) is not None


async def test_requests_with_different_timeouts_keep_the_log_in_order() -> None:
    clock = FakeClock(auto=False, start=0.0)
    limiter = limiter_on(clock)
    limit = RateLimit(3, 1)
    long = await admitted_now(limiter, limit, timeout=30)
    short = await admitted_now(limiter, limit, timeout=2)
    middle = await admitted_now(limiter, limit, timeout=7)
    assert anchors(limiter) == [2.0, 7.0, 30.0]
    clock.now = 0.5
    limiter.conclude(middle, Outcome.ANSWERED)
    assert anchors(limiter) == [0.5, 2.0, 30.0]
    limiter.conclude(long, Outcome.NO_ANSWER)
    limiter.conclude(short, Outcome.ANSWERED)
    assert anchors(limiter) == [0.5, 0.5, 30.0]
    clock.now = 1.5  # the two answered ones left the window; the lost one stays till 31
    assert limiter.try_acquire("k", "s", limit, 1) is not None
    assert limiter.try_acquire("k", "s", limit, 1) is not None
    assert limiter.try_acquire("k", "s", limit, 1) is None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    max_requests=st.integers(1, 6),
    per_seconds=st.sampled_from([0.5, 1.0, 3.0]),
    timeout=st.sampled_from([0.4, 1.0, 5.0]),
    seed=st.integers(0, 2**32 - 1),
)
def test_no_window_at_the_server_holds_more_than_the_limit_whatever_the_delays(
    max_requests: int, per_seconds: float, timeout: float, seed: int
) -> None:
    """Requests take any time to reach the server (a new connection, a retransmit) and any time
    to come back; some never come back. Admitted by the limiter, their arrival times at the
    server never put more than ``max_requests`` in any span of ``per_seconds``."""
    rng = random.Random(seed)
    clock = FakeClock(auto=False, start=0.0)
    limiter = limiter_on(clock)
    limit = RateLimit(max_requests, per_seconds)
    wanted = 8 * max_requests
    arrivals: list[float] = []
    conclusions: list[tuple[float, int, Admission, Outcome]] = []
    order = itertools.count()
    step = 0.01
    while len(arrivals) < wanted or conclusions:
        while conclusions and conclusions[0][0] <= clock.now:
            _, _, admission, outcome = heapq.heappop(conclusions)
            limiter.conclude(admission, outcome)
        while len(arrivals) < wanted:
            admission = limiter.try_acquire("k", "s", limit, timeout)
            if admission is None:
                break
            kind = rng.random()
            if kind < 0.1:  # never left the machine
                heapq.heappush(conclusions, (clock.now, next(order), admission, Outcome.NOT_SENT))
                continue
            # Up to the whole timeout on the way out, up to half of it on the way back.
            arrival = clock.now + rng.uniform(0, timeout) * (rng.random() < 0.5)
            answer = arrival + rng.uniform(0, timeout / 2)
            arrivals.append(arrival)
            if answer > admission.deadline or kind < 0.2:
                heapq.heappush(conclusions, (min(answer, admission.deadline), next(order),
                                         admission, Outcome.NO_ANSWER))
            else:
                heapq.heappush(conclusions, (answer, next(order), admission, Outcome.ANSWERED))
        clock.now = round(clock.now + step, 9)
    assert max_in_window(arrivals, per_seconds) <= max_requests


@pytest.mark.parametrize(
    ("limit", "count", "round_trip"),
    [(RateLimit(50, 10), 420, 0.0), (RateLimit(50, 10), 420, 0.3), (RateLimit(1, 1), 30, 0.05),
     (RateLimit(200, 1), 1000, 0.002), (RateLimit(1000, 10), 5000, 0.002)],
)
async def test_a_burst_costs_one_round_trip_per_window_beyond_the_least_possible_time(
    limit: RateLimit, count: int, round_trip: float
) -> None:
    clock = FakeClock(auto=False)
    limiter = limiter_on(clock)
    start = clock.now
    admitted: list[float] = []

    async def one() -> None:
        admission = await limiter.acquire("k", "s", limit, TIMEOUT)
        admitted.append(clock.now)
        if round_trip:
            await clock.sleep(round_trip)  # the answer comes back one round trip later
        limiter.conclude(admission, Outcome.ANSWERED)

    everything = asyncio.gather(*(one() for _ in range(count)))
    await quiet(admitted.__len__)
    while not everything.done():
        deadline = clock.next_deadline()
        assert deadline is not None, "every request waits for a moment on the clock"
        await clock.advance_to(deadline, progress=admitted.__len__)
    await everything
    windows = math.ceil(count / limit.max_requests) - 1
    took = admitted[-1] - start
    assert took == pytest.approx(windows * (limit.per_seconds + round_trip))
    if not round_trip:
        assert clock.most_sleeping == 1  # only the head of the queue sleeps
    least = windows * limit.per_seconds
    if round_trip <= 0.002:  # loopback: at least 95 % of the limit for 1 s, 97 % for 10 s
        assert least / took >= (0.95 if limit.per_seconds < 10 else 0.97)


async def test_requests_trickling_in_below_the_limit_never_wait() -> None:
    clock = FakeClock()
    limiter = limiter_on(clock)
    limit = RateLimit(10, 1)
    for _ in range(1000):
        admission = await limiter.acquire("k", "s", limit, TIMEOUT)
        clock.now += 0.01
        limiter.conclude(admission, Outcome.ANSWERED)
        clock.now += 0.1  # 9 per second, each answered 10 ms after it left
    assert clock.sleeps == []


async def test_a_new_limit_for_a_budget_counts_what_was_already_admitted() -> None:
    clock = FakeClock()
    limiter = limiter_on(clock)
    for _ in range(5):
        limiter.conclude(await limiter.acquire("k", "s", RateLimit(5, 1), TIMEOUT),
                       Outcome.ANSWERED)
    start = clock.now
    limiter.conclude(await limiter.acquire("k", "s", RateLimit(2, 1), TIMEOUT), Outcome.ANSWERED)
    assert clock.now - start == pytest.approx(1.0)  # 5 in the window already: it waited
    await limiter.acquire("k", "s", RateLimit(7, 1), TIMEOUT)
    assert clock.now - start == pytest.approx(1.0)  # the same budget, now with room


async def one_in_flight_and_one_waiting() -> tuple[
    FakeClock, InProcessLimiter, RateLimit, Admission, asyncio.Task[Admission]
]:
    """A budget of 1 per second at time 0: one request admitted (in flight), the next waiting
    at the head of the queue."""
    clock = FakeClock(auto=False, start=0.0)
    limiter = limiter_on(clock)
    limit = RateLimit(1, 1)
    first = await admitted_now(limiter, limit)
    waiting = asyncio.create_task(limiter.acquire("k", "s", limit, TIMEOUT))
    await quiet()
    return clock, limiter, limit, first, waiting


# -- waking the head ---------------------------------------------------------------------------


async def test_a_head_blocked_by_requests_in_flight_is_woken_by_their_answer() -> None:
    clock, limiter, _limit, first, head = await one_in_flight_and_one_waiting()
    assert clock.sleeps == [pytest.approx(11.0)]  # until one window after the deadline
    await clock.advance_to(0.5)
    limiter.conclude(first, Outcome.ANSWERED)  # answered at 0.5: it counts until 1.5
    await quiet()
    assert clock.sleeps == [pytest.approx(11.0), pytest.approx(1.0)]
    assert clock.sleeping == 1  # the first sleep was abandoned, not left running
    await clock.advance_to(1.5)
    assert head.done() and head.result().admitted == 1.5


async def test_a_head_blocked_by_requests_in_flight_goes_at_once_when_one_is_not_sent() -> None:
    clock = FakeClock(auto=False, start=0.0)
    limiter = limiter_on(clock)
    limit = RateLimit(2, 1)
    await admitted_now(limiter, limit)
    unsent = await admitted_now(limiter, limit)
    head = asyncio.create_task(limiter.acquire("k", "s", limit, TIMEOUT))
    await clock.advance_to(0.25)
    assert not head.done()
    limiter.conclude(unsent, Outcome.NOT_SENT)
    await quiet()
    assert head.done() and head.result().admitted == 0.25


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
    for _ in range(50):
        assert limiter.try_acquire("k", "s", limit, TIMEOUT) is not None
    for _ in range(50):
        coroutine = limiter.acquire("k", "s", limit, TIMEOUT)
        # Driven by hand: a coroutine that finishes on its first step never suspended.
        with pytest.raises(StopIteration):
            coroutine.send(None)
    assert created == 0 and clock.sleeps == []
    assert limiter.try_acquire("k", "s", limit, TIMEOUT) is None  # the budget is spent
    # The 101st must wait: it suspends, and closing it leaves the queue empty again.
    waiting: Coroutine[Any, Any, Admission] = limiter.acquire("k", "s", limit, TIMEOUT)
    waiting.send(None)  # no StopIteration: it suspended
    assert created >= 1 and len(limiter._budgets[("k", "s")].turns) == 1
    waiting.close()
    assert not limiter._budgets[("k", "s")].turns


async def test_try_acquire_does_not_jump_the_queue() -> None:
    _clock, limiter, limit, first, waiter = await one_in_flight_and_one_waiting()
    limiter.conclude(first, Outcome.NOT_SENT)  # room now, but someone waits
    assert limiter.try_acquire("k", "s", limit, TIMEOUT) is None
    await quiet()
    assert waiter.done()


# -- FIFO and cancellation ---------------------------------------------------------------------


async def test_waiters_are_admitted_first_in_first_out() -> None:
    clock = FakeClock()
    limiter = limiter_on(clock)
    limit = RateLimit(2, 1)
    order: list[int] = []

    async def one(i: int) -> None:
        admission = await limiter.acquire("k", "s", limit, TIMEOUT)
        order.append(i)
        limiter.conclude(admission, Outcome.ANSWERED)

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
    limit = RateLimit(1, 1)
    limiter.conclude(await admitted_now(limiter, limit), Outcome.ANSWERED)
    head = asyncio.create_task(limiter.acquire("k", "s", limit, TIMEOUT))
    await quiet()
    second = asyncio.create_task(limiter.acquire("k", "s", limit, TIMEOUT))
    third = asyncio.create_task(limiter.acquire("k", "s", limit, TIMEOUT))
    await clock.advance_to(0.5)
    assert clock.sleeping == 1  # the head sleeps on the clock; the others wait their turn
    head.cancel()
    await quiet()
    assert head.cancelled()
    assert clock.sleeping == 1  # the second is the head now, and sleeps in its place
    await clock.advance_to(1.0)
    assert second.done() and not third.done()
    limiter.conclude(second.result(), Outcome.ANSWERED)
    await clock.advance_to(2.0)
    assert third.done() and third.result().admitted == 2.0
    budget = limiter._budgets[("k", "s")]
    assert anchors(limiter) == [12.0]  # the third, in flight; nothing of the cancelled one
    assert budget.in_flight == 1 and not budget.turns


async def test_a_waiter_cancelled_just_as_its_turn_comes_passes_the_turn_on() -> None:
    clock = FakeClock(auto=False, start=0.0)
    limiter = limiter_on(clock)
    limit = RateLimit(1, 1)
    limiter.conclude(await admitted_now(limiter, limit), Outcome.ANSWERED)

    async def head() -> None:
        limiter.conclude(await limiter.acquire("k", "s", limit, TIMEOUT), Outcome.ANSWERED)
        # Its turn was handed to the second one a moment ago; the second has not run yet.
        second.cancel()

    first = asyncio.create_task(head())
    await quiet()
    second = asyncio.create_task(limiter.acquire("k", "s", limit, TIMEOUT))
    third = asyncio.create_task(limiter.acquire("k", "s", limit, TIMEOUT))
    await clock.advance_to(1.0)
    assert first.done() and second.cancelled() and not third.done()
    await clock.advance_to(2.0)
    assert third.done() and third.result().admitted == 2.0
    assert limiter._budgets[("k", "s")].in_flight == 1


async def test_a_cancelled_waiter_in_the_middle_of_the_queue_blocks_no_one() -> None:
    clock = FakeClock(auto=False, start=0.0)
    limiter = limiter_on(clock)
    limit = RateLimit(2, 1)
    order: list[str] = []

    async def one(name: str) -> None:
        admission = await limiter.acquire("k", "s", limit, TIMEOUT)
        order.append(f"{name}@{clock.now:.2f}")
        limiter.conclude(admission, Outcome.ANSWERED)

    await asyncio.gather(one("a"), one("b"))
    tasks = {name: asyncio.create_task(one(name)) for name in "cdef"}
    await quiet()
    tasks["d"].cancel()
    await clock.advance_to(3.0)
    assert order == ["a@0.00", "b@0.00", "c@1.00", "e@1.00", "f@2.00"]
    assert tasks["d"].cancelled()


async def test_a_timed_out_waiter_leaves_the_queue_and_wakes_the_next() -> None:
    clock = FakeClock(auto=False, start=0.0)
    limiter = limiter_on(clock)
    limit = RateLimit(1, 1)
    limiter.conclude(await admitted_now(limiter, limit), Outcome.ANSWERED)
    # The fake clock never moves here, so real timeouts expire while these wait.
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.01):
            await limiter.acquire("k", "s", limit, TIMEOUT)  # the head, sleeping on the clock
    behind = asyncio.create_task(limiter.acquire("k", "s", limit, TIMEOUT))
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(limiter.acquire("k", "s", limit, TIMEOUT), 0.01)  # behind it
    await quiet()
    budget = limiter._budgets[("k", "s")]
    assert len(budget.turns) == 1 and clock.sleeping == 1
    await clock.advance_to(1.0)
    assert (await behind).admitted == 1.0
    assert budget.in_flight == 1 and not budget.turns


# -- pauses, budgets per key and scope, idle budgets -------------------------------------------


async def test_a_pause_holds_the_whole_budget_and_waiters_keep_their_order() -> None:
    clock = FakeClock(auto=False, start=0.0)
    limiter = limiter_on(clock, jitter=0.0)
    limit = RateLimit(3, 1)
    order: list[str] = []

    async def one(name: str) -> None:
        admission = await limiter.acquire("k", "s", limit, TIMEOUT)
        order.append(f"{name}@{clock.now:g}")
        limiter.conclude(admission, Outcome.ANSWERED)

    await asyncio.gather(*(one(n) for n in "ab"))
    refused = await admitted_now(limiter, limit)
    queued = [asyncio.create_task(one(n)) for n in "de"]
    await clock.advance_to(0.5)
    assert limiter.conclude(refused, Outcome.RATE_LIMITED, 2.0) == 2.0  # until 2.5
    await clock.advance_to(1.5)
    late = [asyncio.create_task(one(n)) for n in "fg"]
    await clock.advance_to(2.5 - 1e-6)
    assert order == ["a@0", "b@0"]  # the window had room from 1.0, but the pause holds
    await clock.advance_to(4.0)
    await asyncio.gather(*queued, *late)
    assert order == ["a@0", "b@0", "d@2.5", "e@2.5", "f@2.5", "g@3.5"]


async def test_a_pause_applies_to_its_budget_only() -> None:
    clock = FakeClock(auto=False)
    limiter = limiter_on(clock)
    limit = RateLimit(10, 1)
    refused = await admitted_now(limiter, limit, key="k", scope="paused")
    limiter.conclude(refused, Outcome.RATE_LIMITED, 30.0)
    assert limiter.try_acquire("k", "paused", limit, TIMEOUT) is None
    assert limiter.try_acquire("k", "other", limit, TIMEOUT) is not None
    assert limiter.try_acquire("other-key", "paused", limit, TIMEOUT) is not None
    await limiter.acquire("k", "other", limit, TIMEOUT)
    assert clock.sleeps == []


async def test_budgets_are_separate_per_key_and_scope() -> None:
    clock = FakeClock()
    limiter = limiter_on(clock)
    limit = RateLimit(1, 10)
    for key, scope in (("a", "x"), ("a", "y"), ("b", "x")):
        await limiter.acquire(key, scope, limit, TIMEOUT)
    assert clock.sleeps == []
    await limiter.acquire("a", "x", limit, TIMEOUT)
    assert clock.sleeps == [pytest.approx(TIMEOUT + 10)]


async def test_many_waiters_on_one_scope_do_not_delay_another() -> None:
    clock = FakeClock(auto=False, start=0.0)
    limiter = limiter_on(clock)
    limit = RateLimit(5, 1)
    waiting = [asyncio.create_task(limiter.acquire("k", "busy", limit, TIMEOUT))
               for _ in range(500)]
    await quiet()
    assert sum(task.done() for task in waiting) == 5
    assert limiter.try_acquire("k", "idle", limit, TIMEOUT) is not None
    other = asyncio.create_task(limiter.acquire("k", "idle", limit, TIMEOUT))
    await quiet()
    assert other.done() and other.result().admitted == 0.0
    for task in waiting:
        task.cancel()
    await quiet()


def test_idle_budgets_are_dropped_once_their_windows_pass() -> None:
    clock = FakeClock(auto=False, start=0.0)
    limiter = limiter_on(clock)
    limit = RateLimit(1, 1)

    def answered(key: str) -> None:
        admission = limiter.try_acquire(key, "s", limit, TIMEOUT)
        assert admission is not None
        limiter.conclude(admission, Outcome.ANSWERED)

    for index in range(100_000):
        answered(f"key{index}")
    assert len(limiter._budgets) > 50_000  # all within their window: all kept
    clock.now = 1.0 + 1e-6
    for index in range(100):
        answered(f"new{index}")
    assert len(limiter._budgets) < 5_000
    # Budgets that still hold something are kept: a request in flight, a pause.
    busy = limiter.try_acquire("busy", "s", limit, TIMEOUT)
    refused = limiter.try_acquire("paused", "s", limit, TIMEOUT)
    assert busy is not None and refused is not None
    limiter.conclude(refused, Outcome.RATE_LIMITED, 20.0)
    for moment in (5.0, 7.0, 9.0):
        clock.now = moment
        for index in range(3_000):
            answered(f"at{moment}-{index}")
    assert len(limiter._budgets) < 10_000
    assert ("busy", "s") in limiter._budgets and ("paused", "s") in limiter._budgets
    assert limiter.try_acquire("busy", "s", limit, TIMEOUT) is None
    assert limiter.try_acquire("paused", "s", limit, TIMEOUT) is None


def test_a_budget_dropped_by_a_sweep_right_after_it_was_looked_up_is_not_admitted_into() -> None:
    clock = FakeClock(auto=False, start=0.0)
    limiter = limiter_on(clock)
    limit = RateLimit(1, 1)
    first = limiter.try_acquire("k", "s", limit, TIMEOUT)
    assert first is not None
    limiter.conclude(first, Outcome.ANSWERED)
    stale = limiter._budgets[("k", "s")]
    clock.now = 5.0  # idle now

    class SweptAfterLookup(dict[tuple[str, str], Any]):
        """Another thread sweeps between this thread's lookup and its lock."""

        armed = True

        def get(self, key: Any, default: Any = None) -> Any:
            found = super().get(key, default)
            if self.armed:
                self.armed = False
                limiter._sweep()
            return found

    limiter._budgets = SweptAfterLookup(limiter._budgets)
    admission = limiter.try_acquire("k", "s", limit, TIMEOUT)
    assert admission is not None and stale.dropped
    kept = limiter._budgets[("k", "s")]
    assert kept is not stale and kept.in_flight == 1 and stale.in_flight == 0
    assert limiter.try_acquire("k", "s", limit, TIMEOUT) is None  # counted where it is seen


# -- event loops and threads -------------------------------------------------------------------


def test_the_default_limiter_is_one_for_the_process_and_outlives_event_loops() -> None:
    runtime = txc_async.current_runtime()
    assert runtime.limiter is runtime.limiter
    assert isinstance(runtime.limiter, txc_async.Limiter)
    limiter = InProcessLimiter()
    limit = RateLimit(1, 30)
    asyncio.run(limiter.acquire("k", "s", limit, TIMEOUT))  # no loop is bound at construction
    # A loop closed while its task is the head of a queue, asleep: the task never leaves.
    loop = asyncio.new_event_loop()
    loop.set_exception_handler(lambda loop, context: None)
    abandoned = loop.create_task(limiter.acquire("k", "s", limit, TIMEOUT))
    loop.run_until_complete(asyncio.sleep(0.01))
    loop.close()
    assert len(limiter._budgets[("k", "s")].turns) == 1

    async def later() -> None:
        # The budget is spent for 40 s; another scope goes at once, and the old queue, whose
        # head belongs to a dead loop, does not block a new waiter.
        await limiter.acquire("k", "t", limit, TIMEOUT)
        waiter = asyncio.create_task(limiter.acquire("k", "s", limit, TIMEOUT))
        await asyncio.sleep(0.01)
        assert len(limiter._budgets[("k", "s")].turns) == 1  # only the new waiter
        waiter.cancel()

    asyncio.run(later())
    del abandoned


def test_one_limiter_serves_event_loops_in_several_threads() -> None:
    """Three threads, each with its own loop, share one budget; answers from one thread wake a
    head waiting in another."""
    limiter = InProcessLimiter()
    limit = RateLimit(10, 0.1)
    admitted: list[float] = []
    answered: list[float] = []
    errors: list[BaseException] = []

    async def requests(count: int) -> None:
        async def one() -> None:
            admission = await limiter.acquire("k", "s", limit, TIMEOUT)
            admitted.append(time.monotonic())
            await asyncio.sleep(0.005)  # the round trip
            answered.append(time.monotonic())
            limiter.conclude(admission, Outcome.ANSWERED)

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
        thread.join(timeout=20)
    assert not errors and not any(t.is_alive() for t in threads)
    assert len(admitted) == 60
    # Admission to answer covers each arrival: no window of 0.1 s could hold more than 10.
    assert max_in_window(admitted, limit.per_seconds) <= 10
    assert time.monotonic() - began < 5
    budget = limiter._budgets[("k", "s")]
    assert budget.in_flight == 0 and not budget.turns


# -- the client conclusions every admission --------------------------------------------------------


async def test_a_request_that_fails_before_it_is_sent_frees_its_place_in_the_budget() -> None:
    from txc_async._operations import BALANCE

    limiter = InProcessLimiter()
    limit = RateLimit(1, 60)
    async with txc_async.Client(
        api_key="k", api_secret="s", base_url="http://127.0.0.1:9", limiter=limiter,
        rate_limits={"main_balance": limit},
    ) as client:
        pipeline = client._pipeline
        with pytest.raises(TypeError):  # a parameter the body cannot carry
            await pipeline.call(BALANCE, {"odd": object()}, 10.0, client.retry)
        budget = limiter._budgets[(pipeline.key_id, "main_balance")]
        assert budget.in_flight == 0 and anchors(limiter, pipeline.key_id, "main_balance") == []
        # Settling an admission twice counts it once.
        admission = limiter.try_acquire(pipeline.key_id, "main_balance", limit, 10.0)
        assert admission is not None
        limiter.conclude(admission, Outcome.NOT_SENT)
        limiter.conclude(admission, Outcome.NOT_SENT)
        assert budget.in_flight == 0
