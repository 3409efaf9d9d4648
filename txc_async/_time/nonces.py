"""Request signing: millisecond nonces shared per API key, compact JSON, base64, HMAC-SHA512."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import threading
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import msgspec

from .clock import MAX_NONCE_LEAD_MS, ServerClock

__all__ = ["MAX_NONCE_LEAD_MS", "NonceSource", "Signer", "key_fingerprint", "nonce_source_for"]

_encode = msgspec.json.Encoder().encode
_wall = ServerClock()

class NonceSource:
    """Strictly increasing millisecond nonces on the server's clock: ``max(now_ms, last + 1)``.

    One source per API key and server serves every client of the process, so two requests never
    carry the same nonce. ``clock`` is the estimate of the server's clock (learnt from its
    answers), so nonces land inside the server's window whatever this machine's clock says.

    A long burst pushes the counter ahead of the clock; past the lead (``MAX_NONCE_LEAD_MS``,
    less any uncertainty of the estimate that would overrun the server's window), a caller takes
    the next value and sleeps once, until the server's clock is within the lead of it. The wait
    counts against nothing but the caller's own cancellation.
    """

    __slots__ = ("__weakref__", "_clock", "_generation", "_issued", "_key", "_last", "_lock",
                 "_sleep")

    def __init__(
        self,
        clock: ServerClock | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._clock = clock if clock is not None else ServerClock()
        self._sleep = sleep
        self._last = 0  # the highest value handed out or promised to a sleeping caller
        self._issued = 0  # the highest value handed out
        self._generation = self._clock.generation
        # Clients in several threads (several event loops) may share one key.
        self._lock = threading.Lock()
        self._key: tuple[str, ServerClock | None] | None = None

    def __del__(self) -> None:
        # The registry forgets a source no client holds. Its counter may still be ahead of the
        # clock (a burst): the next source of the same key starts above it, so no value repeats.
        key = self._key
        if key is not None:
            _floors[key] = self._last

    @property
    def clock(self) -> ServerClock:
        return self._clock

    def _draw(self) -> tuple[int, int, int]:
        """Under the lock: the next value, how far (ms) it is beyond the lead, the generation."""
        clock = self._clock
        now, lead = clock.reading()
        generation = clock.generation
        last = self._last
        if generation != self._generation:
            self._generation = generation
            if last > now + lead:
                # The estimate of the server's clock jumped back (the first answers showed it
                # behind this machine's, or this machine's clock stepped back before any answer
                # was seen): the counter, drawn on the old estimate, is far ahead of the server.
                # Bring it back to the highest value the server can have accepted, and no lower.
                # The server refuses a nonce more than its window ahead of its clock when it
                # arrives, and a refused nonce is never recorded, so values above that ceiling
                # were all refused and drawing them again cannot collide with one it executed.
                # Values at or below it, handed out, may have been accepted: they stay below the
                # counter. (A request still in flight with a higher value could be accepted
                # later; a new nonce equal to it is refused as a duplicate and signed again,
                # never executed twice.) Promised values not yet handed out are dropped: their
                # sleeping callers see the new generation and draw again.
                last = min(self._issued, clock.ceiling_ms())
        nonce = now if now > last else last + 1
        self._last = nonce
        return nonce, nonce - now - lead, generation

    def pass_earlier_values(self) -> None:
        """After the server refused a nonce of this source on a clock it agrees with: move the
        counter past the values another source of the key may have drawn (an earlier process,
        say, whose burst ran its counter up to the lead ahead of the clock), so that the call
        signed again does not meet them one millisecond at a time."""
        with self._lock:
            if self._clock.generation != self._generation:
                # The refusal moved the estimate of the server's clock: the clock, not another
                # source, explains it, and the next draw re-bases the counter on the new one.
                return
            # As far as the server's window safely allows: the lead, less the uncertainty of
            # the estimate. (Another source's values beyond it are passed on a later refusal,
            # once the clock has moved on.)
            now, lead = self._clock.reading()
            floor = now + lead
            if self._last < floor:
                self._last = floor
            # Values up to the floor may have been accepted from the other source: a re-basing
            # after a jump of the clock's estimate keeps the counter above them.
            if self._issued < floor:
                self._issued = floor

    def try_next(self) -> int | None:
        """The next nonce, or None when the counter is too far ahead of the clock."""
        clock = self._clock
        with self._lock:
            now, lead = clock.reading()
            if clock.generation == self._generation:
                # The usual case: _draw, with no re-basing to do.
                last = self._last
                nonce = now if now > last else last + 1
                if nonce - now <= lead:
                    self._last = nonce
                    if nonce > self._issued:
                        self._issued = nonce
                    return nonce
                return None
            nonce, beyond, _ = self._draw()
            if beyond > 0:
                # Nothing promised: the caller goes on to next(). (The counter keeps any
                # re-basing _draw did: nonce is then the counter's next value.)
                self._last = nonce - 1
                return None
            if nonce > self._issued:
                self._issued = nonce
            return nonce

    async def next(self) -> int:
        """The next nonce, sleeping (once) while the counter is too far ahead of the clock."""
        with self._lock:
            nonce, beyond, generation = self._draw()
            if beyond <= 0:
                if nonce > self._issued:
                    self._issued = nonce
                return nonce
        while True:
            await self._sleep(beyond / 1000)
            with self._lock:
                if self._clock.generation != generation:
                    # The estimate jumped while this caller slept: its value may be far off
                    # the server's clock now; draw again.
                    nonce, beyond, generation = self._draw()
                else:
                    # Early wake-ups by a millisecond are harmless (the window is 5 s).
                    now, lead = self._clock.reading()
                    beyond = nonce - now - lead - 1
                if beyond <= 0:
                    if nonce > self._issued:
                        self._issued = nonce
                    return nonce


# Sources are kept while a client holds them; a key unused for a while costs nothing.
_sources: weakref.WeakValueDictionary[tuple[str, ServerClock | None], NonceSource] = (
    weakref.WeakValueDictionary()
)
# The last value of sources that were let go, so that a later source of the same key never draws
# a value already handed out; dropped once the server-aligned clock has passed them.
_floors: dict[tuple[str, ServerClock | None], int] = {}
_sources_lock = threading.Lock()


def key_fingerprint(api_key: str, scope: str = "") -> str:
    """A short hash that identifies an API key (and optionally a server) without revealing it."""
    return hashlib.sha256(f"{scope}\0{api_key}".encode()).hexdigest()[:32]


def nonce_source_for(api_key: str, clock: ServerClock | None = None) -> NonceSource:
    """The process-wide nonce source of ``api_key`` at the server whose clock is ``clock``
    (without one: nonces on this machine's wall clock)."""
    key = (key_fingerprint(api_key), clock)
    with _sources_lock:
        source = _sources.get(key)
        if source is None:
            source = NonceSource(clock)
            floor = _floors.pop(key, None)
            if floor is not None:
                source._last = source._issued = floor
            source._key = key
            _sources[key] = source
            if len(_floors) > 64:
                _forget_passed_floors()
        return source


def _forget_passed_floors() -> None:
    """Drop the floors the server-aligned clock has passed (called with the lock held).

    A source's finalizer writes its floor without the lock (it may run inside any allocation,
    this function's included, when the garbage collector frees a client): the floors are read
    from a copy, and one is dropped only if it is still the value read, with nothing that could
    run a finalizer between that check and the removal."""
    for key, floor in _floors.copy().items():
        clock = key[1] if key[1] is not None else _wall
        if floor < clock.now_ms() and _floors.get(key) == floor:
            del _floors[key]


class Signer:
    """Signs private request bodies with one API key and secret."""

    __slots__ = ("_api_key", "_mac", "nonces")

    def __init__(self, api_key: str, api_secret: str, nonces: NonceSource | None = None) -> None:
        self._api_key = api_key
        # The key's HMAC state, set up once: every signature starts from a copy of it, as
        # hmac's documentation suggests for messages that share a beginning (here, the key).
        self._mac = hmac.new(api_secret.encode(), digestmod=hashlib.sha512)
        #: The source of this key's nonces.
        self.nonces = nonces if nonces is not None else nonce_source_for(api_key)

    def __repr__(self) -> str:
        return "Signer(api_key='***', api_secret='***')"

    def sign(
        self, path: str, params: Mapping[str, Any], nonce: int
    ) -> tuple[bytes, dict[str, str]]:
        """The exact body bytes and the headers that authenticate them."""
        body = _encode({**params, "request": path, "nonce": str(nonce), "nonceWindow": True})
        payload = base64.b64encode(body)
        mac = self._mac.copy()
        mac.update(payload)
        signature = mac.hexdigest()
        headers = {
            "Content-Type": "application/json",
            "X-TXC-APIKEY": self._api_key,
            "X-TXC-PAYLOAD": payload.decode("ascii"),
            "X-TXC-SIGNATURE": signature,
        }
        return body, headers
