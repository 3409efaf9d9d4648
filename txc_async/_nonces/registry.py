"""One estimate of each server's clock per process, shared by every client of that server."""

from __future__ import annotations

import collections
import threading
import weakref

from .clock import SYSTEM_CLOCK, LocalClock, ServerClock

__all__ = ["KEPT_ESTIMATES", "forget_estimates", "server_clock_for"]

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


def forget_estimates() -> None:
    """Forget every estimate (a new test, say, starts knowing no server's clock); clients that
    hold one keep it."""
    with _clocks_lock:
        _clocks.clear()
        _recent.clear()
