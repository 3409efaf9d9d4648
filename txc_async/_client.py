"""The client: thin typed methods over one request pipeline.

endpoint method -> input checks -> rate-limit scheduler -> signer -> transport -> answer decoder
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import math
import os
import re
import time
import urllib.parse
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, Self, TypeVar

import aiohttp
from yarl import URL

from ._answers import NonceRefused, RateLimited, decode_answer, parse_retry_after
from ._errors import InvalidParameterError, TransportError, TxcError, name_operations
from ._models import (
    CollateralOrder,
    Hashrate,
    Investment,
    InvestmentsPage,
    InvestmentStatus,
    MiningAccount,
    MiningReward,
    OAuthToken,
    PositionSide,
    RewardsPage,
    Side,
)
from ._operations import (
    BALANCE,
    COLLATERAL_STOP_LIMIT,
    CREATE_MINING_ACCOUNT,
    INVESTMENTS,
    MINING_HASHRATE,
    MINING_REWARDS,
    OPERATIONS,
    PING,
    REFRESH_OAUTH_TOKEN,
    Auth,
    Operation,
)
from ._ratelimit import Limiter, RateLimit, merge_rate_limits
from ._retry import RetryPolicy
from ._scheduler import default_limiter
from ._signing import Signer, key_fingerprint
from ._stats import ClientStats
from ._transport import DEFAULT_MAX_ANSWER_BYTES, AiohttpTransport, RawResponse, Transport
from ._validate import (
    ACCOUNT_NAME,
    ACCOUNT_NAME_RULE,
    CLIENT_ORDER_ID,
    CLIENT_ORDER_ID_RULE,
    check_choice,
    check_decimal,
    check_int_range,
    check_pattern,
    check_text,
    check_time_range,
)

__all__ = ["DEFAULT_BASE_URL", "EU_BASE_URL", "Client", "RewardsCursor", "walk_rewards"]

logger = logging.getLogger("txc_async")

R = TypeVar("R")

#: The public API.
DEFAULT_BASE_URL = "https://api.txc.exchange"
#: The regional EU deployment (same paths).
EU_BASE_URL = "https://eu.api.txc.exchange"

_MARKET = re.compile(r"[A-Z0-9]{1,20}_[A-Z0-9]{1,20}")
_TICKER = re.compile(r"[A-Za-z0-9]{1,20}")
_CREDENTIAL = re.compile(r"[\x21-\x7e]{1,1024}")
_INTERVALS = ("5m", "1h", "24h")
_PAGE_LIMIT = 100
_MAX_OFFSET = 10_000


def _is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _check_base_url(base_url: object) -> URL:
    if not isinstance(base_url, str) or not base_url:
        raise InvalidParameterError("base_url", "must be a non-empty string such as 'https://...'")
    url = URL(base_url.rstrip("/"))
    if url.scheme not in ("https", "http") or not url.host:
        raise InvalidParameterError("base_url", "must be an absolute http(s) URL with a host")
    if url.scheme == "http" and not _is_loopback(url.host):
        raise InvalidParameterError(
            "base_url",
            "plain http:// is allowed only for a loopback host (127.0.0.1, localhost, ::1); "
            "use https://",
        )
    if url.user or url.password or url.query_string or url.fragment:
        raise InvalidParameterError("base_url", "must not carry credentials, a query or a fragment")
    return url


@name_operations
class Client:
    """Asyncio client of the exchange API v4.

    Use it as ``async with Client(api_key=..., api_secret=...) as client:`` or call
    :meth:`close` when done. One HTTP session serves every request of the client.
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
        session: aiohttp.ClientSession | None = None,
        transport: Transport | None = None,
        max_connections: int = 100,
        verify_tls: bool = True,
        max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES,
    ) -> None:
        if (api_key is None) != (api_secret is None):
            raise InvalidParameterError(
                "api_key" if api_key is None else "api_secret",
                "api_key and api_secret must be given together",
            )
        if api_key is not None:
            for name, value in (("api_key", api_key), ("api_secret", api_secret)):
                # The value itself never goes into the message.
                if not isinstance(value, str) or not _CREDENTIAL.fullmatch(value):
                    raise InvalidParameterError(
                        name, "must be 1 to 1024 printable ASCII characters without spaces"
                    )
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            raise InvalidParameterError("timeout", "must be a finite number of seconds above 0")
        check_int_range("max_connections", max_connections, 1, 10_000)
        if session is not None and transport is not None:
            raise InvalidParameterError("session", "give either session or transport, not both")
        self._base_url = _check_base_url(base_url)
        self._urls = {
            op.name: self._base_url.with_path(self._base_url.path.rstrip("/") + op.path)
            for op in OPERATIONS
        }
        self._signer = Signer(api_key, api_secret) if api_key and api_secret else None
        self._rate_limits = merge_rate_limits(rate_limits)
        self._limiter: Limiter = limiter if limiter is not None else default_limiter()
        # Budgets are per server and key: the hash names both without revealing the key.
        self._key_id = key_fingerprint(api_key or "", str(self._base_url.origin()))
        self._timeout = float(timeout)
        self._retry = retry or RetryPolicy()
        self._transport: Transport = transport or AiohttpTransport(
            session, verify_tls=verify_tls, max_answer_bytes=max_answer_bytes
        )
        self._slots = asyncio.Semaphore(max_connections)
        self._closed = False
        # Calls under way, so that close() can end them at once instead of leaving them waiting.
        self._calls: set[asyncio.Task[Any]] = set()
        self._ended_by_close: set[asyncio.Task[Any]] = set()
        self.stats = ClientStats()

    # -- life cycle -------------------------------------------------------------------------

    @classmethod
    def from_env(cls, **kwargs: Any) -> Client:
        """A client configured from ``TXC_API_KEY``, ``TXC_API_SECRET`` and ``TXC_BASE_URL``."""
        env = os.environ
        kwargs.setdefault("api_key", env.get("TXC_API_KEY") or None)
        kwargs.setdefault("api_secret", env.get("TXC_API_SECRET") or None)
        if env.get("TXC_BASE_URL"):
            kwargs.setdefault("base_url", env["TXC_BASE_URL"])
        return cls(**kwargs)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the HTTP session (an injected one is left open).

        Calls still under way end at once with :class:`TransportError`; calls after this fail.
        """
        self._closed = True
        for task in list(self._calls):
            if not task.done():
                self._ended_by_close.add(task)
                task.cancel()
        await self._transport.aclose()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def base_url(self) -> str:
        return str(self._base_url)

    @property
    def rate_limits(self) -> dict[str, RateLimit]:
        """The limit of every scope this client keeps to."""
        return dict(self._rate_limits)

    def __repr__(self) -> str:
        auth = "signed" if self._signer is not None else "public only"
        return f"Client(base_url={str(self._base_url)!r}, {auth})"

    # -- the request pipeline ---------------------------------------------------------------

    def _require_signer(self, op: Operation[Any]) -> Signer:
        if self._signer is None:
            raise InvalidParameterError(
                "api_key", f"{op.name} is a private operation: give api_key and api_secret"
            )
        return self._signer

    async def _send_once(
        self, op: Operation[Any], params: Mapping[str, Any], url: URL, signer: Signer | None
    ) -> RawResponse:
        """Wait for a connection slot and the scope's budget, sign, and send one request."""
        limit = self._rate_limits[op.scope]
        async with self._slots:
            shared_nonce = await self._limiter.acquire(self._key_id, op.scope, limit)
            if self._closed:
                raise TransportError("the client is closed", may_have_reached_server=False)
            headers: Mapping[str, str] | None
            if op.auth is Auth.SIGNED:
                assert signer is not None
                # Signed after the budget admits the request, so the nonce is fresh when it leaves.
                nonce = shared_nonce or signer.nonces.try_next() or await signer.nonces.next()
                body, headers = signer.sign(op.path, params, nonce)
            elif op.auth is Auth.FORM:
                body = urllib.parse.urlencode(params).encode()
                headers = {"Content-Type": "application/x-www-form-urlencoded"}
            else:
                body, headers = None, None
                if params:
                    url = url.with_query({k: str(v) for k, v in params.items()})
            stats = self.stats
            stats.requests += 1
            stats.by_scope[op.scope] += 1
            return await self._transport.send(
                op.method, url, headers=headers, body=body, timeout=self._timeout
            )

    async def _call(self, op: Operation[R], params: Mapping[str, Any]) -> R:
        if self._closed:
            raise TransportError("the client is closed", may_have_reached_server=False)
        signer = self._require_signer(op) if op.auth is Auth.SIGNED else None
        task = asyncio.current_task()
        if task is None:  # pragma: no cover - a coroutine always runs in a task under asyncio
            return await self._attempts(op, params, signer)
        self._calls.add(task)
        try:
            return await self._attempts(op, params, signer)
        except TxcError as exc:
            exc._attach_operation(op.name)
            raise
        except asyncio.CancelledError:
            if task in self._ended_by_close:
                self._ended_by_close.discard(task)
                task.uncancel()
                raise TransportError(
                    f"{op.name}: the client was closed while the call was under way"
                ) from None
            raise
        finally:
            self._calls.discard(task)

    async def _attempts(
        self, op: Operation[R], params: Mapping[str, Any], signer: Signer | None
    ) -> R:
        url = self._urls[op.name]
        retry = self._retry
        failures = rate_limited = nonce_refused = 0
        while True:
            try:
                raw = await self._send_once(op, params, url, signer)
            except TransportError as exc:
                if (
                    self._closed
                    or failures >= retry.max_retries
                    or not (op.retry_safe or not exc.may_have_reached_server)
                ):
                    raise
                delay = retry.backoff(failures)
                failures += 1
                self.stats.retries += 1
                logger.debug(
                    "%s: %s; attempt %d again in %.2f s", op.name, exc, failures + 1, delay
                )
                await asyncio.sleep(delay)
                continue
            refused_for_rate = False
            try:
                return decode_answer(raw, op.decode)
            except RateLimited as signal:
                refused_for_rate = True
                if rate_limited >= retry.max_rate_limit_retries:
                    raise signal.error from None
                rate_limited += 1
                self.stats.rate_limit_refusals += 1
                pause = await self._limiter.rate_limited(
                    self._key_id, op.scope, self._rate_limits[op.scope], signal.error.retry_after
                )
                logger.warning(
                    "%s: rate limit refusal (HTTP %s); scope %r paused %.2f s",
                    op.name, signal.error.status, op.scope, pause,
                )
            except NonceRefused as signal:
                if nonce_refused >= retry.max_nonce_retries:
                    raise signal.error from None
                nonce_refused += 1
                self.stats.nonce_refusals += 1
                logger.debug("%s: nonce refused; signing again", op.name)
            except TransportError as exc:
                # The server answered, so the request reached it: only reads go again.
                if not op.retry_safe or failures >= retry.max_retries:
                    raise
                delay = retry.backoff(failures, parse_retry_after(raw.headers))
                failures += 1
                self.stats.retries += 1
                logger.debug(
                    "%s: %s; attempt %d again in %.2f s", op.name, exc, failures + 1, delay
                )
                await asyncio.sleep(delay)
            finally:
                if not refused_for_rate:
                    # Any other answer ends a streak of rate-limit refusals.
                    self._limiter.succeeded(self._key_id, op.scope)

    # -- operations -------------------------------------------------------------------------

    async def ping(self) -> bool:
        """True when the API answers ``["pong"]``."""
        return await self._call(PING, {})

    async def main_balance(self) -> dict[str, Decimal]:
        """Main-account balance per ticker (assets with zero balance may be missing)."""
        return await self._call(BALANCE, {})

    async def investments_history(
        self,
        *,
        id: str | None = None,
        ticker: str | None = None,
        status: InvestmentStatus | int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> InvestmentsPage:
        """One page of the fixed-lending investments (B2B partner keys only)."""
        return await self._call(
            INVESTMENTS,
            _investment_filters(id=id, ticker=ticker, status=status)
            | {
                "limit": check_int_range("limit", limit, 1, _PAGE_LIMIT),
                "offset": check_int_range("offset", offset, 0, _MAX_OFFSET),
            },
        )

    async def iter_investments_history(
        self,
        *,
        id: str | None = None,
        ticker: str | None = None,
        status: InvestmentStatus | int | None = None,
    ) -> AsyncIterator[Investment]:
        """Every investment matching the filters, page by page."""
        filters = _investment_filters(id=id, ticker=ticker, status=status)
        offset = 0
        while True:
            page = await self._call(INVESTMENTS, filters | {"limit": _PAGE_LIMIT, "offset": offset})
            for record in page.records:
                yield record
            if len(page.records) < _PAGE_LIMIT:
                return
            offset += _PAGE_LIMIT
            if offset > _MAX_OFFSET:
                raise TxcError(
                    f"more than {_MAX_OFFSET + _PAGE_LIMIT} investments match; the API pages no "
                    "further: narrow the filters (ticker, status)"
                )

    async def collateral_stop_limit_order(
        self,
        *,
        market: str,
        side: Side | str,
        amount: Decimal | str | int,
        price: Decimal | str | int,
        activation_price: Decimal | str | int,
        stop_loss: Decimal | str | int | None = None,
        take_profit: Decimal | str | int | None = None,
        client_order_id: str | None = None,
        position_side: PositionSide | str | None = None,
    ) -> CollateralOrder:
        """Place a stop-limit order on the collateral market.

        Never re-sent once it may have reached the server: after a timeout or a dropped
        connection the error says so, and the caller decides (look the order up by
        ``client_order_id``).
        """
        params: dict[str, Any] = {
            "market": check_pattern(
                "market", market, _MARKET, "must be <BASE>_<QUOTE> in capitals, e.g. 'BTC_USDT'"
            ),
            "side": check_choice("side", side, ("buy", "sell")),
            "amount": check_decimal("amount", amount),
            "price": check_decimal("price", price),
            "activation_price": check_decimal("activation_price", activation_price),
        }
        if stop_loss is not None:
            params["stopLoss"] = check_decimal("stop_loss", stop_loss)
        if take_profit is not None:
            params["takeProfit"] = check_decimal("take_profit", take_profit)
        if client_order_id is not None:
            params["client_order_id"] = check_pattern(
                "client_order_id", client_order_id, CLIENT_ORDER_ID, CLIENT_ORDER_ID_RULE
            )
        if position_side is not None:
            params["positionSide"] = check_choice(
                "position_side", position_side, ("LONG", "SHORT", "BOTH")
            )
        return await self._call(COLLATERAL_STOP_LIMIT, params)

    async def create_mining_account(
        self, *, name: str, referral_code: str | None = None
    ) -> MiningAccount:
        """Create a mining-pool account. Never re-sent once it may have reached the server."""
        params: dict[str, Any] = {
            "name": check_pattern(
                "name", name, ACCOUNT_NAME, ACCOUNT_NAME_RULE,
            )
        }
        if referral_code is not None:
            params["referralCode"] = check_text("referral_code", referral_code, max_length=50)
        return await self._call(CREATE_MINING_ACCOUNT, params)

    async def mining_rewards(
        self,
        *,
        account: str | None = None,
        start: int | datetime | None = None,
        end: int | datetime | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> RewardsPage:
        """One page of mining rewards, newest first (the server's default limit is 30)."""
        params = _reward_filters(account, start, end)
        if limit is not None:
            params["limit"] = check_int_range("limit", limit, 1, _PAGE_LIMIT)
        if offset is not None:
            params["offset"] = check_int_range("offset", offset, 0, _MAX_OFFSET)
        return await self._call(MINING_REWARDS, params)

    async def iter_mining_rewards(
        self,
        *,
        account: str | None = None,
        start: int | datetime | None = None,
        end: int | datetime | None = None,
    ) -> AsyncIterator[MiningReward]:
        """Every reward of the range exactly once, newest first, however many there are.

        The API pages at most 10,100 records deep; past that the range's end moves to the
        oldest date reached and paging goes on from there, skipping what was already returned.
        Without ``end`` the range ends now, so rewards booked meanwhile do not shift pages.
        """
        params = _reward_filters(account, start, end)
        params.setdefault("to", int(time.time()))
        async for page in walk_rewards(self, RewardsCursor(params)):
            for record in page:
                yield record

    async def _rewards_page(self, params: Mapping[str, Any]) -> RewardsPage:
        return await self._call(MINING_REWARDS, params)

    async def mining_hashrate(
        self,
        *,
        account: str | None = None,
        start: int | datetime | None = None,
        end: int | datetime | None = None,
        interval: str | None = None,
    ) -> Hashrate:
        """The hashrate series of an account; ``interval`` is ``5m``, ``1h`` (the default) or
        ``24h``."""
        params = _reward_filters(account, start, end)
        if interval is not None:
            params["interval"] = check_choice("interval", interval, _INTERVALS)
        return await self._call(MINING_HASHRATE, params)

    async def refresh_oauth_token(
        self, *, client_id: str, client_secret: str, refresh_token: str
    ) -> OAuthToken:
        """Exchange a refresh token for a new access token (and a new refresh token; the old one
        stops working). Never re-sent once it may have reached the server."""
        params = {
            "client_id": check_text("client_id", client_id, max_length=512),
            "client_secret": check_text("client_secret", client_secret, max_length=512),
            "token": check_text("refresh_token", refresh_token, max_length=4096),
        }
        return await self._call(REFRESH_OAUTH_TOKEN, params)


def _investment_filters(
    *, id: object, ticker: object, status: object
) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if id is not None:
        params["id"] = check_text("id", id, max_length=128)
    if ticker is not None:
        params["ticker"] = check_pattern(
            "ticker", ticker, _TICKER, "must be 1 to 20 letters or digits"
        )
    if status is not None:
        params["status"] = check_choice("status", status, (1, 2))
    return params


def _reward_filters(account: object, start: object, end: object) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if account is not None:
        params["account"] = check_pattern(
            "account", account, ACCOUNT_NAME, ACCOUNT_NAME_RULE
        )
    lo, hi = check_time_range(start, end)
    if lo is not None:
        params["from"] = lo
    if hi is not None:
        params["to"] = hi
    return params


@dataclass(slots=True)
class RewardsCursor:
    """Where a walk through a reward range stands: the range's current end (in ``params``), the
    offset within it, the oldest date reached with the records returned at it, and the records
    to skip because an earlier window already returned them."""

    params: dict[str, Any]
    offset: int = 0
    last_date: int | None = None
    at_last_date: list[MiningReward] = field(default_factory=list)
    skip: set[MiningReward] = field(default_factory=set)


async def walk_rewards(client: Client, cursor: RewardsCursor) -> AsyncIterator[list[MiningReward]]:
    """Every reward of ``cursor.params``'s range exactly once, page by page, newest first.

    The API pages at most 10,100 records deep; past that the range's end moves to the oldest date
    reached and paging starts again there, skipping the records already returned at that date.
    ``cursor`` is updated as pages are returned, so a walk can be resumed from it.
    """
    new_in_window = 0
    while True:
        page = await client._rewards_page(
            cursor.params | {"limit": _PAGE_LIMIT, "offset": cursor.offset}
        )
        fresh: list[MiningReward] = []
        for record in page.data:
            if record.date == cursor.last_date:
                if cursor.skip and record in cursor.skip:
                    continue
                cursor.at_last_date.append(record)
            else:
                cursor.last_date = record.date
                cursor.at_last_date = [record]
                # Only records at the date a window restarted from can come twice.
                if cursor.skip:
                    cursor.skip = set()
            fresh.append(record)
        new_in_window += len(fresh)
        cursor.offset += _PAGE_LIMIT
        last_page = len(page.data) < _PAGE_LIMIT
        if not last_page and cursor.offset > _MAX_OFFSET:
            if new_in_window == 0 or cursor.last_date is None:
                raise TxcError(
                    f"more than {_MAX_OFFSET + _PAGE_LIMIT} rewards share the date "
                    f"{cursor.last_date}; the API cannot page through them: name the account"
                )
            cursor.params = cursor.params | {"to": cursor.last_date}
            cursor.offset = 0
            cursor.skip = set(cursor.at_last_date)
            new_in_window = 0
        if fresh:
            yield fresh
        if last_page:
            return
