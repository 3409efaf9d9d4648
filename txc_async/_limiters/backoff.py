"""What a budget learns from the server's refusals: the pause, the backoff streak, a learned limit.

One rule serves every limiter backend. A burst of concurrent refusals is one event: only a refusal
of a request admitted after the last pause began starts a new one. The pause is the server's
Retry-After (seconds or an HTTP date) when it gave one, else 1 s doubling per event, with jitter;
every pause lies between `MIN_PAUSE` and `MAX_PAUSE`. When the server refuses below
the configured limit, and a second refusal confirms it (in the same burst, or right after the
pause), the budget keeps to what the server accepted in the window before the refusal, until that
window has passed. A lone refusal (another client on the same address, a passing fault) only
pauses. A refusal says nothing certain about the server's limit when its window may hold traffic
the process never saw (a predecessor's burst, a neighbour's on the same address): the lower limit
is learned only when the next window, which the process saw whole, refuses one request more than
it (see `RefusalState`); else the budget is back at the configured limit.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

from .base import RateLimit

__all__ = [
    "BACKOFF_START",
    "LEARNED_LIMIT_WINDOWS",
    "MAX_PAUSE",
    "MIN_PAUSE",
    "RefusalState",
    "backoff_pause",
    "blamed_budget",
    "blamed_group",
]

logger = logging.getLogger("txc_async")

#: The shortest pause after a rate-limit refusal (also when Retry-After says 0), in seconds.
MIN_PAUSE = 1.0
#: The longest pause: the cap of the doubling and of any Retry-After, in seconds.
MAX_PAUSE = 30.0
#: The first pause of the doubling when the server gives no Retry-After.
BACKOFF_START = 1.0
#: A doubling pause is stretched by up to this fraction, so processes refused together do not
#: all come back at the same instant.
BACKOFF_JITTER = 0.25
#: How many windows a learned limit holds after the check that confirmed it, before the next check
#: (one request more than it, which costs one refusal while the server still refuses there).
LEARNED_LIMIT_WINDOWS = 30


def blamed_group(
    scope: str, groups: list[tuple[RefusalState, RateLimit]], now: float
) -> int | None:
    """Which budget a rate-limit refusal of a request of ``scope`` is blamed on: the index of
    the first of its ``groups`` in whose window another operation had a request answered (that
    traffic may be what the server refused: the operation's own limit must not pay for it), or
    None for the request's own scope (it was alone in its groups: blaming a group would hold up
    operations that had no part in it)."""
    for index, (state, limit) in enumerate(groups):
        if state.others_answered(scope, now, limit.per_seconds):
            return index
    return None


class _Blamable(Protocol):
    """A budget as the blame reads it: its lock, and what it learned from refusals."""

    @property
    def lock(self) -> AbstractContextManager[Any]: ...

    @property
    def refusals(self) -> RefusalState: ...


_B = TypeVar("_B", bound=_Blamable)


def blamed_budget(
    scope: str, budgets: Sequence[_B], limits: Sequence[RateLimit], now: float
) -> tuple[_B, RateLimit]:
    """The budget a rate-limit refusal of a request of ``scope`` is blamed on (see
    `blamed_group`), with its limit: ``budgets[0]`` is the request's scope, the others its
    groups, ``limits`` theirs in the same order. The groups are read under their locks."""
    groups = list(zip(budgets[1:], limits[1:], strict=True))
    with contextlib.ExitStack() as locks:
        for budget, _ in groups:
            locks.enter_context(budget.lock)
        blamed = blamed_group(scope, [(budget.refusals, limit) for budget, limit in groups], now)
    return (budgets[0], limits[0]) if blamed is None else groups[blamed]


def backoff_pause(streak: int, retry_after: float | None, random: Callable[[], float]) -> float:
    """The pause after a rate-limit event, in seconds.

    ``retry_after`` (seconds, already converted from an HTTP date) when the server gave one,
    else 1 s doubling with each event in a row (``streak`` events before this one), stretched
    by 0 to 25 % of jitter; always between `MIN_PAUSE` and `MAX_PAUSE`.
    """
    if retry_after is not None and not math.isnan(retry_after):
        return min(MAX_PAUSE, max(MIN_PAUSE, retry_after))
    # The exponent is bounded so a very long streak cannot overflow a float.
    base = BACKOFF_START * 2.0 ** min(max(streak, 0), 16)
    return min(MAX_PAUSE, max(MIN_PAUSE, base * (1.0 + BACKOFF_JITTER * random())))


class RefusalState:
    """One budget's pause, backoff streak and learned limit, on one clock (seconds).

    A lower limit goes through two steps. A confirmed refusal below the configured limit makes it
    suspected: the budget keeps to what the server accepted until that window has passed (the
    traffic it did not see, a predecessor's or a neighbour's, has left the server's window by
    then), and the next window checks it with one request more. That window began after the
    refusal, so the process saw it whole: the server accepting the extra request shows it allows
    more (back to the configured limit); refusing it is evidence across two windows, and the limit
    is learned. A learned limit is checked the same way every `LEARNED_LIMIT_WINDOWS` windows.
    """

    __slots__ = (
        "accepted",
        "answered_by_scope",
        "check_at",
        "checked_from",
        "checked_until",
        "confirmed",
        "label",
        "learned",
        "paused_at",
        "paused_until",
        "refused_in_event",
        "streak",
    )

    def __init__(self, label: str) -> None:
        #: Names the budget in log records (the scope; never the key).
        self.label = label
        self.streak = 0
        self.refused_in_event = 0
        self.paused_at = -math.inf
        self.paused_until = -math.inf
        #: The lower limit kept to (suspected, or learned once ``confirmed``), or None.
        self.learned: int | None = None
        self.confirmed = False
        #: From this moment the budget admits one request more than ``learned``: the check.
        self.check_at = math.inf
        # The requests of the last check decided: admitted in [checked_from, checked_until).
        self.checked_from = math.inf
        self.checked_until = -math.inf
        # Answer times of accepted requests; only the last ``max_requests`` can matter.
        self.accepted: deque[float] = deque(maxlen=1)
        #: For a group's budget: the last answer of each operation that draws on it.
        self.answered_by_scope: dict[str, float] = {}

    def cap(self, limit: RateLimit, now: float) -> int:
        """How many requests the budget admits per window: the limit, or the lower one kept to
        (one more while it is being checked)."""
        learned = self.learned
        if learned is None:
            return limit.max_requests
        if learned >= limit.max_requests:
            self.learned = None
            return limit.max_requests
        return learned + 1 if now >= self.check_at else learned

    def effective(self, limit: RateLimit, now: float) -> RateLimit:
        """The limit the budget keeps to: ``limit``, or the lower one (suspected or learned)."""
        learned = self.learned
        if learned is None or learned >= limit.max_requests:
            return limit
        return RateLimit(learned, limit.per_seconds)

    def _accepted_in_window(self, limit: RateLimit, now: float) -> int:
        accepted = self.accepted
        if accepted.maxlen != limit.max_requests:
            self.accepted = accepted = deque(accepted, maxlen=limit.max_requests)
        cut = now - limit.per_seconds
        while accepted and accepted[0] <= cut:
            accepted.popleft()
        return len(accepted)

    def on_accepted(self, admitted: float, now: float, limit: RateLimit) -> None:
        """The server accepted a request admitted at ``admitted``; its answer came at ``now``."""
        if admitted >= self.paused_at:
            # A request sent after the last event went through: the streak ends.
            self.streak = 0
        accepted = self.accepted
        if accepted.maxlen != limit.max_requests:
            self.accepted = accepted = deque(accepted, maxlen=limit.max_requests)
        accepted.append(now)
        learned = self.learned
        if learned is not None and len(accepted) > learned:
            seen = self._accepted_in_window(limit, now)
            if seen <= learned:
                return
            if admitted >= self.check_at or seen >= limit.max_requests:
                # The check went through: the server took more than the budget kept to in a
                # window it saw whole. Whatever refused before has gone.
                self.learned = None
                self.check_at = math.inf
                logger.info(
                    "scope %r: the server accepted %d per %g s, more than the %d kept to; back "
                    "to the configured %d per %g s",
                    self.label, seen, limit.per_seconds, learned, limit.max_requests,
                    limit.per_seconds,
                )
            else:
                # Answers of the refusal's own window, come back late: it allows at least that.
                self.learned = seen

    def others_answered(self, scope: str, now: float, per: float) -> bool:
        """Whether an operation other than ``scope`` had a request answered in the ``per``
        seconds before ``now`` (a group's budget: its other operations' traffic)."""
        cut = now - per
        return any(at > cut for other, at in self.answered_by_scope.items() if other != scope)

    def on_refused(
        self,
        admitted: float,
        now: float,
        limit: RateLimit,
        retry_after: float | None,
        random: Callable[[], float],
    ) -> float:
        """The server refused a request admitted at ``admitted`` for its rate limit; returns the
        pause (seconds from ``now``) the budget keeps."""
        accepted = self._accepted_in_window(limit, now)
        learned = self.learned
        if learned is not None and 0 < accepted < limit.max_requests:
            if admitted >= self.check_at:
                # The check: one request more than the budget kept to, refused in a window the
                # process saw whole. The lower limit is the server's (or a lasting neighbour's).
                self.checked_from, self.checked_until = self.check_at, now
                self._confirm(accepted, limit, now)
                return self._retry_after(retry_after, now)
            if self.checked_from <= admitted < self.checked_until:
                # Another request of that check: its answers refine the limit, only upwards.
                if accepted > learned:
                    self.learned = accepted
                return self._retry_after(retry_after, now)
        if admitted < self.paused_at:
            # Sent before the event that is already under way was known: the same burst. A
            # second refusal confirms that the server's limit, not a passing event, refused.
            self.refused_in_event += 1
            self._suspect(accepted, limit, now, new_event=self.refused_in_event == 2)
            if retry_after is not None and not math.isnan(retry_after):
                # No extra step, but a later Retry-After of the burst is honoured too.
                until = now + min(MAX_PAUSE, max(MIN_PAUSE, retry_after))
                if until > self.paused_until:
                    self.paused_until = until
            return max(0.0, self.paused_until - now)
        pause = backoff_pause(self.streak, retry_after, random)
        self.streak += 1
        self.paused_at = now
        self.paused_until = now + pause
        self.refused_in_event = 1
        if self.streak > 1:
            # Refused again right after a pause: confirmed too.
            self._suspect(accepted, limit, now, new_event=True)
        logger.warning(
            "scope %r: rate limit refusal; paused %.2f s (event %d in a row)",
            self.label, pause, self.streak,
        )
        return pause

    def _retry_after(self, retry_after: float | None, now: float) -> float:
        """The pause after a refusal the budget's lower limit already answers: none, unless the
        server asked for one (or one is under way)."""
        if retry_after is not None and not math.isnan(retry_after):
            until = now + min(MAX_PAUSE, max(MIN_PAUSE, retry_after))
            if until > self.paused_until:
                self.paused_until = until
        return max(0.0, self.paused_until - now)

    def _suspect(self, accepted: int, limit: RateLimit, now: float, *, new_event: bool) -> None:
        # Nothing accepted in the window says nothing about the server's limit (another client
        # on the same address, say): the pause alone answers it.
        if accepted <= 0 or accepted >= limit.max_requests:
            return
        previous = self.learned
        # Later refusals of one burst refine it, only upwards: answers of accepted requests may
        # come back after the first refusal.
        learned = accepted if new_event or previous is None else max(accepted, previous)
        self.learned = learned
        self.confirmed = False
        # The window may hold traffic this process never saw (its predecessor's, a neighbour's):
        # only once it has passed does a window tell the server's limit.
        self.check_at = now + limit.per_seconds
        if previous is None or (new_event and learned != previous):
            logger.info(
                "scope %r: refused at %d of the configured %d per %g s; keeping to %d until "
                "that window has passed, then checking with one request more",
                self.label, learned, limit.max_requests, limit.per_seconds, learned,
            )

    def _confirm(self, accepted: int, limit: RateLimit, now: float) -> None:
        previous, was_confirmed = self.learned, self.confirmed
        self.learned = accepted
        self.confirmed = True
        hold = LEARNED_LIMIT_WINDOWS * limit.per_seconds
        self.check_at = now + hold
        logger.log(
            logging.INFO if was_confirmed and previous == accepted else logging.WARNING,
            "scope %r: the server refuses below the configured %d per %g s; keeping to %d per "
            "%g s (what it accepted), checked again in %g s",
            self.label, limit.max_requests, limit.per_seconds, accepted, limit.per_seconds, hold,
        )

    def idle(self, now: float) -> bool:
        """Nothing here is worth keeping at ``now``: no pause, and no lower limit short of its
        next check (a budget forgotten then starts again from the configured limit)."""
        return now >= self.paused_until and (self.learned is None or now >= self.check_at)
