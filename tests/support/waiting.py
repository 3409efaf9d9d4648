"""Waiting for what a test expects rather than for a fixed time: a condition looked at often,
with a deadline generous enough that only a test that is failing reaches it, however busy the
machine (the suite must pass beside processes that keep every core busy)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

#: How long (seconds) a condition may take before the wait fails. It is no measure of anything:
#: a wait that holds returns as soon as its condition does.
DEADLINE = 60.0


async def until(condition: Callable[[], bool], what: str, *, deadline: float = DEADLINE,
                every: float = 0.01) -> None:
    """Return once ``condition()`` holds (looked at every ``every`` seconds); fail naming
    ``what`` when it does not within ``deadline`` seconds."""
    ends = time.monotonic() + deadline
    while not condition():
        if time.monotonic() > ends:
            raise AssertionError(f"not within {deadline:g} s: {what}")
        await asyncio.sleep(every)
