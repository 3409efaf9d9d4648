"""The client: thin typed methods that hand their keywords to their operation's declaration,
which checks them, and the wire's parameters to the pipeline.

endpoint method -> operation (checks, wire names) -> pipeline (budget -> signer -> transport ->
answer decoder)
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import ssl
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, Self, TypedDict, TypeVar, Unpack

import aiohttp
from yarl import URL

from ._errors import (
    InvalidParameterError,
    client_closed,
)
from ._limiters.base import Limiter, RateLimit
from ._methods.groups import MethodGroups
from ._methods.hand import HandMethods
from ._nonces.clock import SYSTEM_CLOCK, LocalClock
from ._nonces.sources import key_fingerprint
from ._operations import (
    DEFAULT_BASE_URL,
    Operation,
    merge_rate_limits,
)
from ._pipeline import Pipeline, RequestRecord
from ._retry import RetryPolicy
from ._runtime import current_runtime
from ._signing import Signer
from ._stats import ClientStats
from ._transports.base import Transport
from ._transports.default import DEFAULT_MAX_ANSWER_BYTES, AiohttpTransport
from ._validate import check_int_range, check_positive_seconds

__all__ = ["Client", "ClientOptions"]

logger = logging.getLogger("txc_async")

R = TypeVar("R")


_CREDENTIAL = re.compile(r"[\x21-\x7e]{1,1024}")
_USER_AGENT = re.compile(r"[\x20-\x7e]{1,200}")
#: What a limiter must have (the methods of the Limiter protocol the client calls).
_LIMITER_METHODS = ("try_acquire", "acquire", "conclude", "effective_limit")


def _is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _env_limiter(env: Mapping[str, str]) -> Limiter | None:
    url = env.get("TXC_LIMITER")
    if not url:
        return None
    from ._limiters.url import limiter_from_url

    try:
        return limiter_from_url(url)
    except ValueError as exc:
        problem = str(exc)
    # Raised outside the except clause: nothing of the URL rides along as __context__.
    raise InvalidParameterError("TXC_LIMITER", problem)


#: The environment variables of ``Client.from_env``'s credentials.
_VARIABLES = {"api_key": "TXC_API_KEY", "api_secret": "TXC_API_SECRET"}


def _half_credentials(present: str, as_keyword: bool) -> InvalidParameterError:
    """The refusal of ``Client.from_env`` finding the credential ``present`` (a keyword, or
    its variable) without the other: what to set. Neither value is quoted."""
    missing = "api_secret" if present == "api_key" else "api_key"
    where = f"{present}= was given" if as_keyword else f"{_VARIABLES[present]} is set"
    return InvalidParameterError(
        _VARIABLES[missing],
        f"{where} but {_VARIABLES[missing]} is not set: set TXC_API_KEY and TXC_API_SECRET "
        "both (or give api_key= and api_secret=), or neither for public operations only",
    )


def _check_timeout(timeout: object) -> float:
    return check_positive_seconds("timeout", timeout)


def _check_retry(retry: object) -> RetryPolicy:
    if retry is None:
        return RetryPolicy()
    if not isinstance(retry, RetryPolicy):
        raise InvalidParameterError("retry", "must be a txc_async.RetryPolicy")
    return retry


def _has_methods(part: object, names: tuple[str, ...]) -> bool:
    return all(callable(getattr(part, name, None)) for name in names)


def _check_parts(limiter: object, transport: object) -> None:
    """A limiter and a transport must be objects of their kind: a mistake shows here, not at
    the first call (or at close)."""
    if limiter is not None:
        if isinstance(limiter, str):
            raise InvalidParameterError(
                "limiter", "must be a limiter object; for a URL such as 'memory://' use "
                "txc_async.limiter_from_url(url)"
            )
        if not _has_methods(limiter, _LIMITER_METHODS):
            raise InvalidParameterError(
                "limiter", "must be a txc_async limiter (InProcessLimiter, SQLiteLimiter, "
                f"RedisLimiter) or have the Limiter methods, not {type(limiter).__name__}"
            )
    if transport is not None and not _has_methods(transport, ("send", "aclose")):
        raise InvalidParameterError(
            "transport", f"must have the Transport methods send and aclose, not "
            f"{type(transport).__name__}"
        )


def _check_base_url(base_url: object) -> URL:
    if not isinstance(base_url, str) or not base_url:
        raise InvalidParameterError("base_url", "must be a non-empty string such as 'https://...'")
    try:
        url = URL(base_url.rstrip("/"))
        port = url.port  # a port that is not a number, or out of range, raises here
    except ValueError:
        # Refused outside the handler: the parsing error may quote the URL.
        url, port = None, None
    if url is None or url.scheme not in ("https", "http") or not url.host or port == 0:
        raise InvalidParameterError(
            "base_url", "must be an absolute http(s) URL with a host (and a port from 1 to 65535)"
        )
    if url.scheme == "http" and not _is_loopback(url.host):
        raise InvalidParameterError(
            "base_url",
            "plain http:// is allowed only for a loopback host (127.0.0.1, localhost, ::1); "
            "use https://",
        )
    if url.user or url.password or url.query_string or url.fragment:
        raise InvalidParameterError("base_url", "must not carry credentials, a query or a fragment")
    return url


class ClientOptions(TypedDict, total=False):
    """The keywords of [`Client`][txc_async.Client] that
    [`Client.from_env`][txc_async.Client.from_env] passes on as given."""

    rate_limits: Mapping[str, RateLimit] | None
    timeout: float
    retry: RetryPolicy | None
    user_agent: str | None
    on_request: Callable[[RequestRecord], object] | None
    session: aiohttp.ClientSession | None
    transport: Transport | None
    max_connections: int
    verify_tls: bool | ssl.SSLContext
    clock: LocalClock | None
    max_answer_bytes: int


class Client(HandMethods, MethodGroups):
    """Asyncio client of the exchange API v4.

    Use it as ``async with Client(api_key=..., api_secret=...) as client:`` or call
    [`close`][txc_async.Client.close] when done. One HTTP session serves every request of the
    client.

    - ``rate_limits``: per-scope overrides of the documented limits (``txc_async.RateLimit``).
    - ``limiter``: the backend keeping the budgets (default: one in-process limiter shared by
      every client of the process, [`Runtime.limiter`][txc_async.Runtime.limiter];
      ``txc_async.SQLiteLimiter`` or ``RedisLimiter`` to share budgets between processes).
    - ``timeout``: seconds per HTTP exchange (waiting for budget is not counted).
    - ``retry``: a [`txc_async.RetryPolicy`][txc_async.RetryPolicy].
    - ``user_agent``: the caller's product, put in front of the default User-Agent.
    - ``on_request``: called with a [`txc_async.RequestRecord`][txc_async.RequestRecord] after every
      HTTP exchange.
    - ``session`` / ``transport``: an aiohttp session, or another transport, to send through
      (see [`txc_async.transports`][txc_async.transports]; a test that mocks aiohttp's session
      gives ``transport=AiohttpTransport(direct=False)``).
    - ``max_connections``: connections open at once to the server.
    """

    def __init__(
        self,
        api_key: str | None = None,
        api_secret: str | None = None,
        *,
        base_url: str = DEFAULT_BASE_URL,
        rate_limits: Mapping[str, RateLimit] | None = None,
        limiter: Limiter | None = None,
        timeout: float = 10.0,
        retry: RetryPolicy | None = None,
        user_agent: str | None = None,
        on_request: Callable[[RequestRecord], object] | None = None,
        session: aiohttp.ClientSession | None = None,
        transport: Transport | None = None,
        max_connections: int = 100,
        verify_tls: bool | ssl.SSLContext = True,
        clock: LocalClock | None = None,
        max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES,
    ) -> None:
        if (api_key is None) != (api_secret is None):
            given, missing = (
                ("api_secret", "api_key") if api_key is None else ("api_key", "api_secret")
            )
            raise InvalidParameterError(
                missing,
                f"{given} was given without {missing}: give Client(api_key=..., "
                "api_secret=...) both, or neither for public operations only (Client.from_env() "
                "reads them from TXC_API_KEY and TXC_API_SECRET)",
            )
        if api_key is not None:
            for name, value in (("api_key", api_key), ("api_secret", api_secret)):
                # The value itself never goes into the message.
                if not isinstance(value, str) or not _CREDENTIAL.fullmatch(value):
                    raise InvalidParameterError(
                        name, "must be 1 to 1024 printable ASCII characters without spaces"
                    )
        check_int_range("max_connections", max_connections, 1, 10_000)
        if session is not None and transport is not None:
            raise InvalidParameterError("session", "give either session or transport, not both")
        if user_agent is not None and (
            not isinstance(user_agent, str) or not _USER_AGENT.fullmatch(user_agent)
        ):
            raise InvalidParameterError(
                "user_agent", "must be 1 to 200 printable ASCII characters, e.g. 'mybot/1.2'"
            )
        _check_parts(limiter, transport)
        if not isinstance(verify_tls, bool | ssl.SSLContext):
            raise InvalidParameterError(
                "verify_tls", "must be True, False or an ssl.SSLContext (for a CA of your own)"
            )
        if session is not None and not isinstance(session, aiohttp.ClientSession):
            raise InvalidParameterError(
                "session", f"must be an aiohttp.ClientSession, not {type(session).__name__}"
            )
        if clock is not None and not _has_methods(clock, ("time", "monotonic")):
            raise InvalidParameterError(
                "clock", "must have the methods time() (the wall clock) and monotonic() (a "
                f"clock that never steps), not {type(clock).__name__}"
            )
        if on_request is not None and not callable(on_request):
            raise InvalidParameterError("on_request", "must be a callable taking a RequestRecord")
        base = _check_base_url(base_url)
        self._timeout = _check_timeout(timeout)
        self._retry = _check_retry(retry)
        origin = str(base.origin())
        # The service counts requests per IP address: budgets are the server's, shared by every
        # key used with it. Nonce counters stay per key (a hash, never the key itself).
        key_id = key_fingerprint("", origin)
        nonce_key = key_fingerprint(api_key or "", origin)
        # One estimate of the server's clock per server, shared by the clients of the runtime;
        # nonces (here and in shared limiters) are drawn on it.
        runtime = current_runtime()
        server_clock = runtime._server_clock_for(
            origin, clock if clock is not None else SYSTEM_CLOCK
        )
        self._pipeline = Pipeline(
            base_url=base,
            signer=(
                Signer(api_key, api_secret, runtime._nonce_source_for(api_key, server_clock))
                if api_key and api_secret
                else None
            ),
            server_clock=server_clock,
            limiter=limiter if limiter is not None else runtime.limiter,
            key_id=key_id,
            nonce_key=nonce_key,
            rate_limits=merge_rate_limits(rate_limits),
            transport=transport
            or AiohttpTransport(
                session, verify_tls=verify_tls, max_connections=max_connections,
                max_answer_bytes=max_answer_bytes,
            ),
            user_agent=user_agent,
            on_request=on_request,
        )
        self._derived = False
        self._closed = False

    # -- life cycle -------------------------------------------------------------------------

    @classmethod
    def from_env(
        cls,
        *,
        api_key: str | None = None,
        api_secret: str | None = None,
        base_url: str | None = None,
        limiter: Limiter | None = None,
        **options: Unpack[ClientOptions],
    ) -> Client:
        """A client configured from ``TXC_API_KEY``, ``TXC_API_SECRET``, ``TXC_BASE_URL`` and
        ``TXC_LIMITER`` (a [`txc_async.limiter_from_url`][txc_async.limiter_from_url] URL).

        Takes every keyword of the constructor; ``api_key``, ``api_secret``, ``base_url`` and
        ``limiter`` given here win over the environment. Without ``TXC_BASE_URL`` the base URL is
        [`DEFAULT_BASE_URL`][txc_async.DEFAULT_BASE_URL]; without a key the client serves public
        operations only.
        """
        env = os.environ
        key = api_key if api_key is not None else env.get("TXC_API_KEY") or None
        secret = api_secret if api_secret is not None else env.get("TXC_API_SECRET") or None
        if (key is None) != (secret is None):
            present = "api_key" if secret is None else "api_secret"
            given = api_key if present == "api_key" else api_secret
            raise _half_credentials(present, as_keyword=given is not None)
        return cls(
            key,
            secret,
            base_url=base_url or env.get("TXC_BASE_URL") or DEFAULT_BASE_URL,
            limiter=limiter if limiter is not None else _env_limiter(env),
            **options,
        )

    def with_options(
        self, *, timeout: float | None = None, retry: RetryPolicy | None = None
    ) -> Client:
        """A client with another ``timeout`` or ``retry`` policy that shares this one's HTTP
        session, budgets, nonces, counters and hooks (e.g. ``client.with_options(timeout=2)
        .main_balance()``). Closing it ends only its own use; close the original when done."""
        derived = object.__new__(Client)
        derived._pipeline = self._pipeline
        derived._timeout = self._timeout if timeout is None else _check_timeout(timeout)
        derived._retry = self._retry if retry is None else _check_retry(retry)
        derived._derived = True
        derived._closed = False
        return derived

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the HTTP session (an injected one is left open).

        Calls still under way end at once with [`TransportError`][txc_async.TransportError]; calls
        after this fail. A client made by [`with_options`][txc_async.Client.with_options] only stops
        its own use.
        """
        self._closed = True
        if not self._derived:
            await self._pipeline.aclose()

    @property
    def closed(self) -> bool:
        """True once [`close`][txc_async.Client.close] was called (on this client, or on the one it
        derives from)."""
        return self._closed or self._pipeline.closed

    @property
    def base_url(self) -> str:
        """The server this client talks to, e.g. ``https://api.example.com``."""
        return str(self._pipeline.base_url)

    @property
    def clock_offset(self) -> float:
        """Seconds the server's clock is ahead of this machine's (negative: behind), measured
        from the ``Date`` of the server's answers; 0.0 before the first answer."""
        return self._pipeline.server_clock.offset

    @property
    def timeout(self) -> float:
        """Seconds allowed for one HTTP exchange."""
        return self._timeout

    @property
    def retry(self) -> RetryPolicy:
        """The retry policy of this client's calls."""
        return self._retry

    @property
    def user_agent(self) -> str:
        """The User-Agent header every request carries."""
        return self._pipeline.user_agent

    @property
    def stats(self) -> ClientStats:
        """Counters of requests, retries and refusals (shared with clients of
        [`with_options`][txc_async.Client.with_options])."""
        return self._pipeline.stats

    @property
    def rate_limits(self) -> dict[str, RateLimit]:
        """The limit every scope keeps to now: the configured one, or a lower one learned from
        the server's refusals."""
        pipeline = self._pipeline
        return {
            scope: pipeline.limiter.effective_limit(pipeline.key_id, scope, limit)
            for scope, limit in pipeline.rate_limits.items()
        }

    def __repr__(self) -> str:
        auth = "signed" if self._pipeline.signer is not None else "public only"
        return f"Client(base_url={self.base_url!r}, {auth})"

    def _call(self, op: Operation[R], keywords: Mapping[str, object]) -> Coroutine[Any, Any, R]:
        """The pipeline's call of ``op`` with the caller's ``keywords``, which the operation's
        declaration checks and turns into the wire's parameters."""
        # Not a coroutine itself: the method awaits the pipeline's directly, one level fewer to
        # resume on every wake-up of the exchange. (``_send`` written out: one call fewer.)
        params = op.wire_params(keywords)
        if self._closed:
            raise client_closed(op.name)
        return self._pipeline.call(op, params, self._timeout, self._retry)

    def _send(self, op: Operation[R], params: Mapping[str, Any]) -> Coroutine[Any, Any, R]:
        """The pipeline's call of ``op`` with the wire's ``params``, checked already."""
        if self._closed:
            raise client_closed(op.name)
        return self._pipeline.call(op, params, self._timeout, self._retry)
