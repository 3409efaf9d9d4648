"""The calls in flight: what one call's attempts leave to the next, and the calls under way that
``close()`` ends at once."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from .._errors import TransportError
from .._operations import Operation

__all__ = ["CallState", "CallsInFlight", "closed_during_call"]


class CallState:
    """What one call's attempts so far leave to the next attempts and to the call's end."""

    __slots__ = (
        "attempt", "failures", "first", "headers", "in_flight", "nonce_refused",
        "rate_limited", "reached",
    )

    def __init__(self) -> None:
        #: The attempt under way (1 for the first), and how many ended each way that counts
        #: against the retry policy.
        self.attempt = self.failures = self.rate_limited = self.nonce_refused = 0
        #: Whether an attempt is with the transport now, and whether one may have reached the
        #: server: what close() says of a call it ends.
        self.in_flight = self.reached = False
        #: This call's request is the first signed one to the server, the others waiting for
        #: its answer (see FirstAnswer).
        self.first = False
        #: The headers of the last request built (a signed one's are masked in its errors).
        self.headers: Mapping[str, str] | None = None

    def maybe_sent(self, sent_nothing: Callable[[], bool]) -> bool:
        """A request of the call may have reached the server: one was answered, or one was on
        its way that the transport cannot tell never left."""
        return self.reached or (self.in_flight and not sent_nothing())


class CallsInFlight:
    """The calls under way of the clients that share one pipeline, so that ``close()`` can end
    them at once instead of leaving them waiting."""

    __slots__ = ("_ended_by_close", "closed", "leave", "tasks")

    def __init__(self) -> None:
        #: The pipeline was closed: no call starts or admits a request any more.
        self.closed = False
        #: The task of every call under way, added as it starts.
        self.tasks: set[asyncio.Task[Any]] = set()
        self._ended_by_close: set[asyncio.Task[Any]] = set()
        #: The call of a task has ended (the set's own method: no function of ours to call).
        self.leave: Callable[[asyncio.Task[Any]], None] = self.tasks.discard

    def close(self) -> None:
        """Close: cancel every call under way, each told apart as ended by the close."""
        self.closed = True
        for task in list(self.tasks):
            if not task.done():
                self._ended_by_close.add(task)
                task.cancel()

    def ended_by_close_alone(self, task: asyncio.Task[Any]) -> bool:
        """The call's cancellation came from `close` alone: the caller gets the closed client's
        error. Cancelled by its caller too (a shutdown that cancels its workers, then closes
        the client), the cancellation goes on, as asked."""
        if task not in self._ended_by_close:
            return False
        self._ended_by_close.discard(task)
        return task.uncancel() == 0


def closed_during_call(op: Operation[Any], maybe_sent: bool) -> TransportError:
    """The error of a call that ``close()`` ended."""
    closed = TransportError(
        "the client was closed while the call was under way"
        + ("" if maybe_sent else "; its request was not sent"),
        may_have_reached_server=maybe_sent,
    )
    closed._attach_operation(op.name)
    return closed
