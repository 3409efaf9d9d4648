"""A trading flow against the sandbox's exchange through HTTP and the client: place, rest, cross,
fill, cancel, reconcile after a lost answer; the balances add up to the last decimal."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

import txc_async
from txc_async import Client, InProcessLimiter, RetryPolicy, TransportError
from txc_async.sandbox import Sandbox

D = Decimal
START = {"USDT": D("100000"), "BTC": D("2")}
NEW = "/api/v4/order/new"


class Clock:
    """A clock the test moves: the exchange's price walk steps only when it is told to."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def _field(answer: Any, name: str) -> Any:
    return answer[name] if isinstance(answer, dict) else getattr(answer, name)


async def _balance(client: Client) -> dict[str, tuple[Decimal, Decimal]]:
    answer: Any = await client.call("trade_account_balance")
    return {asset: (D(str(_field(entry, "available"))), D(str(_field(entry, "freeze"))))
            for asset, entry in answer.items()}


@pytest.fixture
async def exchange() -> Any:
    clock = Clock()
    async with Sandbox(trade_balances=START, clock=clock) as box:
        client = Client(api_key=box.api_key, api_secret=box.api_secret, base_url=box.url,
                        limiter=InProcessLimiter(), retry=RetryPolicy(max_retries=0))
        async with client:
            yield box, client, clock


async def test_place_rest_cross_fill_cancel_reconcile(exchange: Any) -> None:
    box, client, _ = exchange
    assert "create_limit_order" in txc_async.OPERATIONS
    # Place a buy far under the book: it rests, its money frozen.
    resting = await client.call("create_limit_order", market="BTC_USDT", side="buy",
                                amount=D("0.01"), price=D("50000"), client_order_id="rest-1")
    assert str(_field(resting, "status")).endswith("NEW")
    frozen = D("0.01") * D("50000") * D("1.001")
    assert (await _balance(client))["USDT"] == (D("100000") - frozen, frozen)
    active: Any = await client.call("get_active_orders", market="BTC_USDT")
    assert [_field(o, "order_id") for o in active] == [_field(resting, "order_id")]
    # Cross the book: it fills against the makers' asks, best price first.
    crossing = await client.call("create_limit_order", market="BTC_USDT", side="buy",
                                 amount=D("0.02"), price=D("61000"))
    assert str(_field(crossing, "status")).endswith("FILLED")
    deals: Any = await client.call("get_order_deals", order_id=_field(crossing, "order_id"))
    records = _field(deals, "records")
    money = sum((D(str(_field(r, "deal"))) for r in records), D(0))
    fee = sum((D(str(_field(r, "fee"))) for r in records), D(0))
    assert money == D(str(_field(crossing, "deal_money"))) and fee == money * D("0.001")
    prices = [D(str(_field(r, "price"))) for r in records]
    assert prices == sorted(prices)
    # Cancel the resting order: its money comes back.
    await client.call("cancel_order", market="BTC_USDT", order_id=_field(resting, "order_id"))
    balance = await _balance(client)
    assert balance["USDT"] == (D("100000") - money - fee, D(0))
    assert balance["BTC"] == (D("2.02"), D(0))
    # A lost answer: the order is placed, the answer never arrives, and the client does not
    # send it again. The open orders say what happened, by client order id.
    box.faults.add(NEW, "reset", execute=True)
    with pytest.raises(TransportError):
        await client.call("create_limit_order", market="BTC_USDT", side="sell",
                          amount=D("0.01"), price=D("70000"), client_order_id="lost-1")
    found: Any = await client.call("get_active_orders", market="BTC_USDT",
                                   client_order_id="lost-1")
    assert len(found) == 1 and D(str(_field(found[0], "amount"))) == D("0.01")
    assert (await _balance(client))["BTC"] == (D("2.01"), D("0.01"))
    # The same client order id is refused while that order is open.
    with pytest.raises(txc_async.ApiError) as refused:
        await client.call("create_limit_order", market="BTC_USDT", side="sell",
                          amount=D("0.01"), price=D("70000"), client_order_id="lost-1")
    assert refused.value.code == 36


#: The public market-data paths reach the sandbox's simulations once its routing answers every
#: documented operation (``Sandbox(simulations=...)``); until then they are not served.


async def test_public_data_comes_from_the_same_engine(exchange: Any) -> None:
    _, client, clock = exchange
    await client.call("create_limit_order", market="BTC_USDT", side="buy", amount=D("0.01"),
                      price=D("61000"))
    clock.now += 5
    ticker: Any = await client.call("ticker")
    trades: Any = await client.call("trades", market="BTC_USDT")
    last = ticker["BTC_USDT"]
    assert D(str(_field(last, "last_price"))) == D(str(_field(trades[0], "price")))


async def test_kill_switch_cancels_after_its_timeout(exchange: Any) -> None:
    _, client, clock = exchange
    main_before = await client.main_balance(ticker="ETH")
    await client.call("transfer_between_balances", from_="main", to="spot", ticker="ETH",
                      amount=D("1"))
    assert await client.main_balance(ticker="ETH") == {"ETH": main_before["ETH"] - 1}
    for amount in ("0.01", "0.5"):
        await client.call("create_limit_order", market="ETH_USDT", side="sell",
                          amount=D(amount), price=D("9000"))
    assert (await _balance(client))["ETH"] == (D("0.49"), D("0.51"))
    await client.call("set_kill_switch", market="ETH_USDT", timeout=D("5"))
    status: Any = await client.call("get_kill_switch_status")
    assert len(status) == 1
    clock.now += 6
    assert await client.call("get_active_orders", market="ETH_USDT") == []
    assert (await _balance(client))["ETH"] == (D("1"), D(0))
