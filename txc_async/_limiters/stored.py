"""What every limiter backend shared by several processes does alike: first-in-first-out waiters
within the process, the local refusal state (pause, backoff streak, learned limit), and the loop
that asks the store until it admits.

A subclass keeps the anchors (the latest moment each request could have reached the server: its
deadline while in flight, its answer once answered) in its store and implements
`StoredLimiter._admit` (one atomic look at the store, across every budget a request draws
on) and `StoredLimiter._record`.
"""

from __future__ import annotations

import asyncio
import random as _random
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import NamedTuple

from .._nonces.sources import BaseNonceClock, known_ceiling
from .backoff import RefusalState, blamed_budget
from .base import Admission, BaseLimiter, Groups, Outcome, RateLimit
from .queue import FifoTurns, sleep_unless_woken, wake_up

__all__ = [
    "IN_FLIGHT_RECHECK", "Admitted", "Budget", "Entry", "Request", "StoredLimiter", "Verdict",
]

#: While a budget is full of requests still in flight (in this process or another), the head
#: waiter asks the store again after at most this many seconds: another process's answer may
#: have freed the budget, and only the store knows. An answer in this process wakes it at once.
IN_FLIGHT_RECHECK = 0.05


class Verdict(NamedTuple):
    """The store's answer when it did not admit: how long to wait, whether requests in flight
    (whose answers may come sooner) are what blocks, whether the API key's nonce counter is (it
    is too far ahead of the clock this process gave), and which of the request's budgets blocks
    (0: its scope's, or its nonce counter; ``i``: its ``i``-th group's)."""

    wait: float
    in_flight: bool
    nonce: bool = False
    budget: int = 0


class Admitted(NamedTuple):
    """The store's answer when it admitted: the deadline (on the store's clock), the store's
    name for the request's anchors, and the nonce drawn (None when none was asked for)."""

    deadline: float
    ident: object
    nonce: int | None


class Budget:
    """One budget's local side: its waiters, its refusal state, and a head to wake on answers."""

    __slots__ = ("key_id", "lock", "refusals", "scope", "turns", "wake")

    def __init__(self, key_id: str, scope: str) -> None:
        self.key_id = key_id
        #: The scope's name, or the group's.
        self.scope = scope
        self.turns = FifoTurns()
        self.lock = self.turns.lock
        self.refusals = RefusalState(scope)
        self.wake: asyncio.Future[None] | None = None

    def wake_head(self) -> None:
        with self.lock:
            wake, self.wake = self.wake, None
        wake_up(wake)


class Entry:
    """The token of an admission: its budgets (its scope's first, then its groups'), the store's
    name for its anchors, and the API key whose nonce counter it draws from."""

    __slots__ = ("budgets", "ident", "nonce_key")

    def __init__(self, budgets: tuple[Budget, ...], ident: object, nonce_key: str) -> None:
        self.budgets = budgets
        self.ident = ident
        self.nonce_key = nonce_key


class Request:
    """One call of `StoredLimiter.acquire`: what it asks the store for, on every try."""

    __slots__ = (
        "asked_the_server", "budgets", "groups", "key_id", "limits", "nonce_clock", "nonce_key",
        "scope", "timeout",
    )

    def __init__(
        self, key_id: str, scope: str, budgets: tuple[Budget, ...], limits: tuple[RateLimit, ...],
        groups: Groups, timeout: float, nonce_clock: Callable[[], int] | None, nonce_key: str,
    ) -> None:
        self.key_id = key_id
        self.scope = scope
        self.budgets = budgets
        self.limits = limits
        self.groups = groups
        self.timeout = timeout
        self.nonce_clock = nonce_clock
        self.nonce_key = nonce_key
        # The server's time is asked at most once a call (see ``StoredLimiter._nonce_ahead``).
        self.asked_the_server = False


def _paused_for(budget: Budget, now: float) -> float:
    """The seconds ``budget``'s local pause still lasts from ``now`` (0 or less: none)."""
    return budget.refusals.paused_until - now


class StoredLimiter(BaseLimiter):
    """The process-side half of a limiter whose budgets live in a store shared by processes."""

    takes_groups = True

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

    async def _admit(self, request: Request, caps: Sequence[int]) -> Admitted | Verdict:
        """Ask the store once: admit across every one of ``request.budgets`` at once (an anchor
        at the deadline in each, the nonce drawn from ``request.nonce_key``'s counter when it
        has a nonce clock), or say how long to wait and for which budget; never some budgets
        and not others. ``caps[i]`` is the number of requests per window ``budgets[i]`` keeps to
        (a learned limit may be lower than ``request.limits[i].max_requests``). The scope's
        budget, first, is looked at first: when it has no room, the verdict is about it."""
        raise NotImplementedError

    def _record(
        self, admission: Admission, outcome: Outcome, paused: Budget | None, pause: float
    ) -> None:
        """Tell the store how an admitted request ended in every budget it drew on, and that
        ``paused`` (one of them) pauses ``pause`` seconds (never waits for long)."""
        raise NotImplementedError

    def try_acquire(
        self, key_id: str, scope: str, limit: RateLimit, timeout: float, *, groups: Groups = ()
    ) -> Admission | None:
        """Always None: only the store can tell whether the budgets have room."""
        return None

    def holds(self, admission: Admission) -> bool:
        """False when a refusal this process saw paused one of the admission's budgets after it
        was admitted: the request, not sent yet, must wait for the pause like any."""
        entry = admission.token
        if not isinstance(entry, Entry):
            return True
        now = time.monotonic()
        return all(_paused_for(budget, now) <= 0 for budget in entry.budgets)

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
        """Wait for the scope's budget and the ``groups``' (first come, first served within the
        process), then count the request in flight in every one of them until ``timeout``
        seconds from now. With ``nonce_clock`` (milliseconds on the server-aligned clock) the
        admission carries a nonce from the counter of ``nonce_key`` (the API key; ``key_id``
        when not given); without it, no nonce.

        A request waits as the head of its scope's queue until its scope has room (as far as
        this process knows: no local pause), and only then joins its groups' queues and asks
        the store; told that its scope has no room after all, it leaves them again, so a request
        held by its own scope never holds up the other operations of its groups."""
        own = self._budget(key_id, scope)
        if groups:
            budgets = (own, *(self._budget(key_id, name) for name, _ in groups))
            limits = (limit, *(group for _, group in groups))
        else:
            budgets, limits = (own,), (limit,)
        request = Request(key_id, scope, budgets, limits, groups, timeout, nonce_clock,
                           key_id if nonce_key is None else nonce_key)
        ticket = await own.turns.enter()
        try:
            while True:
                pause = _paused_for(own, time.monotonic())
                if pause > 0:
                    await self._sleep(pause)
                    continue
                verdict = await (self._ask_with_groups(request) if groups else self._ask(request))
                if isinstance(verdict, Admission):
                    return verdict
                await self._wait(request, verdict)
        finally:
            own.turns.leave(ticket)

    async def _ask_with_groups(self, request: Request) -> Admission | Verdict:
        """Join the groups' queues, wait to be the head of each, and ask the store until it
        admits or says the scope (or the key's nonce counter) blocks: that verdict is returned,
        the groups' turns given back."""
        entered: list[tuple[Budget, asyncio.Future[None]]] = []
        try:
            for budget in request.budgets[1:]:
                entered.append((budget, await budget.turns.enter()))
            while True:
                now = time.monotonic()
                own_pause = _paused_for(request.budgets[0], now)
                if own_pause > 0:  # a refusal paused the scope meanwhile
                    return Verdict(own_pause, False)
                pause = max(_paused_for(budget, now) for budget in request.budgets[1:])
                if pause > 0:
                    await self._sleep(pause)
                    continue
                verdict = await self._ask(request)
                if isinstance(verdict, Admission) or verdict.budget == 0:
                    return verdict
                await self._wait(request, verdict)
        finally:
            for budget, ticket in entered:
                budget.turns.leave(ticket)

    async def _ask(self, request: Request) -> Admission | Verdict:
        """Ask the store once to admit the request across all its budgets."""
        now = time.monotonic()
        caps = []
        for budget, limit in zip(request.budgets, request.limits, strict=True):
            with budget.lock:
                caps.append(budget.refusals.cap(limit, now))
        # Read before the store is asked: the store's deadline is later than this moment plus
        # ``timeout``, so the transport's deadline never outlives it.
        asked = time.monotonic()
        answer = await self._admit(request, caps)
        if isinstance(answer, Verdict):
            return answer
        return Admission(
            request.key_id, request.scope, request.limits[0], asked, answer.deadline,
            Entry(request.budgets, answer.ident, request.nonce_key), answer.nonce,
            asked + request.timeout, request.groups,
        )

    async def _wait(self, request: Request, verdict: Verdict) -> None:
        """Wait as the store's ``verdict`` says, for the budget it names: until its requests in
        flight are answered (in this process, which wakes the waiter, or in another, which only
        the store knows: asked again every `IN_FLIGHT_RECHECK`), else for its wait."""
        if verdict.wait <= 0:
            return
        if verdict.nonce and await self._nonce_ahead(request, verdict.wait):
            return
        if not verdict.in_flight:
            await self._sleep(verdict.wait)
            return
        budget = request.budgets[verdict.budget]
        woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        with budget.lock:
            budget.wake = woken
        try:
            await self._sleep_unless_woken(min(verdict.wait, IN_FLIGHT_RECHECK), woken)
        finally:
            with budget.lock:
                if budget.wake is woken:
                    budget.wake = None

    async def _nonce_ahead(self, request: Request, wait: float) -> bool:
        """The key's counter is ahead of this process's clock, which no answer has bounded
        yet: it cannot tell a counter of another process's burst from one a clock running fast
        left, nor bring the latter back. Ask the server's time once (an unsigned request);
        whether the store is worth asking again at once."""
        nonce_clock = request.nonce_clock
        if nonce_clock is None or request.asked_the_server:
            return False
        if not isinstance(nonce_clock, BaseNonceClock) or known_ceiling(nonce_clock) is not None:
            return False  # a plain function cannot ask; a bounded clock need not
        request.asked_the_server = True
        try:
            # Never longer than the wait it could spare.
            async with asyncio.timeout(wait):
                learned = await nonce_clock.learn(request.timeout)
        except TimeoutError:
            return True  # the wait is over meanwhile
        return learned

    async def _sleep_unless_woken(self, wait: float, woken: asyncio.Future[None]) -> None:
        await sleep_unless_woken(self._sleep, wait, woken)

    def conclude(
        self, admission: Admission, outcome: Outcome, retry_after: float | None = None
    ) -> float:
        """Record how an admitted request ended in every budget it drew on: the store's anchors
        move to the answer (in the background; until then the deadlines stand), and a
        rate-limit refusal pauses the budget it is blamed on (see
        `txc_async._limiters.backoff.blamed_group`) for every process sharing it. Returns
        the pause in seconds (0 unless rate-limited)."""
        entry = admission.token
        assert isinstance(entry, Entry)
        budgets = entry.budgets
        now = time.monotonic()
        if len(budgets) == 1:
            target: Budget | None = budgets[0]
            limit = admission.limit
            if outcome is Outcome.ANSWERED:
                with budgets[0].lock:
                    budgets[0].refusals.on_accepted(admission.admitted, now, limit)
        else:
            target, limit = self._accepted_by_all(admission, entry, outcome, now)
        pause = 0.0
        if outcome is Outcome.RATE_LIMITED and target is not None:
            with target.lock:
                pause = target.refusals.on_refused(
                    admission.admitted, now, limit, retry_after, self._random
                )
        self._record(admission, outcome, target if pause > 0 else None, pause)
        return pause

    def _accepted_by_all(
        self, admission: Admission, entry: Entry, outcome: Outcome, now: float
    ) -> tuple[Budget | None, RateLimit]:
        """For a request that drew on groups too: an answer counts as accepted in every budget
        (and as its operation's traffic in each); for a refusal, the budget it is blamed on and
        that budget's limit."""
        limits = [admission.limit, *(limit for _, limit in admission.groups)]
        budgets = entry.budgets
        if outcome is Outcome.ANSWERED:
            for budget, limit in zip(budgets, limits, strict=True):
                with budget.lock:
                    budget.refusals.on_accepted(admission.admitted, now, limit)
                    budget.refusals.answered_by_scope[admission.scope] = now
            return None, admission.limit
        if outcome is not Outcome.RATE_LIMITED:
            return None, admission.limit
        return blamed_budget(admission.scope, budgets, limits, now)

    def effective_limit(self, key_id: str, scope: str, limit: RateLimit) -> RateLimit:
        """``limit``, or the lower limit this process learned from the server's refusals."""
        budget = self._budgets.get((key_id, scope))
        if budget is None:
            return limit
        with budget.lock:
            return budget.refusals.effective(limit, time.monotonic())
