"""The exchange's records in the shapes the live service answers them (whitebit-exchange/docs,
openapi/private/http-trade-v4.yaml: ``OrderResponse``, ``ExecutedDeal``, the order-history and
order-deals records): camelCase names, amounts as plain decimal strings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._book import Order
from ._numbers import ZERO, plain

__all__ = ["DealRecord", "deal_answer", "history_answer", "order_answer", "order_deal_answer"]

_LIMIT_TYPES = frozenset({"limit", "stop limit", "margin limit", "margin stop limit"})


@dataclass(frozen=True, slots=True)
class DealRecord:
    """One side of a trade, as the account whose order it was sees it."""

    id: int
    time: float
    order: Order
    counter_order_id: int
    role: int  # 1 maker, 2 taker
    amount: Any  # Decimal
    price: Any
    money: Any
    fee: Any


def status(order: Order) -> str:
    """The order's status: a finished order's final one; an open order ``NEW`` until something
    of it is dealt, then ``PARTIALLY_FILLED``. The live service's active-orders answer shows
    ``NEW`` for an open order (whitebit-exchange/docs, guides/client-order-id.mdx)."""
    if order.finished is not None:
        return order.status
    return "PARTIALLY_FILLED" if order.deal_stock > ZERO else "NEW"


def order_answer(order: Order) -> dict[str, Any]:
    """``OrderResponse``: what creating, cancelling, modifying and listing an order answer."""
    answer: dict[str, Any] = {
        "orderId": order.id,
        "clientOrderId": order.client_id,
        "market": order.market.name,
        "side": order.side,
        "type": order.type,
        "timestamp": order.created,
        "dealMoney": plain(order.deal_money),
        "dealStock": plain(order.deal_stock),
        "amount": plain(order.amount),
        "left": plain(order.left),
        "dealFee": plain(order.deal_fee),
    }
    if order.deal_fee > ZERO:
        answer["feeAsset"] = order.market.money
    if order.type in _LIMIT_TYPES:
        assert order.price is not None
        answer["price"] = plain(order.price)
        answer["postOnly"] = order.post_only
        answer["ioc"] = order.ioc
    answer["status"] = status(order)
    answer["stp"] = order.stp
    if order.is_stop:
        assert order.activation_price is not None
        answer["activation_price"] = plain(order.activation_price)
        answer["activationCondition"] = "gte" if order.side == "buy" else "lte"
        answer["activated"] = 0 if order.activated is None else 1
    if order.margin:
        answer["positionSide"] = order.position_side
        answer["reduceOnly"] = order.reduce_only
        if order.oto is not None:
            answer["oto"] = dict(order.oto)
    return answer


def history_answer(order: Order) -> dict[str, Any]:
    """A record of ``POST /api/v4/trade-account/order/history``: a finished order."""
    answer: dict[str, Any] = {
        "amount": plain(order.amount),
        "price": plain(order.price) if order.price is not None else "0",
        "type": order.type,
        "id": order.id,
        "clientOrderId": order.client_id,
        "side": order.side,
        "ctime": order.created,
        "ftime": order.finished,
        "dealFee": plain(order.deal_fee),
        "dealStock": plain(order.deal_stock),
        "dealMoney": plain(order.deal_money),
        "postOnly": order.post_only,
        "ioc": order.ioc,
        "status": order.status,
        "feeAsset": order.market.money,
    }
    if order.is_stop:
        assert order.activation_price is not None
        if order.activated is not None:
            answer["activated"] = int(order.activated)
        answer["activationPrice"] = plain(order.activation_price)
        answer["activationCondition"] = ">=" if order.side == "buy" else "<="
    if order.margin:
        answer["positionSide"] = order.position_side
        answer["reduceOnly"] = order.reduce_only
    return answer


def deal_answer(deal: DealRecord) -> dict[str, Any]:
    """``ExecutedDeal``: a record of ``POST /api/v4/trade-account/executed-history``."""
    return {
        "id": deal.id,
        "clientOrderId": deal.order.client_id,
        "time": deal.time,
        "side": deal.order.side,
        "role": deal.role,
        "amount": plain(deal.amount),
        "price": plain(deal.price),
        "deal": plain(deal.money),
        "fee": plain(deal.fee),
        "orderId": deal.order.id,
        "feeAsset": deal.order.market.money,
    }


def order_deal_answer(deal: DealRecord) -> dict[str, Any]:
    """A record of ``POST /api/v4/trade-account/order``: one deal of the order asked about."""
    return {
        "time": deal.time,
        "fee": plain(deal.fee),
        "price": plain(deal.price),
        "amount": plain(deal.amount),
        "id": deal.id,
        "dealOrderId": deal.counter_order_id,
        "clientOrderId": deal.order.client_id,
        "role": deal.role,
        "deal": plain(deal.money),
        "feeAsset": deal.order.market.money,
    }
