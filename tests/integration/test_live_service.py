"""The client against the live service's shapes (its official documentation, whitebit-exchange/docs,
2026) and those of the API's first specification: order fields in either spelling, statuses, the
balance of one ticker, hashrate and account filters, and the sandbox answering in both dialects."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import msgspec
import pytest
from aioresponses import aioresponses

import txc_async
from txc_async import AnswerFormatError, OrderStatus, ValidationError
from txc_async.sandbox import Sandbox

from ..support.common import BASE, decode_signed, fast_retry, requests_to

ORDER = BASE + "/api/v4/order/collateral/stop-limit"
BALANCE = BASE + "/api/v4/main-account/balance"
HASHRATE = BASE + "/api/v4/mining/hashrate"
REWARDS = BASE + "/api/v4/mining/rewards"

#: The live service's answer (whitebit-exchange/docs, openapi/private/http-trade-v4.yaml).
LIVE_ORDER: dict[str, Any] = {
    "orderId": 4180284841, "clientOrderId": "order1987111", "market": "BTC_USDT",
    "side": "buy", "type": "stop limit", "timestamp": 1595792396.165973, "dealMoney": "12.5",
    "dealStock": "0.0005", "amount": "0.001", "left": "0.0005", "dealFee": "0.0125",
    "price": "40000", "activation_price": "40000", "status": "PARTIALLY_FILLED", "stp": "cb",
    "oto": {"otoId": 29457221, "stopLoss": "30000"}, "positionSide": "LONG",
    "reduceOnly": False,
}
_SNAKE = {"orderId": "order_id", "clientOrderId": "client_order_id", "dealMoney": "deal_money",
          "dealStock": "deal_stock", "dealFee": "deal_fee"}
SPEC_ORDER = {_SNAKE.get(name, name): value for name, value in LIVE_ORDER.items()}
ORDER_ARGS: dict[str, Any] = {
    "market": "BTC_USDT", "side": "buy", "amount": "0.001", "price": "40000",
    "activation_price": "40000",
}


# -- orders ------------------------------------------------------------------------------------


@pytest.mark.parametrize("answer", [LIVE_ORDER, SPEC_ORDER], ids=["camelCase", "snake_case"])
async def test_an_order_reads_in_either_spelling(
    mocked: aioresponses, client: txc_async.Client, answer: dict[str, Any]
) -> None:
    mocked.post(ORDER, payload=answer)
    order = await client.collateral_stop_limit_order(**ORDER_ARGS)
    assert order.order_id == 4180284841
    assert order.client_order_id == "order1987111"
    assert order.deal_money == Decimal("12.5")
    assert order.deal_stock == Decimal("0.0005")
    assert order.deal_fee == Decimal("0.0125")
    assert order.status is OrderStatus.PARTIALLY_FILLED
    assert order.reduce_only is False
    assert order.oto is not None and order.oto.stop_loss == Decimal("30000")


async def test_one_field_in_both_spellings_with_two_values_is_refused_as_maybe_placed(
    mocked: aioresponses, client: txc_async.Client
) -> None:
    mocked.post(ORDER, payload=LIVE_ORDER | {"order_id": 1})
    with pytest.raises(AnswerFormatError) as caught:
        await client.collateral_stop_limit_order(**ORDER_ARGS)
    assert caught.value.may_have_reached_server
    assert "accepted the request" in str(caught.value)


async def test_one_field_in_both_spellings_with_one_value_reads(
    mocked: aioresponses, client: txc_async.Client
) -> None:
    mocked.post(ORDER, payload=LIVE_ORDER | {"order_id": 4180284841, "deal_fee": "0.0125"})
    order = await client.collateral_stop_limit_order(**ORDER_ARGS)
    assert (order.order_id, order.deal_fee) == (4180284841, Decimal("0.0125"))


def test_both_spellings_with_two_values_are_refused_by_the_careful_reading_too() -> None:
    # A snake_case answer goes through the careful reading, which sees both spellings itself.
    from txc_async._operations import COLLATERAL_STOP_LIMIT

    body = msgspec.json.encode(SPEC_ORDER | {"dealFee": "9"})
    with pytest.raises(AnswerFormatError, match="two different values"):
        COLLATERAL_STOP_LIMIT.decode(body)


@pytest.mark.parametrize("wire", ["CANCELED", "CANCELLED"])
async def test_both_spellings_of_canceled_are_one_status(
    mocked: aioresponses, client: txc_async.Client, wire: str
) -> None:
    mocked.post(ORDER, payload=LIVE_ORDER | {"status": wire})
    order = await client.collateral_stop_limit_order(**ORDER_ARGS)
    assert order.status is OrderStatus.CANCELED
    assert order.status is OrderStatus.CANCELLED
    assert order.status == OrderStatus.CANCELLED == "CANCELED"


async def test_the_client_order_id_goes_out_under_both_names_with_reduce_only_and_stp(
    mocked: aioresponses, client: txc_async.Client
) -> None:
    mocked.post(ORDER, payload=LIVE_ORDER)
    await client.collateral_stop_limit_order(
        **ORDER_ARGS, client_order_id="order1987111", reduce_only=True, stp="cb"
    )
    body = decode_signed(requests_to(mocked, "/api/v4/order/collateral/stop-limit")[0])
    assert body["clientOrderId"] == body["client_order_id"] == "order1987111"
    assert body["reduceOnly"] is True
    assert body["stp"] == "cb"


async def test_reduce_only_and_stp_are_left_out_unless_given(
    mocked: aioresponses, client: txc_async.Client
) -> None:
    mocked.post(ORDER, payload=LIVE_ORDER)
    await client.collateral_stop_limit_order(**ORDER_ARGS)
    body = decode_signed(requests_to(mocked, "/api/v4/order/collateral/stop-limit")[0])
    assert not {"reduceOnly", "stp", "clientOrderId", "client_order_id"} & set(body)


# -- the balance of one ticker -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"main_balance": "0.5"}, Decimal("0.5")),  # the service's flat answer
        ({"main_balance": "0"}, Decimal("0")),  # an unknown ticker
        ({"BTC": {"main_balance": "1.25"}, "ETH": {"main_balance": "3"}}, Decimal("1.25")),
        ({"btc": {"main_balance": "2"}}, Decimal("2")),
        ({"ETH": {"main_balance": "3"}}, Decimal("0")),  # zero balances may be left out
        ([], Decimal("0")),
    ],
    ids=["flat", "flat-zero", "keyed", "keyed-lowercase", "keyed-without-it", "empty-list"],
)
async def test_the_balance_of_one_ticker(
    mocked: aioresponses, client: txc_async.Client, answer: Any, expected: Decimal
) -> None:
    mocked.post(BALANCE, payload=answer)
    assert await client.main_balance(ticker="BTC") == {"BTC": expected}
    assert decode_signed(requests_to(mocked, "/api/v4/main-account/balance")[0])["ticker"] == "BTC"


@pytest.mark.parametrize(
    "body",
    [b'{"main_balance": "NaN"}', b'{"main_balance": "1", "main_balance": "2"}',
     b'{"main_balance": "1", "BTC": {"main_balance": "2"}}', b'{"main_balance": true}'],
    ids=["non-finite", "twice", "flat-and-keyed", "not-a-number"],
)
async def test_a_ticker_balance_that_cannot_be_read_is_refused(
    mocked: aioresponses, client: txc_async.Client, body: bytes
) -> None:
    # An answer that cannot be read is read again once (a read is safe to repeat).
    mocked.post(BALANCE, body=body, content_type="application/json", repeat=True)
    with pytest.raises(AnswerFormatError) as caught:
        await client.main_balance(ticker="BTC")
    assert caught.value.operation == "main_balance"


async def test_a_refused_ticker_is_a_validation_error(
    mocked: aioresponses, client: txc_async.Client
) -> None:
    mocked.post(BALANCE, status=422, payload={
        "code": 0, "message": "Validation failed", "errors": {"ticker": ["validation.string"]}})
    with pytest.raises(ValidationError) as caught:
        await client.main_balance(ticker="BTC")
    assert caught.value.errors == {"ticker": ["validation.string"]}


# -- hashrate and account filters ----------------------------------------------------------------


@pytest.mark.parametrize(
    "answer", [{"data": []}, {"data": {}}, {"data": None}, {}],
    ids=["list", "object", "null", "no-data"],
)
async def test_a_disabled_account_s_empty_data_is_an_empty_series(
    mocked: aioresponses, client: txc_async.Client, answer: dict[str, Any]
) -> None:
    mocked.post(HASHRATE, payload=answer)
    series = await client.mining_hashrate(account="my-mining-account-01")
    assert series == txc_async.Hashrate("my-mining-account-01", [])


async def test_hashrate_points_carry_the_reject_rate_exactly(
    mocked: aioresponses, client: txc_async.Client
) -> None:
    mocked.post(HASHRATE, body=(
        b'{"data": {"account": "a", "hashrate": [{"timestamp": 1, "hashrate": "100",'
        b' "rejectRate": 0.0123}, {"timestamp": 2, "hashrate": "101"}]}}'
    ), content_type="application/json")
    series = await client.mining_hashrate(account="a")
    assert [p.reject_rate for p in series.hashrate] == [Decimal("0.0123"), None]


async def test_account_filters_take_the_documentation_s_names(
    mocked: aioresponses, client: txc_async.Client
) -> None:
    mocked.post(REWARDS, payload={"offset": 0, "limit": 30, "data": []})
    mocked.post(HASHRATE, payload={"data": []})
    await client.mining_rewards(account="my-mining-account-01")
    await client.mining_hashrate(account="pool.east-01_x")
    assert decode_signed(requests_to(mocked, "/api/v4/mining/rewards")[0])["account"] == (
        "my-mining-account-01"
    )
    assert decode_signed(requests_to(mocked, "/api/v4/mining/hashrate")[0])["account"] == (
        "pool.east-01_x"
    )
    # Creating an account keeps the creation rule.
    with pytest.raises(txc_async.InvalidParameterError) as caught:
        await client.create_mining_account(name="my-mining-account-01")
    assert caught.value.parameter == "name"


def test_the_documented_hosts() -> None:
    assert txc_async.DEFAULT_BASE_URL == "https://whitebit.com"
    assert txc_async.EU_BASE_URL == "https://whitebit.eu"
    assert txc_async.Client().base_url == "https://whitebit.com"


# -- the sandbox in both dialects ----------------------------------------------------------------


def _client(box: Sandbox) -> txc_async.Client:
    return txc_async.Client(box.api_key, box.api_secret, base_url=box.url, retry=fast_retry(),
                            limiter=txc_async.InProcessLimiter())


async def test_the_live_sandbox_reads_client_order_id_as_the_service_does() -> None:
    async with Sandbox() as box, _client(box) as client:
        orders = [
            await client.collateral_stop_limit_order(
                **ORDER_ARGS, client_order_id=f"id-{n}", stp="co", reduce_only=False
            )
            for n in range(3)
        ]
        # The id reached the sandbox under the name the service reads: a second order with it
        # on the same market is refused (code 36, as the service's clientOrderId refusal).
        with pytest.raises(ValidationError) as caught:
            await client.collateral_stop_limit_order(**ORDER_ARGS, client_order_id="id-0")
    assert caught.value.code == 36 and "clientOrderId" in caught.value.errors
    assert [o.client_order_id for o in orders] == ["id-0", "id-1", "id-2"]
    assert [o.status for o in orders] == [
        OrderStatus.FILLED, OrderStatus.PARTIALLY_FILLED, OrderStatus.CANCELED
    ]
    filled, partly, canceled = orders
    assert filled.left == 0 and filled.deal_stock == Decimal("0.001")
    assert filled.deal_money == Decimal("40") and filled.deal_fee == Decimal("0.04")
    assert partly.left == partly.deal_stock == Decimal("0.0005")
    assert canceled.deal_stock == 0 and canceled.left == Decimal("0.001")
    assert all(o.stp == "co" and o.reduce_only is False for o in orders)
    assert set(box.stats.orders[0]) >= {"orderId", "clientOrderId", "dealMoney", "reduceOnly"}



# -- rewards whose status changes while they are read --------------------------------------------

DAY0 = 1704067200


async def test_a_reward_whose_status_changes_during_the_walk_is_returned_once(
    mocked: aioresponses, client: txc_async.Client
) -> None:
    from aioresponses import CallbackResult

    records = [
        {"miningAccountName": f"acc_{a:03d}", "totalReward": "0.5", "reward": "0.5",
         "fee": "0", "fppsRate": "0.1", "hashRate": "100", "date": DAY0, "status": "pending",
         "rewardCurrency": "BTC", "payoutDestination": "main_balance",
         "payoutTransactionHash": None, "payoutAddress": None, "payoutTime": None}
        for a in range(150)
    ]
    requests = 0

    def answer(url: Any, **kwargs: Any) -> CallbackResult:
        nonlocal requests
        requests += 1
        if requests == 2:
            # Between the first and the second page every reward settles, and one booked at
            # the same date pushes the first page's last record onto the second page.
            for record in records:
                record["status"] = "successful"
            records.append(records[0] | {"miningAccountName": "acc_000a", "status": "pending"})
        body = decode_signed(kwargs)
        chosen = sorted(
            (r for r in records if body.get("from", 0) <= r["date"] <= body.get("to", 2**62)),
            key=lambda r: (-r["date"], r["miningAccountName"]),
        )
        offset, limit = body.get("offset", 0), body.get("limit", 30)
        return CallbackResult(
            payload={"offset": offset, "limit": limit, "data": chosen[offset : offset + limit]}
        )

    mocked.post(REWARDS, callback=answer, repeat=True)
    got = [r async for r in client.iter_mining_rewards(start=DAY0, end=DAY0 + 86_399)]
    names = [r.mining_account_name for r in got]
    # Each reward once, the one booked behind the walk included (found by the closing check).
    assert sorted(names) == sorted({str(r["miningAccountName"]) for r in records})
    assert len(names) == 151
    assert {r.reward_currency for r in got} == {"BTC"}
    assert {r.status for r in got} <= set(txc_async.RewardStatus)
    assert got[0].payout_destination is txc_async.PayoutDestination.MAIN_BALANCE
