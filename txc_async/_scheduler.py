"""The in-process rate-limit scheduler: a strict sliding-window log per budget, waiters served FIFO.

The server counts requests in any span of ``per_seconds``. A request admitted at time t reaches it
at t + delay, and delays differ from request to request, so admissions are spaced as if the window
were longer by a jitter allowance: then no span the server measures holds more than
``max_requests`` arrivals, however unevenly the network delays them within the allowance.
"""

from __future__ import annotations

import asyncio
import math
import random as _random
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable

from ._ratelimit import RateLimit

__all__ = [
    "BACKOFF_CAP",
    "BACKOFF_START",
    "MAX_RETRY_AFTER",
    "FifoTurns",
    "InProcessLimiter",
    "backoff_pause",
    "check_jitter_allowance",
    "default_jitter_allowance",
    "default_limiter",
]

#: The longest pause a server's Retry-After may impose, in seconds.
MAX_RETRY_AFTER = 300.0
#: The first pause after a refusal without Retry-After, and the cap of the doubling.
BACKOFF_START = 1.0
BACKOFF_CAP = 30.0
#: A pause is stretched by up to this fraction, so processes refused together do not all come
#: back at the same instant.
BACKOFF_JITTER = 0.25


def backoff_pause(streak: int, retry_after: float | None, random: Callable[[], float]) -> float:
    """The pause after a rate-limit refusal, in seconds.

    The server's Retry-After when it gave one (at most 300 s); else 1 s doubling with each refusal
    in a row (``streak`` refusals so far), stretched by 0 to 25 % of jitter, at most 30 s.
    """
    if retry_after is not None and retry_after >= 0:  # NaN fails the test and falls through
        return min(retry_after, MAX_RETRY_AFTER)
    # The exponent is bounded so a very long streak cannot overflow a float.
    base = min(BACKOFF_CAP, BACKOFF_START * 2.0 ** min(max(streak, 0), 16))
    return min(BACKOFF_CAP, base * (1.0 + BACKOFF_JITTER * random()))


def default_jitter_allowance(per_seconds: float) -> float:
    """How much longer than ``per_seconds`` the admission window is: 5 % of it, 50..250 ms."""
    return min(0.25, max(0.05, 0.05 * per_seconds))


def check_jitter_allowance(value: float | None) -> float | None:
    """``value`` if it is None or a finite number of seconds of at least 0, else ValueError."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
        math.isfinite(value) and value >= 0
    ):
        raise ValueError("jitter_allowance: must be a finite number of seconds, at least 0")
    return float(value)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _resolve(ticket: asyncio.Future[None]) -> None:
    if not ticket.done():
        ticket.set_result(None)


class FifoTurns:
    """A queue of waiters served in arrival order.

    Only the head of the queue runs; the others wait on a future until they become the head. A
    waiter that leaves (admitted, cancelled or timed out) hands the turn to the next. Waiters may
    come from several event loops, in several threads: ``lock`` guards the queue, and a waiter of
    another loop is woken through that loop. Callers may hold ``lock`` to read the queue together
    with their own state, but must not hold it while calling :meth:`enter` or :meth:`leave`.
    """

    __slots__ = ("_waiters", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._waiters: deque[asyncio.Future[None]] = deque()

    def __bool__(self) -> bool:
        return bool(self._waiters)

    def __len__(self) -> int:
        return len(self._waiters)

    async def enter(self) -> asyncio.Future[None]:
        """Join the queue and wait to be its head; returns the ticket to give to :meth:`leave`."""
        loop = asyncio.get_running_loop()
        ticket: asyncio.Future[None] = loop.create_future()
        with self.lock:
            waiters = self._waiters
            waiters.append(ticket)
            if waiters[0] is not ticket and waiters[0].get_loop().is_closed():
                # The head's loop was closed under it (its task will never leave): drop every
                # waiter of a closed loop, or the queue would be blocked for good.
                self._drop_abandoned()
            head = waiters[0] is ticket
        if not head:
            try:
                await ticket
            except BaseException:
                self.leave(ticket)
                raise
        return ticket

    def leave(self, ticket: asyncio.Future[None]) -> None:
        """Leave the queue; if ``ticket`` was the head, wake the next waiter."""
        with self.lock:
            waiters = self._waiters
            was_head = bool(waiters) and waiters[0] is ticket
            try:
                waiters.remove(ticket)
            except ValueError:
                return
            if was_head:
                self._wake_head()

    def _drop_abandoned(self) -> None:
        kept = [w for w in self._waiters if not w.get_loop().is_closed()]
        self._waiters.clear()
        self._waiters.extend(kept)
        self._wake_head()

    def _wake_head(self) -> None:
        """Wake the waiter now at the head (called with the lock held)."""
        waiters = self._waiters
        while waiters:
            head = waiters[0]
            loop = head.get_loop()
            if loop.is_closed():  # no task is left to take the turn
                waiters.popleft()
                continue
            # A done ticket is either awake already or cancelled; a cancelled waiter leaves
            # through :meth:`leave`, which passes the turn on.
            if head.done():
                return
            if loop is _running_loop():
                head.set_result(None)
                return
            try:
                loop.call_soon_threadsafe(_resolve, head)
                return
            except RuntimeError:  # its loop closed just now
                waiters.popleft()


class _Budget:
    """One budget: its last ``max_requests`` admission times, its pause, its queue of waiters."""

    __slots__ = ("admitted", "limit", "paused_until", "streak", "turns", "window")

    def __init__(self, limit: RateLimit, window: float) -> None:
        self.limit = limit
        self.window = window
        # Only the last N admissions matter: one more may go when the oldest of them has left
        # the window, so the log never holds more than N times.
        self.admitted: deque[float] = deque(maxlen=limit.max_requests)
        self.turns = FifoTurns()
        self.paused_until = -math.inf
        self.streak = 0

    def delay(self, now: float) -> float:
        """Seconds until one more request may be admitted (zero or less: now)."""
        wait = self.paused_until - now
        admitted = self.admitted
        if len(admitted) == admitted.maxlen:
            # Fewer than N admissions in (now - window, now] once the oldest has left it.
            wait = max(wait, admitted[0] + self.window - now)
        return wait


class InProcessLimiter:
    """Keeps every budget of the process in memory (see :class:`txc_async.Limiter`).

    Each budget admits a request at time t only when fewer than ``max_requests`` admissions lie in
    ``(t - per_seconds - jitter_allowance, t]``; ``jitter_allowance`` defaults to 5 % of the
    window, at least 50 ms and at most 250 ms, and is how unevenly the network may delay requests
    before the server could count more than the limit in a window.

    Waiters are admitted first-in-first-out; only the head of a queue sleeps on the clock. A
    waiter cancelled (or timed out) before admission consumes no budget and lets the next one go.
    With budget to spare and no one waiting, :meth:`acquire` returns without suspending. One
    limiter may serve every event loop of the process, in any thread. ``clock``, ``sleep`` and
    ``random`` (jitter of the backoff, in [0, 1)) can be replaced, e.g. by a fake clock in tests.
    """

    def __init__(
        self,
        *,
        jitter_allowance: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        random: Callable[[], float] | None = None,
    ) -> None:
        self._allowance = check_jitter_allowance(jitter_allowance)
        self._clock = clock
        self._sleep = sleep
        self._random = random if random is not None else _random.random
        self._budgets: dict[tuple[str, str], _Budget] = {}

    def __repr__(self) -> str:
        return f"InProcessLimiter(budgets={len(self._budgets)})"

    def window(self, limit: RateLimit) -> float:
        """The span, in seconds, in which at most ``limit.max_requests`` requests are admitted."""
        allowance = self._allowance
        if allowance is None:
            allowance = default_jitter_allowance(limit.per_seconds)
        return limit.per_seconds + allowance

    def _budget(self, key_id: str, scope: str, limit: RateLimit) -> _Budget:
        key = (key_id, scope)
        budget = self._budgets.get(key)
        if budget is None:
            # setdefault is atomic: two threads creating a budget at once end up sharing one.
            budget = self._budgets.setdefault(key, _Budget(limit, self.window(limit)))
        if budget.limit is not limit:
            with budget.turns.lock:
                if budget.limit != limit:
                    # Another limit for the same budget: the budget stays one object (a waiter
                    # may hold it) and keeps its recent admissions, counted under the new limit.
                    budget.admitted = deque(budget.admitted, maxlen=limit.max_requests)
                    budget.window = self.window(limit)
                budget.limit = limit
        return budget

    async def acquire(self, key_id: str, scope: str, limit: RateLimit) -> None:
        """Wait for the budget (first come, first served), then count the request as sent.

        Returns None: the client draws nonces from its own per-key source.
        """
        budget = self._budgets.get((key_id, scope))
        if budget is None or budget.limit is not limit:
            budget = self._budget(key_id, scope, limit)
        turns = budget.turns
        with turns.lock:
            # The fast path: no one is waiting and the window has room. No future, no task.
            if not turns:
                now = self._clock()
                if budget.delay(now) <= 0:
                    budget.admitted.append(now)
                    return None
        ticket = await turns.enter()
        try:
            while True:
                with turns.lock:
                    now = self._clock()
                    wait = budget.delay(now)
                    if wait <= 0:
                        budget.admitted.append(now)
                        return None
                # Woken early (a pause set meanwhile, a coarse clock), it simply looks again.
                await self._sleep(wait)
        finally:
            turns.leave(ticket)

    async def rate_limited(
        self, key_id: str, scope: str, limit: RateLimit, retry_after: float | None
    ) -> float:
        """Pause the whole budget after a rate-limit refusal and return the pause in seconds.

        The pause is ``retry_after`` when the server gave one (at most 300 s), else 1 s doubling
        with each refusal in a row up to 30 s, with jitter; a longer pause under way stays.
        """
        budget = self._budget(key_id, scope, limit)
        with budget.turns.lock:
            pause = backoff_pause(budget.streak, retry_after, self._random)
            budget.streak += 1
            # A longer pause already under way stays.
            budget.paused_until = max(budget.paused_until, self._clock() + pause)
        return pause

    def succeeded(self, key_id: str, scope: str) -> None:
        """Record an answer that was not a rate-limit refusal: the next refusal's pause starts
        again from 1 s."""
        budget = self._budgets.get((key_id, scope))
        if budget is not None:
            budget.streak = 0

    async def aclose(self) -> None:
        """Nothing to release. The budgets stay: requests admitted just before still count."""


_default: InProcessLimiter | None = None
_default_lock = threading.Lock()


def default_limiter() -> InProcessLimiter:
    """The limiter every client of the process shares unless given another."""
    global _default
    limiter = _default
    if limiter is None:
        with _default_lock:
            if _default is None:
                _default = InProcessLimiter()
            limiter = _default
    return limiter
