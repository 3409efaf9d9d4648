"""The exchange as a sandbox simulation: each simulated operation's parameters checked as the
service checks them (its documented error bodies and codes, whitebit-exchange/docs,
openapi/private/http-trade-v4.yaml, openapi/private/main_api_v4.yaml and
openapi/public/http-v4.yaml), then handed to the engine."""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from .._simulation import UNHANDLED, SimulationError
from . import _public
from ._answers import deal_answer, history_answer, order_answer, order_deal_answer
from ._engine import Exchange
from ._errors import refused
from ._markets import ASSETS
from ._numbers import exact, parse_decimal, places

__all__ = ["ExchangeSimulation"]

_CLIENT_ORDER_ID = re.compile(r"[A-Za-z0-9._-]{1,255}")
_STP = {"no": "no", "cb": "cb", "cn": "cn", "co": "co", "cancel_both": "cb",
        "cancel_new": "cn", "cancel_old": "co"}
_TYPES = ("spot", "margin", "futures")
_TRANSFER_METHODS = {"deposit": ("main", "spot"), "withdraw": ("spot", "main"),
                     "collateral-deposit": ("main", "collateral"),
                     "collateral-withdraw": ("collateral", "main")}
#: The code of a bad value of each order field (the spot order pages' "Error Codes").
_FIELD_CODES = {"amount": 32, "price": 33, "activation_price": 33, "stop_limit_price": 33,
                "stopLoss": 33, "takeProfit": 33, "total": 32, "activationPrice": 33}

Handler = Callable[[str, dict[str, Any]], Any]


def _label(field: str) -> str:
    """``activation_price`` -> ``Activation price``, as the service's messages name fields."""
    words = re.sub(r"([a-z])([A-Z])", r"\1 \2", field).replace("_", " ").lower()
    return words[0].upper() + words[1:]


def _required(params: dict[str, Any], *names: str) -> None:
    missing = {name: [f"{_label(name)} field is required."] for name in names
               if params.get(name) is None}
    if missing:
        raise SimulationError(422, {"code": 30, "message": "Validation failed",
                                    "errors": missing})


def _decimal(params: dict[str, Any], name: str) -> Decimal | None:
    if params.get(name) is None:
        return None
    value = parse_decimal(params[name])
    if value is None:
        raise refused(_FIELD_CODES.get(name, 30), name,
                      f"{_label(name)} field should be numeric string or number.")
    return value


def _flag(params: dict[str, Any], name: str) -> bool:
    value = params.get(name, False)
    if not isinstance(value, bool):
        raise refused(30, name, f"{_label(name)} field should be a boolean.")
    return value


def _integer(params: dict[str, Any], name: str, default: int | None, low: int = 0,
             high: int = 4294967295) -> int | None:
    value = params.get(name, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise refused(30, name, f"{_label(name)} field should be an integer.")
    if value < low:
        raise refused(30, name, f"The {name} must be at least {low}.")
    if value > high:
        raise refused(30, name, f"The {name} may not be greater than {high}.")
    return value


def _client_id(params: dict[str, Any]) -> str:
    value = params.get("clientOrderId")
    if value is None or value == "":
        return ""
    if not isinstance(value, str):
        raise refused(36, "clientOrderId", "ClientOrderId field should be a string.")
    if not _CLIENT_ORDER_ID.fullmatch(value):
        raise refused(36, "clientOrderId",
                      "ClientOrderId field should contain only latin letters, numbers and "
                      "dashes.")
    return value


def _side(params: dict[str, Any]) -> str:
    side = params["side"]
    if side not in ("buy", "sell"):
        raise refused(30, "side", "Side field should contain only 'buy' or 'sell' values.")
    return str(side)


def _stp(params: dict[str, Any]) -> str:
    value = params.get("stp", "no")
    if not isinstance(value, str) or value not in _STP:
        raise refused(30, "stp", "The selected stp is invalid.")
    return _STP[value]


def _position_side(params: dict[str, Any]) -> str | None:
    value = params.get("positionSide")
    if value is not None and value not in ("LONG", "SHORT", "BOTH"):
        raise refused(30, "positionSide", "The selected position side is invalid.")
    return value


def _market_name(params: dict[str, Any], exchange: Exchange, *, required: bool) -> str | None:
    value = params.get("market")
    if value is None:
        if required:
            _required(params, "market")
        return None
    if value == "":
        raise refused(31, "market", "Market field should not be empty string.")
    return exchange.market(value).name


def _page(records: list[Any], params: dict[str, Any], default: int, high: int) -> list[Any]:
    limit = _integer(params, "limit", default, 1, high)
    offset = _integer(params, "offset", 0)
    assert limit is not None and offset is not None
    return records[offset:offset + limit]


class ExchangeSimulation:
    """A `Simulation` answering the exchange's operations from an `Exchange`: spot trading,
    trading balance, transfers, collateral trading and public market data.

    The collateral stop-limit order (``/api/v4/order/collateral/stop-limit``) is left to the
    sandbox's own handler, which answers it as before."""

    def __init__(self, exchange: Exchange) -> None:
        self.exchange = exchange
        self._public: dict[str, Callable[[dict[str, Any]], Any]] = {
            "/api/v4/public/markets": lambda p: _public.markets(self.exchange),
            "/api/v4/public/assets": lambda p: _public.assets(self.exchange),
            "/api/v4/public/ticker": lambda p: _public.ticker(self.exchange),
            "/api/v4/public/time": lambda p: {"time": int(self.exchange.now)},
            "/api/v4/public/orderbook/{market}": self._orderbook,
            "/api/v4/public/orderbook/depth/{market}": self._depth,
            "/api/v4/public/trades/{market}": self._trades,
        }
        self._private: dict[str, Handler] = {
            "/api/v4/trade-account/balance": self._trade_balance,
            "/api/v4/order/new": self._limit,
            "/api/v4/order/bulk": self._bulk,
            "/api/v4/order/market": self._market,
            "/api/v4/order/stock_market": self._stock_market,
            "/api/v4/order/stop_limit": self._stop_limit,
            "/api/v4/order/stop_market": self._stop_market,
            "/api/v4/order/cancel": self._cancel,
            "/api/v4/order/cancel/bulk": self._cancel_bulk,
            "/api/v4/order/cancel/all": self._cancel_all,
            "/api/v4/orders": self._active,
            "/api/v4/trade-account/executed-history": self._executed,
            "/api/v4/trade-account/order": self._order_deals,
            "/api/v4/trade-account/order/history": self._history,
            "/api/v4/order/modify": self._modify,
            "/api/v4/order/kill-switch": self._kill_switch,
            "/api/v4/order/kill-switch/status": self._kill_switch_status,
            "/api/v4/market/fee": self._fee,
            "/api/v4/main-account/transfer": self._transfer,
            "/api/v4/collateral-account/balance": self._collateral_balance,
            "/api/v4/collateral-account/balance-summary": self._collateral_balance_summary,
            "/api/v4/collateral-account/summary": lambda a, p: self.exchange.margin.summary(a),
            "/api/v4/collateral-account/positions/open": self._positions,
            "/api/v4/collateral-account/position/close": self._close_position,
            "/api/v4/collateral-account/positions/history": self._positions_history,
            "/api/v4/collateral-account/positions/closed-pnl": self._closed_pnl,
            "/api/v4/collateral-account/leverage": self._leverage,
            "/api/v4/collateral-account/hedge-mode":
                lambda a, p: {"hedgeMode": self.exchange.margin.hedge.get(a, False)},
            "/api/v4/collateral-account/hedge-mode/update": self._hedge_mode,
            "/api/v4/order/collateral/limit": self._collateral_limit,
            "/api/v4/order/collateral/market": self._collateral_market,
            "/api/v4/order/collateral/trigger-market": self._collateral_trigger_market,
            "/api/v4/order/collateral/oco": self._collateral_oco,
        }

    @property
    def paths(self) -> frozenset[str]:
        """Every path this simulation answers."""
        return frozenset(self._public) | frozenset(self._private)

    def answer(self, method: str, path: str, account: str | None, params: dict[str, Any],
               now: float) -> Any:
        public = self._public.get(path)
        private = self._private.get(path) if account is not None else None
        if public is None and private is None:
            return UNHANDLED
        self.exchange.advance(now)
        if public is not None:
            return public(params)
        assert private is not None and account is not None
        return private(account, params)

    # -- public -------------------------------------------------------------------------------

    def _public_market(self, params: dict[str, Any]) -> str:
        name = params.get("market")
        if not isinstance(name, str) or name not in self.exchange.markets:
            raise SimulationError(422, {"market": ["Market is not available."]})
        return name

    def _public_int(self, params: dict[str, Any], name: str, low: int, high: int) -> int:
        value = params.get(name, 0)
        if isinstance(value, str) and value.isdigit():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise SimulationError(422, {name: [f"The {name} must be an integer."]})
        return min(max(value, low), high)

    def _orderbook(self, params: dict[str, Any]) -> Any:
        name = self._public_market(params)
        return _public.orderbook(self.exchange, name, self._public_int(params, "limit", 0, 100),
                                 self._public_int(params, "level", 0, 10))

    def _depth(self, params: dict[str, Any]) -> Any:
        return _public.depth(self.exchange, self._public_market(params))

    def _trades(self, params: dict[str, Any]) -> Any:
        name = self._public_market(params)
        side = params.get("type")
        if side is not None and side not in ("buy", "sell"):
            raise SimulationError(422, {"type": ["Type should be 'sell' or 'buy'."]})
        return _public.trades(self.exchange, name, side)

    # -- balances -----------------------------------------------------------------------------

    def _trade_balance(self, account: str, params: dict[str, Any]) -> Any:
        balances = self.exchange.balances(account)
        ticker = params.get("ticker")
        if ticker is None:
            return balances
        if not isinstance(ticker, str):
            raise refused(30, "ticker", "Ticker field should be a string.")
        if ticker not in ASSETS:
            raise refused(30, "ticker", "Currency was not found.")
        return {ticker: balances.get(ticker, {"available": "0", "freeze": "0"})}

    @exact
    def _transfer(self, account: str, params: dict[str, Any]) -> Any:
        def invalid(errors: dict[str, list[str]]) -> SimulationError:
            return SimulationError(400, {"code": 0, "message": "Validation failed",
                                         "errors": errors})

        missing = {name: [f"The {name} field is required."] for name in ("amount", "ticker")
                   if params.get(name) is None}
        method = params.get("method")
        if method is None and (params.get("from") is None or params.get("to") is None):
            missing["method"] = ["The method field is required."]
        if missing:
            raise invalid(missing)
        if method is not None and params.get("from") is None:
            if method not in _TRANSFER_METHODS:
                raise invalid({"method": ["The selected method is invalid."]})
            source, target = _TRANSFER_METHODS[method]
        else:
            source, target = params["from"], params["to"]
            wrong = {name: [f"The selected {name} is invalid."] for name, value in
                     (("from", source), ("to", target))
                     if value not in ("main", "spot", "collateral")}
            if wrong:
                raise invalid(wrong)
            if source == target:
                raise invalid({"to": ["The to and from must be different."]})
        ticker = params["ticker"]
        if ticker not in ASSETS:
            raise invalid({"ticker": ["The selected ticker is invalid."]})
        amount = parse_decimal(params["amount"])
        if amount is None or amount <= 0 or places(amount) > 8:
            raise invalid({"amount": ["The amount must be at least 0.00000001."]})
        exchange = self.exchange
        ledger, margin = exchange.ledger, exchange.margin
        available = (ledger.main_amount(ticker) if source == "main" else
                     ledger.holding(account, ticker).available if source == "spot" else
                     margin.free(account, ticker))
        if amount > available:
            raise invalid({"amount": ["Not enough balance."]})
        for side, sign in ((source, -1), (target, 1)):
            if side == "main":
                ledger.main_add(ticker, sign * amount)
            elif side == "spot":
                ledger.credit(account, ticker, sign * amount)
            else:
                margin.balances(account)
                ledger.collateral_add(account, ticker, sign * amount)
        return []

    def _fee(self, account: str, params: dict[str, Any]) -> Any:
        return {"error": None, "taker": "0.1", "maker": "0.08", "futures_taker": "0.05",
                "futures_maker": "0.02", "rpi_maker_fee_premium": None,
                "futures_rpi_maker_fee_premium": None, "custom_fee": {}}

    # -- spot orders --------------------------------------------------------------------------

    def _limit(self, account: str, params: dict[str, Any]) -> Any:
        _required(params, "market", "side", "amount", "price")
        market = _market_name(params, self.exchange, required=True)
        side = _side(params)
        amount, price = _decimal(params, "amount"), _decimal(params, "price")
        assert market is not None and amount is not None and price is not None
        return self.exchange.place_limit(
            account, market, side, amount, price, client_id=_client_id(params),
            post_only=_flag(params, "postOnly"), ioc=_flag(params, "ioc"), stp=_stp(params))

    def _bulk(self, account: str, params: dict[str, Any]) -> Any:
        orders = params.get("orders")
        if not isinstance(orders, list) or not 1 <= len(orders) <= 20:
            raise refused(30, "orders", "The orders must be an array.")
        stop_on_fail = _flag(params, "stopOnFail")
        results: list[dict[str, Any]] = []
        for item in orders:
            try:
                if not isinstance(item, dict):
                    raise refused(30, "request", "Invalid order format")
                results.append({"result": self._limit(account, item), "error": None})
            except SimulationError as error:
                results.append({"result": None, "error": error.body})
                if stop_on_fail:
                    break
        return results

    def _market(self, account: str, params: dict[str, Any], *, stock: bool = False) -> Any:
        _required(params, "market", "side", "amount")
        market = _market_name(params, self.exchange, required=True)
        side, amount = _side(params), _decimal(params, "amount")
        assert market is not None and amount is not None
        return self.exchange.place_market(account, market, side, amount,
                                          client_id=_client_id(params), stp=_stp(params),
                                          stock=stock)

    def _stock_market(self, account: str, params: dict[str, Any]) -> Any:
        return self._market(account, params, stock=True)

    def _stop_limit(self, account: str, params: dict[str, Any]) -> Any:
        _required(params, "market", "side", "amount", "price", "activation_price")
        return self._stop(account, params, _decimal(params, "price"))

    def _stop_market(self, account: str, params: dict[str, Any]) -> Any:
        _required(params, "market", "side", "amount", "activation_price")
        return self._stop(account, params, None)

    def _stop(self, account: str, params: dict[str, Any], price: Decimal | None) -> Any:
        market = _market_name(params, self.exchange, required=True)
        side = _side(params)
        amount, activation = _decimal(params, "amount"), _decimal(params, "activation_price")
        assert market is not None and amount is not None and activation is not None
        return self.exchange.place_stop(account, market, side, amount, activation, price,
                                        client_id=_client_id(params), stp=_stp(params))

    def _identified(self, params: dict[str, Any]) -> tuple[int | None, str | None]:
        order_id, client_id = params.get("orderId"), params.get("clientOrderId")
        if (order_id is None) == (client_id is None):
            raise refused(30, "orderId", "Either orderId or clientOrderId is required.")
        if order_id is not None and (isinstance(order_id, bool) or
                                     not isinstance(order_id, int)):
            raise refused(30, "orderId", "OrderId field should be an integer.")
        if client_id is not None and not isinstance(client_id, str):
            raise refused(36, "clientOrderId", "ClientOrderId field should be a string.")
        return order_id, client_id

    def _cancel(self, account: str, params: dict[str, Any]) -> Any:
        market = _market_name(params, self.exchange, required=True)
        order_id, client_id = self._identified(params)
        assert market is not None
        return self.exchange.cancel(account, market, order_id, client_id)

    def _cancel_bulk(self, account: str, params: dict[str, Any]) -> Any:
        orders = params.get("orders")
        if not isinstance(orders, list) or not orders:
            raise refused(30, "orders", "validation.required")
        if len(orders) > 100:
            raise refused(30, "orders", "validation.between")
        results: list[dict[str, Any]] = []
        for item in orders:
            try:
                results.append({"result": self._cancel_item(account, item), "error": None})
            except SimulationError as error:
                results.append({"result": None, "error": error.body})
        return results

    def _cancel_item(self, account: str, item: Any) -> dict[str, Any]:
        if not isinstance(item, dict):
            raise refused(30, "request", "Invalid order format")
        if item.get("market") is None:
            raise refused(30, "market", "validation.required")
        if item["market"] not in self.exchange.markets:
            raise refused(30, "market", "validation.market_not_exist")
        order_id, client_id = item.get("orderId"), item.get("clientOrderId")
        if order_id is None and client_id is None:
            raise refused(30, "request", "validation.required")
        if order_id is not None and client_id is not None:
            raise refused(30, "request", "api.validation.order.chooseOneId")
        try:
            answer = self.exchange.cancel(account, item["market"], order_id, client_id)
        except SimulationError:
            raise SimulationError(200, {"code": 404, "message": "Order not found", "errors": {
                "orderId": ["Order does not exist or already cancelled"]}}) from None
        result = {"orderId": answer["orderId"], "market": answer["market"]}
        if answer["clientOrderId"]:
            result["clientOrderId"] = answer["clientOrderId"]
        return result

    def _types(self, params: dict[str, Any]) -> list[str] | None:
        types = params.get("type", params.get("types"))
        if types is None:
            return None
        if not isinstance(types, list) or any(t not in _TYPES for t in types):
            raise refused(30, "type", "The type must be an array.")
        return list(types)

    def _cancel_all(self, account: str, params: dict[str, Any]) -> Any:
        market = _market_name(params, self.exchange, required=False)
        return self.exchange.cancel_all(account, market, self._types(params))

    def _active(self, account: str, params: dict[str, Any]) -> Any:
        market = _market_name(params, self.exchange, required=False)
        orders = self.exchange.open_orders(account, market)
        order_id, client_id = params.get("orderId"), params.get("clientOrderId")
        if order_id is not None:
            orders = [o for o in orders if o.id == order_id]
        if client_id is not None:
            orders = [o for o in orders if o.client_id == client_id]
        return [order_answer(o) for o in _page(orders, params, 50, 100)]

    def _executed(self, account: str, params: dict[str, Any]) -> Any:
        market = _market_name(params, self.exchange, required=False)
        deals = list(reversed(self.exchange.executed.get(account, [])))
        client_id = params.get("clientOrderId")
        if client_id is not None:
            deals = [d for d in deals if d.order.client_id == client_id]
            if not deals:
                raise refused(30, "orderHistory", "OrderHistory was not found.")
        start, end = params.get("startDate"), params.get("endDate")
        deals = [d for d in deals if (market is None or d.order.market.name == market)
                 and (start is None or d.time >= start) and (end is None or d.time <= end)]
        page = _page(deals, params, 50, 500)
        if market is not None:
            return [deal_answer(d) for d in page]
        grouped: dict[str, list[Any]] = {}
        for deal in page:
            grouped.setdefault(deal.order.market.name, []).append(deal_answer(deal))
        return grouped

    def _order_deals(self, account: str, params: dict[str, Any]) -> Any:
        _required(params, "orderId")
        order_id = _integer(params, "orderId", None)
        assert order_id is not None
        deals = [d for d in self.exchange.deals_of(order_id) if d.order.account == account]
        limit = _integer(params, "limit", 50, 1, 100)
        offset = _integer(params, "offset", 0)
        assert limit is not None and offset is not None
        return {"records": [order_deal_answer(d) for d in deals[offset:offset + limit]],
                "offset": offset, "limit": limit}

    def _history(self, account: str, params: dict[str, Any]) -> Any:
        market = _market_name(params, self.exchange, required=False)
        orders = list(reversed(self.exchange.finished.get(account, [])))
        order_id, client_id = params.get("orderId"), params.get("clientOrderId")
        if order_id is not None:
            orders = [o for o in orders if o.id == order_id]
        elif client_id is not None:
            orders = [o for o in orders if o.client_id == client_id]
            if not orders:
                raise refused(30, "orderHistory", "OrderHistory was not found.")
        else:
            status = params.get("status", "ALL")
            if status not in ("ALL", "FILLED", "CANCELED", "PARTIALLY_FILLED"):
                raise refused(30, "status", "The selected status is invalid.")
            if status != "ALL":
                orders = [o for o in orders if o.status == status or (status ==
                          "PARTIALLY_FILLED" and o.status == "CANCELED" and o.deal_stock)]
        orders = [o for o in orders if market is None or o.market.name == market]
        grouped: dict[str, list[Any]] = {}
        for order in _page(orders, params, 50, 500):
            grouped.setdefault(order.market.name, []).append(history_answer(order))
        return grouped

    def _modify(self, account: str, params: dict[str, Any]) -> Any:
        market = _market_name(params, self.exchange, required=True)
        order_id, client_id = self._identified(params)
        values = {name: _decimal(params, name)
                  for name in ("amount", "total", "price", "activationPrice")}
        if all(value is None for value in values.values()):
            raise refused(30, "amount", "Request must contain at least one of amount, total, "
                          "price, activationPrice.")
        if values["amount"] is not None and values["total"] is not None:
            raise refused(30, "total", "Amount and total are mutually exclusive.")
        assert market is not None
        return self.exchange.modify(
            account, market, order_id, client_id, amount=values["amount"],
            total=values["total"], price=values["price"], activation=values["activationPrice"],
            stp=_stp(params) if "stp" in params else None)

    def _kill_switch(self, account: str, params: dict[str, Any]) -> Any:
        errors = {}
        if params.get("market") is None:
            errors["market"] = ["Market field is required."]
        if "timeout" not in params:
            errors["timeout"] = ["Timeout field is required."]
        if errors:
            raise SimulationError(422, {"code": 30, "message": "Validation failed",
                                        "errors": errors})
        market = _market_name(params, self.exchange, required=True)
        raw = params["timeout"]
        timeout = None if raw is None else parse_decimal(raw)
        if raw is not None and (timeout is None or timeout != int(timeout)):
            raise refused(30, "timeout", "Timeout should be an integer.")
        if timeout is not None and not 5 <= timeout <= 600:
            raise refused(30, "timeout", "Timeout should be at least 5." if timeout < 5 else
                          "Timeout may not be greater than 600.")
        assert market is not None
        return self.exchange.set_kill_switch(
            account, market, None if timeout is None else int(timeout), self._types(params))

    def _kill_switch_status(self, account: str, params: dict[str, Any]) -> Any:
        market = _market_name(params, self.exchange, required=False)
        return self.exchange.kill_switches(account, market)

    # -- collateral ---------------------------------------------------------------------------

    def _ticker_param(self, params: dict[str, Any]) -> str | None:
        ticker = params.get("ticker")
        if ticker is not None and ticker not in ASSETS:
            raise refused(30, "ticker", "ticker is invalid.")
        return ticker

    def _collateral_balance(self, account: str, params: dict[str, Any]) -> Any:
        return self.exchange.margin.balance_answer(account, self._ticker_param(params))

    def _collateral_balance_summary(self, account: str, params: dict[str, Any]) -> Any:
        return self.exchange.margin.balance_summary(account, self._ticker_param(params))

    def _positions(self, account: str, params: dict[str, Any]) -> Any:
        market = _market_name(params, self.exchange, required=False)
        return self.exchange.margin.open_positions(account, market)

    def _close_position(self, account: str, params: dict[str, Any]) -> Any:
        _required(params, "positionId", "market")
        market = _market_name(params, self.exchange, required=True)
        position_id = _integer(params, "positionId", None)
        assert market is not None and position_id is not None
        return self.exchange.margin.close(account, market, position_id)

    def _positions_history(self, account: str, params: dict[str, Any]) -> Any:
        market = _market_name(params, self.exchange, required=False)
        records = self.exchange.margin.history(account, market, params.get("positionId"))
        return _page(records, params, 50, 100)

    def _closed_pnl(self, account: str, params: dict[str, Any]) -> Any:
        market = _market_name(params, self.exchange, required=False)
        return _page(self.exchange.margin.closed_pnl(account, market), params, 50, 100)

    def _leverage(self, account: str, params: dict[str, Any]) -> Any:
        _required(params, "leverage")
        leverage = _integer(params, "leverage", None, 1, 100)
        assert leverage is not None
        return self.exchange.margin.set_leverage(account, leverage)

    def _hedge_mode(self, account: str, params: dict[str, Any]) -> Any:
        _required(params, "hedgeMode")
        return self.exchange.margin.set_hedge(account, _flag(params, "hedgeMode"))

    def _margin_order(self, account: str, params: dict[str, Any], price: Decimal | None,
                      activation: Decimal | None = None) -> Any:
        market = _market_name(params, self.exchange, required=True)
        side, amount = _side(params), _decimal(params, "amount")
        reduce_only = _flag(params, "reduceOnly")
        stop_loss, take_profit = _decimal(params, "stopLoss"), _decimal(params, "takeProfit")
        if reduce_only and (stop_loss is not None or take_profit is not None):
            raise refused(30, "reduceOnly",
                          "A reduce-only order cannot have stopLoss or takeProfit.")
        assert market is not None and amount is not None
        return self.exchange.margin.place(
            account, market, side, amount, price, activation=activation,
            client_id=_client_id(params), post_only=_flag(params, "postOnly"),
            ioc=_flag(params, "ioc"), stp=_stp(params), position_side=_position_side(params),
            reduce_only=reduce_only, stop_loss=stop_loss, take_profit=take_profit)

    def _collateral_limit(self, account: str, params: dict[str, Any]) -> Any:
        _required(params, "market", "side", "amount", "price")
        return self._margin_order(account, params, _decimal(params, "price"))

    def _collateral_market(self, account: str, params: dict[str, Any]) -> Any:
        _required(params, "market", "side", "amount")
        return self._margin_order(account, params, None)

    def _collateral_trigger_market(self, account: str, params: dict[str, Any]) -> Any:
        _required(params, "market", "side", "amount", "activation_price")
        return self._margin_order(account, params, None, _decimal(params, "activation_price"))

    def _collateral_oco(self, account: str, params: dict[str, Any]) -> Any:
        _required(params, "market", "side", "amount", "price", "activation_price",
                  "stop_limit_price")
        market = _market_name(params, self.exchange, required=True)
        side = _side(params)
        amount, price = _decimal(params, "amount"), _decimal(params, "price")
        activation = _decimal(params, "activation_price")
        stop_price = _decimal(params, "stop_limit_price")
        assert market is not None and amount is not None and price is not None
        assert activation is not None and stop_price is not None
        return self.exchange.margin.place_oco(
            account, market, side, amount, price, activation, stop_price,
            client_id=_client_id(params), stp=_stp(params),
            position_side=_position_side(params), reduce_only=_flag(params, "reduceOnly"))
