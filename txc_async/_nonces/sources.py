"""Nonces: millisecond values on the server's clock, one counter per API key and server (kept
by ``registry``); the clock shared limiters draw them on; and what to say when the service keeps
refusing them."""

from __future__ import annotations

import asyncio
import hashlib
import threading
import weakref
from collections.abc import Awaitable, Callable

from .._errors import AuthenticationError, TransportError, TxcError
from .clock import MAX_NONCE_LEAD_MS, NONCE_WINDOW_MS, ServerClock

__all__ = [
    "MAX_NONCE_LEAD_MS",
    "BaseNonceClock",
    "NonceClock",
    "NonceSource",
    "SourceKey",
    "key_fingerprint",
    "known_ceiling",
    "nonce_refusal_error",
]

#: What a source is kept by: the fingerprint of its API key, and the estimate of its server's
#: clock (None: this machine's wall clock).
SourceKey = tuple[str, ServerClock | None]


class NonceSource:
    """Strictly increasing millisecond nonces on the server's clock: ``max(now_ms, last + 1)``.

    One source per API key and server serves every client of a runtime (see
    ``registry.NonceSources``), so two requests never carry the same nonce. ``clock`` is the
    estimate of the server's clock (learnt from its answers), so nonces land inside the
    server's window whatever this machine's clock says.

    A long burst pushes the counter ahead of the clock; past the lead (``MAX_NONCE_LEAD_MS``,
    less any uncertainty of the estimate that would overrun the server's window), a caller takes
    the next value and sleeps once, until the server's clock is within the lead of it. The wait
    counts against nothing but the caller's own cancellation.
    """

    __slots__ = ("__weakref__", "_clock", "_generation", "_issued", "_last", "_lock", "_release",
                 "_sleep")

    def __init__(
        self,
        clock: ServerClock | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._clock = clock if clock is not None else ServerClock()
        self._sleep = sleep
        self._last = 0  # the highest value handed out or promised to a sleeping caller
        self._issued = 0  # the highest value handed out
        self._generation = self._clock.generation
        # Clients in several threads (several event loops) may share one key.
        self._lock = threading.Lock()
        # Set by the registry that hands the source out: its floors, and the source's key there.
        self._release: tuple[dict[SourceKey, int], SourceKey] | None = None

    def __del__(self) -> None:
        # The registry forgets a source no client holds. Its counter may still be ahead of the
        # clock (a burst): the next source of the same key starts above it, so no value repeats.
        release = self._release
        if release is not None:
            floors, key = release
            floors[key] = self._last

    def keep_floor_in(self, floors: dict[SourceKey, int], key: SourceKey) -> None:
        """Start above the floor ``floors`` holds for ``key`` (the last value of an earlier source
        of the key, let go), and leave this source's own there once it is freed."""
        floor = floors.pop(key, None)
        if floor is not None:
            self._last = self._issued = floor
        self._release = (floors, key)

    @property
    def clock(self) -> ServerClock:
        return self._clock

    def _draw(self) -> tuple[int, int, int]:
        """Under the lock: the next value, how far (ms) it is beyond the lead, the generation."""
        clock = self._clock
        now, lead = clock.reading()
        generation = clock.generation
        last = self._last
        if generation != self._generation:
            self._generation = generation
            if last > now + lead:
                # The estimate of the server's clock jumped back (the first answers showed it
                # behind this machine's, or this machine's clock stepped back before any answer
                # was seen): the counter, drawn on the old estimate, is far ahead of the server.
                # Bring it back to the highest value the server can have accepted, and no lower.
                # The server refuses a nonce more than its window ahead of its clock when it
                # arrives, and a refused nonce is never recorded, so values above that ceiling
                # were all refused and drawing them again cannot collide with one it executed.
                # Values at or below it, handed out, may have been accepted: they stay below the
                # counter. (A request still in flight with a higher value could be accepted
                # later; a new nonce equal to it is refused as a duplicate and signed again,
                # never executed twice.) Promised values not yet handed out are dropped: their
                # sleeping callers see the new generation and draw again.
                last = min(self._issued, clock.ceiling_ms())
        nonce = now if now > last else last + 1
        self._last = nonce
        return nonce, nonce - now - lead, generation

    def pass_earlier_values(self) -> None:
        """After the server refused a nonce of this source on a clock it agrees with: move the
        counter past the values another source of the key may have drawn (an earlier process,
        say, whose burst ran its counter up to the lead ahead of the clock), so that the call
        signed again does not meet them one millisecond at a time."""
        with self._lock:
            if self._clock.generation != self._generation:
                # The refusal moved the estimate of the server's clock: the clock, not another
                # source, explains it, and the next draw re-bases the counter on the new one.
                return
            # As far as the server's window safely allows: the lead, less the uncertainty of
            # the estimate. (Another source's values beyond it are passed on a later refusal,
            # once the clock has moved on.)
            now, lead = self._clock.reading()
            floor = now + lead
            if self._last < floor:
                self._last = floor
            # Values up to the floor may have been accepted from the other source: a re-basing
            # after a jump of the clock's estimate keeps the counter above them.
            if self._issued < floor:
                self._issued = floor

    def try_next(self) -> int | None:
        """The next nonce, or None when the counter is too far ahead of the clock."""
        clock = self._clock
        with self._lock:
            now, lead = clock.reading()
            if clock.generation == self._generation:
                # The usual case: _draw, with no re-basing to do.
                last = self._last
                nonce = now if now > last else last + 1
                if nonce - now <= lead:
                    self._last = nonce
                    if nonce > self._issued:
                        self._issued = nonce
                    return nonce
                return None
            nonce, beyond, _ = self._draw()
            if beyond > 0:
                # Nothing promised: the caller goes on to next(). (The counter keeps any
                # re-basing _draw did: nonce is then the counter's next value.)
                self._last = nonce - 1
                return None
            if nonce > self._issued:
                self._issued = nonce
            return nonce

    async def next(self) -> int:
        """The next nonce, sleeping (once) while the counter is too far ahead of the clock."""
        with self._lock:
            nonce, beyond, generation = self._draw()
            if beyond <= 0:
                if nonce > self._issued:
                    self._issued = nonce
                return nonce
        while True:
            await self._sleep(beyond / 1000)
            with self._lock:
                if self._clock.generation != generation:
                    # The estimate jumped while this caller slept: its value may be far off
                    # the server's clock now; draw again.
                    nonce, beyond, generation = self._draw()
                else:
                    # Early wake-ups by a millisecond are harmless (the window is 5 s).
                    now, lead = self._clock.reading()
                    beyond = nonce - now - lead - 1
                if beyond <= 0:
                    if nonce > self._issued:
                        self._issued = nonce
                    return nonce


def key_fingerprint(api_key: str, scope: str = "") -> str:
    """A short hash that identifies an API key (and optionally a server) without revealing it."""
    return hashlib.sha256(f"{scope}\0{api_key}".encode()).hexdigest()[:32]


class BaseNonceClock:
    """A clock a shared limiter draws nonces on, with the abilities it may have declared:
    called, the server's time now (ms); `known_ceiling_ms`, the highest nonce the server
    can have accepted so far (None: not known); `learn`, asking the server's time. A plain
    function of no arguments serves as a clock with neither."""

    __slots__ = ()

    def __call__(self) -> int:
        raise NotImplementedError

    def known_ceiling_ms(self) -> int | None:
        """The highest nonce the server can have accepted so far; None while no answer bounds
        its clock (the default: never known)."""
        return None

    async def learn(self, timeout: float) -> bool:
        """Ask the server its time; True when it answered. The default cannot ask: False."""
        return False


class NonceClock(BaseNonceClock):
    """The clock a shared limiter draws a key's nonces on: called, the server's time now (ms)
    as this process estimates it; `known_ceiling_ms`, the highest nonce the server can
    have accepted so far, when an answer bounds its clock.

    A shared counter far ahead of the clock comes back only to that ceiling: every value above
    it was refused and never used, while values below it may have been accepted from any
    process. Another process's estimate, or this machine's clock before any answer, is no
    bound: the server's clock may be ahead of both.
    """

    __slots__ = ("_answered", "_ask", "_asked", "_asking", "_clock")

    def __init__(
        self, clock: ServerClock, ask: Callable[[float], Awaitable[object]] | None = None
    ) -> None:
        self._clock = clock
        # Held weakly: ``ask`` is a method of the pipeline that holds this clock, and a cycle
        # would leave every client to the garbage collector instead of freeing it on close.
        self._ask = None if ask is None else weakref.WeakMethod(ask)
        self._asked = False
        self._answered = False
        self._asking: asyncio.Future[None] | None = None

    def __call__(self) -> int:
        return self._clock.now_ms()

    def known_ceiling_ms(self) -> int | None:
        return self._clock.known_ceiling_ms()

    async def learn(self, timeout: float) -> bool:
        """Ask the server its time (an unsigned request within ``timeout`` seconds), so that its
        answer bounds the clock: for a process that has seen no answer yet and finds a shared
        counter ahead, or calls waiting for a server's first answer. Asked once: calls that come
        while it is under way wait for the same answer, and once it has come (or failed) it is
        not asked again, since every later answer teaches the clock as well. True when the
        server answered (a refusal too: its Date counts), now or before; False when it did not,
        or there is nothing to ask."""
        asking = self._asking
        if asking is None:
            ask = None if self._ask is None else self._ask()
            if self._asked or ask is None:
                return self._answered
            self._asked = True
            asking = self._asking = asyncio.ensure_future(self._quietly(ask, timeout))
        try:
            # Shielded: one waiter given up (its own deadline) leaves the others theirs.
            await asyncio.shield(asking)
        finally:
            if asking.done():
                self._asking = None
        return self._answered

    async def _quietly(self, ask: Callable[[float], Awaitable[object]], timeout: float) -> None:
        """``ask``, whose failure leaves the clock as it was; notes whether an answer came."""
        try:
            await ask(timeout)
        except TransportError as exc:
            self._answered = exc.status is not None  # an answer that could not be used
        except TxcError:
            self._answered = True  # an error answer: it reached the server and came back
        else:
            self._answered = True


def known_ceiling(nonce_clock: Callable[[], int]) -> int | None:
    """The ceiling a nonce clock knows (see `BaseNonceClock`); None for a plain
    function."""
    if isinstance(nonce_clock, BaseNonceClock):
        return nonce_clock.known_ceiling_ms()
    return None


def nonce_refusal_error(
    error: AuthenticationError, clock: ServerClock, attempts: int
) -> AuthenticationError:
    """The error for nonces refused on every attempt, saying what the clocks show."""
    window = NONCE_WINDOW_MS // 1000
    if clock.samples == 0:
        measured = (
            "The answers carry no Date header, so the server's clock could not be measured; "
            f"this machine's clock likely differs from the server's by more than the {window} s "
            "the service allows for nonces. Synchronise this machine's clock (NTP)."
        )
    else:
        offset = clock.offset
        side = "ahead of" if offset >= 0 else "behind"
        measured = (
            f"Measured from the Date of its answers, the server's clock is {abs(offset):.1f} s "
            f"{side} this machine's, and nonces were drawn on that measured clock; yet the "
            f"service kept refusing them, so the machine's clock or the server's differs by "
            f"more than the {window} s the service allows (the server may judge nonces on "
            "another clock than the one its Date shows). Check this machine's time "
            "synchronisation (NTP), and that no other program signs with this API key using "
            "nonces of its own."
        )
    said = error.message.removeprefix("nonce refused: ")
    return AuthenticationError(
        f"nonce refused on {attempts} attempts in a row ({said}). {measured}",
        status=error.status,
        code=error.code,
        errors=error.errors,
    )
