"""The operations the client has had from its first version, written by hand, and ``call``, which
reaches every operation by name: what each adds to its declaration (a ticker's balance read from
an answer of every asset, an account named in a disabled account's empty series, walks that
never miss a reward). ``Client`` has them; the generated groups' methods of the same operations
(``client.main_account.get_main_balance``) are these."""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import AsyncIterator, Coroutine, Mapping
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar, cast, overload

from .._errors import InvalidParameterError
from .._models import (
    CollateralOrder,
    Hashrate,
    IntervalLiteral,
    Investment,
    InvestmentsPage,
    InvestmentStatus,
    MiningAccount,
    MiningReward,
    OAuthToken,
    PositionSide,
    PositionSideLiteral,
    RewardsPage,
    Side,
    SideLiteral,
    StpLiteral,
)
from .._naming import name_operations
from .._operations import (
    BALANCE,
    BALANCE_OF_TICKER,
    COLLATERAL_STOP_LIMIT,
    CREATE_MINING_ACCOUNT,
    INVESTMENTS,
    MAX_OFFSET,
    MINING_HASHRATE,
    MINING_REWARDS,
    OPERATIONS,
    PAGE_LIMIT,
    PING,
    REFRESH_OAUTH_TOKEN,
    Operation,
)
from .._paging import walk_offset_pages

__all__ = ["HandMethods"]

R = TypeVar("R")

#: Where the package's files are: a warning is said at the first line outside them.
_PACKAGE = str(Path(__file__).resolve().parents[1])


@name_operations
class HandMethods:
    """The hand-written operations of the client, over the two ways it sends a call."""

    __slots__ = ()

    def _call(self, op: Operation[R], keywords: Mapping[str, object]) -> Coroutine[Any, Any, R]:
        """The call of ``op`` with the caller's ``keywords`` (checked by its declaration)."""
        raise NotImplementedError

    def _send(self, op: Operation[R], params: Mapping[str, Any]) -> Coroutine[Any, Any, R]:
        """The call of ``op`` with the wire's ``params``, checked already."""
        raise NotImplementedError


    @overload
    async def call(self, operation: Operation[R], /, **params: object) -> R: ...

    @overload
    async def call(self, operation: str, /, **params: object) -> object: ...

    async def call(self, operation: Operation[Any] | str, /, **params: object) -> object:
        """Call any operation of [`txc_async.OPERATIONS`][txc_async.OPERATIONS], by its name or
        by its [`Operation`][txc_async.Operation], with its parameters as keywords (a keyword
        given as None is left out); returns the result as the operation decodes it.

        ``await client.call("mining_rewards", account="pool-1", limit=10)`` sends what
        ``await client.mining_rewards(account="pool-1", limit=10)`` sends. A typed method may
        add to the decoded result: ``mining_hashrate`` names the account asked for in the empty
        series of a disabled account, and ``main_balance(ticker=...)`` reads the service's
        answer for one currency, which ``call`` does not ask for. An unknown operation, or a
        parameter it does not take, is an
        [`InvalidParameterError`][txc_async.InvalidParameterError], and nothing is sent.
        """
        op = _operation(operation)
        if op.deprecated:
            _warn_deprecated(op)
        return await self._call(op, params)

    async def ping(self) -> bool:
        """True when the API answers ``["pong"]``."""
        return await self._send(PING, {})  # no keywords: nothing to check

    async def main_balance(self, *, ticker: str | None = None) -> dict[str, Decimal]:
        """Main-account balance per ticker (assets with zero balance may be missing).

        With ``ticker``, that currency's balance alone: ``{ticker: Decimal}``, zero for a
        ticker the service does not know (as it answers one).
        """
        if ticker is None:
            return await self._send(BALANCE, {})  # no keywords: nothing to check
        answer = await self._call(BALANCE_OF_TICKER, {"ticker": ticker})
        if isinstance(answer, Decimal):
            return {ticker: answer}
        # A server that answered every asset: the ticker's entry, or zero where it left it out.
        wanted = ticker.upper()
        for name, amount in answer.items():
            if name.upper() == wanted:
                return {ticker: amount}
        return {ticker: Decimal(0)}

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
        return await self._call(INVESTMENTS, {
            "id": id, "ticker": ticker, "status": status, "limit": limit, "offset": offset,
        })

    async def iter_investments_history(
        self,
        *,
        id: str | None = None,
        ticker: str | None = None,
        status: InvestmentStatus | int | None = None,
    ) -> AsyncIterator[Investment]:
        """Every investment matching the filters, page by page."""
        filters = INVESTMENTS.wire_params({"id": id, "ticker": ticker, "status": status})

        async def page(limit: int, offset: int) -> tuple[list[Investment], int]:
            found = await self._send(INVESTMENTS, filters | {"limit": limit, "offset": offset})
            return found.records, found.limit

        async for record in walk_offset_pages(
            page, limit=PAGE_LIMIT, max_offset=MAX_OFFSET, what="investments",
            narrow_by="ticker, status",
        ):
            yield record

    async def collateral_stop_limit_order(
        self,
        *,
        market: str,
        side: Side | SideLiteral,
        amount: Decimal | str | int,
        price: Decimal | str | int,
        activation_price: Decimal | str | int,
        stop_loss: Decimal | str | int | None = None,
        take_profit: Decimal | str | int | None = None,
        client_order_id: str | None = None,
        position_side: PositionSide | PositionSideLiteral | None = None,
        reduce_only: bool | None = None,
        stp: StpLiteral | None = None,
    ) -> CollateralOrder:
        """Place a stop-limit order on the collateral market.

        ``reduce_only=True``: the order may only reduce an open position (not with
        ``stop_loss`` or ``take_profit``, which the service refuses). ``stp``: self-trade
        prevention, ``"no"``, ``"cb"`` (cancel both), ``"cn"`` (cancel the new order) or ``"co"``
        (cancel the existing one).

        Never re-sent once it may have reached the server: after a timeout or a dropped
        connection the error says so, and the caller decides (look the order up by
        ``client_order_id``).
        """
        return await self._call(COLLATERAL_STOP_LIMIT, {
            "market": market, "side": side, "amount": amount, "price": price,
            "activation_price": activation_price, "stop_loss": stop_loss,
            "take_profit": take_profit, "client_order_id": client_order_id,
            "position_side": position_side, "reduce_only": reduce_only, "stp": stp,
        })

    async def create_mining_account(
        self, *, name: str, referral_code: str | None = None
    ) -> MiningAccount:
        """Create a mining-pool account. Never re-sent once it may have reached the server."""
        return await self._call(
            CREATE_MINING_ACCOUNT, {"name": name, "referral_code": referral_code}
        )

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
        return await self._call(MINING_REWARDS, {
            "account": account, "start": start, "end": end, "limit": limit, "offset": offset,
        })

    async def iter_mining_rewards(
        self,
        *,
        account: str | None = None,
        start: int | datetime | None = None,
        end: int | datetime | None = None,
    ) -> AsyncIterator[MiningReward]:
        """Every reward of the range exactly once, however many there are, newest first (and
        then what was booked behind the walk while it ran).

        The walk (see ``txc_async._backfill.walk.walk_rewards``) narrows the range's end as it
        goes, so it is never bound by the API's offset limit, and rewards the server books
        meanwhile come back once, never twice. A check ends it (see
        ``txc_async._backfill.ledger``): every reward the server holds in the range when the check
        begins comes back, including any booked behind the walk while it ran. Without ``end``
        the range ends now.
        """
        from .._backfill.ledger import every_reward
        from .._backfill.walk import REWARD_RECORDS

        params = MINING_REWARDS.wire_params({"account": account, "start": start, "end": end})
        if "to" not in params:
            now = int(time.time())
            if params.get("from", 0) > now:
                raise InvalidParameterError("start", "must not be after end (without end: now)")
            params["to"] = now
        async for page in every_reward(self._rewards_page, params, REWARD_RECORDS):
            for record in page:
                yield record

    async def _rewards_page(self, records: Operation[R], params: Mapping[str, Any]) -> R:
        """One page of rewards decoded by ``records`` (typed or wire records), for the walk;
        ``params`` are the wire's."""
        return await self._send(records, params)

    async def mining_hashrate(
        self,
        *,
        account: str | None = None,
        start: int | datetime | None = None,
        end: int | datetime | None = None,
        interval: IntervalLiteral | None = None,
    ) -> Hashrate:
        """The hashrate series of an account; ``interval`` is ``5m``, ``1h`` (the default) or
        ``24h``. ``account`` is required (the service refuses a request without it).

        An account the service has disabled answers empty data: an empty series.
        """
        series = await self._call(MINING_HASHRATE, {
            "account": account, "start": start, "end": end, "interval": interval,
        })
        if not series.account and not series.hashrate:
            # The declaration requires the account: it was given, and checked.
            return Hashrate(cast(str, account), [])
        return series

    async def refresh_oauth_token(
        self, *, client_id: str, client_secret: str, refresh_token: str
    ) -> OAuthToken:
        """Exchange a refresh token for a new access token (and a new refresh token; the old one
        stops working). Never re-sent once it may have reached the server.

        Deprecated by the service: its documentation (whitebit-exchange/docs, branch stage,
        platform/oauth/overview.mdx) removes the authorization-code flow, refresh included, on
        2026-11-01, for the Fast API Key flow (``client.oauth.oauth2_token`` with
        ``code_verifier``, then ``client.oauth.oauth2_api_key_info`` and
        ``oauth2_api_key_secret``), which issues no refresh token. Warns with a
        ``DeprecationWarning`` that says so.
        """
        _warn_deprecated(REFRESH_OAUTH_TOKEN)
        return await self._call(REFRESH_OAUTH_TOKEN, {
            "client_id": client_id, "client_secret": client_secret,
            "refresh_token": refresh_token,
        })


def _warn_deprecated(op: Operation[Any]) -> None:
    """Warn, from the caller's line (the first outside this package), that the service stops
    serving ``op``."""
    level, frame = 1, sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        level, frame = level + 1, frame.f_back
    warnings.warn(f"{op.name}: {op.deprecated}", DeprecationWarning, stacklevel=level + 1)


def _operation(operation: object) -> Operation[Any]:
    """The operation of the catalogue that ``operation`` (a name, or an ``Operation``) is."""
    if isinstance(operation, str):
        found = OPERATIONS.get(operation)
        if found is not None:
            return found
        raise InvalidParameterError(
            "operation", f"unknown operation {operation!r} (txc_async.OPERATIONS names every one)"
        )
    if isinstance(operation, Operation):
        if operation.name in OPERATIONS:
            return operation
        raise InvalidParameterError(
            "operation", f"{operation.name!r} is not an operation of txc_async.OPERATIONS"
        )
    raise InvalidParameterError(
        "operation", f"must be an operation's name or a txc_async.Operation, not "
        f"{type(operation).__name__}"
    )
