"""The in-process scheduler on a fake clock: window arithmetic, FIFO, cancellation, pauses."""

from __future__ import annotations

import asyncio
import math

import pytest

from txc_async import InProcessLimiter, RateLimit
from txc_async._scheduler import default_jitter_allowance
from txc_async.sandbox import SandboxStats


class FakeClock:
    """A clock that only moves when a sleeper sleeps; sleeping yields to the loop first."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        await asyncio.sleep(0)
        self.now += seconds


def make(clock: FakeClock, allowance: float | None = None) -> InProcessLimiter:
    return InProcessLimiter(
        clock=clock, sleep=clock.sleep, random=lambda: 0.5, jitter_allowance=allowance
    )


def max_in_any_window(times: list[float], span: float) -> int:
    """The most admissions in any span of ``span`` seconds (the sandbox's own count)."""
    return SandboxStats(arrivals={"s": list(times)}).max_in_window("s", span)


async def run_burst(limiter: InProcessLimiter, clock: FakeClock, limit: RateLimit, count: int
                    ) -> list[float]:
    admitted: list[float] = []

    async def one() -> None:
        await limiter.acquire("k", "s", limit)
        admitted.append(clock.now)

    await asyncio.gather(*(one() for _ in range(count)))
    return admitted


def test_allowance_defaults() -> None:
    assert default_jitter_allowance(10) == 0.25
    assert default_jitter_allowance(1) == 0.05
    assert default_jitter_allowance(0.1) == 0.05


async def test_never_more_than_the_limit_in_any_window_even_with_network_jitter() -> None:
    clock = FakeClock()
    limit = RateLimit(50, 10)
    limiter = make(clock)
    admitted = await run_burst(limiter, clock, limit, 420)
    # Admission spacing holds for any window of W plus the allowance, so arrivals delayed by
    # anything from 0 to the allowance still fit any window of W at the server.
    window = limit.per_seconds + default_jitter_allowance(limit.per_seconds)
    assert max_in_any_window(admitted, window - 1e-9) <= 50
    import random

    rng = random.Random(1)
    arrivals = [t + rng.uniform(0, 0.25) for t in admitted]
    assert max_in_any_window(arrivals, limit.per_seconds) <= 50


async def test_a_burst_finishes_close_to_the_least_possible_time() -> None:
    for limit, count in ((RateLimit(50, 10), 420), (RateLimit(1, 1), 30), (RateLimit(1000, 10),
                                                                              5000)):
        clock = FakeClock()
        start = clock.now
        admitted = await run_burst(make(clock), clock, limit, count)
        least = (math.ceil(count / limit.max_requests) - 1) * limit.per_seconds
        assert max(admitted) - start <= least * 1.2
        # Sustained rate over the whole run: at least 90 % of the limit.
        rate = (count - limit.max_requests) / (max(admitted) - start)
        assert rate >= 0.9 * limit.max_requests / limit.per_seconds


async def test_idle_gaps_do_not_let_a_double_burst_through() -> None:
    clock = FakeClock()
    limit = RateLimit(10, 1)
    limiter = make(clock)
    first = await run_burst(limiter, clock, limit, 10)
    clock.now += 0.9  # not yet a whole window later
    second = await run_burst(limiter, clock, limit, 10)
    assert max_in_any_window(first + second, 1.0) <= 10


async def test_fast_path_does_not_wait_or_create_futures() -> None:
    clock = FakeClock()
    limiter = make(clock)
    loop = asyncio.get_running_loop()
    created = 0
    original = loop.create_future

    def counting() -> asyncio.Future[None]:
        nonlocal created
        created += 1
        return original()

    loop.create_future = counting  # type: ignore[method-assign]
    try:
        for _ in range(100):
            await limiter.acquire("k", "s", RateLimit(100, 1))
    finally:
        loop.create_future = original  # type: ignore[method-assign]
    assert created == 0 and clock.sleeps == []


async def test_waiters_are_served_first_in_first_out() -> None:
    clock = FakeClock()
    limiter = make(clock)
    limit = RateLimit(2, 1)
    order: list[int] = []

    async def one(i: int) -> None:
        await limiter.acquire("k", "s", limit)
        order.append(i)

    tasks = []
    for i in range(12):
        tasks.append(asyncio.create_task(one(i)))
        await asyncio.sleep(0)
    await asyncio.gather(*tasks)
    assert order == list(range(12))


async def test_a_cancelled_waiter_consumes_no_budget_and_blocks_no_one() -> None:
    import time

    limiter = InProcessLimiter()
    limit = RateLimit(1, 0.3)
    began = time.monotonic()
    await limiter.acquire("k", "s", limit)  # the budget is now spent for a window
    head = asyncio.create_task(limiter.acquire("k", "s", limit))
    await asyncio.sleep(0.01)
    second = asyncio.create_task(limiter.acquire("k", "s", limit))
    await asyncio.sleep(0.01)
    head.cancel()
    with pytest.raises(asyncio.CancelledError):
        await head
    await second
    # The second waiter took the slot the cancelled head would have had: one window later.
    assert 0.3 <= time.monotonic() - began < 0.6
    budget = limiter._budgets[("k", "s")]
    assert not budget.turns


async def test_a_timed_out_waiter_leaves_the_queue() -> None:
    limiter = InProcessLimiter()
    limit = RateLimit(1, 30)
    await limiter.acquire("k", "s", limit)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            await limiter.acquire("k", "s", limit)
    assert not limiter._budgets[("k", "s")].turns


async def test_a_rate_limit_refusal_pauses_the_whole_budget_with_backoff() -> None:
    clock = FakeClock()
    limiter = make(clock)
    limit = RateLimit(100, 10)
    pauses = [await limiter.rate_limited("k", "s", limit, None) for _ in range(7)]
    # 1 s doubling, with jitter (random fixed at 0.5 here: x1.125), capped at 30 s.
    assert pauses == [1.125, 2.25, 4.5, 9.0, 18.0, 30.0, 30.0]
    start = clock.now
    await limiter.acquire("k", "s", limit)
    assert clock.now - start == pytest.approx(30.0)
    limiter.succeeded("k", "s")
    assert await limiter.rate_limited("k", "s", limit, None) == 1.125
    assert await limiter.rate_limited("k", "s", limit, 7.0) == 7.0
    assert await limiter.rate_limited("k", "s", limit, 10_000.0) == 300.0


async def test_budgets_are_separate_per_key_and_scope() -> None:
    clock = FakeClock()
    limiter = make(clock)
    limit = RateLimit(1, 10)
    for key, scope in (("a", "x"), ("a", "y"), ("b", "x")):
        await limiter.acquire(key, scope, limit)
    assert clock.sleeps == []
