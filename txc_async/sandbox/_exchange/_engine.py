"""The matching engine: orders placed, matched with price-time priority, settled to the last
decimal, cancelled; stop orders that wake when the last price crosses their activation price;
kill-switch timers; the simulated makers that keep a book around a price that moves."""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from .._data import mix
from ._answers import DealRecord, order_answer
from ._book import Book, Order
from ._errors import refused, unknown_order
from ._ledger import Ledger, NotEnough
from ._margin import Margin
from ._markets import MARKETS, Market
from ._numbers import ZERO, divide_down, exact, places, plain, step, truncate

__all__ = ["MAKERS", "Exchange", "Trade"]

#: The account of the simulated makers (no API key has this name): its balances are not kept.
MAKERS = "\x00makers"
#: How many levels the makers quote on each side, and how far apart (a fraction of the price).
_LEVELS = 10
_SPACING = Decimal("0.0005")


@dataclass(frozen=True, slots=True)
class Trade:
    """A trade of the market, as the public trades answer it."""

    id: int
    time: float
    price: Decimal
    amount: Decimal
    money: Decimal
    side: str  # the taker's


@dataclass(slots=True)
class _Timer:
    market: str
    start: int
    cancel_at: int
    types: list[str] | None


class Exchange:
    """A simulated exchange: markets, balances, orders, trades and collateral positions.

    ``trade_balances`` is the trading balance every account starts with; ``main_balances`` the
    main balance (``{ticker: {"main_balance": "..."}}``), changed in place by transfers.
    ``makers`` keeps a book of simulated makers' orders around each market's price; with
    ``move_every`` (seconds) that price takes a step of a random walk, seeded by ``seed``, every
    ``move_every`` seconds of the clock handed to `advance`, and the makers trade at it.
    """

    def __init__(
        self,
        *,
        seed: int = 0,
        trade_balances: Mapping[str, Decimal] | None = None,
        main_balances: MutableMapping[str, dict[str, str]] | None = None,
        collateral_balances: Mapping[str, Decimal] | None = None,
        markets: Mapping[str, Market] = MARKETS,
        makers: bool = True,
        move_every: float | None = 1.0,
        now: float = 0.0,
    ) -> None:
        self.seed = seed
        self.markets = dict(markets)
        self.books = {name: Book(market) for name, market in self.markets.items()}
        self.ledger = Ledger(trade_balances or {}, {} if main_balances is None else main_balances)
        self.margin = Margin(self, dict(collateral_balances or {}))
        #: Open orders (resting and waiting stops) of every account, by id.
        self.open: dict[int, Order] = {}
        self._by_client: dict[tuple[str, str, str], Order] = {}
        self._stops: dict[str, list[Order]] = {name: [] for name in self.markets}
        #: Finished orders of each account, oldest first.
        self.finished: dict[str, list[Order]] = {}
        self._deals: dict[int, list[DealRecord]] = {}
        self.executed: dict[str, list[DealRecord]] = {}
        self.trades: dict[str, deque[Trade]] = {name: deque(maxlen=100) for name in self.markets}
        self._day: dict[str, deque[Trade]] = {name: deque() for name in self.markets}
        self.last_price = {name: market.opening_price for name, market in self.markets.items()}
        self.mid = dict(self.last_price)
        self._timers: dict[tuple[str, str], _Timer] = {}
        self._order_ids = itertools.count(4_100_000_000 + seed * 1_000_000)
        self._deal_ids = itertools.count(150_000_000 + seed * 1_000_000)
        self._touched: set[str] = set()
        self.makers = makers
        self.move_every = move_every
        self._step: int | None = None
        self.now = now
        self._maker_orders: dict[str, list[Order]] = {name: [] for name in self.markets}
        if makers:
            for name in self.markets:
                exact(self._quote)(name)

    # -- time ---------------------------------------------------------------------------------

    @exact
    def advance(self, now: float) -> None:
        """Bring the exchange to ``now``: fire the kill-switch timers that are due and take the
        steps of the price walk that have come."""
        self.now = max(self.now, now)
        for key, timer in list(self._timers.items()):
            if timer.cancel_at <= now:
                del self._timers[key]
                self._cancel_where(key[0], timer.market, timer.types)
        if self.move_every is None:
            return
        current = int(now // self.move_every)
        if self._step is None:
            self._step = current
            return
        steps = min(current - self._step, 50)
        if steps <= 0:
            return
        for offset in range(steps):
            moment = current - steps + 1 + offset
            for index, name in enumerate(self.markets):
                self._walk(name, index, moment)
        self._step = current

    def _walk(self, name: str, index: int, moment: int) -> None:
        market = self.markets[name]
        h = mix(self.seed, index, moment)
        change = Decimal(h % (2 * 1000 + 1) - 1000).scaleb(-6)  # -0.1 % .. +0.1 %
        price = self.mid[name] * (1 + change)
        self.mid[name] = max(truncate(price, market.money_prec), step(market.money_prec))
        if self.makers:
            self._quote(name)
        # Other participants trade at the new price: the last price follows it.
        self._print(market, self.mid[name], step(market.stock_prec), "buy" if h & 1 else "sell")
        self._run_triggers()

    def move_price(self, market: str, price: Decimal) -> None:
        """Move ``market``'s price to ``price`` now, as the walk would: the makers quote around
        it (crossing the resting orders on their way) and trade at it, so the last price is
        ``price`` and the stop orders it crosses wake (for tests and demonstrations)."""
        with_context = exact(self._move)
        with_context(self.markets[market], price)

    def _move(self, market: Market, price: Decimal) -> None:
        self.mid[market.name] = price
        if self.makers:
            self._quote(market.name)
        self._print(market, price, step(market.stock_prec), "buy")
        self._run_triggers()

    def _quote(self, name: str) -> None:
        """The makers' ladder around the market's mid price: their old orders cancelled, new
        ones placed (which trade with whatever resting orders they cross)."""
        market = self.markets[name]
        for order in self._maker_orders[name]:
            if order.finished is None:
                self._cancel(order)
        quoted = self._maker_orders[name] = []
        mid = self.mid[name]
        gap = max(truncate(mid * _SPACING, market.money_prec), step(market.money_prec))
        for level in range(1, _LEVELS + 1):
            for side, sign in (("buy", -1), ("sell", 1)):
                price = mid + sign * gap * level
                if price <= ZERO:
                    continue
                h = mix(self.seed, level, 0 if side == "buy" else 1,
                        int(mid.scaleb(market.money_prec)))
                amount = market.min_amount * (20 + h % 381)
                order = self._new(MAKERS, market, side, "limit", amount, price, "")
                quoted.append(order)
                self._execute(order, price)

    # -- placing ------------------------------------------------------------------------------

    def _new(self, account: str, market: Market, side: str, kind: str, amount: Decimal,
             price: Decimal | None, client_id: str, **flags: Any) -> Order:
        order = Order(next(self._order_ids), account, market, side, kind, amount, price,
                      client_id, round(self.now, 6), **flags)
        order.left = amount
        return order

    def _check_client_id(self, account: str, market: Market, client_id: str) -> None:
        if client_id and (account, market.name, client_id) in self._by_client:
            raise refused(36, "clientOrderId",
                          "This client order id is already used by the current account.")

    def check_limit(self, market: Market, amount: Decimal, price: Decimal | None) -> None:
        """The market's rules for an order of ``amount`` stock at ``price``."""
        if amount <= ZERO:
            raise refused(32, "amount", "Amount should be greater than 0.")
        if places(amount) > market.stock_prec or amount < market.min_amount:
            messages = []
            if amount < market.min_amount:
                messages.append(f"Given amount is less than min amount {market.min_amount}")
            messages.append(f"Min amount step = {plain(step(market.stock_prec))}")
            raise refused(32, "amount", *messages)
        if price is None:
            return
        if price <= ZERO:
            raise refused(33, "price", "Price should be greater than 0.")
        if places(price) > market.money_prec:
            raise refused(33, "price", f"Min price step = {plain(step(market.money_prec))}")
        total = amount * price
        if total < market.min_total:
            raise refused(30, "total", f"Total (amount * price) is less than {market.min_total}")
        if market.max_total and total > market.max_total:
            raise refused(30, "total",
                          f"Total (amount * price) is greater than {market.max_total}")

    def check_money(self, market: Market, amount: Decimal) -> None:
        """The market's rules for an amount of money to spend (a market buy)."""
        if amount <= ZERO:
            raise refused(32, "amount", "Amount should be greater than 0.")
        if places(amount) > market.money_prec or amount < market.min_total:
            raise refused(32, "amount", f"Given amount is less than min amount "
                          f"{market.min_total}", f"Min amount step = "
                          f"{plain(step(market.money_prec))}")

    def market(self, name: Any, *, code: int = 31) -> Market:
        found = self.markets.get(name) if isinstance(name, str) else None
        if found is None:
            raise refused(code, "market", "Market is not available.")
        return found

    def _freeze(self, order: Order) -> None:
        """Freeze what ``order`` needs of its account's trading balance, or refuse it."""
        if order.account == MAKERS:
            return
        market = order.market
        if order.side == "sell":
            asset, need = market.stock, order.amount
        elif order.in_money:
            asset, need = market.money, order.amount * (1 + market.taker_ratio)
        else:
            assert order.price is not None
            asset, need = market.money, order.amount * order.price * (1 + market.taker_ratio)
        try:
            self.ledger.freeze(order.account, asset, need)
        except NotEnough:
            raise refused(32, "amount", "Not enough balance.") from None
        order.frozen = need

    @exact
    def place_limit(
        self, account: str, market: str, side: str, amount: Decimal, price: Decimal, *,
        client_id: str = "", post_only: bool = False, ioc: bool = False, stp: str = "no",
    ) -> dict[str, Any]:
        """Place a limit order: it trades with what it crosses, and the rest rests on the book
        (``ioc``: is cancelled; ``post_only``: the order is refused if it would trade)."""
        found = self.market(market)
        self.check_limit(found, amount, price)
        if post_only and ioc:
            raise refused(37, "ioc", "Either IOC or PostOnly flag in true state is allowed.")
        self._check_client_id(account, found, client_id)
        if post_only and self._crosses(found, side, price):
            raise refused(30, "postOnly", "Post only order would be executed immediately.")
        order = self._new(account, found, side, "limit", amount, price, client_id,
                          post_only=post_only, ioc=ioc, stp=stp)
        self._freeze(order)
        self._execute(order, price)
        self._run_triggers()
        return order_answer(order)

    @exact
    def place_market(
        self, account: str, market: str, side: str, amount: Decimal, *, client_id: str = "",
        stp: str = "no", stock: bool = False,
    ) -> dict[str, Any]:
        """Place a market order: a buy spends ``amount`` of money (``stock=True``: buys
        ``amount`` of stock, the stock-market order), a sell sells ``amount`` of stock."""
        found = self.market(market)
        self._check_client_id(account, found, client_id)
        kind = "stock market" if stock else "market"
        if side == "buy" and not stock:
            self.check_money(found, amount)
        else:
            self.check_limit(found, amount, None)
        if kind == "stock market" and side == "buy":
            # Freeze the money the stock costs at the book's prices (the most it can cost).
            cost = self._cost(found, amount)
            if cost is None:
                raise refused(32, "amount", "Not enough liquidity.")
            order = self._new(account, found, side, kind, amount, None, client_id, stp=stp)
            try:
                self.ledger.freeze(account, found.money, cost * (1 + found.taker_ratio))
            except NotEnough:
                raise refused(32, "amount", "Not enough balance.") from None
            order.frozen = cost * (1 + found.taker_ratio)
        else:
            order = self._new(account, found, side, kind, amount, None, client_id, stp=stp)
            self._freeze(order)
        self._execute(order, None)
        self._run_triggers()
        return order_answer(order)

    def _cost(self, market: Market, amount: Decimal) -> Decimal | None:
        """What buying ``amount`` of stock costs against the book's asks (None: the book has
        less)."""
        left, cost = amount, ZERO
        for price, available in self.books[market.name].depth("sell"):
            taken = min(left, available)
            cost += taken * price
            left -= taken
            if left == ZERO:
                return cost
        return None

    @exact
    def place_stop(
        self, account: str, market: str, side: str, amount: Decimal, activation: Decimal,
        price: Decimal | None = None, *, client_id: str = "", stp: str = "no",
    ) -> dict[str, Any]:
        """Place a stop-limit order (with ``price``) or a stop-market order (without): it waits
        until the last price reaches ``activation`` (a buy: at or above it, a sell: at or below
        it), then becomes a limit order or trades at market. What it will need is frozen now."""
        found = self.market(market)
        if places(activation) > found.money_prec or activation <= ZERO:
            raise refused(33, "activation_price",
                          f"Min price step = {plain(step(found.money_prec))}")
        if price is None and side == "buy":
            self.check_money(found, amount)
        else:
            self.check_limit(found, amount, price)
        self._check_client_id(account, found, client_id)
        kind = "stop limit" if price is not None else "stop market"
        order = self._new(account, found, side, kind, amount, price, client_id,
                          activation_price=activation, stp=stp)
        self._freeze(order)
        self._wait(order)
        self._run_triggers()
        return order_answer(order)

    def _wait(self, order: Order) -> None:
        self.open[order.id] = order
        self._register_client_id(order)
        self._stops[order.market.name].append(order)
        self._touched.add(order.market.name)

    def _register_client_id(self, order: Order) -> None:
        if order.client_id:
            self._by_client[order.account, order.market.name, order.client_id] = order

    def _crosses(self, market: Market, side: str, price: Decimal) -> bool:
        book = self.books[market.name]
        best = book.best_ask() if side == "buy" else book.best_bid()
        return best is not None and (best <= price if side == "buy" else best >= price)

    # -- matching -----------------------------------------------------------------------------

    def _execute(self, order: Order, limit: Decimal | None) -> None:
        """Trade ``order`` against the book up to ``limit`` (None: at any price), then rest what
        is left of a limit order or finish the order."""
        cancelled = self._take(order, limit)
        if order.left > ZERO and limit is not None and not order.ioc and not cancelled:
            self.open[order.id] = order
            self._register_client_id(order)
            self.books[order.market.name].add(order)
        else:
            filled = order.left == ZERO or (
                order.in_money and order.deal_stock > ZERO and not cancelled)
            self._finish(order, "FILLED" if filled else "CANCELED")

    def _take(self, order: Order, limit: Decimal | None) -> bool:
        """Match ``order`` as the taker, best price first and the oldest order first at each
        price. True when self-trade prevention cancelled it."""
        market = order.market
        book = self.books[market.name]
        buy = order.side == "buy"
        while order.left > ZERO:
            best = book.opposite_best(order.side)
            if best is None:
                break
            price, queue = best
            if limit is not None and (price > limit if buy else price < limit):
                break
            maker = queue[0]
            if maker.account == order.account and order.stp != "no" and order.account != MAKERS:
                if order.stp in ("co", "cb"):
                    self._cancel(maker)
                if order.stp in ("cn", "cb"):
                    return True
                continue
            if order.in_money:
                quantity = min(maker.left, divide_down(order.left, price, market.stock_prec))
                if quantity <= ZERO:
                    break
            else:
                quantity = min(order.left, maker.left)
            self._fill(order, maker, quantity, price)
            if maker.left == ZERO:
                queue.popleft()
                if not queue:
                    book.drop_level(order.side, price)
                self._finish(maker, "FILLED", resting=False)
        return False

    def _fill(self, taker: Order, maker: Order, quantity: Decimal, price: Decimal) -> None:
        market = taker.market
        money = quantity * price
        deal_id = next(self._deal_ids)
        now = round(self.now, 6)
        for order, role, counter in ((maker, 1, taker), (taker, 2, maker)):
            fee = money * (market.maker_ratio if role == 1 else market.taker_ratio)
            order.left -= money if order.in_money else quantity
            order.deal_stock += quantity
            order.deal_money += money
            order.deal_fee += fee
            if order.account == MAKERS:
                continue
            if order.margin:
                self.margin.on_fill(order, quantity, price, fee)
            else:
                self._settle(order, quantity, money, fee)
            record = DealRecord(deal_id, now, order, counter.id, role, quantity, price, money,
                                fee)
            order.deals.append(deal_id)
            self._deals.setdefault(order.id, []).append(record)
            self.executed.setdefault(order.account, []).append(record)
        self._record(market, Trade(deal_id, now, price, quantity, money, taker.side))

    def _settle(self, order: Order, quantity: Decimal, money: Decimal, fee: Decimal) -> None:
        """Move a fill's assets and fee: a buy takes the money and fee out of what it froze and
        receives the stock; a sell gives the frozen stock and receives the money less the fee."""
        market, ledger, account = order.market, self.ledger, order.account
        if order.side == "buy":
            if order.in_money:
                held = money * (1 + market.taker_ratio)
            elif order.type == "stock market":
                held = min(order.frozen, money + fee)
            else:
                assert order.price is not None
                held = quantity * order.price * (1 + market.taker_ratio)
            ledger.settle(account, market.money, held, money + fee)
            order.frozen -= held
            ledger.credit(account, market.stock, quantity)
        else:
            ledger.settle(account, market.stock, quantity, quantity)
            order.frozen -= quantity
            ledger.credit(account, market.money, money - fee)

    def _print(self, market: Market, price: Decimal, amount: Decimal, side: str) -> None:
        """A trade between other participants at ``price``."""
        self._record(market, Trade(next(self._deal_ids), round(self.now, 6), price, amount,
                                   amount * price, side))

    def _record(self, market: Market, trade: Trade) -> None:
        self.trades[market.name].appendleft(trade)
        day = self._day[market.name]
        day.append(trade)
        while day and day[0].time < self.now - 86400:
            day.popleft()
        self.last_price[market.name] = trade.price
        self._touched.add(market.name)

    def _finish(self, order: Order, status: str, *, resting: bool = True) -> None:
        """Close ``order`` with ``status``: off the book (``resting``: if it is on it), out of
        the open orders, whatever it still holds frozen released, into the history."""
        waiting = order.is_stop and order.activated is None
        if resting and order.id in self.open and not waiting and order.price is not None:
            book = self.books[order.market.name]
            if order in book.side(order.side).levels.get(order.price, ()):
                book.remove(order)
        self.open.pop(order.id, None)
        if order.client_id:
            key = (order.account, order.market.name, order.client_id)
            if self._by_client.get(key) is order:
                del self._by_client[key]
        if order.is_stop and order.activated is None:
            stops = self._stops[order.market.name]
            if order in stops:
                stops.remove(order)
        order.status = status
        order.finished = round(self.now, 6)
        if order.account == MAKERS:
            return
        if order.frozen:
            if order.margin:
                self.margin.release(order)
            else:
                market = order.market
                asset = market.stock if order.side == "sell" else market.money
                self.ledger.release(order.account, asset, order.frozen)
            order.frozen = ZERO
        self.finished.setdefault(order.account, []).append(order)
        if order.oco_partner is not None:
            partner = self.open.get(order.oco_partner)
            order.oco_partner = None
            if partner is not None and (status == "FILLED" or order.deal_stock > ZERO):
                partner.oco_partner = None
                self._cancel(partner)

    # -- stops --------------------------------------------------------------------------------

    def _run_triggers(self) -> None:
        """Wake the stop orders whose activation price the last price has reached, until no
        more wake (a woken order's trades move the last price too)."""
        while self._touched:
            name = self._touched.pop()
            last = self.last_price[name]
            woken = [order for order in self._stops[name]
                     if (order.side == "buy" and last >= order.activation_price)  # type: ignore[operator]
                     or (order.side == "sell" and last <= order.activation_price)]  # type: ignore[operator]
            for order in woken:
                if order.id not in self.open:
                    continue
                self._stops[name].remove(order)
                order.activated = round(self.now, 6)
                del self.open[order.id]
                if order.oco_partner is not None:
                    partner = self.open.get(order.oco_partner)
                    order.oco_partner = None
                    if partner is not None:
                        partner.oco_partner = None
                        self._cancel(partner)
                if order.margin:
                    self.margin.wake(order)
                self._execute(order, order.price)

    # -- cancelling ---------------------------------------------------------------------------

    def _cancel(self, order: Order) -> None:
        self._finish(order, "CANCELED")

    def find(self, account: str, market: Market, order_id: Any, client_id: Any) -> Order:
        """The account's open order on ``market`` by id or client order id."""
        if order_id is not None:
            found = self.open.get(order_id) if isinstance(order_id, int) else None
        else:
            found = self._by_client.get((account, market.name, client_id))
        if found is None or found.account != account or found.market is not market:
            raise unknown_order()
        return found

    @exact
    def cancel(self, account: str, market: str, order_id: int | None = None,
               client_id: str | None = None) -> dict[str, Any]:
        """Cancel one open order: its final state."""
        order = self.find(account, self.market(market), order_id, client_id)
        self._cancel(order)
        return order_answer(order)

    @exact
    def cancel_all(self, account: str, market: str | None = None,
                   types: Iterable[str] | None = None) -> list[Any]:
        """Cancel every open order of the account (on ``market``; of ``types``)."""
        if market is not None:
            self.market(market)
        self._cancel_where(account, market, list(types) if types is not None else None)
        return []

    def _cancel_where(self, account: str, market: str | None, types: list[str] | None) -> None:
        for order in [o for o in self.open.values() if o.account == account
                      and (market is None or o.market.name == market)
                      and (types is None or o.family in types)]:
            if order.id in self.open:
                self._cancel(order)

    @exact
    def modify(
        self, account: str, market: str, order_id: int | None = None,
        client_id: str | None = None, *, amount: Decimal | None = None,
        total: Decimal | None = None, price: Decimal | None = None,
        activation: Decimal | None = None, stp: str | None = None,
    ) -> dict[str, Any]:
        """Replace an open limit, stop-limit or stop-market order with one of a new id, the
        changed values and the same client order id, as the service does."""
        found = self.market(market)
        old = self.find(account, found, order_id, client_id)
        if old.margin or old.type not in ("limit", "stop limit", "stop market"):
            raise refused(30, "orderId", "The order type cannot be modified.")
        new_amount = total if old.in_money and total is not None else amount
        new_amount = old.left if new_amount is None else new_amount
        new_price = old.price if price is None else price
        new_activation = old.activation_price if activation is None else activation
        if old.in_money:
            self.check_money(found, new_amount)
        else:
            self.check_limit(found, new_amount, new_price)
        kept = self.ledger.holding(account, found.stock if old.side == "sell" else found.money)
        need = (new_amount if old.side == "sell" else
                new_amount * (1 + found.taker_ratio) if old.in_money else
                new_amount * new_price * (1 + found.taker_ratio))  # type: ignore[operator]
        if need > kept.available + old.frozen:
            raise refused(10, "amount", "Not enough balance.")
        self._cancel(old)
        order = self._new(account, found, old.side, old.type, new_amount, new_price,
                          old.client_id, post_only=old.post_only, ioc=old.ioc,
                          stp=old.stp if stp is None else stp,
                          activation_price=new_activation)
        self._freeze(order)
        if order.is_stop:
            self._wait(order)
        else:
            self._execute(order, new_price)
        self._run_triggers()
        return order_answer(order)

    # -- kill-switch --------------------------------------------------------------------------

    @exact
    def set_kill_switch(self, account: str, market: str, timeout: int | None,
                        types: list[str] | None = None) -> Any:
        """Start, restart (``timeout`` seconds from now) or delete (``timeout`` None) the
        account's kill-switch timer of ``market``: when it runs out, the account's open orders
        on the market (of ``types``) are cancelled."""
        self.market(market)
        if timeout is None:
            self._timers.pop((account, market), None)
            return []
        start = int(self.now)
        timer = _Timer(market, start, start + timeout, types)
        self._timers[account, market] = timer
        return _timer_answer(timer)

    def kill_switches(self, account: str, market: str | None = None) -> list[dict[str, Any]]:
        """The account's running kill-switch timers (of ``market``)."""
        return [_timer_answer(timer) for (owner, name), timer in self._timers.items()
                if owner == account and (market is None or name == market)]

    # -- reading ------------------------------------------------------------------------------

    def open_orders(self, account: str, market: str | None = None) -> list[Order]:
        """The account's open orders (of ``market``), newest first."""
        return sorted((o for o in self.open.values() if o.account == account
                       and (market is None or o.market.name == market)),
                      key=lambda o: o.id, reverse=True)

    def deals_of(self, order_id: int) -> list[DealRecord]:
        return self._deals.get(order_id, [])

    def balances(self, account: str) -> dict[str, dict[str, str]]:
        """The account's trading balance as ``POST /api/v4/trade-account/balance`` answers it."""
        return {asset: {"available": plain(h.available), "freeze": plain(h.freeze)}
                for asset, h in sorted(self.ledger.trade(account).items())}

    def day(self, market: str) -> deque[Trade]:
        """The market's trades of the last 24 hours, oldest first."""
        day = self._day[market]
        while day and day[0].time < self.now - 86400:
            day.popleft()
        return day


def _timer_answer(timer: _Timer) -> dict[str, Any]:
    return {"market": timer.market, "startTime": timer.start,
            "cancellationTime": timer.cancel_at, "types": timer.types}
