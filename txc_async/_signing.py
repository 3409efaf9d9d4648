"""Request signing: millisecond nonces shared per API key, compact JSON, base64, HMAC-SHA512."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import msgspec

__all__ = ["NonceSource", "Signer", "key_fingerprint", "nonce_source_for"]

_encode = msgspec.json.Encoder().encode

#: How far the nonce counter may run ahead of the clock before callers wait; the service refuses
#: nonces more than 5 s away from its clock.
MAX_NONCE_LEAD_MS = 4000


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class NonceSource:
    """Strictly increasing millisecond nonces: ``max(now_ms, last + 1)``.

    One source per API key serves every client of the process, so two requests never carry the same
    nonce. A long burst pushes the counter ahead of the clock; past ``MAX_NONCE_LEAD_MS`` ahead,
    :meth:`next` waits for the clock instead of handing out a nonce the service would refuse.
    """

    __slots__ = ("_clock_ms", "_last", "_lock", "_sleep")

    def __init__(
        self,
        clock_ms: Callable[[], int] | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._clock_ms = clock_ms or _now_ms
        self._sleep = sleep
        self._last = 0
        # Clients in several threads (several event loops) may share one key.
        self._lock = threading.Lock()

    def try_next(self) -> int | None:
        """The next nonce, or None when the counter is too far ahead of the clock."""
        with self._lock:
            now = self._clock_ms()
            nonce = now if now > self._last else self._last + 1
            if nonce - now > MAX_NONCE_LEAD_MS:
                return None
            self._last = nonce
            return nonce

    async def next(self) -> int:
        """The next nonce, waiting while the counter is too far ahead of the clock."""
        while True:
            nonce = self.try_next()
            if nonce is not None:
                return nonce
            await self._sleep(0.001)


_sources: dict[str, NonceSource] = {}
_sources_lock = threading.Lock()


def key_fingerprint(api_key: str, scope: str = "") -> str:
    """A short hash that identifies an API key (and optionally a server) without revealing it."""
    return hashlib.sha256(f"{scope}\0{api_key}".encode()).hexdigest()[:32]


def nonce_source_for(api_key: str) -> NonceSource:
    """The process-wide nonce source of ``api_key``."""
    fingerprint = key_fingerprint(api_key)
    with _sources_lock:
        source = _sources.get(fingerprint)
        if source is None:
            source = _sources[fingerprint] = NonceSource()
        return source


class Signer:
    """Signs private request bodies with one API key and secret."""

    __slots__ = ("_api_key", "_key_bytes", "_nonces")

    def __init__(self, api_key: str, api_secret: str, nonces: NonceSource | None = None) -> None:
        self._api_key = api_key
        self._key_bytes = api_secret.encode()
        self._nonces = nonces if nonces is not None else nonce_source_for(api_key)

    def __repr__(self) -> str:
        return "Signer(api_key='***', api_secret='***')"

    @property
    def nonces(self) -> NonceSource:
        return self._nonces

    def sign(
        self, path: str, params: Mapping[str, Any], nonce: int
    ) -> tuple[bytes, dict[str, str]]:
        """The exact body bytes and the headers that authenticate them."""
        body = _encode({**params, "request": path, "nonce": str(nonce), "nonceWindow": True})
        payload = base64.b64encode(body)
        signature = hmac.new(self._key_bytes, payload, hashlib.sha512).hexdigest()
        headers = {
            "Content-Type": "application/json",
            "X-TXC-APIKEY": self._api_key,
            "X-TXC-PAYLOAD": payload.decode("ascii"),
            "X-TXC-SIGNATURE": signature,
        }
        return body, headers
