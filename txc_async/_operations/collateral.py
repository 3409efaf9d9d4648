"""The collateral market's operations (``/api/v4/order/collateral/*``): the stop-limit order."""

from __future__ import annotations

import re
from typing import TypeVar, get_args

from .._answers.results import AnswerDecoder
from .._limiters.base import RateLimit
from .._models import (
    CollateralOrder,
    PositionSide,
    PositionSideLiteral,
    Side,
    SideLiteral,
    StpLiteral,
)
from .._validate import (
    CLIENT_ORDER_ID,
    CLIENT_ORDER_ID_RULE,
    check_bool,
    check_decimal,
    choice,
    pattern,
)
from .declaration import Auth, Excludes, Operation, Param

__all__ = ["COLLATERAL_STOP_LIMIT"]

T = TypeVar("T")

_MARKET = re.compile(r"[A-Z0-9]{1,20}_[A-Z0-9]{1,20}")
_SIDES: tuple[str, ...] = get_args(SideLiteral)
_POSITION_SIDES: tuple[str, ...] = get_args(PositionSideLiteral)
_STP_MODES: tuple[str, ...] = get_args(StpLiteral)


def _same(value: T) -> T:
    return value


COLLATERAL_STOP_LIMIT: Operation[CollateralOrder] = Operation(
    name="collateral_stop_limit_order", method="POST", path="/api/v4/order/collateral/stop-limit",
    auth=Auth.SIGNED, retry_safe=False, decode=AnswerDecoder(CollateralOrder, _same, write=True),
    scope="collateral_stop_limit_order", rate_limit=RateLimit(10000, 10.0), tag="collateral",
    summary="place a stop-limit order on the collateral market",
    params=(
        Param("market", kind="text", required=True, metavar="M",
              help="the market, e.g. BTC_USDT",
              check=pattern(_MARKET, "must be <BASE>_<QUOTE> in capitals, e.g. 'BTC_USDT'")),
        Param("side", kind="choice", required=True, check=choice(_SIDES, Side),
              choices=_SIDES, enum=Side, help="buy or sell"),
        Param("amount", kind="decimal", required=True, check=check_decimal, metavar="A",
              help="amount of the base currency, a decimal"),
        Param("price", kind="decimal", required=True, check=check_decimal, metavar="P",
              help="limit price, a decimal"),
        Param("activation_price", kind="decimal", required=True, check=check_decimal,
              metavar="P", help="price that activates the order, a decimal"),
        Param("stop_loss", kind="decimal", wire=("stopLoss",), check=check_decimal, metavar="P",
              help="stop-loss price (default: none)"),
        Param("take_profit", kind="decimal", wire=("takeProfit",), check=check_decimal,
              metavar="P", help="take-profit price (default: none)"),
        # Under both names: the service reads clientOrderId and silently ignores
        # client_order_id (whitebit-exchange/docs, openapi/private/http-trade-v4.yaml,
        # createCollateralStopLimitOrder; the silent drop is stated in that repository's
        # commit 9116e40), while a server built to the API's first specification reads
        # client_order_id. Each ignores the name it does not read, so the id reaches either.
        Param("client_order_id", kind="text", wire=("clientOrderId", "client_order_id"),
              check=pattern(CLIENT_ORDER_ID, CLIENT_ORDER_ID_RULE), metavar="ID",
              help="your id of the order, to look it up by (default: none)"),
        Param("position_side", kind="choice", wire=("positionSide",),
              check=choice(_POSITION_SIDES, PositionSide), choices=_POSITION_SIDES,
              enum=PositionSide, help="position side (default: the service's)"),
        Param("reduce_only", kind="boolean", wire=("reduceOnly",), check=check_bool,
              help="only reduce an open position (default: not set)"),
        Param("stp", kind="choice", check=choice(_STP_MODES), choices=_STP_MODES,
              help="self-trade prevention: no, cb (cancel both), cn (cancel the new order) or "
              "co (cancel the existing one) (default: the service's)"),
    ),
    rules=(
        Excludes("reduce_only", ("stop_loss", "take_profit"),
                 "the service refuses a reduce-only order with OTO legs"),
    ),
)
