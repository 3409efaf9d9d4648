"""The sandbox's simulated exchange, driven directly: matching, fees, balances, stops, the
kill-switch, cancels, and the operations' answers and refusals."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from txc_async.sandbox._exchange import Exchange, ExchangeSimulation
from txc_async.sandbox._simulation import UNHANDLED, SimulationError

D = Decimal
START = {"USDT": D("100000"), "BTC": D("2"), "ETH": D("10")}


def quiet(**kwargs: Any) -> Exchange:
    """An exchange with no simulated makers and a price that holds still."""
    return Exchange(trade_balances=START, makers=False, move_every=None, **kwargs)


def holding(exchange: Exchange, account: str, asset: str) -> tuple[Decimal, Decimal]:
    h = exchange.ledger.holding(account, asset)
    return h.available, h.freeze


def test_price_time_priority() -> None:
    ex = quiet()
    a = ex.place_limit("a", "BTC_USDT", "sell", D("0.1"), D("60000"))
    ex.place_limit("b", "BTC_USDT", "sell", D("0.1"), D("60000"))
    c = ex.place_limit("c", "BTC_USDT", "sell", D("0.1"), D("59990"))
    taken = ex.place_limit("t", "BTC_USDT", "buy", D("0.15"), D("60000"))
    assert taken["status"] == "FILLED" and taken["dealStock"] == "0.15"
    # The better price first, then the older order at the same price; the newer waits.
    deals = [(d.counter_order_id, d.amount, d.price) for d in ex.deals_of(taken["orderId"])]
    assert deals == [(c["orderId"], D("0.1"), D("59990")), (a["orderId"], D("0.05"), D("60000"))]
    assert [o.id for o in ex.open_orders("a")] == [a["orderId"]]
    assert ex.open_orders("a")[0].left == D("0.05")
    assert ex.open_orders("b")[0].left == D("0.1")
    assert taken["dealMoney"] == "8999"  # 0.1 * 59990 + 0.05 * 60000


def test_fees_and_balances_to_the_last_decimal() -> None:
    ex = quiet()
    maker = ex.place_limit("m", "BTC_USDT", "sell", D("0.123457"), D("61234.57"))
    taker = ex.place_limit("t", "BTC_USDT", "buy", D("0.1"), D("61300"))
    money = D("0.1") * D("61234.57")
    assert taker["dealMoney"] == "6123.457"
    assert taker["dealFee"] == "6.123457"  # taker 0.1 %
    maker_fee = money * D("0.0008")  # maker 0.08 %
    # The buyer: the stock in, the money and the fee out; nothing left frozen.
    assert holding(ex, "t", "BTC") == (D("2.1"), 0)
    assert holding(ex, "t", "USDT") == (D("100000") - money - money * D("0.001"), 0)
    # The seller: what it still sells stays frozen; the money less the fee came in.
    assert holding(ex, "m", "BTC") == (D("2") - D("0.123457"), D("0.023457"))
    assert holding(ex, "m", "USDT") == (D("100000") + money - maker_fee, 0)
    (open_order,) = ex.open_orders("m")
    assert open_order.deal_fee == maker_fee == D("4.8987656")
    assert maker["status"] == "NEW" and open_order.left == D("0.023457")


def test_freeze_and_release_on_cancel() -> None:
    ex = quiet()
    placed = ex.place_limit("a", "ETH_USDT", "buy", D("1.5"), D("2999.99"))
    need = D("1.5") * D("2999.99") * D("1.001")
    assert holding(ex, "a", "USDT") == (D("100000") - need, need)
    cancelled = ex.cancel("a", "ETH_USDT", placed["orderId"])
    assert cancelled["status"] == "CANCELED" and cancelled["left"] == "1.5"
    assert holding(ex, "a", "USDT") == (D("100000"), 0)
    assert ex.open_orders("a") == []


def test_partial_fill_then_cancel_releases_the_rest() -> None:
    ex = quiet()
    resting = ex.place_limit("a", "BTC_USDT", "buy", D("1"), D("50000"))
    ex.place_limit("b", "BTC_USDT", "sell", D("0.4"), D("50000"))
    (order,) = ex.open_orders("a")
    assert order.left == D("0.6") and order.deal_stock == D("0.4")
    sim = ExchangeSimulation(ex)
    (active,) = sim.answer("POST", "/api/v4/orders", "a", {}, 0.0)
    assert active["status"] == "PARTIALLY_FILLED" and active["left"] == "0.6"
    ex.cancel("a", "BTC_USDT", resting["orderId"])
    fee = D("0.4") * D("50000") * D("0.0008")
    assert holding(ex, "a", "USDT") == (D("100000") - D("20000") - fee, 0)
    assert holding(ex, "a", "BTC") == (D("2.4"), 0)
    history = sim.answer("POST", "/api/v4/trade-account/order/history", "a", {}, 0.0)
    (record,) = history["BTC_USDT"]
    assert record["status"] == "CANCELED" and record["dealStock"] == "0.4"


def test_deals_history_and_executed_agree() -> None:
    ex = quiet()
    sim = ExchangeSimulation(ex)
    for price in ("60000", "60010", "60020"):
        ex.place_limit("m", "BTC_USDT", "sell", D("0.01"), D(price))
    order = ex.place_limit("t", "BTC_USDT", "buy", D("0.03"), D("60020"), client_id="grid-1")
    deals = sim.answer("POST", "/api/v4/trade-account/order", "t",
                       {"orderId": order["orderId"]}, 0.0)["records"]
    executed = sim.answer("POST", "/api/v4/trade-account/executed-history", "t",
                          {"market": "BTC_USDT"}, 0.0)
    (history,) = sim.answer("POST", "/api/v4/trade-account/order/history", "t",
                            {"clientOrderId": "grid-1"}, 0.0)["BTC_USDT"]
    assert sorted(d["id"] for d in deals) == sorted(d["id"] for d in executed)
    assert sum(D(d["amount"]) for d in deals) == D(history["dealStock"]) == D("0.03")
    assert sum(D(d["deal"]) for d in deals) == D(history["dealMoney"]) == D(order["dealMoney"])
    assert sum(D(d["fee"]) for d in deals) == D(history["dealFee"]) == D(order["dealFee"])
    assert {d["role"] for d in deals} == {2} and history["status"] == "FILLED"
    maker_deals = sim.answer("POST", "/api/v4/trade-account/executed-history", "m", {}, 0.0)
    assert {d["role"] for d in maker_deals["BTC_USDT"]} == {1}
    trades = sim.answer("GET", "/api/v4/public/trades/{market}", None,
                        {"market": "BTC_USDT"}, 0.0)
    assert [t["price"] for t in trades] == ["60020", "60010", "60000"]
    ticker = sim.answer("GET", "/api/v4/public/ticker", None, {}, 0.0)
    assert ticker["BTC_USDT"]["last_price"] == "60020"


def test_market_and_stock_market_orders() -> None:
    ex = quiet()
    ex.place_limit("m", "BTC_USDT", "sell", D("0.01"), D("60000"))
    ex.place_limit("m", "BTC_USDT", "sell", D("0.02"), D("60100"))
    bought = ex.place_market("t", "BTC_USDT", "buy", D("1202"))  # money to spend
    # 0.01 at 60000 (600) and 0.010016 at 60100 (601.9616): the rest cannot buy a step.
    assert bought["dealStock"] == "0.020016" and bought["status"] == "FILLED"
    spent = D("600") + D("0.010016") * D("60100")
    assert holding(ex, "t", "USDT") == (D("100000") - spent * D("1.001"), 0)
    stock = ex.place_market("t", "BTC_USDT", "buy", D("0.005"), stock=True)
    assert stock["dealStock"] == "0.005" and stock["type"] == "stock market"
    assert holding(ex, "t", "USDT")[1] == 0
    sold = ex.place_market("t", "BTC_USDT", "sell", D("0.01"))
    assert sold["status"] == "CANCELED" and sold["dealStock"] == "0"  # no bids
    assert holding(ex, "t", "BTC") == (D("2.025016"), 0)


def test_post_only_and_ioc() -> None:
    ex = quiet()
    ex.place_limit("m", "BTC_USDT", "sell", D("0.01"), D("60000"))
    with pytest.raises(SimulationError) as refused:
        ex.place_limit("t", "BTC_USDT", "buy", D("0.01"), D("60000"), post_only=True)
    assert refused.value.body["code"] == 30
    ioc = ex.place_limit("t", "BTC_USDT", "buy", D("0.05"), D("60000"), ioc=True)
    assert ioc["status"] == "CANCELED" and ioc["dealStock"] == "0.01"
    assert ex.open_orders("t") == [] and holding(ex, "t", "USDT")[1] == 0


def test_stop_orders_wake_when_the_last_price_crosses() -> None:
    ex = quiet()
    stop = ex.place_stop("a", "BTC_USDT", "buy", D("0.01"), D("61000"), D("61500"))
    stop_market = ex.place_stop("a", "BTC_USDT", "sell", D("0.01"), D("59000"))
    assert stop["activated"] == 0 and stop["activationCondition"] == "gte"
    assert stop_market["activationCondition"] == "lte" and "price" not in stop_market
    assert len(ex.open_orders("a")) == 2
    ex.place_limit("m", "BTC_USDT", "sell", D("0.01"), D("61200"))
    ex.place_limit("x", "BTC_USDT", "buy", D("0.001"), D("61000"))
    ex.place_limit("m", "BTC_USDT", "sell", D("0.001"), D("61000"))  # last price 61000
    (woken,) = [o for o in ex.finished.get("a", []) if o.id == stop["orderId"]]
    assert woken.activated is not None and woken.status == "FILLED"
    assert woken.deal_money == D("612")  # it took the ask at 61200, under its limit
    # The sell stop still waits: the price has not fallen to 59000.
    assert [o.id for o in ex.open_orders("a")] == [stop_market["orderId"]]
    ex.place_limit("b", "BTC_USDT", "buy", D("0.02"), D("58000"))
    ex.move_price("BTC_USDT", D("58900"))
    (sold,) = [o for o in ex.finished["a"] if o.id == stop_market["orderId"]]
    assert sold.status == "FILLED" and sold.deal_money == D("580")


def test_kill_switch_cancels_when_its_timer_runs_out() -> None:
    ex = quiet(now=1000.0)
    sim = ExchangeSimulation(ex)
    sim.answer("POST", "/api/v4/order/new", "a", {"market": "BTC_USDT", "side": "buy",
               "amount": "0.01", "price": "50000"}, 1000.0)
    sim.answer("POST", "/api/v4/order/new", "a", {"market": "ETH_USDT", "side": "buy",
               "amount": "0.01", "price": "2000"}, 1000.0)
    timer = sim.answer("POST", "/api/v4/order/kill-switch", "a",
                       {"market": "BTC_USDT", "timeout": "5"}, 1000.0)
    assert timer == {"market": "BTC_USDT", "startTime": 1000, "cancellationTime": 1005,
                     "types": None}
    sim.answer("POST", "/api/v4/order/kill-switch", "a",
               {"market": "BTC_USDT", "timeout": "10"}, 1004.0)  # reset: now 1014
    assert len(sim.answer("POST", "/api/v4/orders", "a", {}, 1010.0)) == 2
    assert sim.answer("POST", "/api/v4/orders", "a", {}, 1014.0) == [
        o for o in sim.answer("POST", "/api/v4/orders", "a", {}, 1014.0)
        if o["market"] == "ETH_USDT"]
    assert sim.answer("POST", "/api/v4/order/kill-switch/status", "a", {}, 1015.0) == []
    assert holding(ex, "a", "USDT")[1] == D("0.01") * D("2000") * D("1.001")
    with pytest.raises(SimulationError) as refused:
        sim.answer("POST", "/api/v4/order/kill-switch", "a",
                   {"market": "BTC_USDT", "timeout": "3"}, 1015.0)
    assert refused.value.body["errors"] == {"timeout": ["Timeout should be at least 5."]}


def test_cancel_all_and_bulk() -> None:
    ex = quiet()
    sim = ExchangeSimulation(ex)
    placed = sim.answer("POST", "/api/v4/order/bulk", "a", {"orders": [
        {"market": "BTC_USDT", "side": "buy", "amount": "0.01", "price": "50000"},
        {"market": "BTC_USDT", "side": "buy", "amount": "0.00001", "price": "50000"},
        {"market": "ETH_USDT", "side": "sell", "amount": "1", "price": "4000",
         "clientOrderId": "e1"},
        {"market": "BTC_USDT", "side": "sell", "amount": "0.01", "price": "70000"},
    ]}, 0.0)
    assert [p["error"] is None for p in placed] == [True, False, True, True]
    assert placed[1]["error"]["code"] == 32
    results = sim.answer("POST", "/api/v4/order/cancel/bulk", "a", {"orders": [
        {"market": "ETH_USDT", "clientOrderId": "e1"},
        {"market": "ETH_USDT", "clientOrderId": "e1"},
    ]}, 0.0)
    assert results[0] == {"result": {"orderId": placed[2]["result"]["orderId"],
                                     "market": "ETH_USDT", "clientOrderId": "e1"},
                          "error": None}
    assert results[1]["error"]["code"] == 404
    assert sim.answer("POST", "/api/v4/order/cancel/all", "a", {"market": "BTC_USDT"},
                      0.0) == []
    assert ex.open_orders("a") == []
    assert {a: holding(ex, "a", a) for a in START} == {a: (v, 0) for a, v in START.items()}


def test_client_order_id_is_unique_among_open_orders_of_a_market() -> None:
    ex = quiet()
    first = ex.place_limit("a", "BTC_USDT", "buy", D("0.01"), D("50000"), client_id="x")
    ex.place_limit("a", "ETH_USDT", "buy", D("0.01"), D("2000"), client_id="x")  # other market
    ex.place_limit("b", "BTC_USDT", "buy", D("0.01"), D("50000"), client_id="x")  # other key
    with pytest.raises(SimulationError) as refused:
        ex.place_limit("a", "BTC_USDT", "buy", D("0.01"), D("50000"), client_id="x")
    assert refused.value.body["code"] == 36
    ex.cancel("a", "BTC_USDT", client_id="x")
    again = ex.place_limit("a", "BTC_USDT", "buy", D("0.01"), D("50000"), client_id="x")
    assert again["orderId"] != first["orderId"]


def test_modify_replaces_the_order() -> None:
    ex = quiet()
    placed = ex.place_limit("a", "BTC_USDT", "buy", D("0.01"), D("50000"), client_id="m1")
    changed = ex.modify("a", "BTC_USDT", client_id="m1", price=D("51000"), amount=D("0.02"))
    assert changed["orderId"] != placed["orderId"] and changed["clientOrderId"] == "m1"
    assert changed["price"] == "51000" and changed["amount"] == "0.02"
    assert holding(ex, "a", "USDT")[1] == D("0.02") * D("51000") * D("1.001")
    with pytest.raises(SimulationError) as refused:
        ex.modify("a", "BTC_USDT", placed["orderId"], price=D("52000"))
    assert refused.value.status == 400 and refused.value.body["code"] == 2


def test_refusals_in_the_documented_shapes() -> None:
    ex = quiet()
    sim = ExchangeSimulation(ex)

    def refusal(path: str, params: dict[str, Any]) -> tuple[int, Any]:
        with pytest.raises(SimulationError) as raised:
            sim.answer("POST", path, "a", params, 0.0)
        return raised.value.status, raised.value.body

    assert refusal("/api/v4/order/new", {})[1] == {"code": 30, "message": "Validation failed",
                                                  "errors": {
        "market": ["Market field is required."], "side": ["Side field is required."],
        "amount": ["Amount field is required."], "price": ["Price field is required."]}}
    order = {"market": "BTC_USDT", "side": "buy", "amount": "10", "price": "60000"}
    assert refusal("/api/v4/order/new", order)[1]["errors"] == {
        "amount": ["Not enough balance."]}
    assert refusal("/api/v4/order/new", order | {"market": "DOGE_USDT"})[1]["code"] == 31
    assert refusal("/api/v4/order/new", order | {"amount": "0.00001"})[1]["errors"] == {
        "amount": ["Given amount is less than min amount 0.0001", "Min amount step = 0.000001"]}
    assert refusal("/api/v4/order/new", order | {"amount": "0.0001", "price": "1"})[1][
        "errors"] == {"total": ["Total (amount * price) is less than 5"]}
    assert refusal("/api/v4/order/new", order | {"price": "60000.001"})[1]["code"] == 33
    assert refusal("/api/v4/order/new", order | {"amount": "1e3"})[1]["errors"] == {
        "amount": ["Amount field should be numeric string or number."]}
    assert refusal("/api/v4/order/cancel", {"market": "BTC_USDT", "orderId": 1}) == (
        400, {"code": 2, "message": "Inner validation failed",
              "errors": {"orderId": ["Unexecuted order was not found."]}})
    assert refusal("/api/v4/trade-account/balance", {"ticker": "XYZ"})[1]["errors"] == {
        "ticker": ["Currency was not found."]}
    assert sim.answer("POST", "/api/v4/public/fee", None, {}, 0.0) is UNHANDLED
    assert sim.answer("POST", "/api/v4/order/collateral/stop-limit", "a", {}, 0.0) is UNHANDLED


def test_transfers_move_main_trade_and_collateral_balances() -> None:
    main = {"USDT": {"main_balance": "1000.5"}}
    ex = Exchange(main_balances=main, makers=False, move_every=None)
    sim = ExchangeSimulation(ex)
    assert sim.answer("POST", "/api/v4/main-account/transfer", "a",
                      {"ticker": "USDT", "amount": "400.25", "from": "main", "to": "spot"},
                      0.0) == []
    sim.answer("POST", "/api/v4/main-account/transfer", "a",
               {"ticker": "USDT", "amount": "100", "method": "collateral-deposit"}, 0.0)
    assert main == {"USDT": {"main_balance": "500.25"}}
    assert sim.answer("POST", "/api/v4/trade-account/balance", "a", {"ticker": "USDT"},
                      0.0) == {"USDT": {"available": "400.25", "freeze": "0"}}
    assert ex.margin.balances("a") == {"USDT": D("100")}
    with pytest.raises(SimulationError) as refused:
        sim.answer("POST", "/api/v4/main-account/transfer", "a",
                   {"ticker": "USDT", "amount": "400.26", "from": "spot", "to": "main"}, 0.0)
    assert refused.value.status == 400 and refused.value.body["code"] == 0


def test_the_price_walk_is_reproducible_by_seed() -> None:
    def ticker_after(seed: int) -> Any:
        ex = Exchange(seed=seed, now=1000.0)
        sim = ExchangeSimulation(ex)
        sim.answer("GET", "/api/v4/public/time", None, {}, 1000.0)
        sim.answer("GET", "/api/v4/public/time", None, {}, 1030.0)
        book = sim.answer("GET", "/api/v4/public/orderbook/{market}", None,
                          {"market": "ETH_USDT", "limit": 5}, 1030.0)
        return sim.answer("GET", "/api/v4/public/ticker", None, {}, 1030.0), book

    first, book = ticker_after(7)
    assert ticker_after(7) == (first, book)
    assert ticker_after(8)[0] != first
    assert first["BTC_USDT"]["last_price"] != "60000"  # it moved
    assert len(book["asks"]) == len(book["bids"]) == 5
    assert D(book["bids"][0][0]) < D(first["ETH_USDT"]["last_price"]) < D(book["asks"][0][0])


def test_collateral_position_opens_grows_reduces_and_closes() -> None:
    ex = quiet(collateral_balances={"USDT": D("10000")})
    ex.place_limit("m", "BTC_USDT", "sell", D("1"), D("60000"))
    ex.place_limit("m", "BTC_USDT", "buy", D("1"), D("59000"))
    sim = ExchangeSimulation(ex)
    sim.answer("POST", "/api/v4/collateral-account/leverage", "a", {"leverage": 5}, 0.0)
    opened = sim.answer("POST", "/api/v4/order/collateral/limit", "a", {
        "market": "BTC_USDT", "side": "buy", "amount": "0.1", "price": "60000"}, 0.0)
    assert opened["status"] == "FILLED" and opened["positionSide"] == "BOTH"
    sim.answer("POST", "/api/v4/order/collateral/market", "a", {
        "market": "BTC_USDT", "side": "buy", "amount": "0.05"}, 0.0)
    (position,) = sim.answer("POST", "/api/v4/collateral-account/positions/open", "a", {}, 0.0)
    assert position["amount"] == "0.15" and position["basePrice"] == "60000"
    assert position["margin"] == "1800"  # 0.15 * 60000 / 5
    with pytest.raises(SimulationError) as refused:
        sim.answer("POST", "/api/v4/collateral-account/leverage", "a", {"leverage": 3}, 0.0)
    assert refused.value.body["code"] == 113
    # Reduce-only: it only reduces the long.
    reduced = sim.answer("POST", "/api/v4/order/collateral/limit", "a", {
        "market": "BTC_USDT", "side": "sell", "amount": "0.05", "price": "59000",
        "reduceOnly": True}, 0.0)
    assert reduced["reduceOnly"] is True and reduced["status"] == "FILLED"
    (position,) = sim.answer("POST", "/api/v4/collateral-account/positions/open", "a", {}, 0.0)
    assert position["amount"] == "0.1" and position["pnl"] == "-50"
    assert sim.answer("POST", "/api/v4/collateral-account/position/close", "a", {
        "positionId": position["positionId"], "market": "BTC_USDT"}, 0.0) == []
    assert sim.answer("POST", "/api/v4/collateral-account/positions/open", "a", {}, 0.0) == []
    fees = (D("9000") * D("0.001") + D("0.05") * D("59000") * D("0.001")
            + D("0.1") * D("59000") * D("0.001"))
    pnl = D("0.15") * (D("59000") - D("60000"))
    assert ex.margin.balances("a")["USDT"] == D("10000") + pnl - fees
    (closed,) = sim.answer("POST", "/api/v4/collateral-account/positions/closed-pnl", "a", {},
                           0.0)
    assert D(closed["grossPnl"]) == pnl - fees and closed["closedSize"] == "0.15"
    with pytest.raises(SimulationError) as refused:
        sim.answer("POST", "/api/v4/order/collateral/limit", "a", {
            "market": "BTC_USDT", "side": "sell", "amount": "0.01", "price": "59000",
            "reduceOnly": True}, 0.0)
    assert refused.value.body["code"] == 116


def test_hedge_mode_keeps_long_and_short_apart() -> None:
    ex = quiet(collateral_balances={"USDT": D("10000")})
    ex.place_limit("m", "ETH_USDT", "sell", D("5"), D("3000"))
    ex.place_limit("m", "ETH_USDT", "buy", D("5"), D("2990"))
    sim = ExchangeSimulation(ex)
    assert sim.answer("POST", "/api/v4/collateral-account/hedge-mode/update", "a",
                      {"hedgeMode": True}, 0.0) == {"hedgeMode": True}
    with pytest.raises(SimulationError) as refused:
        sim.answer("POST", "/api/v4/order/collateral/market", "a",
                   {"market": "ETH_USDT", "side": "buy", "amount": "1"}, 0.0)
    assert refused.value.body["code"] == 114
    for side, position_side in (("buy", "LONG"), ("sell", "SHORT")):
        sim.answer("POST", "/api/v4/order/collateral/market", "a", {
            "market": "ETH_USDT", "side": side, "amount": "1",
            "positionSide": position_side}, 0.0)
    positions = sim.answer("POST", "/api/v4/collateral-account/positions/open", "a", {}, 0.0)
    assert sorted((p["positionSide"], p["amount"]) for p in positions) == [
        ("LONG", "1"), ("SHORT", "-1")]
    (short,) = [p for p in positions if p["positionSide"] == "SHORT"]
    assert short["basePrice"] == "2990"


def test_oco_cancels_the_other_leg() -> None:
    ex = quiet(collateral_balances={"USDT": D("10000")})
    ex.place_limit("m", "BTC_USDT", "sell", D("0.1"), D("60000"))
    sim = ExchangeSimulation(ex)
    sim.answer("POST", "/api/v4/order/collateral/market", "a",
               {"market": "BTC_USDT", "side": "buy", "amount": "0.1"}, 0.0)
    oco = sim.answer("POST", "/api/v4/order/collateral/oco", "a", {
        "market": "BTC_USDT", "side": "sell", "amount": "0.1", "price": "62000",
        "activation_price": "58000", "stop_limit_price": "57900"}, 0.0)
    assert oco["take_profit"]["price"] == "62000"
    assert oco["stop_loss"]["activation_condition"] == "lte"
    ex.place_limit("b", "BTC_USDT", "buy", D("0.1"), D("62000"))  # takes the take-profit
    stop = next(o for o in ex.finished["a"] if o.id == oco["stop_loss"]["orderId"])
    assert stop.status == "CANCELED"
    assert sim.answer("POST", "/api/v4/collateral-account/positions/open", "a", {}, 0.0) == []
