"""The waiting line of a budget: waiters served first-in-first-out across event loops and threads,
and a sleep that an answer freeing room cuts short. Every limiter backend queues with these."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import Awaitable, Callable

__all__ = ["FifoTurns", "sleep_unless_woken", "wake_up"]


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _resolve(ticket: asyncio.Future[None]) -> None:
    if not ticket.done():
        ticket.set_result(None)


def wake_up(future: asyncio.Future[None] | None) -> None:
    """Resolve ``future`` from any thread."""
    if future is None or future.done():
        return
    loop = future.get_loop()
    if loop is _running_loop():
        future.set_result(None)
        return
    # A closed loop has no one waiting on it any more.
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(_resolve, future)


class FifoTurns:
    """A queue of waiters served in arrival order.

    Only the head of the queue runs; the others wait on a future until they become the head. A
    waiter that leaves (admitted, cancelled or timed out) hands the turn to the next. Waiters may
    come from several event loops, in several threads: ``lock`` guards the queue, and a waiter of
    another loop is woken through that loop. Callers may hold ``lock`` to read the queue together
    with their own state, but must not hold it while calling `enter` or `leave`.
    """

    __slots__ = ("lock", "waiters")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        #: The tickets in arrival order, the head first. Read it (under ``lock`` to see it
        #: together with other state); only `enter` and `leave` change it.
        self.waiters: deque[asyncio.Future[None]] = deque()

    def __bool__(self) -> bool:
        return bool(self.waiters)

    def __len__(self) -> int:
        return len(self.waiters)

    async def enter(self) -> asyncio.Future[None]:
        """Join the queue and wait to be its head; returns the ticket to give to `leave`."""
        loop = asyncio.get_running_loop()
        ticket: asyncio.Future[None] = loop.create_future()
        with self.lock:
            waiters = self.waiters
            waiters.append(ticket)
            if waiters[0] is not ticket and waiters[0].get_loop().is_closed():
                # The head's loop was closed under it (its task will never leave): drop every
                # waiter of a closed loop, or the queue would be blocked for good.
                self._drop_abandoned()
            head = waiters[0] is ticket
        if not head:
            try:
                await ticket
            except BaseException:
                self.leave(ticket)
                raise
        return ticket

    def leave(self, ticket: asyncio.Future[None]) -> None:
        """Leave the queue; if ``ticket`` was the head, wake the next waiter."""
        with self.lock:
            waiters = self.waiters
            was_head = bool(waiters) and waiters[0] is ticket
            try:
                waiters.remove(ticket)
            except ValueError:
                return
            if was_head:
                self._wake_head()

    def _drop_abandoned(self) -> None:
        kept = [w for w in self.waiters if not w.get_loop().is_closed()]
        self.waiters.clear()
        self.waiters.extend(kept)
        self._wake_head()

    def _wake_head(self) -> None:
        """Wake the waiter now at the head (called with the lock held)."""
        waiters = self.waiters
        while waiters:
            head = waiters[0]
            loop = head.get_loop()
            if loop.is_closed():  # no task is left to take the turn
                waiters.popleft()
                continue
            # A done ticket is either awake already or cancelled; a cancelled waiter leaves
            # through `leave`, which passes the turn on.
            if head.done():
                return
            if loop is _running_loop():
                head.set_result(None)
                return
            try:
                loop.call_soon_threadsafe(_resolve, head)
                return
            except RuntimeError:  # its loop closed just now
                waiters.popleft()


async def sleep_unless_woken(
    sleep: Callable[[float], Awaitable[None]], wait: float, woken: asyncio.Future[None]
) -> None:
    """Wait ``wait`` seconds, or less if ``woken`` resolves first (an answer freed room). The
    sleeper is cancelled, not awaited: awaiting it under a suppression of its CancelledError
    would swallow the caller's own cancellation as well."""
    sleeper = asyncio.ensure_future(sleep(wait))
    try:
        await asyncio.wait((sleeper, woken), return_when=asyncio.FIRST_COMPLETED)
    finally:
        # The loop may be closed under an abandoned waiter: nothing is left to cancel then.
        with contextlib.suppress(RuntimeError):
            sleeper.cancel()
