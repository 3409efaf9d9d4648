"""What every limiter backend shared by several processes does alike: first-in-first-out waiters
within the process, the local refusal state (pause, backoff streak, learned limit), and the loop
that asks the store until it admits.

A subclass keeps the anchors (the latest moment each request could have reached the server: its
deadline while in flight, its answer once answered) in its store and implements
:meth:`SharedLimiter._admit` (one atomic look at the store) and :meth:`SharedLimiter._record`.
"""

from __future__ import annotations

import asyncio
import random as _random
import threading
import time
from collections.abc import Awaitable, Callable
from typing import NamedTuple

from .._time.nonces import known_ceiling
from .backoff import RefusalState
from .base import Admission, BaseLimiter, Outcome, RateLimit
from .memory import FifoTurns, _wake, sleep_unless_woken

__all__ = ["IN_FLIGHT_RECHECK", "Budget", "Entry", "SharedLimiter", "Verdict"]

#: While the budget is full of requests still in flight (in this process or another), the head
#: waiter asks the store again after at most this many seconds: another process's answer may
#: have freed the budget, and only the store knows. An answer in this process wakes it at once.
IN_FLIGHT_RECHECK = 0.05


class Verdict(NamedTuple):
    """The store's answer when it did not admit: how long to wait, whether requests in flight
    (whose answers may come sooner) are what blocks, and whether the key's nonce counter is (it
    is too far ahead of the clock this process gave)."""

    wait: float
    in_flight: bool
    nonce: bool = False


class Budget:
    """One budget's local side: its waiters, its refusal state, and a head to wake on answers."""

    __slots__ = ("key_id", "lock", "refusals", "scope", "turns", "wake")

    def __init__(self, key_id: str, scope: str) -> None:
        self.key_id = key_id
        self.scope = scope
        self.turns = FifoTurns()
        self.lock = self.turns.lock
        self.refusals = RefusalState(scope)
        self.wake: asyncio.Future[None] | None = None

    def wake_head(self) -> None:
        with self.lock:
            wake, self.wake = self.wake, None
        _wake(wake)


class Entry:
    """The token of an admission: its budget and the store's name for its anchor."""

    __slots__ = ("budget", "ident")

    def __init__(self, budget: Budget, ident: object) -> None:
        self.budget = budget
        self.ident = ident


class SharedLimiter(BaseLimiter):
    """The process-side half of a limiter whose budgets live in a store shared by processes."""

    def __init__(
        self,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        random: Callable[[], float] | None = None,
    ) -> None:
        self._sleep = sleep
        self._random = random if random is not None else _random.random
        self._budgets: dict[tuple[str, str], Budget] = {}
        self._budgets_lock = threading.Lock()

    def _budget(self, key_id: str, scope: str) -> Budget:
        key = (key_id, scope)
        budget = self._budgets.get(key)
        if budget is None:
            with self._budgets_lock:
                budget = self._budgets.setdefault(key, Budget(key_id, scope))
        return budget

    async def _admit(
        self,
        budget: Budget,
        limit: RateLimit,
        cap: int,
        timeout: float,
        nonce_clock: Callable[[], int] | None,
    ) -> Admission | Verdict:
        """Ask the store once: admit (anchor at the deadline, draw the nonce) or say how long
        to wait. ``cap`` is the number of requests per window to keep to (a learned limit may
        be lower than ``limit.max_requests``)."""
        raise NotImplementedError

    def _record(self, admission: Admission, outcome: Outcome, pause: float) -> None:
        """Tell the store how an admitted request ended (never waits for long)."""
        raise NotImplementedError

    def try_acquire(
        self, key_id: str, scope: str, limit: RateLimit, timeout: float
    ) -> Admission | None:
        """Always None: only the store can tell whether the budget has room."""
        return None

    def holds(self, admission: Admission) -> bool:
        """False when a refusal this process saw paused the admission's budget after it was
        admitted: the request, not sent yet, must wait for the pause like any."""
        entry = admission.token
        if not isinstance(entry, Entry):
            return True
        return entry.budget.refusals.paused_until <= time.monotonic()

    async def acquire(
        self,
        key_id: str,
        scope: str,
        limit: RateLimit,
        timeout: float,
        nonce_clock: Callable[[], int] | None = None,
    ) -> Admission:
        """Wait for the budget (first come, first served within the process), then count the
        request in flight until ``timeout`` seconds from now. With ``nonce_clock`` (milliseconds
        on the server-aligned clock) the admission carries a nonce from the key's shared
        counter; without it, no nonce."""
        budget = self._budget(key_id, scope)
        ticket = await budget.turns.enter()
        asked_the_server = False
        try:
            while True:
                refusals = budget.refusals
                now = time.monotonic()
                with budget.lock:
                    local_wait = refusals.paused_until - now
                    cap = refusals.cap(limit, now)
                if local_wait > 0:
                    await self._sleep(local_wait)
                    continue
                # Read before the store is asked: the store's deadline is later than this
                # moment plus ``timeout``, so the transport's deadline never outlives it.
                asked = time.monotonic()
                verdict = await self._admit(budget, limit, cap, timeout, nonce_clock)
                if isinstance(verdict, Admission):
                    verdict.admitted = asked
                    verdict.local_deadline = asked + timeout
                    return verdict
                if verdict.wait <= 0:
                    continue
                if verdict.nonce and nonce_clock is not None and not asked_the_server:
                    # The counter is ahead of this process's clock, which no answer has
                    # bounded yet: it cannot tell a counter of another process's burst from
                    # one a clock running fast left, nor bring the latter back. Ask the
                    # server's time once (an unsigned request) and draw again.
                    learn = getattr(nonce_clock, "learn", None)
                    if learn is not None and known_ceiling(nonce_clock) is None:
                        asked_the_server = True
                        try:
                            # Never longer than the wait it could spare.
                            async with asyncio.timeout(verdict.wait):
                                asked = await learn(timeout)
                        except TimeoutError:
                            asked = True  # the wait is over meanwhile
                        if asked:
                            continue
                if not verdict.in_flight:
                    await self._sleep(verdict.wait)
                    continue
                loop = asyncio.get_running_loop()
                woken: asyncio.Future[None] = loop.create_future()
                with budget.lock:
                    budget.wake = woken
                try:
                    await self._sleep_unless_woken(min(verdict.wait, IN_FLIGHT_RECHECK), woken)
                finally:
                    with budget.lock:
                        if budget.wake is woken:
                            budget.wake = None
        finally:
            budget.turns.leave(ticket)

    async def _sleep_unless_woken(self, wait: float, woken: asyncio.Future[None]) -> None:
        await sleep_unless_woken(self._sleep, wait, woken)

    def settle(
        self, admission: Admission, outcome: Outcome, retry_after: float | None = None
    ) -> float:
        """Record how an admitted request ended: the store's anchor moves to the answer (in the
        background; until then the deadline stands), and a rate-limit refusal pauses the budget
        for every process sharing it. Returns the pause in seconds (0 unless rate-limited)."""
        entry = admission.token
        assert isinstance(entry, Entry)
        budget = entry.budget
        now = time.monotonic()
        pause = 0.0
        with budget.lock:
            if outcome is Outcome.ANSWERED:
                budget.refusals.on_accepted(admission.admitted, now, admission.limit)
            elif outcome is Outcome.RATE_LIMITED:
                pause = budget.refusals.on_refused(
                    admission.admitted, now, admission.limit, retry_after, self._random
                )
        self._record(admission, outcome, pause)
        return pause

    def effective_limit(self, key_id: str, scope: str, limit: RateLimit) -> RateLimit:
        """``limit``, or the lower limit this process learned from the server's refusals."""
        budget = self._budgets.get((key_id, scope))
        if budget is None:
            return limit
        with budget.lock:
            return budget.refusals.effective(limit, time.monotonic())
