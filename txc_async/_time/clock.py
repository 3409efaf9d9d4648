"""The server's clock as seen from this machine: an offset learnt from the ``Date`` of every answer.

Nonces must lie within 5 s of the server's clock, which may differ from this machine's by any
amount. Each answer's ``Date`` (second resolution) bounds that difference; the bounds of many
answers, intersected, pin it down to a fraction of a second.
"""

from __future__ import annotations

import asyncio
import calendar
import collections
import datetime
import email.utils
import functools
import logging
import math
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from .._errors import AuthenticationError, TransportError, TxcError

__all__ = [
    "MAX_NONCE_LEAD_MS",
    "NONCE_WINDOW_MS",
    "SYSTEM_CLOCK",
    "FirstAnswer",
    "LocalClock",
    "NonceClock",
    "ServerClock",
    "SystemClock",
    "known_ceiling",
    "nonce_refusal_error",
    "parse_http_date",
    "server_clock_for",
]

logger = logging.getLogger("txc_async")

#: The service refuses a nonce more than this far (ms) from its own clock, either way.
NONCE_WINDOW_MS = 5000
#: How far (ms) the nonce counter may run ahead of the server's clock before callers wait.
MAX_NONCE_LEAD_MS = 4000
#: How far (ms) behind the server's clock a nonce drawn before a wait (for a connection) may be
#: when it leaves: it keeps at least the part of the window a fresh nonce keeps for its trip
#: when the counter runs the full lead ahead. An older one is drawn again.
MAX_NONCE_AGE_MS = NONCE_WINDOW_MS - MAX_NONCE_LEAD_MS
#: Kept free (ms) between the lead plus the estimate's uncertainty and the window.
_MARGIN_MS = 100
#: Up to this uncertainty (s) the full lead fits in the window.
_FULL_LEAD_BELOW = (NONCE_WINDOW_MS - _MARGIN_MS - MAX_NONCE_LEAD_MS) / 1000
#: How fast the two clocks may drift apart (seconds per second): old bounds widen at this rate,
#: so a server clock that drifts or is slewed is followed without a refusal.
MAX_DRIFT = 500e-6
#: A sample that misses the current bounds by less than this (s) is taken as the newest word;
#: by more, it is an outlier until a second answer or a nonce refusal confirms it.
TOLERANCE = 0.5
#: Before any sample the wall clock stands for the server's; a jump of the wall clock against the
#: monotonic one larger than this (s) is a step of this machine's clock.
_STEP = 1.0


class LocalClock(Protocol):
    """This machine's clocks: the wall clock (seconds since the epoch, may step) and a monotonic
    clock (seconds, never steps)."""

    def time(self) -> float:
        """Seconds since the epoch, on this machine's wall clock (it may step)."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never steps back, for measuring intervals."""
        ...


class SystemClock:
    """``time.time()`` and a monotonic clock that keeps counting while the machine sleeps
    (``CLOCK_BOOTTIME`` where there is one), so a resume from suspend does not skew the estimate."""

    __slots__ = ("monotonic",)

    def __init__(self) -> None:
        boottime = getattr(time, "CLOCK_BOOTTIME", None)
        if boottime is not None:
            try:
                time.clock_gettime(boottime)
            except OSError:  # pragma: no cover - a kernel without it
                boottime = None
        if boottime is None:  # pragma: no cover - platforms without CLOCK_BOOTTIME
            self.monotonic: Callable[[], float] = time.monotonic
        else:
            self.monotonic = functools.partial(time.clock_gettime, boottime)

    @staticmethod
    def time() -> float:
        return time.time()

    def __repr__(self) -> str:
        return "SystemClock()"


SYSTEM_CLOCK = SystemClock()

_MONTHS = {
    name: number
    for number, name in enumerate(
        ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1
    )
}
# The Date of answers repeats within a second: the last one parsed is kept.
_last_date: tuple[str, int | None] = ("", None)


def parse_http_date(value: str) -> int | None:
    """Unix seconds of an HTTP ``Date`` header (IMF-fixdate, or the obsolete forms), or None."""
    global _last_date
    cached = _last_date
    if cached[0] == value:
        return cached[1]
    seconds: int | None
    try:
        # IMF-fixdate, the form servers send: "Sun, 06 Nov 1994 08:49:37 GMT".
        if len(value) == 29 and value[3:5] == ", " and value.endswith(" GMT"):
            fields = (
                int(value[12:16]), _MONTHS[value[8:11]], int(value[5:7]),
                int(value[17:19]), int(value[20:22]), int(value[23:25]),
            )
            if not (1 <= fields[2] <= 31 and fields[3] < 24 and fields[4] < 60
                    and fields[5] <= 60):
                raise ValueError(value)
            seconds = calendar.timegm(fields)
        else:
            moment = email.utils.parsedate_to_datetime(value)
            if moment.tzinfo is None:  # HTTP dates are always GMT
                moment = moment.replace(tzinfo=datetime.UTC)
            seconds = int(moment.timestamp())
    except (ValueError, KeyError, TypeError, IndexError, OverflowError):
        seconds = None
    _last_date = (value, seconds)
    return seconds


_floor = math.floor


def _ms(seconds: float) -> int:
    # The microsecond added absorbs float rounding (1700000000.001 * 1000 = ...000.9999).
    return _floor(seconds * 1000.0 + 1e-3)


class ServerClock:
    """The estimate of one server's clock, learnt from the ``Date`` of its answers.

    Each answer bounds ``server time - local monotonic time``: the server stamped it at some
    instant between the request's sending and the answer's arrival, with a time in
    ``[Date, Date + 1)``. The estimate keeps the intersection of these bounds; old bounds widen
    with time (clocks drift), an answer outside them is an outlier until a second one or a nonce
    refusal confirms it (then the server's clock stepped, and the estimate follows). The local
    side is a monotonic clock, so a step of this machine's wall clock leaves the estimate alone.
    Before any answer the wall clock stands for the server's.

    ``generation`` changes whenever the estimate jumps (first sample, a confirmed step, a step of
    the wall clock while it stands for the server's), which tells nonce sources to re-base.
    """

    def __init__(self, local: LocalClock = SYSTEM_CLOCK) -> None:
        self.local = local
        self._lock = threading.Lock()
        # Bounds of server time minus local monotonic time, and when each was set (monotonic).
        self._lo = -math.inf
        self._hi = math.inf
        self._lo_at = self._hi_at = 0.0
        self._offset: float | None = None  # the estimate: the middle of the bounds
        self._half = math.inf  # half the bounds' width
        self._pending: tuple[float, float, float] | None = None  # an unconfirmed outlier
        self._jump_sent = -math.inf  # when the request of the last jump's answer was sent
        self._wall_step = local.time() - local.monotonic()
        self.samples = 0
        self.rejected = 0
        self.generation = 0
        self.first_answer = FirstAnswer()

    def __repr__(self) -> str:
        return f"ServerClock(offset={self.offset:+.3f}, samples={self.samples})"

    # -- reading ----------------------------------------------------------------------------

    def now(self) -> float:
        """The server's time now, as estimated (seconds since the epoch)."""
        offset = self._offset
        if offset is not None:
            return self.local.monotonic() + offset
        local = self.local
        wall = local.time()
        # No sample yet: the wall clock stands for the server's. When it steps, the nonces drawn
        # on it before are no guide any more: say so through the generation.
        step = wall - local.monotonic()
        if abs(step - self._wall_step) > _STEP:
            with self._lock:
                if self._offset is None and abs(step - self._wall_step) > _STEP:
                    self._wall_step = step
                    self.generation += 1
        return wall

    def now_ms(self) -> int:
        """The server's time now in milliseconds: what a nonce drawn now is compared with."""
        return _ms(self.now())

    def ceiling_ms(self) -> int:
        """The highest nonce the server can have accepted so far: the latest its clock can read
        now (the upper bound of the estimate) plus the nonce window; before any answer, on the
        wall clock that stands for the server's."""
        known = self.known_ceiling_ms()
        return _ms(self.local.time()) + NONCE_WINDOW_MS if known is None else known

    def known_ceiling_ms(self) -> int | None:
        """:meth:`ceiling_ms` where an answer bounds the server's clock, else None: before any
        answer nothing bounds it (the server's clock may be ahead of this machine's)."""
        hi = self._hi
        if self._offset is None or hi == math.inf:
            return None
        mono = self.local.monotonic()
        return _ms(mono + hi + MAX_DRIFT * max(0.0, mono - self._hi_at)) + NONCE_WINDOW_MS

    def oldest_nonce_ms(self) -> int:
        """The oldest nonce a request leaving now may carry (see ``MAX_NONCE_AGE_MS``): the
        server's time as estimated, at the latest it can read, less that age."""
        now_ms, lead = self.reading()
        # The lead shrinks by as much as the estimate's uncertainty grows: that is how far the
        # server's clock may be past the estimate.
        return now_ms + (MAX_NONCE_LEAD_MS - lead) - MAX_NONCE_AGE_MS

    def lead_ms(self) -> int:
        """How far (ms) a nonce may be ahead of :meth:`now_ms`: ``MAX_NONCE_LEAD_MS``, shortened
        when the estimate is so uncertain (a slow link) that the lead could overrun the server's
        window: a nonce stays below the earliest the server's clock can read, plus the window."""
        return self.reading()[1]

    def reading(self) -> tuple[int, int]:
        """:meth:`now_ms` and :meth:`lead_ms` from one reading of the local clock."""
        offset = self._offset
        if offset is None:
            return _ms(self.now()), MAX_NONCE_LEAD_MS
        mono = self.local.monotonic()
        # How far the server's clock may be below the estimate: half the bounds, plus drift.
        below = self._half
        age = mono - self._lo_at
        if age > 0.0:
            below += MAX_DRIFT * age
        # _ms, inline: this runs for every signed request.
        now_ms = _floor((mono + offset) * 1000.0 + 1e-3)
        if below <= _FULL_LEAD_BELOW:
            return now_ms, MAX_NONCE_LEAD_MS
        lead = NONCE_WINDOW_MS - _MARGIN_MS - math.ceil(below * 1000)
        return now_ms, max(0, lead)

    @property
    def offset(self) -> float:
        """Seconds the server's clock is ahead of this machine's wall clock (negative: behind);
        0.0 until an answer has been seen."""
        if self._offset is None:
            return 0.0
        local = self.local
        return local.monotonic() + self._offset - local.time()

    @property
    def uncertainty(self) -> float | None:
        """Half the width of the bounds (seconds), or None before any answer."""
        if self._offset is None:
            return None
        return self._half

    # -- learning ---------------------------------------------------------------------------

    def observe(
        self, sent: float, answered: float, date: str | None, *, refused: bool = False
    ) -> None:
        """Learn from one answer: ``sent`` and ``answered`` are the local monotonic times the
        request left and its answer arrived, ``date`` the answer's ``Date`` header. ``refused``
        marks a refusal (HTTP 429): if it disagrees with the estimate, the estimate is wrong and
        takes this sample at once."""
        if date is None:
            return
        # The Date of answers repeats within a second: the last one parsed is kept.
        cached = _last_date
        seconds = cached[1] if cached[0] == date else parse_http_date(date)
        if seconds is None or not answered >= sent:
            return
        with self._lock:
            self._learn(seconds - answered, seconds + 1.0 - sent, sent, answered, refused)

    def _learn(self, lo: float, hi: float, sent: float, at: float, refused: bool) -> None:
        self.samples += 1
        if self._offset is None:
            self._jump_sent = sent
            self._adopt(lo, hi, at, jump=True)
            return
        # Old bounds widen with their age: the clocks may have drifted since.
        cur_lo = self._lo
        age = at - self._lo_at
        if age > 0.0:
            cur_lo -= MAX_DRIFT * age
        cur_hi = self._hi
        age = at - self._hi_at
        if age > 0.0:
            cur_hi += MAX_DRIFT * age
        if lo <= cur_hi + TOLERANCE and hi >= cur_lo - TOLERANCE:
            self._pending = None
            if lo > cur_hi or hi < cur_lo:
                # Slightly outside (a server behind a balancer, a stale Date): newest wins.
                self._adopt(lo, hi, at, jump=False)
                return
            if lo > cur_lo:
                self._lo, self._lo_at = lo, at
            if hi < cur_hi:
                self._hi, self._hi_at = hi, at
            self._half = (self._hi - self._lo) / 2
            self._offset = (self._lo + self._hi) / 2
            return
        # An outlier: a cached or stale answer, or the server's clock stepped. A nonce refusal,
        # or a second answer that agrees with this one, says it stepped. An answer to a request
        # sent no later than the one the estimate last jumped on is older news: it cannot undo it.
        if sent <= self._jump_sent:
            self.rejected += 1
            return
        pending = self._pending
        if refused:
            self._jump_sent = sent
            self._adopt(lo, hi, at, jump=True)
        elif (
            pending is not None
            and lo <= pending[1] + TOLERANCE
            and hi >= pending[0] - TOLERANCE
        ):
            both_lo, both_hi = max(lo, pending[0]), min(hi, pending[1])
            if both_lo > both_hi:
                both_lo, both_hi = lo, hi
            self._jump_sent = sent
            self._adopt(both_lo, both_hi, at, jump=True)
        else:
            self.rejected += 1
            self._pending = (lo, hi, at)

    def _adopt(self, lo: float, hi: float, at: float, *, jump: bool) -> None:
        before = self.offset
        self._lo, self._hi = lo, hi
        self._lo_at = self._hi_at = at
        self._half = (hi - lo) / 2
        self._offset = (lo + hi) / 2
        self._pending = None
        if jump:
            self.generation += 1
            offset = self.offset
            if abs(offset) >= 1.0 or abs(offset - before) >= 1.0:
                logger.warning(
                    "the server's clock is %.3f s %s this machine's (was %.3f s); nonces follow "
                    "the server's clock", abs(offset), "ahead of" if offset >= 0 else "behind",
                    before,
                )


class FirstAnswer:
    """Until a server has answered, a signed request goes alone: the others wait for its
    answer, or for the server's time, asked meanwhile.

    Before any answer, nonces are drawn on this machine's clock, which may be more than the
    service's 5 s away from the server's: then every request under way would be refused once.
    The first one's answer (a refusal too) corrects the estimate for all of them, so a burst
    that starts a process costs at most one refused attempt, not one per call. So that a slow
    first operation holds no one up, the others ask the server's time meanwhile (one ``ping``
    per client) and go when either answer comes. Shared, like the estimate, by every client of
    the server; a request in another event loop than the one that went first does not wait
    for it, and no request waits longer than its own timeout.
    """

    __slots__ = ("_lock", "_out", "done")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Resolved when the exchange of the request that went first ends.
        self._out: asyncio.Future[None] | None = None
        #: An answer came: nothing waits any more.
        self.done = False

    async def enter(
        self, clock: ServerClock, timeout: float, ask: Callable[[float], Awaitable[object]]
    ) -> bool:
        """Wait (at most ``timeout`` seconds) for the answer to the request to ``clock``'s
        server that went first, or for ``ask`` (seconds) to learn the server's time; True when
        the caller's request is to go first (it must :meth:`leave` once its exchange ends)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        asking: asyncio.Future[object] | None = None
        try:
            while not self.done:
                if clock.samples:  # an answer (the ping's, another client's) bounded the clock
                    self.done = True
                    break
                with self._lock:
                    out = self._out
                    if out is None:
                        self._out = loop.create_future()
                        return True
                left = deadline - loop.time()
                if out.get_loop() is not loop or left <= 0:
                    break
                if asking is None:
                    asking = asyncio.ensure_future(ask(left))
                waited: set[asyncio.Future[Any]] = {out}
                if not asking.done():
                    waited.add(asking)
                elif _answered(asking):
                    # The server answered the ping, and its answer did not bound the clock (no
                    # usable Date): the first request's answer would not either, and a slow one
                    # holds no one up. When the ping got no answer, the first request's may.
                    break
                # Neither is cancelled when this waiter gives up: others may wait for them.
                done, _ = await asyncio.wait(
                    waited, timeout=left, return_when=asyncio.FIRST_COMPLETED
                )
                if not done:
                    break
        finally:
            if asking is not None and not asking.done():
                asking.cancel()  # this waiter's wait for the shared ping, not the ping
        return False

    def leave(self, *, answered: bool) -> None:
        """The exchange of the request that went first ended: ``answered``, or not (then the
        next request to come goes first)."""
        with self._lock:
            out, self._out = self._out, None
            if answered:
                self.done = True
        if out is not None and not out.done():
            out.set_result(None)


def _answered(asking: asyncio.Future[Any]) -> bool:
    """Whether an ask of the server's time (``NonceClock.learn``) got an answer."""
    return not asking.cancelled() and asking.exception() is None and bool(asking.result())


# One estimate per server and local clock while any client holds it (two would mean two nonce
# sources for one key); the latest few are kept after their clients are gone, so that a client
# made again starts from what the last one learnt. Anything older goes: a process that makes
# clients of ever new servers (or local clocks) does not grow.
_clocks: weakref.WeakValueDictionary[tuple[str, LocalClock], ServerClock] = (
    weakref.WeakValueDictionary()
)
_recent: collections.OrderedDict[tuple[str, LocalClock], ServerClock] = collections.OrderedDict()
#: How many estimates no client holds any more are kept.
KEPT_ESTIMATES = 64
_clocks_lock = threading.Lock()


def server_clock_for(origin: str, local: LocalClock = SYSTEM_CLOCK) -> ServerClock:
    """The process-wide estimate of the clock of the server at ``origin`` (scheme, host, port),
    shared by every client of that server that reads the same local clock."""
    key = (origin, local)
    with _clocks_lock:
        clock = _clocks.get(key)
        if clock is None:
            clock = _clocks[key] = ServerClock(local)
        _recent[key] = clock
        _recent.move_to_end(key)
        if len(_recent) > KEPT_ESTIMATES:
            _recent.popitem(last=False)
        return clock


class NonceClock:
    """The clock a shared limiter draws a key's nonces on: called, the server's time now (ms)
    as this process estimates it; :meth:`known_ceiling_ms`, the highest nonce the server can
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
    """The ceiling a nonce clock knows (see :class:`NonceClock`); None for a plain function."""
    ceiling = getattr(nonce_clock, "known_ceiling_ms", None)
    return None if ceiling is None else ceiling()


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
