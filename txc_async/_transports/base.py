"""The transport's interface: one method that sends a request's bytes and returns the answer's,
and the optional abilities a transport declares by deriving from `BaseTransport`."""

# No postponed annotations here: the reference generator reads RawResponse's fields from them.
import asyncio
import collections
import contextlib
from collections.abc import Mapping
from typing import NamedTuple, Protocol

from yarl import URL

__all__ = ["BaseTransport", "ConnectionSlots", "RawResponse", "Transport"]


class RawResponse(NamedTuple):
    """What came back: the HTTP status, the headers and the undecoded body."""

    status: int
    headers: Mapping[str, str]
    body: bytes


class Transport(Protocol):
    """Sends one HTTP request. Raises only [`TransportError`][txc_async.TransportError] (or
    [`RequestTimeout`][txc_async.RequestTimeout]).

    Any object with these two methods serves; one that derives from `BaseTransport`
    may also declare the abilities the pipeline uses when they are there."""

    async def send(
        self,
        method: str,
        url: URL,
        *,
        headers: Mapping[str, str] | None,
        body: bytes | None,
        timeout: float,
    ) -> RawResponse:
        """Send the request (``headers`` and ``body`` as given, signed already) and return the
        whole answer, within ``timeout`` seconds."""
        ...

    async def aclose(self) -> None:
        """Release the transport's connections; the client calls it once, when it closes."""
        ...


class ConnectionSlots:
    """One slot per connection the HTTP connector may open. A request takes one after its budget
    admits it and before it goes to aiohttp, so that aiohttp never queues an admitted request
    out of the client's sight: a request that had to wait for a connection is checked again
    (a refusal may have paused its budget meanwhile) before it leaves."""

    __slots__ = ("_waiters", "free")

    def __init__(self, count: int) -> None:
        self.free = count
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    def try_take(self) -> bool:
        """Take a slot if one is free and no one waits; False otherwise (never waits)."""
        if self.free > 0 and not self._waiters:
            self.free -= 1
            return True
        return False

    async def take(self) -> None:
        """Wait for a slot (first come, first served)."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self.release()  # handed over just as the wait was cancelled: pass it on
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
            raise

    def release(self) -> None:
        """Give a slot back: to the first waiter, or to the free ones."""
        waiters = self._waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # handed over: ``free`` stays as it is
                return
        self.free += 1


class BaseTransport:
    """The optional abilities of a `Transport`, declared, with defaults that say "not
    supported": a transport derives from this class, implements ``send`` and ``aclose``, and
    overrides the abilities it has. A transport that does not derive from it is used as if it
    had the defaults.
    """

    #: The connection slots requests take before they go to the transport, when the transport
    #: holds a limited number of connections (None: it queues no admitted request out of the
    #: client's sight, so none waits for a slot).
    slots: ConnectionSlots | None = None

    def sent_nothing(self) -> bool:
        """True when the request the current task was sending when it ended (cancelled, say)
        certainly never left this machine. The default cannot tell: False, it may have left."""
        return False
