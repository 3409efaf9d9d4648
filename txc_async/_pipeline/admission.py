"""Admission: when an attempt of a call may go. Behind the server's first answer, within its
budgets (the limiter), with a nonce on the server's clock, on a connection of its own."""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine
from typing import Any

from .._errors import client_closed
from .._limiters.base import Admission, BaseLimiter, Groups, Limiter, Outcome, RateLimit
from .._nonces.clock import ServerClock
from .._nonces.sources import NonceClock, NonceSource
from .._operations import Operation
from .._transports.base import ConnectionSlots, RawResponse
from .calls import CallsInFlight, CallState

__all__ = ["Admitter", "taking_groups"]

_monotonic = time.monotonic
_NOT_SENT = Outcome.NOT_SENT

#: The abilities of a limiter that declares none: the defaults.
_NO_LIMITER_ABILITIES = BaseLimiter()


class _ScopesOnly:
    """A limiter that keeps scopes only, called as one that takes groups: it is given each
    request's own scope alone (its groups' budgets are not kept), and draws nonces, if it
    does, by ``key_id``. Its other methods are the limiter's own."""

    __slots__ = ("_limiter", "aclose", "conclude", "effective_limit")

    def __init__(self, limiter: Limiter) -> None:
        self._limiter = limiter
        # The limiter's own methods, not ones around them: conclude is called for every request.
        self.conclude = limiter.conclude
        self.effective_limit = limiter.effective_limit
        self.aclose = limiter.aclose

    def try_acquire(
        self, key_id: str, scope: str, limit: RateLimit, timeout: float, *, groups: Groups = ()
    ) -> Admission | None:
        return self._limiter.try_acquire(key_id, scope, limit, timeout)

    def acquire(
        self,
        key_id: str,
        scope: str,
        limit: RateLimit,
        timeout: float,
        nonce_clock: Callable[[], int] | None = None,
        *,
        groups: Groups = (),
        nonce_key: str | None = None,
    ) -> Coroutine[Any, Any, Admission]:
        # The limiter's own coroutine, not one around it: a wait for budget resumes one level.
        return self._limiter.acquire(key_id, scope, limit, timeout, nonce_clock)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._limiter!r})"


def _abilities(limiter: Limiter) -> BaseLimiter:
    """The abilities ``limiter`` declares; one that declares none has the defaults."""
    return limiter if isinstance(limiter, BaseLimiter) else _NO_LIMITER_ABILITIES


def taking_groups(limiter: Limiter) -> Limiter:
    """``limiter``, to be called with groups (and ``nonce_key``) always: itself when it declares
    that it takes them, else an adapter that leaves them out."""
    return limiter if _abilities(limiter).takes_groups else _ScopesOnly(limiter)


class Admitter:
    """Lets the attempts of the calls go, each once the server's first answer, its budgets, its
    nonce and a connection allow."""

    __slots__ = (
        "_calls", "_groups", "_holds", "_redraw_nonce", "key_id", "limiter", "nonce_clock",
        "nonce_key", "nonces", "rate_limits", "server_clock", "slots",
    )

    def __init__(
        self,
        *,
        limiter: Limiter,
        key_id: str,
        nonce_key: str,
        rate_limits: dict[str, RateLimit],
        server_clock: ServerClock,
        nonce_clock: NonceClock,
        nonces: NonceSource | None,
        slots: ConnectionSlots | None,
        calls: CallsInFlight,
    ) -> None:
        #: The limiter, always called with groups (see `taking_groups`).
        self.limiter = taking_groups(limiter)
        abilities = _abilities(limiter)
        self._holds = abilities.holds
        self._redraw_nonce = abilities.redraw_nonce
        #: Names the budgets: the server's (every API key used with it shares them).
        self.key_id = key_id
        #: Names the API key's nonce counter in a limiter that draws nonces.
        self.nonce_key = nonce_key
        self.rate_limits = rate_limits
        #: The group budgets each operation draws on besides its scope's, noted the first time
        #: it is called (the catalogue's declarations load per group, on first use).
        self._groups: dict[str, Groups] = {}
        self.server_clock = server_clock
        #: The server's time as this process estimates it, for a limiter that draws nonces.
        self.nonce_clock = nonce_clock
        #: The API key's own nonce counter (None: the client signs nothing).
        self.nonces = nonces
        #: Connection slots, when the transport has them (see ConnectionSlots).
        self.slots = slots
        self._calls = calls

    async def admit(
        self, op: Operation[Any], timeout: float, signed: bool, state: CallState
    ) -> tuple[Admission, int | None, float]:
        """Wait for an attempt's turn: behind the first signed request to the server while it
        has no answer, for its budget, for its nonce when it is signed, then for a connection.
        Returns the admission, the nonce and the seconds it waited for the budget; the attempt
        holds a connection slot, when the transport has them, until it releases it."""
        limiter, slots = self.limiter, self.slots
        limit = self.rate_limits[op.scope]
        groups = self._groups.get(op.name)
        if groups is None:
            groups = self._groups[op.name] = ((op.group, self.rate_limits[op.group]),)
        while True:
            if signed and not state.first:
                first_answer = self.server_clock.first_answer
                if not first_answer.done:
                    state.first = await first_answer.enter(
                        self.server_clock, timeout, self.nonce_clock.learn
                    )
            waited = 0.0
            admission = limiter.try_acquire(self.key_id, op.scope, limit, timeout, groups=groups)
            if admission is None:
                began = _monotonic()
                # A limiter shared by processes draws signed requests' nonces from one counter
                # per key, on the server's clock as this process estimates it.
                admission = await limiter.acquire(
                    self.key_id, op.scope, limit, timeout,
                    self.nonce_clock if signed else None, groups=groups,
                    nonce_key=self.nonce_key,
                )
                waited = _monotonic() - began
            if self._calls.closed:
                limiter.conclude(admission, _NOT_SENT)
                raise client_closed()  # named by the pipeline, with the others
            nonces = self.nonces
            nonce = None
            if signed and nonces is not None:
                # Drawn after the budget admits the request, so it is fresh when it leaves; a
                # wait for the clock holds no connection.
                nonce = admission.nonce
                if nonce is None:
                    nonce = nonces.try_next()
                    if nonce is None:
                        nonce = await self._wait_for_nonce(nonces, admission)
            if slots is None or slots.try_take():
                return admission, nonce, waited
            leaves, nonce = await self._wait_for_connection(slots, admission, nonce)
            if leaves:
                return admission, nonce, waited

    def answered(self, state: CallState, clock_sent: float, raw: RawResponse) -> None:
        """An attempt was answered: it reached the server, its answer tells of the server's
        clock, and the server's first answer lets the signed requests waiting for it go."""
        state.in_flight = False
        state.reached = True
        # Every answer's Date, bracketed by the send and answer times, refines the estimate of
        # the server's clock; a refusal (429) that disagrees replaces it.
        clock = self.server_clock
        clock.observe(
            clock_sent, clock.local.monotonic(), raw.headers.get("Date"),
            refused=raw.status == 429,
        )
        if state.first:
            clock.first_answer.leave(answered=True)
            state.first = False

    def unanswered(self, state: CallState) -> None:
        """An attempt got no answer: the call's request that went first to the server lets the
        others go (each then asks the server's time, or goes)."""
        state.in_flight = False
        if state.first:
            self.server_clock.first_answer.leave(answered=False)
            state.first = False

    def unsent(self, admission: Admission) -> None:
        """An admitted request that holds its connection slot ends before it is sent: its slot
        and its place in the budget are free at once."""
        if self.slots is not None:
            self.slots.release()
        self.limiter.conclude(admission, _NOT_SENT)

    def pass_refused_nonces(self, admission: Admission) -> None:
        """The server refused the request's nonce. Drawn from this process's own counter, the
        values after it may be held by another process of the key (one that ran just before
        this one): the counter passes them."""
        if admission.nonce is None and self.nonces is not None:
            self.nonces.pass_earlier_values()

    async def _wait_for_nonce(self, nonces: NonceSource, admission: Admission) -> int:
        """A nonce from the process's own counter, once its clock allows one."""
        try:
            return await nonces.next()
        except BaseException:
            self.limiter.conclude(admission, _NOT_SENT)
            raise

    async def _wait_for_connection(
        self, slots: ConnectionSlots, admission: Admission, nonce: int | None
    ) -> tuple[bool, int | None]:
        """Wait for a connection slot, then check the request again: whether it leaves now, and
        the nonce to sign it with (drawn again if the wait made it too old).

        Every connection was busy: the request waits for one here, not queued inside aiohttp,
        where a refusal meanwhile could not hold it back. One that does not leave is concluded
        as not sent and waits for its budget (the pause), or for a nonce, like any other.
        """
        try:
            await slots.take()
        except BaseException:
            self.limiter.conclude(admission, _NOT_SENT)
            raise
        # A refusal paused the budget while it waited.
        leaves = self._holds(admission)
        if leaves and nonce is not None:
            try:
                fresh = await self._fresh_nonce(admission, nonce)
            except BaseException:
                self.unsent(admission)
                raise
            # None to draw now, and the one drawn before is too old to send.
            leaves = fresh is not None
            nonce = fresh
        if not leaves:
            self.unsent(admission)
        return leaves, nonce

    async def _fresh_nonce(self, admission: Admission, nonce: int) -> int | None:
        """The nonce to sign with after a wait for a connection, or None when it has grown too
        old to send and none can be drawn now."""
        oldest = self.server_clock.oldest_nonce_ms()
        fresh = None
        if admission.nonce is None:
            # Drawn again now that it leaves (the one drawn before is never used).
            assert self.nonces is not None  # only signed requests carry a nonce
            fresh = self.nonces.try_next()
        elif nonce < oldest:
            # The shared store drew it at admission, and the wait made it too old to send:
            # drawn again from the store (one look at it, no wait).
            fresh = await self._redraw_nonce(admission, self.nonce_clock)
        if fresh is not None:
            return fresh
        return None if nonce < oldest else nonce
