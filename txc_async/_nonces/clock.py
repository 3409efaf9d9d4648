"""The server's clock as seen from this machine: an offset learnt from the ``Date`` of every answer.

Nonces must lie within 5 s of the server's clock, which may differ from this machine's by any
amount. Each answer's ``Date`` (second resolution) bounds that difference; the bounds of many
answers, intersected, pin it down to a fraction of a second.
"""

from __future__ import annotations

import functools
import logging
import math
import threading
import time
from collections.abc import Callable
from typing import Protocol

from .._httpdate import parse_http_date
from .first_answer import FirstAnswer

__all__ = [
    "MAX_NONCE_AGE_MS",
    "MAX_NONCE_LEAD_MS",
    "NONCE_WINDOW_MS",
    "SYSTEM_CLOCK",
    "LocalClock",
    "ServerClock",
    "SystemClock",
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
        """`ceiling_ms` where an answer bounds the server's clock, else None: before any
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
        """How far (ms) a nonce may be ahead of `now_ms`: ``MAX_NONCE_LEAD_MS``, shortened
        when the estimate is so uncertain (a slow link) that the lead could overrun the server's
        window: a nonce stays below the earliest the server's clock can read, plus the window."""
        return self.reading()[1]

    def reading(self) -> tuple[int, int]:
        """`now_ms` and `lead_ms` from one reading of the local clock."""
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
        seconds = parse_http_date(date)
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
