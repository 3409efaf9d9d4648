"""The operations the sandbox simulates itself, in the ``dialect``'s shapes and with their own
checks: ping, the main balance, the mining rewards, hashrate and account creation, the fixed
investments, the collateral stop-limit order, and the OAuth and JWT tokens (issued by the
credentials)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

import msgspec

from ._auth import Credentials, Key
from ._data import InvestmentBook, RewardBook, mix
from ._stats import SandboxStats
from ._table import Refusal
from ._wire import validation

__all__ = ["MARKETS", "MIN_ORDER_AMOUNT", "Dialect", "Operation", "OwnOperations"]

#: How the sandbox answers: ``"live"`` as the live service does (its official documentation,
#: whitebit-exchange/docs, 2026), ``"spec"`` in the shapes of the API's first specification.
Dialect = Literal["live", "spec"]

MARKETS = frozenset({"BTC_USDT", "ETH_USDT", "ETH_BTC", "SOL_USDT", "TXC_USDT"})
MIN_ORDER_AMOUNT = Decimal("0.0001")
_DECIMAL = re.compile(r"[0-9]+(\.[0-9]+)?")
_CLIENT_ORDER_ID = re.compile(r"[A-Za-z0-9._-]{1,255}")
_NAME = re.compile(r"[A-Za-z0-9_]{1,255}")
_INTERVALS = {"5m": 300, "1h": 3600, "24h": 86400}
#: Self-trade prevention modes, and the legacy spellings the service still takes for them.
_STP = {"no": "no", "cb": "cb", "cn": "cn", "co": "co", "cancel_both": "cb",
        "cancel_new": "cn", "cancel_old": "co"}
#: The order answer's fields the live service spells in camelCase (whitebit-exchange/docs,
#: openapi/private/http-trade-v4.yaml; the API's first specification: snake_case).
_LIVE_ORDER_FIELDS = {"order_id": "orderId", "client_order_id": "clientOrderId",
                      "deal_money": "dealMoney", "deal_stock": "dealStock",
                      "deal_fee": "dealFee"}
#: What a live order answers right after it is placed, in turn: the statuses REST returns.
_LIVE_ORDER_STATES = ("FILLED", "PARTIALLY_FILLED", "CANCELED")
#: The fee on the money dealt of a filled order.
_TAKER_FEE = Decimal("0.001")


#: An operation simulated here: given the key that signed the request (None where no key
#: signs), its parameters, its raw body and the server's time, its answer.
Operation = Callable[[Key | None, dict[str, Any], bytes, float], Any]


def _signer(key: Key | None) -> Key:
    assert key is not None, "a signed operation has the key that signed it"
    return key


class OwnOperations:
    """The operations the sandbox simulates itself (``table``, by name), and their state: the
    mining accounts created and disabled, the next order id. ``rewards``, ``investments`` and
    ``balance`` are the sandbox's; placed orders are recorded in ``stats``; a refusal of the OAuth
    client is counted there by ``credentials``, which issue the tokens."""

    def __init__(
        self,
        *,
        seed: int,
        dialect: Dialect,
        max_page: int,
        stats: SandboxStats,
        credentials: Credentials,
        rewards: RewardBook,
        investments: InvestmentBook,
        balance: dict[str, dict[str, str]],
    ) -> None:
        self.seed = seed
        self.dialect: Dialect = dialect
        #: The most records a page of rewards or investments holds.
        self.max_page = max_page
        self.stats = stats
        self._credentials = credentials
        self.rewards = rewards
        self.investments = investments
        self.balance = balance
        self.created_accounts: dict[str, int] = {}
        self.disabled_accounts: set[str] = set()
        self.next_order_id = 4_000_000_000 + seed * 1000
        self.table: dict[str, Operation] = self._table()

    def _table(self) -> dict[str, Operation]:
        """The operations simulated here, by name."""
        return {
            "ping": lambda key, params, body, now: ["pong"],
            "oauth2_refresh_token":
                lambda key, params, body, now: self._credentials.refresh(body, now),
            "oauth2_token": lambda key, params, body, now: self._credentials.token(params, now),
            "get_main_balance": lambda key, params, body, now: self._balance(params),
            "get_mining_rewards": lambda key, params, body, now: self._rewards(params),
            "get_fixed_investments_history":
                lambda key, params, body, now: self._investments(_signer(key), params),
            "create_collateral_stop_limit_order":
                lambda key, params, body, now: self._order(_signer(key), params, now),
            "create_mining_account":
                lambda key, params, body, now: self._create_account(params, now),
            "get_mining_hashrate": lambda key, params, body, now: self._hashrate(params, now),
            "issue_jwt_token": lambda key, params, body, now: self._credentials.jwt(now),
        }

    @staticmethod
    def _int_param(
        params: Mapping[str, Any], name: str, low: int, high: int, default: int | None
    ) -> int | None:
        value = params.get(name, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise validation(400, 0, "Validation failed",
                             {name: [f"The {name} must be between {low} and {high}."]})
        return value

    @staticmethod
    def _timestamps(params: Mapping[str, Any]) -> tuple[int | None, int | None]:
        start, end = params.get("from"), params.get("to")
        for value in (start, end):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 0
            ):
                raise Refusal(422, {"code": 422, "message": "Incorrect timestamp"})
        if start is not None and end is not None and start > end:
            raise Refusal(422, {"code": 422, "message": "Incorrect timestamp"})
        return start, end

    def _balance(self, params: dict[str, Any]) -> Any:
        if self.dialect == "spec" or "ticker" not in params:
            return self.balance
        ticker = params["ticker"]
        if not isinstance(ticker, str):
            raise validation(422, 0, "Validation failed", {"ticker": ["validation.string"]})
        # An unknown ticker is a zero balance, not an error.
        return self.balance.get(ticker.upper(), {"main_balance": "0"})

    def _rewards(self, params: dict[str, Any]) -> Any:
        start, end = self._timestamps(params)
        limit = self._int_param(params, "limit", 1, 100, 30)
        offset = self._int_param(params, "offset", 0, 10000, 0)
        assert limit is not None and offset is not None
        limit = min(limit, self.max_page)
        account = params.get("account")
        if account is not None and not isinstance(account, str):
            raise validation(400, 0, "Validation failed",
                             {"account": ["The account must be a string."]})
        return {
            "offset": offset,
            "limit": limit,
            "data": self.rewards.page(account, start, end, offset, limit),
        }

    def _hashrate(self, params: dict[str, Any], now: float) -> Any:
        start, end = self._timestamps(params)
        interval = params.get("interval", "1h")
        step = _INTERVALS.get(interval) if isinstance(interval, str) else None
        if step is None:
            raise validation(400, 0, "Validation failed",
                             {"interval": ["The selected interval is invalid."]})
        account = params.get("account")
        if account is not None and not isinstance(account, str):
            raise validation(400, 0, "Validation failed",
                             {"account": ["The account must be a string."]})
        live = self.dialect == "live"
        if live:
            if account is None:
                raise validation(400, 0, "Validation failed",
                                 {"account": ["The account field is required."]})
            if account in self.disabled_accounts:
                return {"data": []}
            if account not in self.rewards.index and account not in self.created_accounts:
                raise validation(400, 0, "Validation failed", {"account": ["Account not found"]})
        end = int(now) if end is None else end
        start = end - 86400 if start is None else start
        first = -(-start // step) * step
        points: list[dict[str, Any]] = []
        index = self.rewards.index.get(account or "", 0)
        for moment in range(first, end + 1, step):
            if len(points) >= 2000:
                break
            h = mix(self.seed, index, moment)
            if live:
                # H/s with no unit, and the share of rejected work as a JSON number.
                points.append({"timestamp": moment,
                               "hashrate": str((100 + h % 900) * 10**12 + (h >> 12) % 10**10),
                               "rejectRate": msgspec.Raw(f"0.00{(h >> 40) % 100:02d}".encode())})
            else:
                points.append({"timestamp": moment,
                               "hashrate": f"{100 + h % 900}.{(h >> 12) % 100:02d} TH/s"})
        return {"data": {"account": account or "", "hashrate": points}}

    def _investments(self, key: Key, params: dict[str, Any]) -> Any:
        if not key.b2b:
            raise validation(403, 0, "This API key has no access to B2B lending", {})
        errors: dict[str, list[str]] = {}
        ident, ticker, status = params.get("id"), params.get("ticker"), params.get("status")
        if ident is not None and not isinstance(ident, str):
            errors["id"] = ["The id must be a string."]
        if ticker is not None and not isinstance(ticker, str):
            errors["ticker"] = ["The ticker must be a string."]
        if status is not None and (isinstance(status, bool) or status not in (1, 2)):
            errors["status"] = ["The selected status is invalid."]
        if errors:
            raise validation(400, 0, "Validation failed", errors)
        limit = self._int_param(params, "limit", 1, 100, 100)
        offset = self._int_param(params, "offset", 0, 10000, 0)
        assert limit is not None and offset is not None
        limit = min(limit, self.max_page)
        records = self.investments.query(ident, ticker, status)
        return {"offset": offset, "limit": limit, "records": records[offset : offset + limit]}

    def _order(self, key: Key, params: dict[str, Any], now: float) -> Any:
        errors: dict[str, list[str]] = {}
        for name in ("market", "side", "amount", "price", "activation_price"):
            if name not in params:
                errors[name] = [f"The {name} field is required."]
        market = params.get("market")
        if "market" in params and (not isinstance(market, str) or market not in MARKETS):
            errors["market"] = ["Market is not available."]
        if "side" in params and params.get("side") not in ("buy", "sell"):
            errors["side"] = ["The selected side is invalid."]
        amounts: dict[str, Decimal] = {}
        for name in ("amount", "price", "activation_price", "stopLoss", "takeProfit"):
            if name in params:
                value = params[name]
                if not isinstance(value, str) or not _DECIMAL.fullmatch(value):
                    errors[name] = [f"The {name} must be a numeric string."]
                    continue
                try:
                    amounts[name] = Decimal(value)
                except InvalidOperation:  # pragma: no cover - the pattern guarantees a number
                    errors[name] = [f"The {name} must be a numeric string."]
                    continue
                if amounts[name] <= 0:
                    errors[name] = [f"The {name} must be greater than 0."]
        position = params.get("positionSide", "BOTH")
        if position not in ("LONG", "SHORT", "BOTH"):
            errors["positionSide"] = ["The selected positionSide is invalid."]
        live = self.dialect == "live"
        # Each dialect reads its own name and ignores the other, as the live service ignores
        # client_order_id.
        id_field = "clientOrderId" if live else "client_order_id"
        client_id = params.get(id_field)
        if client_id is not None and not (
            isinstance(client_id, str) and _CLIENT_ORDER_ID.fullmatch(client_id)
        ):
            errors[id_field] = [
                f"The {id_field} may only contain letters, digits, dashes, dots and "
                "underscores."
            ]
        reduce_only = params.get("reduceOnly", False) if live else False
        stp = params.get("stp", "no") if live else "no"
        if live:
            if not isinstance(reduce_only, bool):
                errors["reduceOnly"] = ["The reduceOnly field must be true or false."]
            if not isinstance(stp, str) or stp not in _STP:
                errors["stp"] = ["The selected stp is invalid."]
        if errors:
            raise validation(422, 30, "Request validation failed", errors)
        if reduce_only and ("stopLoss" in params or "takeProfit" in params):
            raise validation(400, 30, "Validation failed", {"reduceOnly": [
                "A reduce-only order cannot have stopLoss or takeProfit."]})
        if amounts["amount"] < MIN_ORDER_AMOUNT:
            raise validation(400, 32, "Inner validation failed",
                             {"amount": [f"Amount must be at least {MIN_ORDER_AMOUNT}."]})
        # Unique among the account's open orders on the market (the sandbox's orders stay
        # open): another market may reuse it.
        if client_id is None:
            client_id = ""
        else:
            placed = (str(market), str(client_id))
            if placed in key.client_order_ids:
                raise validation(400, 36 if live else 31, "Inner validation failed",
                                 {id_field: ["This client order id is already used."]})
            key.client_order_ids.add(placed)
        self.next_order_id += 1
        order: dict[str, Any] = {
            "order_id": self.next_order_id,
            "client_order_id": client_id,
            "market": market,
            "side": params["side"],
            "type": "stop limit",
            "timestamp": round(now, 6),
            "deal_money": "0",
            "deal_stock": "0",
            "amount": params["amount"],
            "left": params["amount"],
            "deal_fee": "0",
            "price": params["price"],
            "activation_price": params["activation_price"],
            "status": "NEW",
            "stp": _STP[stp],
            "positionSide": position,
        }
        if live:
            order = self._live_order(order, reduce_only)
        if "stopLoss" in params or "takeProfit" in params:
            order["oto"] = {
                "otoId": self.next_order_id + 500_000_000,
                "stopLoss": params.get("stopLoss", ""),
                "takeProfit": params.get("takeProfit", ""),
            }
            if not order["oto"]["stopLoss"]:
                del order["oto"]["stopLoss"]
            if not order["oto"]["takeProfit"]:
                del order["oto"]["takeProfit"]
        self.stats.orders.append(order)
        return order

    def _live_order(self, order: dict[str, Any], reduce_only: bool) -> dict[str, Any]:
        """``order`` as the live service answers it: camelCase names, ``reduceOnly``, and one of
        the statuses REST returns, with the amounts dealt that go with it."""
        state = _LIVE_ORDER_STATES[len(self.stats.orders) % len(_LIVE_ORDER_STATES)]
        amount, price = Decimal(order["amount"]), Decimal(order["price"])
        dealt = {"FILLED": amount, "PARTIALLY_FILLED": amount / 2}.get(state, Decimal(0))
        money = dealt * price
        order |= {
            "status": state,
            "deal_stock": _plain(dealt),
            "deal_money": _plain(money),
            "deal_fee": _plain(money * _TAKER_FEE),
            "left": _plain(amount - dealt) if state != "CANCELED" else order["amount"],
        }
        live = {_LIVE_ORDER_FIELDS.get(name, name): value for name, value in order.items()}
        live["reduceOnly"] = reduce_only
        return live

    def _create_account(self, params: dict[str, Any], now: float) -> Any:
        name = params.get("name")
        errors: dict[str, list[str]] = {}
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            errors["name"] = ["The name may only contain letters, digits and underscores "
                              "(at most 255)."]
        elif name in self.created_accounts or name in self.rewards.index:
            errors["name"] = ["The name has already been taken."]
        referral = params.get("referralCode")
        if referral is not None and (not isinstance(referral, str) or len(referral) > 50):
            errors["referralCode"] = ["The referral code may not be greater than 50 characters."]
        if errors:
            raise validation(400, 0, "Validation failed", errors)
        assert isinstance(name, str)
        self.created_accounts[name] = int(now)
        return {"data": {"name": name, "createdAt": int(now)}}


def _plain(amount: Decimal) -> str:
    """An amount as the service writes one: plain notation, no trailing zeros."""
    text = format(amount, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text
