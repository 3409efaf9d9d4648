"""Request signing: compact JSON, base64, HMAC-SHA512, with a nonce from the key's source."""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping
from typing import Any

import msgspec

from ._nonces.sources import NonceSource

__all__ = ["Signer"]

_encode = msgspec.json.Encoder().encode


class Signer:
    """Signs private request bodies with one API key and secret."""

    __slots__ = ("_api_key", "_mac", "nonces")

    def __init__(self, api_key: str, api_secret: str, nonces: NonceSource) -> None:
        self._api_key = api_key
        # The key's HMAC state, set up once: every signature starts from a copy of it, as
        # hmac's documentation suggests for messages that share a beginning (here, the key).
        self._mac = hmac.new(api_secret.encode(), digestmod=hashlib.sha512)
        #: The source of this key's nonces (the one its clients share: see ``Runtime``).
        self.nonces = nonces

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
