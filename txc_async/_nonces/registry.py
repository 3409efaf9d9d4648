"""What the clients of one runtime share about a server and a key: one estimate of each server's
clock, and one nonce source per API key and server, kept with bounded memory."""

from __future__ import annotations

import collections
import threading
import weakref

from .clock import SYSTEM_CLOCK, LocalClock, ServerClock
from .sources import NonceSource, SourceKey, key_fingerprint

__all__ = ["KEPT_ESTIMATES", "KEPT_FLOORS", "NonceSources", "ServerClocks"]

#: How many estimates no client holds any more are kept.
KEPT_ESTIMATES = 64
#: Past this many floors of let-go sources, those the server-aligned clock has passed are dropped.
KEPT_FLOORS = 64
_wall = ServerClock()


class ServerClocks:
    """One estimate per server and local clock while any client holds it (two would mean two
    nonce sources for one key); the latest `KEPT_ESTIMATES` are kept after their clients are
    gone, so that a client made again starts from what the last one learnt. Anything older goes:
    a process that makes clients of ever new servers (or local clocks) does not grow."""

    __slots__ = ("_held", "_lock", "_recent")

    def __init__(self) -> None:
        self._held: weakref.WeakValueDictionary[tuple[str, LocalClock], ServerClock] = (
            weakref.WeakValueDictionary()
        )
        self._recent: collections.OrderedDict[tuple[str, LocalClock], ServerClock] = (
            collections.OrderedDict()
        )
        self._lock = threading.Lock()

    def get(self, origin: str, local: LocalClock = SYSTEM_CLOCK) -> ServerClock:
        """The estimate of the clock of the server at ``origin`` (scheme, host, port), shared by
        every client of that server that reads the same local clock."""
        key = (origin, local)
        with self._lock:
            clock = self._held.get(key)
            if clock is None:
                clock = self._held[key] = ServerClock(local)
            recent = self._recent
            recent[key] = clock
            recent.move_to_end(key)
            if len(recent) > KEPT_ESTIMATES:
                recent.popitem(last=False)
            return clock


class NonceSources:
    """One nonce source per API key and server, kept while a client holds it (a key unused for
    a while costs nothing). A source let go leaves its last value as a floor, so that a later
    source of the same key never draws a value already handed out; a floor is dropped once the
    server-aligned clock has passed it."""

    __slots__ = ("_floors", "_held", "_lock")

    def __init__(self) -> None:
        self._held: weakref.WeakValueDictionary[SourceKey, NonceSource] = (
            weakref.WeakValueDictionary()
        )
        self._floors: dict[SourceKey, int] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """How many sources clients hold."""
        return len(self._held)

    def get(self, api_key: str, clock: ServerClock | None = None) -> NonceSource:
        """The nonce source of ``api_key`` at the server whose clock is ``clock`` (without one:
        nonces on this machine's wall clock)."""
        key = (key_fingerprint(api_key), clock)
        with self._lock:
            source = self._held.get(key)
            if source is None:
                source = NonceSource(clock)
                source.keep_floor_in(self._floors, key)
                self._held[key] = source
                if len(self._floors) > KEPT_FLOORS:
                    self._forget_passed_floors()
            return source

    def _forget_passed_floors(self) -> None:
        """Drop the floors the server-aligned clock has passed (called with the lock held).

        A source's finalizer writes its floor without the lock (it may run inside any
        allocation, this method's included, when the garbage collector frees a client): the
        floors are read from a copy, and one is dropped only if it is still the value read, with
        nothing that could run a finalizer between that check and the removal."""
        floors = self._floors
        for key, floor in floors.copy().items():
            clock = key[1] if key[1] is not None else _wall
            if floor < clock.now_ms() and floors.get(key) == floor:
                del floors[key]
