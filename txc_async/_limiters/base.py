"""The interface of every limiter backend: a limit, an admitted request, how it ended, and the
protocol a backend implements. The limits themselves are the operations' (``_operations``)."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

from .._validate import check_positive_seconds

__all__ = [
    "Admission",
    "BaseLimiter",
    "Groups",
    "Limiter",
    "Outcome",
    "RateLimit",
]


@dataclass(frozen=True, slots=True)
class RateLimit:
    """At most ``max_requests`` requests in any span of ``per_seconds`` seconds."""

    max_requests: int
    per_seconds: float

    def __post_init__(self) -> None:
        if (
            isinstance(self.max_requests, bool)
            or not isinstance(self.max_requests, int)
            or self.max_requests < 1
        ):
            raise ValueError("max_requests: must be an integer of at least 1")
        check_positive_seconds("per_seconds", self.per_seconds)


#: The group budgets a request draws on besides its scope's: ``(name, limit)`` pairs.
Groups = tuple[tuple[str, RateLimit], ...]


class Outcome(enum.Enum):
    """How a request admitted by a limiter ended, as far as the server's count is concerned."""

    #: The server answered (anything but a rate-limit refusal): it arrived before the answer.
    ANSWERED = "answered"
    #: The server refused it for its rate limit (HTTP 429 without a JSON body, or a throttling
    #: message): it arrived, and the budget pauses.
    RATE_LIMITED = "rate_limited"
    #: It never left this machine (the connection was never made, the client was closed first).
    NOT_SENT = "not_sent"
    #: No answer (timeout, reset, cancelled in flight): it may arrive up to its deadline.
    NO_ANSWER = "no_answer"


class Admission:
    """One request let through by a limiter: what the limiter needs to conclude it later.

    ``nonce`` is the nonce to sign with when a backend shared by several processes draws it
    from its per-key counter (None: the client draws it from the process's own source).
    ``admitted`` and ``deadline`` are on the backend's clock, ``local_deadline`` on this
    process's monotonic clock; ``token`` is the backend's own. ``groups`` are the group budgets
    the request drew on besides its scope's.
    """

    __slots__ = (
        "admitted", "deadline", "groups", "key_id", "limit", "local_deadline", "nonce", "scope",
        "token",
    )

    def __init__(
        self,
        key_id: str,
        scope: str,
        limit: RateLimit,
        admitted: float,
        deadline: float,
        token: object = None,
        nonce: int | None = None,
        local_deadline: float | None = None,
        groups: Groups = (),
    ) -> None:
        self.key_id = key_id
        self.groups = groups
        self.scope = scope
        self.limit = limit
        self.admitted = admitted
        self.deadline = deadline
        self.token = token
        self.nonce = nonce
        #: The deadline on this process's ``time.monotonic()``, no later than the moment the
        #: backend counts the request until: the request must be sent and answered by then.
        self.local_deadline = deadline if local_deadline is None else local_deadline

    def __repr__(self) -> str:
        return f"Admission(scope={self.scope!r}, admitted={self.admitted:.6f})"


@runtime_checkable
class Limiter(Protocol):
    """A backend that keeps request budgets.

    A budget is named by ``key_id`` (a hash identifying the server, never a key: the service
    counts per IP address, so every API key used with one server draws on the same budgets) and
    ``scope`` (an operation's scope, or a group's name). A request draws on its scope's budget
    and on the budgets of its ``groups``, all at once or none.

    The server counts a request when it arrives, which is some time between its admission and
    its answer; so a budget's log holds, for every request, the latest
    moment it could have arrived: its deadline while it is in flight, its answer once answered.
    A request is admitted at ``t`` only while fewer than ``max_requests`` of those moments lie in
    ``(t - per_seconds, t]``; then no span of ``per_seconds`` at the server can hold more than
    ``max_requests`` arrivals, whatever the network delays, with no allowance to tune.

    Implementations serve waiters first-in-first-out; a waiter cancelled before it is admitted
    consumes no budget.
    """

    def try_acquire(
        self, key_id: str, scope: str, limit: RateLimit, timeout: float, *, groups: Groups = ()
    ) -> Admission | None:
        """Admit at once when every budget has room and no one waits, else None (never waits).

        A backend that cannot decide without I/O always returns None.
        """
        ...

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
        """Wait until one more request may be sent within ``limit`` and within each of the
        ``groups``' limits, then count it as in flight in all of them until ``timeout`` seconds
        from now.

        ``nonce_clock`` (milliseconds on the server-aligned clock) is given for signed requests:
        a backend shared by several processes then draws the request's nonce from one counter
        per API key (``nonce_key``, a hash of it; ``key_id`` when not given) and returns it in
        [`Admission.nonce`][txc_async.Admission]. The client's clock also has
        ``known_ceiling_ms()``: the highest nonce the server can have accepted so far, or None
        while no answer bounds the server's clock; only down to it may a backend bring back a
        counter left far ahead.
        """
        ...

    def conclude(
        self, admission: Admission, outcome: Outcome, retry_after: float | None = None
    ) -> float:
        """Record how an admitted request ended in every budget it drew on; returns the pause in
        seconds it now has to keep (0 unless ``outcome`` is
        [`Outcome.RATE_LIMITED`][txc_async.Outcome]).

        A rate-limit refusal pauses, and may teach a lower limit to, one budget: the request's
        group when other operations' requests were answered in that group's window (their
        traffic may be what the server refused, and an operation's own limit must not pay for
        it), else the request's own scope (so one operation's refusals hold up no other).

        Never waits: a backend that must tell a store does it in the background, and keeps
        the safer value (the deadline) until then.
        """
        ...

    def effective_limit(self, key_id: str, scope: str, limit: RateLimit) -> RateLimit:
        """The limit the budget keeps to: ``limit``, or lower when the server was found to
        refuse below it (a learned limit)."""
        ...

    async def aclose(self) -> None:
        """Release the backend's resources."""
        ...


class BaseLimiter:
    """The optional abilities of a [`Limiter`][txc_async.Limiter], declared, with defaults that say
    "not supported": a backend derives from this class, implements the
    [`Limiter`][txc_async.Limiter] methods, and overrides the abilities it has. A limiter that does
    not derive from it is used as if it had the defaults.
    """

    #: Whether [`Limiter.acquire`][txc_async.Limiter.acquire] and
    #: [`Limiter.try_acquire`][txc_async.Limiter.try_acquire] take ``groups`` (and ``acquire``
    #: ``nonce_key``). A limiter that does not is given each request's own scope alone (its groups'
    #: budgets are not kept) and draws nonces, if it does, by ``key_id``.
    takes_groups: ClassVar[bool] = False

    def holds(self, admission: Admission) -> bool:
        """False when a refusal paused the admission's budget after it was admitted: the request,
        not sent yet (it waited for a connection), must wait for the pause like any. The default
        never pauses an admitted request: True."""
        return True

    async def redraw_nonce(
        self, admission: Admission, nonce_clock: Callable[[], int]
    ) -> int | None:
        """A new nonce for an admitted request whose nonce (drawn by the backend at admission)
        grew too old while it waited for a connection; None when none can be drawn now. The
        default draws no nonces: None."""
        return None
