"""Who may call the sandbox: API keys with their signatures and nonces, the OAuth client with
the access and refresh tokens it is issued, and the JWTs of the card token operation."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from ._stats import SandboxStats
from ._table import DOCUMENTED, Documented, Refusal
from ._wire import TEXT_FORM, form, json_body, validation

__all__ = [
    "ACCESS_TOKEN_LIFETIME", "JWT_LIFETIME", "NONCE_WINDOW_MS", "REFRESH_TOKEN_LIFETIME", "SIGNING",
    "Credentials", "Key",
]

NONCE_WINDOW_MS = 5000
REFRESH_TOKEN_LIFETIME = 600
ACCESS_TOKEN_LIFETIME = 300
JWT_LIFETIME = 3600
_DIGITS = re.compile(r"[0-9]{1,30}")
#: The fields of a signed body that sign it rather than ask anything.
SIGNING = frozenset({"request", "nonce", "nonceWindow"})
_TOKEN_OPERATION = next(op for op in DOCUMENTED if op.name == "oauth2_token")


@dataclass(slots=True)
class Key:
    """An API key the sandbox accepts, with the nonces it has used and its open orders' ids."""

    secret: bytes
    b2b: bool
    used_nonces: set[int] = field(default_factory=set)
    nonce_order: deque[int] = field(default_factory=deque)
    last_nonce: int = 0
    #: (market, client order id) of the key's open orders.
    client_order_ids: set[tuple[str, str]] = field(default_factory=set)
    #: The API key itself: the account a simulation is told signed a request.
    name: str = ""


class Credentials:
    """The sandbox's API keys, OAuth client and the tokens it issued: the checks of a request's
    credentials, and the operations that issue tokens. Refusals are counted in ``stats``;
    ``clock`` is the simulated server's."""

    def __init__(self, seed: int, stats: SandboxStats, clock: Callable[[], float]) -> None:
        self.stats = stats
        self._clock = clock
        self.api_key = f"sandbox-key-{seed}"
        self.api_secret = hashlib.sha256(f"sandbox-secret-{seed}".encode()).hexdigest()[:40]
        self.oauth_client_id = f"sandbox-client-{seed}"
        self.oauth_client_secret = hashlib.sha256(f"sandbox-oauth-{seed}".encode()).hexdigest()
        self.keys: dict[str, Key] = {
            self.api_key: Key(self.api_secret.encode(), True, name=self.api_key)
        }
        self._refresh_tokens: dict[str, float] = {}
        #: OAuth access tokens and JWTs issued, with the moments they expire.
        self._access_tokens: dict[str, float] = {}
        self._jwt_tokens: dict[str, float] = {}
        self.oauth_refresh_token = self.issue_refresh_token()
        #: The authorization code ``/oauth2/token`` takes next (a new one after each use), as
        #: the service's consent page would hand one to the application.
        self.oauth_code = secrets.token_urlsafe(16)

    def add_key(self, api_key: str, api_secret: str, *, b2b: bool = True) -> None:
        """Another API key to accept; ``b2b=False`` has no access to investments."""
        self.keys[api_key] = Key(api_secret.encode(), b2b, name=api_key)

    def authenticated(
        self, op: Documented, request: web.Request, body: bytes, now: float
    ) -> tuple[Key | None, dict[str, Any]]:
        """The key that signed a request of ``op`` (None where no key signs) and its
        parameters by wire name (path, query and body), once its credentials are checked."""
        auth = op.auth
        key = None
        if auth == "signed":
            key, params = self._authenticate(request, request.path, body, now)
        elif auth == "form":
            params = form(body)
        else:
            if auth != "none":
                self._check_token(op, request, now)
            params = json_body(body) if body else {}
        if request.query:
            params = {**request.query, **params}
        if request.match_info:
            params = {**params, **request.match_info}
        return key, params

    def _check_token(self, op: Documented, request: web.Request, now: float) -> None:
        """Refuse a request whose ``Authorization`` header carries no token the sandbox issued
        that is still valid: an OAuth access token (``Bearer``), or a JWT for the card token."""
        header = request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        if op.auth == "jwt":
            token = token if scheme.lower() == "bearer" else header
            issued = self._jwt_tokens
        else:
            token = token if scheme.lower() == "bearer" else ""
            issued = self._access_tokens
        expires = issued.get(token) if token else None
        if expires is None or expires < now:
            self.stats.auth_failed += 1
            body = op.error_body(401)
            raise Refusal(401, body if body is not None else {"data": {"message": [
                "Unauthorized."]}})

    def _auth_failure(self, message: str) -> Refusal:
        self.stats.auth_failed += 1
        return validation(401, 0, message, {})

    def _authenticate(
        self, request: web.Request, path: str, body: bytes, now: float
    ) -> tuple[Key, dict[str, Any]]:
        headers = request.headers
        key = self.keys.get(headers.get("X-TXC-APIKEY", ""))
        if key is None:
            raise self._auth_failure("Invalid key")
        payload = headers.get("X-TXC-PAYLOAD", "")
        try:
            if base64.b64decode(payload, validate=True) != body:
                raise self._auth_failure("Invalid payload")
        except (binascii.Error, ValueError):
            raise self._auth_failure("Invalid payload") from None
        expected = hmac.new(key.secret, payload.encode(), hashlib.sha512).hexdigest()
        if not hmac.compare_digest(expected, headers.get("X-TXC-SIGNATURE", "")):
            raise self._auth_failure("Invalid signature")
        params = json_body(body)
        if params.get("request") != path:
            raise self._auth_failure("Invalid request: the request field must equal the path")
        self._check_nonce(key, params, now)
        return key, params

    def _check_nonce(self, key: Key, params: dict[str, Any], now: float) -> None:
        raw = params.get("nonce")
        # A string of digits, as documented (a JSON number, spaces, signs, underscores or other
        # scripts' digits, which Python's int() would take, are not).
        nonce = int(raw) if isinstance(raw, str) and _DIGITS.fullmatch(raw) else None
        if nonce is None:
            raise validation(400, 0, "Validation failed", {"nonce": ["The nonce is required."]})
        if params.get("nonceWindow") is True:
            now_ms = int(now * 1000)
            if abs(nonce - now_ms) > NONCE_WINDOW_MS:
                self.stats.nonce_refused += 1
                raise validation(
                    429, 0, "Your nonce is more than 5 seconds lesser than the current nonce", {}
                )
            if nonce in key.used_nonces:
                self.stats.nonce_refused += 1
                raise validation(429, 0, "Too many requests.", {})
            key.used_nonces.add(nonce)
            key.nonce_order.append(nonce)
            # Nonces older than the window are refused by the window check; forget them.
            while key.nonce_order and key.nonce_order[0] < now_ms - 2 * NONCE_WINDOW_MS:
                key.used_nonces.discard(key.nonce_order.popleft())
        else:
            if nonce <= key.last_nonce:
                self.stats.nonce_refused += 1
                raise validation(429, 0, "Too many requests.", {})
            key.last_nonce = nonce

    # -- the OAuth operations, which issue tokens ---------------------------------------------

    def issue_refresh_token(self) -> str:
        token = secrets.token_urlsafe(32)
        self._refresh_tokens[token] = self._clock() + REFRESH_TOKEN_LIFETIME
        return token

    def refresh(self, body: bytes, now: float) -> Any:
        fields = form(body)
        if (
            fields.get("client_id") != self.oauth_client_id
            or not hmac.compare_digest(fields.get("client_secret", ""), self.oauth_client_secret)
        ):
            self.stats.auth_failed += 1
            raise Refusal(401, {"data": {"client_id": ["Invalid client."]}})
        token = fields.get("token", "")
        expires = self._refresh_tokens.pop(token, None)
        if expires is None or expires < now:
            raise Refusal(400, {"data": {"token": ["Invalid token."]}})
        self.oauth_refresh_token = self.issue_refresh_token()
        return {"data": {
            "access_token": self.issue_access_token(now),
            "expires_in": ACCESS_TOKEN_LIFETIME,
            "refresh_token": self.oauth_refresh_token,
            "scope": "general,history",
            "token_type": "Bearer",
        }}

    def issue_access_token(self, now: float) -> str:
        token = secrets.token_urlsafe(32)
        self._access_tokens[token] = now + ACCESS_TOKEN_LIFETIME
        return token

    def token(self, params: dict[str, Any], now: float) -> Any:
        """``/oauth2/token``: the application's credentials and the authorization code the
        sandbox handed out (``oauth_code``, good once) for an access and a refresh token."""
        op = _TOKEN_OPERATION
        op.check(params, TEXT_FORM)
        if (
            params.get("client_id") != self.oauth_client_id
            or not hmac.compare_digest(str(params.get("client_secret", "")),
                                       self.oauth_client_secret)
            or not hmac.compare_digest(str(params.get("code", "")), self.oauth_code)
        ):
            self.stats.auth_failed += 1
            raise Refusal(401, op.error_body(401))
        self.oauth_code = secrets.token_urlsafe(16)
        self.oauth_refresh_token = self.issue_refresh_token()
        return {"data": {
            "access_token": self.issue_access_token(now),
            "expires_in": ACCESS_TOKEN_LIFETIME,
            "refresh_token": self.oauth_refresh_token,
            "scope": "general,history",
            "token_type": "Bearer",
        }}

    def jwt(self, now: float) -> Any:
        """``/api/v4/jwt``: a token the card token operation then takes as its
        ``Authorization``."""
        token = secrets.token_urlsafe(48)
        expires = int(now) + JWT_LIFETIME
        self._jwt_tokens[token] = expires
        return {"data": {"token": token, "expires_at": expires}}
