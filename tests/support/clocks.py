"""A hand-driven local clock for the clock and nonce tests: a wall clock that can step and a
monotonic clock that cannot, both moved by the test (or by the sleeps the code under test takes);
and this machine's own clock as a nonce clock."""

from __future__ import annotations

import time


def clock_ms() -> int:
    """This machine's wall clock in milliseconds: the nonce clock the limiter tests give."""
    return time.time_ns() // 1_000_000


class ManualClock:
    """Time stands still until the test moves it; ``sleep`` moves it by the time slept."""

    def __init__(self, wall: float = 1_700_000_000.0, mono: float = 1000.0) -> None:
        self.wall = wall
        self.mono = mono
        self.slept: list[float] = []

    def time(self) -> float:
        return self.wall

    def monotonic(self) -> float:
        return self.mono

    def advance(self, seconds: float) -> None:
        """Both clocks move on together, as real time passes."""
        self.wall += seconds
        self.mono += seconds

    def step(self, seconds: float) -> None:
        """The wall clock alone jumps (an NTP step, a manual change)."""
        self.wall += seconds

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.advance(max(seconds, 0.0))
