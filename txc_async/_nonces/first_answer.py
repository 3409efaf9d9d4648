"""The first-answer gate: until a server has answered, a signed request goes alone."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

__all__ = ["FirstAnswer", "Sampled"]


class Sampled(Protocol):
    """A clock estimate, as far as the gate reads it: how many answers bounded it."""

    @property
    def samples(self) -> int: ...


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
        self, clock: Sampled, timeout: float, ask: Callable[[float], Awaitable[object]]
    ) -> bool:
        """Wait (at most ``timeout`` seconds) for the answer to the request to ``clock``'s
        server that went first, or for ``ask`` (seconds) to learn the server's time; True when
        the caller's request is to go first (it must `leave` once its exchange ends)."""
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
