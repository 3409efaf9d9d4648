"""The in-process rate-limit scheduler: one log per budget of the latest moment each request could
have reached the server, waiters served first-in-first-out.

A request reaches the server somewhere between its admission and its answer. The log keeps, for
each request, its deadline while it is in flight and its answer time once answered; a request is
admitted only while fewer than ``max_requests`` of those moments lie in the last ``per_seconds``.
Then no span of ``per_seconds`` at the server holds more than ``max_requests`` arrivals, whatever
the delays (new connections, TLS, proxies), with no allowance to tune. The cost: one round trip
per window, since a request counts from its answer rather than from its admission.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import math
import random as _random
import threading
import time
from collections.abc import Awaitable, Callable

from .backoff import RefusalState, blamed_budget
from .base import Admission, BaseLimiter, Groups, Outcome, RateLimit
from .queue import FifoTurns, sleep_unless_woken, wake_up

__all__ = ["InProcessLimiter"]

# Enum members read once: a member looked up on its class costs a descriptor call.
_ANSWERED = Outcome.ANSWERED
_RATE_LIMITED = Outcome.RATE_LIMITED
_NOT_SENT = Outcome.NOT_SENT
_NO_ANSWER = Outcome.NO_ANSWER

#: Below this many budgets the limiter never sweeps.
_SWEEP_FLOOR = 1024
#: Entries out of the window are cut off a budget's log once there are this many and they make
#: half of it.
_CUT_AT = 64


class _Budget:
    """One budget: the log of latest arrival moments (sorted), its refusals, its waiters."""

    __slots__ = (
        "dropped", "in_flight", "lock", "log", "per_max", "refusals", "start", "turns", "wake",
    )

    def __init__(self, scope: str) -> None:
        # Deadlines of requests in flight and answer times of answered ones, in order. Entries
        # before ``start`` have left every window; they are cut off in bulk, not one by one (a
        # cut shifts the whole list).
        self.log: list[float] = []
        self.start = 0
        self.in_flight = 0
        self.per_max = 0.0
        self.turns = FifoTurns()
        self.lock = self.turns.lock
        self.refusals = RefusalState(scope)
        # Set by a head waiting on requests in flight: an answer may let it go sooner.
        self.wake: asyncio.Future[None] | None = None
        # Set once the limiter forgot the budget: whoever still holds it must look it up again.
        self.dropped = False

    def take(
        self, key_id: str, scope: str, limit: RateLimit, now: float, timeout: float
    ) -> Admission | float:
        """Admit one request at ``now`` and count it in flight until ``now + timeout``; or, when
        the budget has no room, the seconds until it may have some. Lock held."""
        wait = self.room(limit, now)
        if wait > 0:
            return wait
        deadline = now + timeout
        self.put(deadline)
        return Admission(key_id, scope, limit, now, deadline, self)

    def room(self, limit: RateLimit, now: float) -> float:
        """The seconds until the budget may admit one more request, from ``now`` (0 or less:
        it may now). Lock held."""
        per = limit.per_seconds
        if per > self.per_max:
            self.per_max = per
        log = self.log
        start = self.start
        size = len(log)
        if start < size and log[start] <= now - self.per_max:
            start = bisect.bisect_right(log, now - self.per_max, start)
            if start >= _CUT_AT and 2 * start >= size:
                del log[:start]
                start = 0
                size = len(log)
            self.start = start
        refusals = self.refusals
        wait = refusals.paused_until - now
        cap = refusals.cap(limit, now) if refusals.learned is not None else limit.max_requests
        # Entries before ``start`` are out of the window: the test below is false for them.
        if size >= cap and log[size - cap] > now - per:
            # The cap-th latest moment must leave the window first.
            later = log[size - cap] + per - now
            if later > wait:
                wait = later
        return wait

    def put(self, deadline: float) -> None:
        """Count one request in flight until ``deadline``. Lock held."""
        log = self.log
        if not log or log[-1] <= deadline:
            log.append(deadline)
        else:
            bisect.insort(log, deadline, self.start)
        self.in_flight += 1

    def release(self, deadline: float, outcome: Outcome, now: float) -> None:
        """One request counted until ``deadline`` ended with ``outcome`` at ``now``. Lock held."""
        self.in_flight -= 1
        if outcome is _NO_ANSWER:
            return  # the deadline stays: the request may still arrive until then
        log = self.log
        at = bisect.bisect_left(log, deadline, self.start)
        if at < len(log) and log[at] == deadline:
            del log[at]
            if outcome is not _NOT_SENT:
                # It arrived before its answer: that moment is the latest it counts from.
                if not log or log[-1] <= now:
                    log.append(now)
                else:
                    bisect.insort(log, now, self.start)

    def idle(self, now: float) -> bool:
        return (
            not self.in_flight
            and not self.turns
            and (self.start >= len(self.log) or self.log[-1] <= now - self.per_max)
            and self.refusals.idle(now)
        )


class _Drawn(tuple[_Budget, ...]):
    """The token of a request that drew on several budgets: its scope's, then its groups'."""

    __slots__ = ()


def _locked_in_order(budgets: list[_Budget], stack: contextlib.ExitStack) -> None:
    """Hold every budget's lock, taken in one order (by identity) whatever order the budgets
    come in, so that two requests drawing on the same budgets never wait for each other."""
    for budget in sorted(budgets, key=id):
        stack.enter_context(budget.lock)


class InProcessLimiter(BaseLimiter):
    """Keeps every budget of the process in memory (see [`txc_async.Limiter`][txc_async.Limiter]).

    Exact whatever the network delays: a request counts in its budget's window from its admission
    until one window after its answer (or after its deadline when no answer came). Waiters are
    admitted first-in-first-out; only the head of a queue sleeps, and an answer wakes it. A waiter
    cancelled (or timed out) before admission consumes no budget. With budget to spare and no one
    waiting, [`try_acquire`][txc_async.InProcessLimiter.try_acquire] admits without suspending.
    After a rate-limit refusal the budget pauses (see `txc_async._limiters.backoff`); when the
    server refuses below the configured limit, the budget keeps to what it accepted. Budgets idle
    for longer than their window are dropped. One limiter may serve every event loop of the process,
    in any thread. ``clock``, ``sleep`` and ``random`` (jitter of the backoff, in [0, 1)) can be
    replaced, e.g. by a fake clock in tests.
    """

    takes_groups = True

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        random: Callable[[], float] | None = None,
    ) -> None:
        self._clock = clock
        self._sleep = sleep
        self._random = random if random is not None else _random.random
        self._budgets: dict[tuple[str, str], _Budget] = {}
        self._lock = threading.Lock()
        self._sweep_at = 1024
        # A sweep is also due once the longest window seen has passed since the last one.
        self._sweep_due = -math.inf

    def __repr__(self) -> str:
        return f"InProcessLimiter(budgets={len(self._budgets)})"

    def _budget(self, key_id: str, scope: str) -> _Budget:
        key = (key_id, scope)
        budget = self._budgets.get(key)
        if budget is None:
            with self._lock:
                budget = self._budgets.get(key)
                if budget is None:
                    size = len(self._budgets)
                    if size >= self._sweep_at or (
                        size >= _SWEEP_FLOOR and self._clock() >= self._sweep_due
                    ):
                        self._sweep()
                    budget = self._budgets[key] = _Budget(scope)
        return budget

    def _sweep(self) -> None:
        """Drop budgets nothing depends on any more (called with the limiter's lock held)."""
        now = self._clock()
        longest = 0.0
        for key, budget in list(self._budgets.items()):
            with budget.lock:
                if budget.idle(now):
                    budget.dropped = True
                    del self._budgets[key]
                elif budget.per_max > longest:
                    longest = budget.per_max
        # Amortised: the next sweep comes once as many budgets again have been made, or once
        # the budgets kept now may have gone idle (a window later) and new ones keep coming.
        self._sweep_at = max(_SWEEP_FLOOR, 2 * len(self._budgets))
        self._sweep_due = now + longest

    def try_acquire(
        self, key_id: str, scope: str, limit: RateLimit, timeout: float, *, groups: Groups = ()
    ) -> Admission | None:
        """Admit at once when every budget has room and no one waits; else None (never
        waits)."""
        if groups:
            return self._try_all(key_id, scope, limit, timeout, groups)
        budget = self._budgets.get((key_id, scope)) or self._budget(key_id, scope)
        with budget.lock:
            if budget.turns.waiters:  # someone waits: no jumping the queue
                return None
            if budget.dropped:
                admission = None
            else:
                taken = budget.take(key_id, scope, limit, self._clock(), timeout)
                if not isinstance(taken, Admission):
                    return None
                admission = taken
        if admission is None:
            # Forgotten by a sweep in another thread just now: the key has a new budget.
            return self.try_acquire(key_id, scope, limit, timeout)
        if self._clock is not time.monotonic:
            admission.local_deadline = time.monotonic() + timeout
        return admission

    async def acquire(
        self,
        key_id: str,
        scope: str,
        limit: RateLimit,
        timeout: float,
        nonce_clock: Callable[[], int] | None = None,
        *,
        groups: Groups = (),
        nonce_key: str | None = None,
    ) -> Admission:
        """Wait for the budgets (first come, first served), then count the request in flight
        in each.

        The admission carries no nonce: the client draws it from the process's own source.
        """
        # With budget to spare and no one waiting: admitted without suspending or allocating.
        admission = self.try_acquire(key_id, scope, limit, timeout, groups=groups)
        if admission is not None:
            return admission
        if groups:
            return await self._acquire_all(key_id, scope, limit, timeout, groups)
        budget, ticket = await self._enter(key_id, scope)
        try:
            while True:
                with budget.lock:
                    taken = budget.take(key_id, scope, limit, self._clock(), timeout)
                    if isinstance(taken, Admission):
                        if self._clock is not time.monotonic:
                            taken.local_deadline = time.monotonic() + timeout
                        return taken
                    wait = taken
                await self._wait(budget, wait)
        finally:
            budget.turns.leave(ticket)

    async def _enter(self, key_id: str, scope: str) -> tuple[_Budget, asyncio.Future[None]]:
        """Join the budget's queue and wait to be its head: the budget and the ticket."""
        while True:
            budget = self._budgets.get((key_id, scope)) or self._budget(key_id, scope)
            ticket = await budget.turns.enter()
            # A budget with someone in its queue is never dropped; but a sweep in another
            # thread may have dropped it just before this one joined: then join the new one.
            with budget.lock:
                dropped = budget.dropped
            if not dropped:
                return budget, ticket
            budget.turns.leave(ticket)

    async def _wait(self, budget: _Budget, wait: float) -> None:
        """Sleep ``wait`` seconds, or until an answer frees room in ``budget``."""
        woken: asyncio.Future[None] | None = None
        with budget.lock:
            if budget.in_flight:
                woken = budget.wake = asyncio.get_running_loop().create_future()
        if woken is None:
            # Woken early (a pause set meanwhile, a coarse clock), the caller simply looks again.
            await self._sleep(wait)
            return
        await self._sleep_unless_woken(wait, woken)
        with budget.lock:
            if budget.wake is woken:
                budget.wake = None

    def _try_all(
        self, key_id: str, scope: str, limit: RateLimit, timeout: float, groups: Groups
    ) -> Admission | None:
        """[`try_acquire`][txc_async.InProcessLimiter.try_acquire] of a request that draws on its
        groups' budgets too."""
        known = self._budgets
        if len(groups) == 1:
            # Every operation has one group: its two locks taken without a stack of them.
            ((name, group),) = groups
            own = known.get((key_id, scope)) or self._budget(key_id, scope)
            shared = known.get((key_id, name)) or self._budget(key_id, name)
            first, second = (own, shared) if id(own) < id(shared) else (shared, own)
            with first.lock, second.lock:
                if own.turns.waiters or shared.turns.waiters or own.dropped or shared.dropped:
                    return None  # someone waits: no jumping the queue (or a sweep is under way)
                now = self._clock()
                if own.room(limit, now) > 0 or shared.room(group, now) > 0:
                    return None
                return self._put_all(key_id, scope, limit, timeout, groups, [own, shared], now)
        budgets = [known.get((key_id, name)) or self._budget(key_id, name)
                   for name in (scope, *(name for name, _ in groups))]
        limits = [limit, *(group for _, group in groups)]
        with contextlib.ExitStack() as locks:
            _locked_in_order(budgets, locks)
            if any(b.turns.waiters or b.dropped for b in budgets):
                return None  # someone waits: no jumping the queue (or a sweep is under way)
            now = self._clock()
            if any(b.room(lim, now) > 0 for b, lim in zip(budgets, limits, strict=True)):
                return None
            return self._put_all(key_id, scope, limit, timeout, groups, budgets, now)

    def _put_all(
        self, key_id: str, scope: str, limit: RateLimit, timeout: float, groups: Groups,
        budgets: list[_Budget], now: float,
    ) -> Admission:
        """Count the request in flight in every one of ``budgets`` (their locks held)."""
        deadline = now + timeout
        for budget in budgets:
            budget.put(deadline)
        admission = Admission(key_id, scope, limit, now, deadline, _Drawn(budgets), None, None,
                              groups)
        if self._clock is not time.monotonic:
            admission.local_deadline = time.monotonic() + timeout
        return admission

    async def _acquire_all(
        self, key_id: str, scope: str, limit: RateLimit, timeout: float, groups: Groups
    ) -> Admission:
        """Wait as the head of the scope's queue until the scope has room, then also as the head
        of each group's queue until every budget has room, and take from all at once.

        The groups' queues are joined only once the scope has room, so a request held by its
        own scope's limit (or pause) never holds up the other operations of its groups."""
        own, own_ticket = await self._enter(key_id, scope)
        try:
            while True:
                while (wait := self._room(own, limit)) > 0:
                    await self._wait(own, wait)
                admission = await self._take_with_groups(
                    key_id, scope, limit, timeout, groups, own
                )
                if admission is not None:
                    return admission
        finally:
            own.turns.leave(own_ticket)

    def _room(self, budget: _Budget, limit: RateLimit) -> float:
        with budget.lock:
            return budget.room(limit, self._clock())

    async def _take_with_groups(
        self, key_id: str, scope: str, limit: RateLimit, timeout: float, groups: Groups,
        own: _Budget,
    ) -> Admission | None:
        """Join the groups' queues and take from every budget once all have room; None when the
        scope's own budget has none any more (a refusal paused it): its turn is given back."""
        entered: list[tuple[_Budget, asyncio.Future[None]]] = []
        try:
            for name, _ in groups:
                entered.append(await self._enter(key_id, name))
            budgets = [own, *(budget for budget, _ in entered)]
            limits = [limit, *(group for _, group in groups)]
            while True:
                with contextlib.ExitStack() as locks:
                    _locked_in_order(budgets, locks)
                    now = self._clock()
                    waits = [b.room(lim, now) for b, lim in zip(budgets, limits, strict=True)]
                    if max(waits) <= 0:
                        return self._put_all(key_id, scope, limit, timeout, groups, budgets, now)
                if waits[0] > 0:
                    return None
                blocking = max(range(1, len(waits)), key=waits.__getitem__)
                await self._wait(budgets[blocking], waits[blocking])
        finally:
            for budget, ticket in entered:
                budget.turns.leave(ticket)

    async def _sleep_unless_woken(self, wait: float, woken: asyncio.Future[None]) -> None:
        await sleep_unless_woken(self._sleep, wait, woken)

    def conclude(
        self, admission: Admission, outcome: Outcome, retry_after: float | None = None
    ) -> float:
        """Record how an admitted request ended (see [`txc_async.Outcome`][txc_async.Outcome]) and
        wake the head waiter; returns the pause the budget now keeps (0 unless rate-limited)."""
        budget = admission.token
        if type(budget) is not _Budget:
            if type(budget) is _Drawn:
                return self._conclude_all(admission, budget, outcome, retry_after)
            return 0.0  # concluded already: an admission counts once
        admission.token = None
        pause = 0.0
        with budget.lock:
            now = self._clock()
            budget.release(admission.deadline, outcome, now)
            if outcome is _ANSWERED:
                budget.refusals.on_accepted(admission.admitted, now, admission.limit)
            elif outcome is _RATE_LIMITED:
                pause = budget.refusals.on_refused(
                    admission.admitted, now, admission.limit, retry_after, self._random
                )
            wake = budget.wake
            if wake is not None:
                budget.wake = None
        if wake is not None:
            wake_up(wake)
        return pause

    def _conclude_all(
        self, admission: Admission, drawn: _Drawn, outcome: Outcome, retry_after: float | None
    ) -> float:
        """[`conclude`][txc_async.InProcessLimiter.conclude] for a request that drew on its groups'
        budgets too."""
        admission.token = None
        limits = (admission.limit, *[limit for _, limit in admission.groups])
        now = self._clock()
        wakes: list[asyncio.Future[None]] = []
        for index, budget in enumerate(drawn):
            with budget.lock:
                budget.release(admission.deadline, outcome, now)
                if outcome is _ANSWERED:
                    refusals = budget.refusals
                    refusals.on_accepted(admission.admitted, now, limits[index])
                    if index:  # a group's: which operations it served, for blaming refusals
                        refusals.answered_by_scope[admission.scope] = now
                if budget.wake is not None:
                    wakes.append(budget.wake)
                    budget.wake = None
        pause = 0.0
        if outcome is _RATE_LIMITED:
            target, limit = blamed_budget(admission.scope, drawn, limits, now)
            with target.lock:
                pause = target.refusals.on_refused(
                    admission.admitted, now, limit, retry_after, self._random
                )
        for wake in wakes:
            wake_up(wake)
        return pause

    def holds(self, admission: Admission) -> bool:
        """False when a refusal paused one of the admission's budgets after it was admitted:
        the request, not sent yet (it waited for a connection), must wait for the pause like
        any."""
        budget = admission.token
        if type(budget) is _Drawn:
            now = self._clock()
            return all(b.refusals.paused_until <= now for b in budget)
        if type(budget) is not _Budget:
            return True
        return budget.refusals.paused_until <= self._clock()

    def effective_limit(self, key_id: str, scope: str, limit: RateLimit) -> RateLimit:
        """``limit``, or the lower limit learned from the server's refusals while it holds."""
        budget = self._budgets.get((key_id, scope))
        if budget is None:
            return limit
        with budget.lock:
            return budget.refusals.effective(limit, self._clock())

    async def aclose(self) -> None:
        """Nothing to release. The budgets stay: requests admitted just before still count."""

