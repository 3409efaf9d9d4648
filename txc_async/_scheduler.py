"""The in-process rate-limit scheduler: a strict sliding-window log per budget, FIFO waiters.

The server counts requests in any span of ``per_seconds``. A request admitted at time t reaches
it at t + delay, and delays differ from request to request, so admissions are spaced as if the
window were longer by a jitter allowance: then no span the server measures holds more than
``max_requests`` arrivals, however the network reorders them within the allowance.
"""

from __future__ import annotations

import asyncio
import contextlib
import random as _random
import time
from collections import deque
from collections.abc import Awaitable, Callable

from ._ratelimit import RateLimit

__all__ = [
    "FifoTurns",
    "InProcessLimiter",
    "backoff_pause",
    "default_jitter_allowance",
    "default_limiter",
]

#: Longest pause a Retry-After may impose, and the cap of the exponential backoff.
MAX_RETRY_AFTER = 300.0
BACKOFF_START = 1.0
BACKOFF_CAP = 30.0


def backoff_pause(streak: int, retry_after: float | None, random: Callable[[], float]) -> float:
    """The pause after a rate-limit refusal: the server's Retry-After when it gave one (at most
    300 s), else 1 s doubling with each refusal in a row, with jitter, at most 30 s."""
    if retry_after is not None and retry_after >= 0:
        return min(retry_after, MAX_RETRY_AFTER)
    pause = min(BACKOFF_CAP, BACKOFF_START * 2.0**streak)
    return min(BACKOFF_CAP, pause * (1.0 + 0.25 * random()))


def default_jitter_allowance(per_seconds: float) -> float:
    """How much longer than ``per_seconds`` the admission window is: 5 % of it, 50..250 ms."""
    return min(0.25, max(0.05, 0.05 * per_seconds))


class FifoTurns:
    """Waiters served in arrival order: only the head of the queue runs; the others wait on a
    future until they become the head. A waiter that leaves (done, cancelled or timed out)
    hands the turn to the next."""

    __slots__ = ("waiters",)

    def __init__(self) -> None:
        self.waiters: deque[asyncio.Future[None]] = deque()

    def __bool__(self) -> bool:
        return bool(self.waiters)

    async def enter(self) -> asyncio.Future[None]:
        """Join the queue and wait to be its head; returns the ticket to give to :meth:`leave`."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        if self.waiters[0] is not waiter:
            try:
                await waiter
            except BaseException:
                self.leave(waiter)
                raise
        return waiter

    def leave(self, waiter: asyncio.Future[None]) -> None:
        waiters = self.waiters
        was_head = bool(waiters) and waiters[0] is waiter
        with contextlib.suppress(ValueError):
            waiters.remove(waiter)
        if was_head and waiters and not waiters[0].done():
            waiters[0].set_result(None)


class _Budget:
    """One budget: the last ``max_requests`` admission times and the queue of waiters."""

    __slots__ = ("admitted", "limit", "paused_until", "streak", "turns", "window")

    def __init__(self, limit: RateLimit, allowance: float) -> None:
        self.limit = limit
        self.window = limit.per_seconds + allowance
        self.admitted: deque[float] = deque(maxlen=limit.max_requests)
        self.turns = FifoTurns()
        self.paused_until = 0.0
        self.streak = 0

    def delay(self, now: float) -> float:
        """Seconds until one more request may be admitted (zero or less: now)."""
        wait = self.paused_until - now
        admitted = self.admitted
        if len(admitted) == admitted.maxlen:
            # The oldest of the last N admissions must have left the window.
            wait = max(wait, admitted[0] + self.window - now)
        return wait


class InProcessLimiter:
    """Keeps every budget of the process in memory (see :class:`txc_async.Limiter`).

    Waiters are admitted first-in-first-out; only the head of a queue sleeps on the clock. A
    waiter cancelled before admission consumes no budget and lets the next one go. Not for use
    from several threads at once; every event loop of one thread may share it.
    """

    def __init__(
        self,
        *,
        jitter_allowance: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        random: Callable[[], float] = _random.random,
    ) -> None:
        if jitter_allowance is not None and not jitter_allowance >= 0:
            raise ValueError("jitter_allowance: must be a number of seconds, at least 0")
        self._allowance = jitter_allowance
        self._clock = clock
        self._sleep = sleep
        self._random = random
        self._budgets: dict[tuple[str, str], _Budget] = {}

    def __repr__(self) -> str:
        return f"InProcessLimiter(budgets={len(self._budgets)})"

    def _budget(self, key_id: str, scope: str, limit: RateLimit) -> _Budget:
        budget = self._budgets.get((key_id, scope))
        if budget is None or budget.limit != limit:
            allowance = (
                self._allowance
                if self._allowance is not None
                else default_jitter_allowance(limit.per_seconds)
            )
            fresh = _Budget(limit, allowance)
            if budget is not None:
                # A client with another limit for the same budget: keep what was admitted.
                fresh.admitted.extend(budget.admitted)
                fresh.turns = budget.turns
                fresh.paused_until = budget.paused_until
                fresh.streak = budget.streak
            budget = self._budgets[(key_id, scope)] = fresh
        return budget

    async def acquire(self, key_id: str, scope: str, limit: RateLimit) -> None:
        budget = self._budget(key_id, scope, limit)
        if not budget.turns:
            now = self._clock()
            if budget.delay(now) <= 0:
                budget.admitted.append(now)
                return
        ticket = await budget.turns.enter()
        try:
            while True:
                now = self._clock()
                wait = budget.delay(now)
                if wait <= 0:
                    budget.admitted.append(now)
                    return
                await self._sleep(wait)
        finally:
            budget.turns.leave(ticket)

    async def rate_limited(
        self, key_id: str, scope: str, limit: RateLimit, retry_after: float | None
    ) -> float:
        budget = self._budget(key_id, scope, limit)
        pause = backoff_pause(budget.streak, retry_after, self._random)
        budget.streak += 1
        budget.paused_until = max(budget.paused_until, self._clock() + pause)
        return pause

    def succeeded(self, key_id: str, scope: str) -> None:
        budget = self._budgets.get((key_id, scope))
        if budget is not None:
            budget.streak = 0

    async def aclose(self) -> None:
        self._budgets.clear()


_default: InProcessLimiter | None = None


def default_limiter() -> InProcessLimiter:
    """The limiter every client of the process shares unless given another."""
    global _default
    if _default is None:
        _default = InProcessLimiter()
    return _default
