"""Orders and the order book: price levels kept sorted, each a queue in arrival order, so that
matching takes the best price first and, at one price, the oldest order first."""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal

from ._markets import Market
from ._numbers import ZERO

__all__ = ["Book", "Order"]


@dataclass(slots=True, eq=False)
class Order:
    """An order of an account, open or finished. ``amount`` and ``left`` are in stock, except for
    a market buy and a stop-market buy, whose ``amount`` and ``left`` are money to spend."""

    id: int
    account: str
    market: Market
    side: str
    type: str
    amount: Decimal
    price: Decimal | None
    client_id: str
    created: float
    post_only: bool = False
    ioc: bool = False
    stp: str = "no"
    activation_price: Decimal | None = None
    activated: float | None = None
    left: Decimal = ZERO
    deal_stock: Decimal = ZERO
    deal_money: Decimal = ZERO
    deal_fee: Decimal = ZERO
    #: What the order holds frozen of ``frozen_asset`` (spot) or of collateral (margin).
    frozen: Decimal = ZERO
    finished: float | None = None
    status: str = "NEW"
    margin: bool = False
    position_side: str = "BOTH"
    reduce_only: bool = False
    oto: dict[str, object] | None = None
    #: The OCO group it belongs to (its partner's id), if any.
    oco_partner: int | None = None
    deals: list[int] = field(default_factory=list)

    @property
    def is_stop(self) -> bool:
        return self.activation_price is not None

    @property
    def in_money(self) -> bool:
        """Whether ``amount`` and ``left`` are money: a buy whose amount is what it spends."""
        return self.side == "buy" and self.type in ("market", "stop market")

    @property
    def family(self) -> str:
        """The kill-switch's and cancel-all's order type: ``spot`` or ``margin``."""
        return "margin" if self.margin else "spot"


class _Side:
    """One side of a book: the prices in ascending order and a queue per price."""

    __slots__ = ("levels", "prices")

    def __init__(self) -> None:
        self.prices: list[Decimal] = []
        self.levels: dict[Decimal, deque[Order]] = {}

    def add(self, order: Order, price: Decimal) -> None:
        queue = self.levels.get(price)
        if queue is None:
            queue = self.levels[price] = deque()
            bisect.insort(self.prices, price)
        queue.append(order)

    def remove(self, order: Order, price: Decimal) -> None:
        queue = self.levels[price]
        queue.remove(order)
        if not queue:
            self.drop(price)

    def drop(self, price: Decimal) -> None:
        del self.levels[price]
        del self.prices[bisect.bisect_left(self.prices, price)]


class Book:
    """The resting limit orders of one market."""

    __slots__ = ("asks", "bids", "market")

    def __init__(self, market: Market) -> None:
        self.market = market
        self.bids = _Side()
        self.asks = _Side()

    def side(self, side: str) -> _Side:
        return self.bids if side == "buy" else self.asks

    def add(self, order: Order) -> None:
        assert order.price is not None
        self.side(order.side).add(order, order.price)

    def remove(self, order: Order) -> None:
        assert order.price is not None
        self.side(order.side).remove(order, order.price)

    def best_bid(self) -> Decimal | None:
        return self.bids.prices[-1] if self.bids.prices else None

    def best_ask(self) -> Decimal | None:
        return self.asks.prices[0] if self.asks.prices else None

    def opposite_best(self, side: str) -> tuple[Decimal, deque[Order]] | None:
        """The best level an order of ``side`` would trade against."""
        if side == "buy":
            prices = self.asks.prices
            if not prices:
                return None
            return prices[0], self.asks.levels[prices[0]]
        prices = self.bids.prices
        if not prices:
            return None
        return prices[-1], self.bids.levels[prices[-1]]

    def drop_level(self, side: str, price: Decimal) -> None:
        """Forget the emptied level ``price`` of the side opposite ``side``."""
        (self.asks if side == "buy" else self.bids).drop(price)

    def depth(self, side: str) -> Iterator[tuple[Decimal, Decimal]]:
        """(price, amount left) of each level of ``side``, best first."""
        book_side = self.side(side)
        prices = reversed(book_side.prices) if side == "buy" else iter(book_side.prices)
        for price in prices:
            yield price, sum((order.left for order in book_side.levels[price]), ZERO)
