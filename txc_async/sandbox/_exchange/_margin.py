"""Collateral trading: the collateral balance, leverage, hedge mode and the positions that margin
orders open, grow, reduce and close.

The collateral balance of an asset changes only by transfers, realised profit and loss, and fees,
so it adds up to the last decimal. What positions and open orders tie up (their margin) is
computed from them, never moved: a position's margin is ``|amount| * basePrice / leverage``
rounded up to the money asset's precision, an open order's is the same of what it has left plus
its taker fee.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Protocol

import msgspec

from ._answers import order_answer
from ._book import Order
from ._errors import refused
from ._ledger import Ledger
from ._markets import ASSETS, Market
from ._numbers import ZERO, divide_down, divide_up, exact, places, plain, step

__all__ = ["LEVERAGES", "Margin", "Position", "Venue"]

#: The leverage levels the service accepts (POST /api/v4/collateral-account/leverage).
LEVERAGES = (1, 2, 3, 5, 10, 20, 50, 100)
#: Extra decimal places of a position's base price beyond the market's money precision.
_BASE_EXTRA = 4


class Venue(Protocol):
    """What collateral trading needs of the exchange it belongs to (the `Exchange`)."""

    seed: int
    now: float
    ledger: Ledger
    last_price: dict[str, Decimal]
    open: dict[int, Order]

    def market(self, name: Any, *, code: int = ...) -> Market: ...
    def check_limit(self, market: Market, amount: Decimal, price: Decimal | None) -> None: ...
    def _check_client_id(self, account: str, market: Market, client_id: str) -> None: ...
    def _new(self, account: str, market: Market, side: str, kind: str, amount: Decimal,
             price: Decimal | None, client_id: str, **flags: Any) -> Order: ...
    def _wait(self, order: Order) -> None: ...
    def _crosses(self, market: Market, side: str, price: Decimal) -> bool: ...
    def _execute(self, order: Order, limit: Decimal | None) -> None: ...
    def _run_triggers(self) -> None: ...
    def _finish(self, order: Order, status: str, *, resting: bool = ...) -> None: ...


@dataclass(slots=True)
class Position:
    """An open position: ``amount`` is signed (negative: short)."""

    id: int
    account: str
    market: Market
    side: str  # LONG, SHORT or BOTH
    hedge: bool
    opened: float
    modified: float = 0.0
    amount: Decimal = ZERO
    base_price: Decimal = ZERO
    realized: Decimal = ZERO
    fees: Decimal = ZERO
    entry_stock: Decimal = ZERO
    entry_money: Decimal = ZERO
    exit_stock: Decimal = ZERO
    exit_money: Decimal = ZERO
    history: list[dict[str, Any]] = field(default_factory=list)


class Margin:
    """The collateral side of an `Exchange`."""

    def __init__(self, exchange: Venue, opening: dict[str, Decimal]) -> None:
        self.exchange = exchange
        self.opening = opening
        self.leverage: dict[str, int] = {}
        self.hedge: dict[str, bool] = {}
        self.positions: dict[tuple[str, str, str], Position] = {}
        self.closed: dict[str, list[Position]] = {}
        self._ids = 500 + exchange.seed * 1000
        self._opened: set[str] = set()

    # -- balances -----------------------------------------------------------------------------

    def balances(self, account: str) -> dict[str, Decimal]:
        if account not in self._opened:
            self._opened.add(account)
            for asset, amount in self.opening.items():
                self.exchange.ledger.collateral_add(account, asset, amount)
        return self.exchange.ledger.collateral(account)

    def _precision(self, asset: str) -> int:
        found = ASSETS.get(asset)
        return found.precision if found else 8

    def position_margin(self, position: Position) -> Decimal:
        leverage = self.leverage.get(position.account, 10)
        return divide_up(abs(position.amount) * position.base_price, Decimal(leverage),
                         self._precision(position.market.money))

    def order_margin(self, order: Order, price: Decimal | None = None) -> Decimal:
        """What an open margin order ties up: the margin of what it has left and its fee."""
        if order.reduce_only:
            return ZERO
        market = order.market
        reference = order.price or price or self.exchange.last_price[market.name]
        notional = order.left * reference
        leverage = self.leverage.get(order.account, 10)
        return divide_up(notional, Decimal(leverage), self._precision(market.money)) + (
            notional * market.taker_ratio)

    def unrealized(self, position: Position) -> Decimal:
        last = self.exchange.last_price[position.market.name]
        return position.amount * (last - position.base_price)

    def free(self, account: str, asset: str) -> Decimal:
        """The collateral of ``asset`` not tied up by positions or open orders."""
        balance = self.balances(account).get(asset, ZERO)
        for position in self._positions_of(account):
            if position.market.money == asset:
                balance += self.unrealized(position) - self.position_margin(position)
        for order in self.exchange.open.values():
            if order.account == account and order.margin and order.market.money == asset:
                balance -= order.frozen
        return balance

    def _positions_of(self, account: str, market: str | None = None) -> list[Position]:
        return [p for (owner, name, _), p in self.positions.items()
                if owner == account and (market is None or name == market)]

    # -- orders -------------------------------------------------------------------------------

    def _side_key(self, account: str, position_side: str | None) -> str:
        hedge = self.hedge.get(account, False)
        if hedge and position_side not in ("LONG", "SHORT"):
            raise refused(114, "positionSide", "Hedge mode position side does not match.")
        if not hedge and position_side not in (None, "BOTH"):
            raise refused(114, "positionSide", "Hedge mode position side does not match.")
        return position_side if hedge else "BOTH"  # type: ignore[return-value]

    def _reduces(self, account: str, market: Market, side: str, key: str) -> Position | None:
        """The position an order of ``side`` would reduce, if any."""
        position = self.positions.get((account, market.name, key))
        if position is None:
            return None
        if key == "BOTH":
            return position if (position.amount > ZERO) == (side == "sell") else None
        return position if (key == "LONG") == (side == "sell") else None

    @exact
    def place(
        self, account: str, market: str, side: str, amount: Decimal, price: Decimal | None, *,
        activation: Decimal | None = None, client_id: str = "", post_only: bool = False,
        ioc: bool = False, stp: str = "no", position_side: str | None = None,
        reduce_only: bool = False, stop_loss: Decimal | None = None,
        take_profit: Decimal | None = None,
    ) -> dict[str, Any]:
        """Place a margin order (limit with ``price``, market without; a stop when
        ``activation`` is given) on the collateral balance."""
        order = self._order(account, market, side, amount, price, activation=activation,
                            client_id=client_id, post_only=post_only, ioc=ioc, stp=stp,
                            position_side=position_side, reduce_only=reduce_only)
        if stop_loss is not None or take_profit is not None:
            oto: dict[str, object] = {"otoId": order.id + 500_000_000}
            if stop_loss is not None:
                oto["stopLoss"] = plain(stop_loss)
            if take_profit is not None:
                oto["takeProfit"] = plain(take_profit)
            order.oto = oto
        self._submit(order)
        return order_answer(order)

    def _order(
        self, account: str, market: str, side: str, amount: Decimal, price: Decimal | None, *,
        activation: Decimal | None, client_id: str, post_only: bool, ioc: bool, stp: str,
        position_side: str | None, reduce_only: bool,
    ) -> Order:
        exchange = self.exchange
        found = exchange.market(market)
        if not found.collateral:
            raise refused(31, "market", "Market is not available.")
        exchange.check_limit(found, amount, price)
        if activation is not None and (activation <= ZERO or places(activation) >
                                       found.money_prec):
            raise refused(33, "activation_price",
                          f"Min price step = {plain(step(found.money_prec))}")
        if post_only and ioc:
            raise refused(37, "ioc", "Either IOC or PostOnly flag in true state is allowed.")
        exchange._check_client_id(account, found, client_id)
        key = self._side_key(account, position_side)
        reduced = self._reduces(account, found, side, key)
        if (key != "BOTH" and (key == "LONG") == (side == "sell")) or reduce_only:
            # Closing a hedge side, or reduce-only: only what the position holds.
            if reduced is None:
                raise refused(116, "reduceOnly", "Reduce-only validation failed.")
            amount = min(amount, abs(reduced.amount))
        kind = ("margin stop limit" if activation is not None and price is not None else
                "margin stop market" if activation is not None else
                "margin limit" if price is not None else "margin market")
        order = exchange._new(account, found, side, kind, amount, price, client_id,
                              post_only=post_only, ioc=ioc, stp=stp, activation_price=activation,
                              margin=True, position_side=key, reduce_only=reduce_only)
        order.frozen = self.order_margin(order)
        if order.frozen > self.free(account, found.money):
            raise refused(10, "amount", "Not enough balance.")
        return order

    def _submit(self, order: Order) -> None:
        exchange = self.exchange
        if order.is_stop:
            exchange._wait(order)
        else:
            if order.post_only and order.price is not None and exchange._crosses(
                    order.market, order.side, order.price):
                raise refused(30, "postOnly", "Post only order would be executed immediately.")
            exchange._execute(order, order.price)
        exchange._run_triggers()

    @exact
    def place_oco(
        self, account: str, market: str, side: str, amount: Decimal, price: Decimal,
        activation: Decimal, stop_price: Decimal, *, client_id: str = "", stp: str = "no",
        position_side: str | None = None, reduce_only: bool = False,
    ) -> dict[str, Any]:
        """Place an OCO pair: a take-profit limit order at ``price`` and a stop-loss stop-limit
        order (``activation``, ``stop_price``); when one trades or wakes, the other is
        cancelled."""
        take = self._order(account, market, side, amount, price, activation=None,
                           client_id=client_id, post_only=False, ioc=False, stp=stp,
                           position_side=position_side, reduce_only=reduce_only)
        stop = self._order(account, market, side, amount, stop_price, activation=activation,
                           client_id="", post_only=False, ioc=False, stp=stp,
                           position_side=position_side, reduce_only=reduce_only)
        if take.frozen + stop.frozen > self.free(account, take.market.money):
            raise refused(10, "amount", "Not enough balance.")
        take.oco_partner, stop.oco_partner = stop.id, take.id
        self.exchange._wait(stop)
        self._submit(take)
        return {"id": take.id, "reduceOnly": reduce_only,
                "stop_loss": oco_leg(stop), "take_profit": oco_leg(take)}

    def wake(self, order: Order) -> None:
        """A margin stop order woke: its margin is taken at the price it now trades at."""
        order.frozen = self.order_margin(order)

    def release(self, order: Order) -> None:
        """A margin order finished: it ties up nothing any more (nothing was moved)."""
        order.frozen = ZERO

    # -- fills --------------------------------------------------------------------------------

    def on_fill(self, order: Order, quantity: Decimal, price: Decimal, fee: Decimal) -> None:
        """A margin order traded ``quantity`` at ``price``: the fee leaves the collateral
        balance, the position moves, and profit or loss realised on a reduction is booked."""
        exchange, market, account = self.exchange, order.market, order.account
        self.balances(account)
        exchange.ledger.collateral_add(account, market.money, -fee)
        key = (account, market.name, order.position_side)
        position = self.positions.get(key)
        now = round(exchange.now, 6)
        if position is None:
            self._ids += 1
            position = Position(self._ids, account, market, order.position_side,
                                self.hedge.get(account, False), now)
            self.positions[key] = position
        signed = quantity if order.side == "buy" else -quantity
        realized = self._move(position, signed, price)
        position.fees += fee
        position.modified = now
        if realized:
            exchange.ledger.collateral_add(account, market.money, realized)
        position.history.append({
            "positionId": position.id, "market": market.name, "openDate": position.opened,
            "modifyDate": now, "amount": plain(position.amount),
            "basePrice": plain(position.base_price), "realizedFunding": "0",
            "liquidationPrice": None, "liquidationState": None,
            "orderDetail": {"id": order.id, "tradeAmount": plain(quantity),
                            "price": plain(price), "tradeFee": plain(fee), "fundingFee": None,
                            "realizedPnl": plain(realized) if realized else None},
            "side": position.side, "isHedge": position.hedge,
        })
        order.frozen = self.order_margin(order)
        if position.amount == ZERO:
            del self.positions[key]
            self.closed.setdefault(account, []).append(position)
            self._cancel_reduce_only(account, market)

    def _move(self, position: Position, signed: Decimal, price: Decimal) -> Decimal:
        """Add ``signed`` stock at ``price`` to ``position``: the profit or loss it realises."""
        prec = position.market.money_prec + _BASE_EXTRA
        amount = position.amount
        if amount == ZERO or (amount > ZERO) == (signed > ZERO):
            total = abs(amount) + abs(signed)
            position.base_price = divide_down(
                abs(amount) * position.base_price + abs(signed) * price, total, prec)
            position.amount = amount + signed
            position.entry_stock += abs(signed)
            position.entry_money += abs(signed) * price
            return ZERO
        closing = min(abs(signed), abs(amount))
        direction = 1 if amount > ZERO else -1
        realized = closing * (price - position.base_price) * direction
        position.realized += realized
        position.exit_stock += closing
        position.exit_money += closing * price
        position.amount = amount + signed
        if position.amount != ZERO and (position.amount > ZERO) != (amount > ZERO):
            # Through zero (one-way mode): what is left opens the other way at this price.
            position.base_price = price
            position.entry_stock += abs(position.amount)
            position.entry_money += abs(position.amount) * price
        return realized

    def _cancel_reduce_only(self, account: str, market: Market) -> None:
        for order in [o for o in self.exchange.open.values() if o.account == account
                      and o.margin and o.reduce_only and o.market is market]:
            self.exchange._finish(order, "AUTO_CANCELED_REDUCE_ONLY")

    # -- settings -----------------------------------------------------------------------------

    def _busy(self, account: str) -> bool:
        return bool(self._positions_of(account)) or any(
            o.account == account and o.margin for o in self.exchange.open.values())

    def set_leverage(self, account: str, leverage: int) -> dict[str, Any]:
        if leverage not in LEVERAGES:
            raise refused(30, "leverage", "The selected leverage is invalid.")
        if self._busy(account):
            raise refused(113, "leverage",
                          "Leverage cannot be changed while open positions or orders exist.")
        self.leverage[account] = leverage
        return {"leverage": leverage}

    def set_hedge(self, account: str, hedge: bool) -> dict[str, Any]:
        if self._busy(account):
            raise refused(113, "hedgeMode",
                          "Hedge mode cannot be changed while open positions or orders exist.")
        self.hedge[account] = hedge
        return {"hedgeMode": hedge}

    @exact
    def close(self, account: str, market: str, position_id: int) -> list[Any]:
        """Close a position at market: a market order the other way for its whole amount."""
        found = next((p for p in self._positions_of(account, market) if p.id == position_id),
                     None)
        if found is None:
            raise refused(104, "positionId", "Position not found.", status=400,
                          message="Inner validation failed")
        exchange = self.exchange
        side = "sell" if found.amount > ZERO else "buy"
        order = exchange._new(account, found.market, side, "margin market", abs(found.amount),
                              None, "", margin=True, position_side=found.side,
                              reduce_only=True)
        exchange._execute(order, None)
        exchange._run_triggers()
        return []

    # -- answers ------------------------------------------------------------------------------

    @exact
    def open_positions(self, account: str, market: str | None = None) -> list[dict[str, Any]]:
        answers = []
        for position in self._positions_of(account, market):
            margin = self.position_margin(position)
            unrealized = self.unrealized(position)
            answers.append({
                "positionId": position.id, "market": position.market.name,
                "openDate": position.opened, "modifyDate": position.modified,
                "amount": plain(position.amount), "basePrice": plain(position.base_price),
                "liquidationPrice": None, "liquidationState": None,
                "pnl": plain(position.realized),
                "pnlPercent": plain(divide_down(unrealized * 100, margin, 2)) if margin else "0",
                "margin": plain(margin),
                "freeMargin": plain(self.free(account, position.market.money)),
                "funding": "0", "unrealizedFunding": "0", "unrealizedPnl": plain(unrealized),
                "tpsl": None, "positionSide": position.side,
            })
        return answers

    def history(self, account: str, market: str | None = None,
                position_id: int | None = None) -> list[dict[str, Any]]:
        positions = self._positions_of(account) + self.closed.get(account, [])
        records = [record for p in positions for record in p.history
                   if (market is None or p.market.name == market)
                   and (position_id is None or p.id == position_id)]
        return sorted(records, key=lambda r: r["modifyDate"], reverse=True)

    @exact
    def closed_pnl(self, account: str, market: str | None = None) -> list[dict[str, Any]]:
        answers = []
        for p in reversed(self.closed.get(account, [])):
            if market is not None and p.market.name != market:
                continue
            prec = p.market.money_prec
            gross = p.realized - p.fees
            answers.append({
                "positionId": p.id, "market": p.market.name, "grossPnl": plain(gross),
                "netPnl": plain(gross), "totalTradeFee": plain(p.fees), "totalFunding": "0",
                "avgEntryPrice": plain(divide_down(p.entry_money, p.entry_stock, prec)),
                "avgExitPrice": plain(divide_down(p.exit_money, p.exit_stock, prec)),
                "closedSize": plain(p.exit_stock), "amount": "0", "side": p.side,
                "isHedge": p.hedge, "openDate": int(p.opened), "closeDate": int(p.modified),
            })
        return answers

    @exact
    def summary(self, account: str) -> dict[str, Any]:
        balance = self.balances(account).get("USDT", ZERO)
        positions = self._positions_of(account)
        pnl = sum((self.unrealized(p) for p in positions), ZERO)
        margin = sum((self.position_margin(p) for p in positions), ZERO)
        equity = balance + pnl
        return {
            "equity": plain(equity), "margin": plain(margin),
            "freeMargin": plain(self.free(account, "USDT")), "unrealizedFunding": "0",
            "pnl": plain(pnl), "leverage": self.leverage.get(account, 10),
            "marginFraction": plain(divide_down(margin, equity, 4)) if equity > ZERO else "0",
        }

    def balance_answer(self, account: str, ticker: str | None) -> dict[str, Any]:
        """``{asset: amount}``, amounts as JSON numbers as the service writes them."""
        balances = self.balances(account)
        assets = [ticker] if ticker is not None else sorted(balances)
        return {asset: msgspec.Raw(plain(balances.get(asset, ZERO)).encode())
                for asset in assets}

    @exact
    def balance_summary(self, account: str, ticker: str | None) -> list[dict[str, Any]]:
        balances = self.balances(account)
        assets = [ticker] if ticker is not None else sorted(balances)
        leverage = self.leverage.get(account, 10)
        answers = []
        for asset in assets:
            free = max(self.free(account, asset), ZERO)
            answers.append({"asset": asset, "balance": plain(balances.get(asset, ZERO)),
                            "borrow": "0", "availableWithoutBorrow": plain(free),
                            "availableWithBorrow": plain(free * leverage)})
        return answers


def oco_leg(order: Order) -> dict[str, Any]:
    """An OCO leg as the service answers it (``OcoOrderLeg``: snake_case flags)."""
    answer = order_answer(order)
    leg: dict[str, Any] = {
        key: answer[key] for key in ("orderId", "clientOrderId", "market", "side", "type",
                                     "timestamp", "dealMoney", "dealStock", "amount", "left",
                                     "dealFee")
    }
    market = order.market
    leg |= {"takerFee": plain(market.taker_ratio), "makerFee": plain(market.maker_ratio),
            "post_only": order.post_only, "mtime": order.created,
            "price": plain(order.price) if order.price is not None else "0",
            "status": "OPEN" if order.finished is None else order.status, "stp": order.stp,
            "positionSide": order.position_side, "reduceOnly": order.reduce_only}
    if order.is_stop:
        assert order.activation_price is not None
        leg |= {"activation_price": plain(order.activation_price),
                "activation_condition": "gte" if order.side == "buy" else "lte",
                "activated": 0 if order.activated is None else 1}
    return leg
