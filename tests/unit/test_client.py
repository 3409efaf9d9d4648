"""The client's operations, answers and errors, against a mocked HTTP layer."""

from __future__ import annotations

import asyncio
import math
import time
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import aiohttp
import pytest
from aioresponses import aioresponses

import txc_async
from txc_async import (
    ApiError,
    AuthenticationError,
    InvalidParameterError,
    InvestmentStatus,
    OrderStatus,
    PlanStatus,
    RateLimitError,
    RequestTimeout,
    TransportError,
    ValidationError,
)
from txc_async.transports import AiohttpTransport

from ..support.clocks import ManualClock
from ..support.common import (
    BASE,
    KEY,
    SECRET,
    RecordingLimiter,
    decode_signed,
    fast_retry,
    requests_to,
    serve_rewards,
)

BALANCE = BASE + "/api/v4/main-account/balance"
INVEST = BASE + "/api/v4/main-account/smart/investments"
ORDER = BASE + "/api/v4/order/collateral/stop-limit"
CREATE = BASE + "/api/v4/mining/accounts/create"
REWARDS = BASE + "/api/v4/mining/rewards"
HASHRATE = BASE + "/api/v4/mining/hashrate"
OAUTH = BASE + "/oauth2/refresh_token"
PING = BASE + "/api/v4/public/ping"

PLAN = {
    "id": "plan-1", "ticker": "USDT", "status": 1, "percent": "5.5", "duration": 43200,
    "interestTicker": "USDT", "interestRatio": "1", "minInvestment": "10",
    "maxInvestment": "100000", "maxPossibleInvestment": "55000.12345678",
}
INVESTMENT = {
    "id": "inv-1", "plan": PLAN, "status": 2, "created": 1700000000, "updated": 1700000100,
    "paymentTime": 1702592000, "amount": "100.10000001", "interestPaid": "0.00000001",
    "somethingNew": {"tolerated": True},
}
REWARD = {
    "miningAccountName": "acc_1", "totalReward": "0.00012345", "reward": "0.00012000",
    "fee": "0.00000345", "fppsRate": "0.000001", "hashRate": "120.5 TH/s", "date": 1704067200,
}
ORDER_ANSWER = {
    "order_id": 4180284841, "client_order_id": "my-1", "market": "BTC_USDT", "side": "buy",
    "type": "stop limit", "timestamp": 1595792396.165973, "deal_money": "0", "deal_stock": "0",
    "amount": "0.001", "left": "0.001", "deal_fee": "0", "price": "40000.1",
    "activation_price": "40000", "status": "NEW", "stp": "no",
    "oto": {"otoId": 7, "stopLoss": "39000", "takeProfit": "45000.5"}, "positionSide": "LONG",
}


def reward(date: int, account: str = "acc_1") -> dict[str, Any]:
    return REWARD | {"date": date, "miningAccountName": account}


# -- signing -------------------------------------------------------------------------------------


def test_signature_known_answer() -> None:
    from txc_async._nonces.sources import NonceSource
    from txc_async._signing import Signer

    signer = Signer("test-key", "test-secret", NonceSource())
    body, headers = signer.sign(
        "/api/v4/main-account/smart/investments", {"ticker": "BTC"}, 1700000000000
    )
    assert body == (
        b'{"ticker":"BTC","request":"/api/v4/main-account/smart/investments",'
        b'"nonce":"1700000000000","nonceWindow":true}'
    )
    assert headers["X-TXC-PAYLOAD"] == (
        "eyJ0aWNrZXIiOiJCVEMiLCJyZXF1ZXN0IjoiL2FwaS92NC9tYWluLWFjY291bnQvc21hcnQvaW52ZXN0bWVudHMi"
        "LCJub25jZSI6IjE3MDAwMDAwMDAwMDAiLCJub25jZVdpbmRvdyI6dHJ1ZX0="
    )
    assert headers["X-TXC-SIGNATURE"] == (
        "5c443e6c92a57ed31b1637fcb65f695d9064b5c8a84bfbb55cb5bb6ba6b489a7"
        "e848540f942bcb4a7ceea7077e8d6ec667725f787601b803632a8c5ce08e450d"
    )
    assert headers["X-TXC-APIKEY"] == "test-key"
    assert headers["Content-Type"] == "application/json"


def test_nonces_are_milliseconds_and_strictly_increasing() -> None:
    from txc_async._nonces.clock import ServerClock
    from txc_async._nonces.sources import NonceSource

    clock = ManualClock(wall=1_700_000_000.0)
    source = NonceSource(ServerClock(clock))
    now = 1_700_000_000_000
    assert [source.try_next() for _ in range(3)] == [now, now + 1, now + 2]
    clock.advance(0.010)
    assert source.try_next() == now + 10


async def test_nonce_source_waits_instead_of_running_far_ahead() -> None:
    from txc_async._nonces.clock import ServerClock
    from txc_async._nonces.sources import MAX_NONCE_LEAD_MS, NonceSource

    clock = ManualClock(wall=1_000.0)
    source = NonceSource(ServerClock(clock), sleep=clock.sleep)
    nonces = [await source.next() for _ in range(MAX_NONCE_LEAD_MS + 50)]
    assert len(set(nonces)) == len(nonces)
    assert nonces == sorted(nonces)
    assert nonces[-1] - round(clock.wall * 1000) <= MAX_NONCE_LEAD_MS
    assert clock.slept, "the source must wait once the counter runs 4 s ahead"


def test_one_nonce_source_per_key_in_a_runtime() -> None:
    from txc_async._nonces.registry import NonceSources

    sources = NonceSources()
    assert sources.get("k1") is sources.get("k1")
    assert sources.get("k1") is not sources.get("k2")


async def test_1000_concurrent_signed_requests_carry_distinct_nonces(
    mocked: aioresponses, limiter: RecordingLimiter
) -> None:
    mocked.post(BALANCE, payload={"BTC": {"main_balance": "1"}}, repeat=True)
    async with (
        txc_async.Client(api_key=KEY, api_secret=SECRET, base_url=BASE, limiter=limiter,
                         transport=AiohttpTransport(direct=False)) as c1,
        txc_async.Client(api_key=KEY, api_secret=SECRET, base_url=BASE, limiter=limiter,
                         transport=AiohttpTransport(direct=False)) as c2,
    ):
        await asyncio.gather(*(c.main_balance() for _ in range(500) for c in (c1, c2)))
    bodies = [decode_signed(kw) for kw in requests_to(mocked, "/api/v4/main-account/balance")]
    assert len(bodies) == 1000
    nonces = [int(b["nonce"]) for b in bodies]
    assert len(set(nonces)) == 1000
    assert all(b["nonceWindow"] is True for b in bodies)
    assert all(b["request"] == "/api/v4/main-account/balance" for b in bodies)
    # Milliseconds of the current time, not seconds.
    assert abs(min(nonces) / 1000 - datetime.now(UTC).timestamp()) < 60


# -- operations ----------------------------------------------------------------------------------


async def test_ping(mocked: aioresponses, client: txc_async.Client) -> None:
    mocked.get(PING, payload=["pong"])
    assert await client.ping() is True


async def test_ping_works_without_credentials(mocked: aioresponses) -> None:
    mocked.get(PING, payload=["pong"])
    async with txc_async.Client(base_url=BASE, limiter=RecordingLimiter(),
                                transport=AiohttpTransport(direct=False)) as c:
        assert await c.ping() is True
        with pytest.raises(InvalidParameterError, match="api_key"):
            await c.main_balance()


async def test_main_balance(mocked: aioresponses, client: txc_async.Client) -> None:
    mocked.post(
        BALANCE,
        payload={"BTC": {"main_balance": "0.10000000"}, "USDT": {"main_balance": "12.5"}},
    )
    balance = await client.main_balance()
    assert balance == {"BTC": Decimal("0.10000000"), "USDT": Decimal("12.5")}
    assert all(isinstance(v, Decimal) for v in balance.values())
    body = decode_signed(requests_to(mocked, "/api/v4/main-account/balance")[0])
    assert set(body) == {"request", "nonce", "nonceWindow"}


async def test_investments_history(
    mocked: aioresponses, client: txc_async.Client, limiter: RecordingLimiter
) -> None:
    mocked.post(INVEST, payload={"offset": 0, "limit": 100, "records": [INVESTMENT]})
    page = await client.investments_history(ticker="USDT", status=InvestmentStatus.CLOSED)
    (record,) = page.records
    assert record.status is InvestmentStatus.CLOSED
    assert record.amount == Decimal("100.10000001")
    assert record.interest_paid == Decimal("0.00000001")
    assert record.payment_time == 1702592000
    assert record.plan.status is PlanStatus.ACTIVE
    assert record.plan.max_possible_investment == Decimal("55000.12345678")
    assert record.plan.interest_ticker == "USDT"
    body = decode_signed(requests_to(mocked, "/api/v4/main-account/smart/investments")[0])
    assert body["ticker"] == "USDT" and body["status"] == 2
    assert body["limit"] == 100 and body["offset"] == 0
    assert limiter.acquired == ["investments"]


async def test_iter_investments_history_walks_every_page(
    mocked: aioresponses, client: txc_async.Client
) -> None:
    records = [INVESTMENT | {"id": f"inv-{i}"} for i in range(250)]
    for offset in (0, 100, 200):
        mocked.post(
            INVEST,
            payload={"offset": offset, "limit": 100, "records": records[offset : offset + 100]},
        )
    ids = [r.id async for r in client.iter_investments_history(status=1)]
    assert ids == [f"inv-{i}" for i in range(250)]
    offsets = [decode_signed(kw)["offset"] for kw in requests_to(mocked, INVEST_PATH)]
    assert offsets == [0, 100, 200]


INVEST_PATH = "/api/v4/main-account/smart/investments"
REWARDS_PATH = "/api/v4/mining/rewards"
ORDER_PATH = "/api/v4/order/collateral/stop-limit"


async def test_collateral_stop_limit_order(mocked: aioresponses, client: txc_async.Client) -> None:
    mocked.post(ORDER, payload=ORDER_ANSWER)
    order = await client.collateral_stop_limit_order(
        market="BTC_USDT", side="buy", amount=Decimal("0.001"), price="40000.10",
        activation_price=40000, stop_loss=Decimal("39000"), take_profit="45000.5",
        client_order_id="my-1", position_side="LONG",
    )
    assert order.order_id == 4180284841
    assert order.status is OrderStatus.NEW
    assert order.price == Decimal("40000.1")
    assert order.activation_price == Decimal("40000")
    assert order.oto is not None and order.oto.oto_id == 7
    assert order.oto.take_profit == Decimal("45000.5")
    assert order.position_side == "LONG"
    body = decode_signed(requests_to(mocked, "/api/v4/order/collateral/stop-limit")[0])
    assert body == {
        "market": "BTC_USDT", "side": "buy", "amount": "0.001", "price": "40000.1",
        "activation_price": "40000", "stopLoss": "39000", "takeProfit": "45000.5",
        "clientOrderId": "my-1", "client_order_id": "my-1", "positionSide": "LONG",
        "request": "/api/v4/order/collateral/stop-limit", "nonce": body["nonce"],
        "nonceWindow": True,
    }


async def test_decimal_amounts_never_use_exponent_notation(
    mocked: aioresponses, client: txc_async.Client
) -> None:
    mocked.post(ORDER, payload=ORDER_ANSWER)
    await client.collateral_stop_limit_order(
        market="BTC_USDT", side="sell", amount=Decimal("1E-8"), price=Decimal("1E+5"),
        activation_price=Decimal("0.000000100"),
    )
    body = decode_signed(requests_to(mocked, "/api/v4/order/collateral/stop-limit")[0])
    assert (body["amount"], body["price"], body["activation_price"]) == (
        "0.00000001", "100000", "0.0000001",
    )


class CentsDecimal(Decimal):
    """A money type of an application that formats itself to cents and exponents."""

    def __format__(self, spec: str) -> str:
        return "0" if self < 1 else "1E+5"

    def is_finite(self) -> bool:
        return True


async def test_a_decimal_subclass_is_sent_by_its_value_not_its_formatting(
    mocked: aioresponses, client: txc_async.Client
) -> None:
    mocked.post(ORDER, payload=ORDER_ANSWER)
    await client.collateral_stop_limit_order(
        market="BTC_USDT", side="sell", amount=CentsDecimal("0.001"),
        price=CentsDecimal("40000.5"), activation_price=Decimal("40000"),
    )
    body = decode_signed(requests_to(mocked, "/api/v4/order/collateral/stop-limit")[0])
    assert (body["amount"], body["price"]) == ("0.001", "40000.5")
    with pytest.raises(InvalidParameterError, match="amount: must be a finite number"):
        await client.collateral_stop_limit_order(
            market="BTC_USDT", side="sell", amount=CentsDecimal("NaN"), price="1",
            activation_price="1",
        )


@pytest.mark.parametrize("amount", [
    Decimal("1E+100"), Decimal("1E-101"), Decimal("1E+999999999"), Decimal("1E-999999999"),
    Decimal("1." + "0" * 100 + "1"), 10**100, "1" + "0" * 100,
])
async def test_amounts_too_long_to_write_out_are_refused_unsent(
    mocked: aioresponses, client: txc_async.Client, amount: object
) -> None:
    """An amount with more than 100 digits on either side of its point is refused at once,
    before a gigabyte of digits is written (1E+999999999) or anything is sent."""
    with pytest.raises(InvalidParameterError, match="amount: must be written with at most 100"):
        await client.collateral_stop_limit_order(
            market="BTC_USDT", side="sell", amount=amount, price="1", activation_price="1",
        )
    assert not requests_to(mocked, "/api/v4/order/collateral/stop-limit")


async def test_amounts_up_to_100_digits_each_side_are_sent_exactly(
    mocked: aioresponses, client: txc_async.Client
) -> None:
    mocked.post(ORDER, payload=ORDER_ANSWER)
    big, small = "9" * 100, "0." + "0" * 99 + "1"
    await client.collateral_stop_limit_order(
        market="BTC_USDT", side="sell", amount=Decimal(big), price=Decimal(small),
        activation_price=Decimal("1." + "0" * 500),
    )
    body = decode_signed(requests_to(mocked, "/api/v4/order/collateral/stop-limit")[0])
    assert (body["amount"], body["price"], body["activation_price"]) == (big, small, "1")


async def test_create_mining_account(mocked: aioresponses, client: txc_async.Client) -> None:
    mocked.post(CREATE, payload={"data": {"name": "my_pool_1", "createdAt": 1700000000}})
    account = await client.create_mining_account(name="my_pool_1", referral_code="ref")
    assert account == txc_async.MiningAccount(name="my_pool_1", created_at=1700000000)
    body = decode_signed(requests_to(mocked, "/api/v4/mining/accounts/create")[0])
    assert body["name"] == "my_pool_1" and body["referralCode"] == "ref"


async def test_mining_rewards(mocked: aioresponses, client: txc_async.Client) -> None:
    mocked.post(REWARDS, payload={"offset": 0, "limit": 30, "data": [REWARD]})
    page = await client.mining_rewards(
        account="acc_1", start=datetime(2024, 1, 1, tzinfo=UTC), end=1706745600, limit=30
    )
    (record,) = page.data
    assert record.mining_account_name == "acc_1"
    assert record.total_reward == Decimal("0.00012345")
    assert record.fpps_rate == Decimal("0.000001")
    assert record.hash_rate == "120.5 TH/s"
    body = decode_signed(requests_to(mocked, REWARDS_PATH)[0])
    assert (body["account"], body["from"], body["to"], body["limit"]) == (
        "acc_1", 1704067200, 1706745600, 30,
    )
    assert "offset" not in body


async def test_aware_datetimes_in_any_zone(mocked: aioresponses, client: txc_async.Client) -> None:
    mocked.post(REWARDS, payload={"offset": 0, "limit": 30, "data": []})
    kyiv = timezone(timedelta(hours=2))
    await client.mining_rewards(start=datetime(2024, 1, 1, 2, 0, tzinfo=kyiv))
    assert decode_signed(requests_to(mocked, REWARDS_PATH)[0])["from"] == 1704067200


async def test_mining_hashrate(mocked: aioresponses, client: txc_async.Client) -> None:
    mocked.post(
        HASHRATE,
        payload={"data": {"account": "acc_1", "hashrate": [
            {"timestamp": 1704067200, "hashrate": "1.5 PH/s"}]}},
    )
    series = await client.mining_hashrate(account="acc_1", start=1, end=2, interval="5m")
    assert series.account == "acc_1"
    assert series.hashrate[0] == txc_async.HashratePoint(timestamp=1704067200, hashrate="1.5 PH/s")
    assert decode_signed(requests_to(mocked, "/api/v4/mining/hashrate")[0])["interval"] == "5m"


async def test_refresh_oauth_token(mocked: aioresponses, client: txc_async.Client) -> None:
    mocked.post(OAUTH, payload={"data": {
        "access_token": "AT-secret", "expires_in": 300, "refresh_token": "RT-secret",
        "scope": "general,history", "token_type": "Bearer"}})
    token = await client.refresh_oauth_token(
        client_id="cid", client_secret="csecret", refresh_token="RT-old"
    )
    assert token.access_token == "AT-secret" and token.expires_in == 300
    assert token.scopes == ["general", "history"]
    # rich's pretty printer, log handler and tracebacks read __rich_repr__, not __repr__.
    rich = repr(list(token.__rich_repr__()))
    for text in (repr(token), str(token), rich):
        assert "AT-secret" not in text and "RT-secret" not in text
    assert "general,history" in rich
    (kwargs,) = requests_to(mocked, "/oauth2/refresh_token")
    assert kwargs["headers"]["Content-Type"] == "application/x-www-form-urlencoded"
    assert kwargs["data"] == b"client_id=cid&client_secret=csecret&token=RT-old"
    assert "X-TXC-SIGNATURE" not in kwargs["headers"]


# -- the reward iterator -------------------------------------------------------------------------


async def test_iter_mining_rewards_exactly_once_past_the_offset_bound(
    mocked: aioresponses, client: txc_async.Client
) -> None:
    # 60 accounts x 300 days = 18,000 records, far past the 10,100 an offset can reach.
    records = [
        reward(1704067200 + day * 86400, f"acc_{a:02d}") for day in range(300) for a in range(60)
    ]
    serve_rewards(mocked, records)
    got = [r async for r in client.iter_mining_rewards(start=0, end=1704067200 + 400 * 86400)]
    keys = [(r.mining_account_name, r.date) for r in got]
    assert len(keys) == len(set(keys)) == 18_000
    assert [r.date for r in got] == sorted((r.date for r in got), reverse=True)


@pytest.mark.parametrize(
    ("count", "requests"),
    # Two pages, then one request for the check (nothing was booked meanwhile); or one short
    # answer that held the whole range at once, which leaves nothing for a check to find.
    [(150, 3), (40, 1)],
    ids=["two-pages-and-the-check", "one-page"],
)
async def test_iter_mining_rewards_stops_on_a_short_page(
    mocked: aioresponses, client: txc_async.Client, count: int, requests: int
) -> None:
    serve_rewards(mocked, [reward(1704067200 + d * 86400) for d in range(count)])
    got = [r async for r in client.iter_mining_rewards(account="acc_1", end=1735689599)]
    assert len(got) == count
    assert len(requests_to(mocked, REWARDS_PATH)) == requests


# -- refused input -------------------------------------------------------------------------------

BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("investments_history", {"limit": 0}, "limit"),
    ("investments_history", {"limit": 101}, "limit"),
    ("investments_history", {"limit": True}, "limit"),
    ("investments_history", {"offset": -1}, "offset"),
    ("investments_history", {"offset": 10001}, "offset"),
    ("investments_history", {"status": 3}, "status"),
    ("investments_history", {"ticker": "BTC USDT"}, "ticker"),
    ("investments_history", {"id": ""}, "id"),
    ("mining_rewards", {"limit": 101}, "limit"),
    ("mining_rewards", {"offset": 10001}, "offset"),
    # The filter takes any name the service might hold (dashes too), but not a control character.
    ("mining_rewards", {"account": "bad\nname"}, "account"),
    ("mining_rewards", {"account": "bad\x85name"}, "account"),
    ("mining_rewards", {"account": ""}, "account"),
    ("mining_rewards", {"account": "a" * 256}, "account"),
    ("mining_rewards", {"account": 7}, "account"),
    ("mining_rewards", {"start": datetime(2024, 1, 1)}, "start"),
    ("mining_rewards", {"start": 10, "end": 5}, "start"),
    ("mining_rewards", {"end": 1.5}, "end"),
    ("mining_rewards", {"start": -1}, "start"),
    # A datetime outside the API's range is refused as the same moment in seconds would be.
    ("mining_rewards", {"start": datetime(1900, 1, 1, tzinfo=UTC)}, "start"),
    ("mining_hashrate", {}, "account"),
    ("mining_hashrate", {"account": "a\tb"}, "account"),
    ("mining_hashrate",
     {"account": "acc",
      "end": datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone(timedelta(hours=-12)))},
     "end"),
    # A member of another enum is refused, whatever its value (PlanStatus 2 is not "closed").
    ("investments_history", {"status": txc_async.PlanStatus.NO_COINS_LEFT}, "status"),
    ("mining_hashrate", {"account": "acc", "interval": "2h"}, "interval"),
    ("mining_hashrate", {"account": "acc", "interval": "1H"}, "interval"),
    ("main_balance", {"ticker": "BTC USDT"}, "ticker"),
    ("main_balance", {"ticker": ""}, "ticker"),
    ("main_balance", {"ticker": 1}, "ticker"),
    ("create_mining_account", {"name": "has space"}, "name"),
    ("create_mining_account", {"name": ""}, "name"),
    ("create_mining_account", {"name": "a" * 256}, "name"),
    ("create_mining_account", {"name": "ok", "referral_code": "r" * 51}, "referral_code"),
    ("refresh_oauth_token", {"client_id": "", "client_secret": "s", "refresh_token": "t"},
     "client_id"),
]

ORDER_OK: dict[str, Any] = {
    "market": "BTC_USDT", "side": "buy", "amount": "1", "price": "2", "activation_price": "3",
}
BAD_ORDERS: list[tuple[dict[str, Any], str]] = [
    ({"amount": 0.1}, "amount"),
    ({"amount": True}, "amount"),
    ({"price": Decimal("NaN")}, "price"),
    ({"price": Decimal("Infinity")}, "price"),
    ({"price": "-1"}, "price"),
    ({"price": "0"}, "price"),
    ({"activation_price": "1e5"}, "activation_price"),
    ({"activation_price": "abc"}, "activation_price"),
    ({"stop_loss": 1.5}, "stop_loss"),
    ({"take_profit": "-2"}, "take_profit"),
    ({"market": "btc_usdt"}, "market"),
    ({"market": "BTCUSDT"}, "market"),
    ({"side": "long"}, "side"),
    ({"side": txc_async.PositionSide.LONG}, "side"),
    ({"position_side": txc_async.Side.BUY}, "position_side"),
    # Spaces are not part of a plain decimal: " 1\n" may be the rest of a mistake.
    ({"amount": " 1\n"}, "amount"),
    ({"price": "1 "}, "price"),
    ({"position_side": "UP"}, "position_side"),
    ({"client_order_id": ""}, "client_order_id"),
    ({"reduce_only": "yes"}, "reduce_only"),
    ({"reduce_only": 1}, "reduce_only"),
    # The service refuses a reduce-only order with OTO legs (code 30).
    ({"reduce_only": True, "stop_loss": "1"}, "reduce_only"),
    ({"reduce_only": True, "take_profit": "1"}, "reduce_only"),
    ({"stp": "cancel_both"}, "stp"),
    ({"stp": "NO"}, "stp"),
    ({"stp": True}, "stp"),
]


@pytest.mark.parametrize(("method", "kwargs", "parameter"), BAD_CALLS)
async def test_bad_input_is_refused_before_sending(
    mocked: aioresponses, client: txc_async.Client, method: str, kwargs: dict[str, Any],
    parameter: str,
) -> None:
    with pytest.raises(InvalidParameterError) as caught:
        await getattr(client, method)(**kwargs)
    assert caught.value.parameter == parameter
    # The message begins with the operation, then names the parameter.
    assert str(caught.value).startswith(f"{method}: {parameter}:")
    assert isinstance(caught.value, ValueError)
    assert not mocked.requests


@pytest.mark.parametrize(("change", "parameter"), BAD_ORDERS)
async def test_bad_orders_are_refused_before_sending(
    mocked: aioresponses, client: txc_async.Client, change: dict[str, Any], parameter: str
) -> None:
    with pytest.raises(InvalidParameterError) as caught:
        await client.collateral_stop_limit_order(**(ORDER_OK | change))
    assert caught.value.parameter == parameter
    assert not mocked.requests


async def test_iter_mining_rewards_from_a_future_start_without_end_is_refused(
    mocked: aioresponses, client: txc_async.Client
) -> None:
    # Without end the range ends now: a start after now would send from > to.
    walk = client.iter_mining_rewards(start=int(time.time()) + 86_400)
    with pytest.raises(InvalidParameterError) as caught:
        await walk.__anext__()
    assert caught.value.parameter == "start"
    assert str(caught.value).startswith("iter_mining_rewards: start: must not be after end")
    assert not mocked.requests


@pytest.mark.parametrize(("kwargs", "parameter", "fragment"), [
    ({"base_url": "http://127.0.0.1:abc"}, "base_url", "port from 1 to 65535"),
    ({"base_url": "http://127.0.0.1:99999"}, "base_url", "port from 1 to 65535"),
    ({"base_url": "http://127.0.0.1:0"}, "base_url", "port from 1 to 65535"),
    ({"rate_limits": [("public", txc_async.RateLimit(1, 1))]}, "rate_limits", "mapping"),
    ({"limiter": "memory://"}, "limiter", "limiter_from_url"),
    ({"limiter": object()}, "limiter", "not object"),
    ({"transport": "x"}, "transport", "send and aclose"),
])
def test_client_parts_of_the_wrong_kind_are_refused_at_once(
    kwargs: dict[str, Any], parameter: str, fragment: str
) -> None:
    # Refused by the constructor, not by the first call (or by close()).
    with pytest.raises(InvalidParameterError) as caught:
        txc_async.Client(**kwargs)
    assert caught.value.parameter == parameter
    assert fragment in str(caught.value)
    assert caught.value.__context__ is None


def test_client_settings_are_checked() -> None:
    with pytest.raises(InvalidParameterError, match="base_url"):
        txc_async.Client(base_url="http://api.example.com")
    with pytest.raises(InvalidParameterError, match="api_secret"):
        txc_async.Client(api_key="k")
    with pytest.raises(InvalidParameterError, match="api_key"):
        txc_async.Client(api_key="k\n", api_secret="s")
    with pytest.raises(InvalidParameterError) as caught:
        txc_async.Client(api_key="k", api_secret="sécret-value")
    assert caught.value.parameter == "api_secret" and "sécret" not in str(caught.value)
    with pytest.raises(InvalidParameterError, match="timeout"):
        txc_async.Client(timeout=0)
    with pytest.raises(InvalidParameterError, match="rate_limits"):
        txc_async.Client(rate_limits={"nope": txc_async.RateLimit(1, 1)})
    for url in ("http://127.0.0.1:8080", "http://localhost:1", "http://[::1]:5"):
        txc_async.Client(base_url=url, limiter=RecordingLimiter())


@pytest.mark.parametrize(("settings", "parameter"), [
    ({"verify_tls": "no"}, "verify_tls"),
    ({"verify_tls": 0}, "verify_tls"),
    ({"session": object()}, "session"),
    ({"clock": object()}, "clock"),
])
def test_settings_of_the_wrong_kind_are_refused_when_the_client_is_made(
    settings: dict[str, Any], parameter: str
) -> None:
    with pytest.raises(InvalidParameterError) as caught:
        txc_async.Client(base_url="http://127.0.0.1:9", limiter=RecordingLimiter(), **settings)
    assert caught.value.parameter == parameter


def test_tls_is_verified_with_a_ca_of_ones_own() -> None:
    import ssl

    context = ssl.create_default_context()
    client = txc_async.Client(limiter=RecordingLimiter(), verify_tls=context)
    assert client._pipeline.transport._verify_tls is context  # type: ignore[attr-defined]


@pytest.mark.parametrize(("settings", "parameter"), [
    ({"backoff_base": math.inf}, "backoff_base"),
    ({"backoff_cap": math.inf}, "backoff_cap"),
    ({"max_retry_after": math.inf}, "max_retry_after"),
    ({"backoff_base": math.nan}, "backoff_base"),
    ({"backoff_cap": True}, "backoff_cap"),
    ({"max_retries": -1}, "max_retries"),
    ({"random": 0.5}, "random"),
])
def test_a_retry_policy_without_a_bound_is_refused(
    settings: dict[str, Any], parameter: str
) -> None:
    with pytest.raises(InvalidParameterError) as caught:
        txc_async.RetryPolicy(**settings)
    assert caught.value.parameter == parameter


def test_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TXC_API_KEY", "env-key")
    monkeypatch.setenv("TXC_API_SECRET", "env-secret-value")
    monkeypatch.setenv("TXC_BASE_URL", "http://127.0.0.1:9")
    c = txc_async.Client.from_env(limiter=RecordingLimiter())
    assert c.base_url == "http://127.0.0.1:9"
    assert "env-secret-value" not in repr(c) and "env-key" not in repr(c)


def test_from_env_keywords_win_and_reach_the_client(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TXC_API_KEY", "env-key")
    monkeypatch.setenv("TXC_API_SECRET", "env-secret-value")
    monkeypatch.setenv("TXC_BASE_URL", "http://127.0.0.1:9")
    limits = {"mining_rewards": txc_async.RateLimit(5, 1)}
    c = txc_async.Client.from_env(
        base_url="http://localhost:8", rate_limits=limits, limiter=RecordingLimiter()
    )
    assert c.base_url == "http://localhost:8"
    assert c.rate_limits["mining_rewards"] == txc_async.RateLimit(5, 1)
    with pytest.raises(InvalidParameterError, match="timeout"):
        txc_async.Client.from_env(timeout=0, limiter=RecordingLimiter())
    with pytest.raises(InvalidParameterError, match="max_connections"):
        txc_async.Client.from_env(max_connections=0, limiter=RecordingLimiter())
    monkeypatch.delenv("TXC_BASE_URL")
    monkeypatch.delenv("TXC_API_KEY")
    monkeypatch.delenv("TXC_API_SECRET")
    public = txc_async.Client.from_env(limiter=RecordingLimiter())
    assert public.base_url == txc_async.DEFAULT_BASE_URL
    assert "public only" in repr(public)


# -- errors --------------------------------------------------------------------------------------


async def _error(mocked: aioresponses, client: txc_async.Client, status: int,
                 body: Any) -> BaseException:
    kwargs: dict[str, Any] = {"status": status, "repeat": True}
    if isinstance(body, (bytes, str)):
        kwargs["body"] = body
    else:
        kwargs["payload"] = body
    mocked.post(INVEST, **kwargs)
    with pytest.raises(txc_async.TxcError) as caught:
        await client.investments_history()
    return caught.value


async def test_validation_error_keeps_field_messages(
    mocked: aioresponses, client: txc_async.Client
) -> None:
    err = await _error(mocked, client, 400, {
        "code": 0, "message": "Validation failed",
        "errors": {"status": ["The selected status is invalid."], "ticker": ["Bad ticker."]}})
    assert type(err) is ValidationError
    assert err.status == 400 and err.code == 0
    assert err.errors == {"status": ["The selected status is invalid."], "ticker": ["Bad ticker."]}
    assert "status: The selected status is invalid." in str(err)


@pytest.mark.parametrize(
    ("status", "body", "kind", "code"),
    [
        (422, {"code": 30, "message": "Request validation failed", "errors": []}, ValidationError,
         30),
        (200, {"code": 30, "message": "Validation failed", "errors": {}}, ValidationError, 30),
        (401, {"code": 0, "message": "Invalid signature", "errors": {}}, AuthenticationError, 0),
        (403, {"code": 0, "message": "No access", "errors": {}}, AuthenticationError, 0),
        (200, {"code": 422, "message": "Incorrect timestamp"}, ApiError, 422),
        (200, {"success": False, "message": "Unknown market", "params": []}, ApiError, None),
        (200, {"success": False, "message": {"market": ["bad"]}, "result": None}, ValidationError,
         None),
        (422, {"market": ["The market field is required."]}, ValidationError, None),
        # The OAuth refusal's shape, in another operation's answer: its fields were refused.
        (400, {"data": {"token": ["Invalid token."]}}, ValidationError, None),
        (418, {"something": "else"}, ApiError, None),
    ],
)
async def test_error_shapes(
    mocked: aioresponses, client: txc_async.Client, status: int, body: Any, kind: type,
    code: int | None,
) -> None:
    err = await _error(mocked, client, status, body)
    assert isinstance(err, kind)
    assert isinstance(err, ApiError)
    assert err.code == code and err.status == status


async def test_incorrect_timestamp_is_an_api_error_with_code_422(
    mocked: aioresponses, client: txc_async.Client
) -> None:
    mocked.post(REWARDS, status=422, payload={"code": 422, "message": "Incorrect timestamp"})
    with pytest.raises(ApiError) as caught:
        await client.mining_rewards(start=1, end=2)
    assert caught.value.code == 422 and caught.value.message == "Incorrect timestamp"


async def test_oauth_refusal(mocked: aioresponses, client: txc_async.Client) -> None:
    mocked.post(OAUTH, status=400, payload={"data": {"token": ["Invalid token."]}})
    with pytest.raises(AuthenticationError) as caught:
        await client.refresh_oauth_token(client_id="c", client_secret="s", refresh_token="RT-x")
    assert caught.value.errors == {"token": ["Invalid token."]}
    assert "RT-x" not in str(caught.value) and "RT-x" not in repr(caught.value)


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (500, {"error": ["Internal server error."]}),
        (503, b"<html>maintenance</html>"),
        (502, b"<html>bad gateway</html>"),
        (200, b"{not json"),
        (200, b""),
        (404, b""),
        (200, {"unexpected": "shape"}),
    ],
)
async def test_unusable_answers_are_transport_errors(
    mocked: aioresponses, client: txc_async.Client, status: int, body: Any
) -> None:
    err = await _error(mocked, client, status, body)
    # A success status with an unreadable answer is the TransportError that says so; a 503
    # without a JSON body is the gateway's maintenance page.
    expected = {200: txc_async.AnswerFormatError, 503: txc_async.ServiceMaintenanceError}
    assert type(err) is expected.get(status, TransportError)
    assert err.status == status


# -- retries -------------------------------------------------------------------------------------


async def test_reads_are_retried_after_server_errors(
    mocked: aioresponses, client: txc_async.Client
) -> None:
    mocked.post(BALANCE, status=502, body=b"<html>502</html>")
    mocked.post(BALANCE, status=500, payload={"error": ["Internal server error."]})
    mocked.post(BALANCE, exception=aiohttp.ServerDisconnectedError())
    mocked.post(BALANCE, payload={"BTC": {"main_balance": "1"}})
    assert await client.main_balance() == {"BTC": Decimal(1)}
    bodies = [decode_signed(kw) for kw in requests_to(mocked, "/api/v4/main-account/balance")]
    assert len(bodies) == 4
    assert len({b["nonce"] for b in bodies}) == 4, "every attempt is signed again"
    assert client.stats.retries == 3


async def test_reads_give_up_after_a_bounded_number_of_attempts(
    mocked: aioresponses, client: txc_async.Client
) -> None:
    mocked.post(BALANCE, status=503, body=b"down", repeat=True)
    with pytest.raises(TransportError) as caught:
        await client.main_balance()
    assert caught.value.status == 503
    assert len(requests_to(mocked, "/api/v4/main-account/balance")) == 4


def retrying_client(limiter: RecordingLimiter, **retry: int) -> txc_async.Client:
    """A client of the mocked server whose retries are quick, as ``retry`` sets them."""
    return txc_async.Client(api_key=KEY, api_secret=SECRET, base_url=BASE, limiter=limiter,
                            retry=fast_retry(**retry), transport=AiohttpTransport(direct=False))


async def test_timeouts_raise_request_timeout(
    mocked: aioresponses, limiter: RecordingLimiter
) -> None:
    mocked.post(BALANCE, exception=TimeoutError(), repeat=True)
    async with retrying_client(limiter, max_retries=1) as c:
        with pytest.raises(RequestTimeout) as caught:
            await c.main_balance()
    assert isinstance(caught.value, asyncio.TimeoutError)
    assert isinstance(caught.value, TransportError)
    assert len(requests_to(mocked, "/api/v4/main-account/balance")) == 2


@pytest.mark.parametrize(
    "failure",
    [
        {"status": 502, "body": b"<html>502</html>"},
        {"status": 500, "payload": {"error": ["Internal server error."]}},
        {"status": 200, "body": b"{trunc"},
        {"exception": TimeoutError()},
        {"exception": aiohttp.ServerDisconnectedError()},
    ],
)
async def test_writes_are_never_re_sent_once_they_may_have_arrived(
    mocked: aioresponses, client: txc_async.Client, failure: dict[str, Any]
) -> None:
    mocked.post(ORDER, **failure)
    mocked.post(ORDER, payload=ORDER_ANSWER)
    with pytest.raises(TransportError):
        await client.collateral_stop_limit_order(**ORDER_OK)
    assert len(requests_to(mocked, "/api/v4/order/collateral/stop-limit")) == 1


async def test_writes_are_retried_when_the_connection_was_never_made(
    mocked: aioresponses, client: txc_async.Client
) -> None:
    refused = aiohttp.ClientConnectorError(
        connection_key=None, os_error=ConnectionRefusedError(111, "refused")  # type: ignore[arg-type]
    )
    mocked.post(CREATE, exception=refused)
    mocked.post(CREATE, payload={"data": {"name": "n", "createdAt": 1}})
    assert (await client.create_mining_account(name="n")).name == "n"


async def test_rate_limit_429_pauses_the_scope_and_retries_every_operation(
    mocked: aioresponses, client: txc_async.Client, limiter: RecordingLimiter
) -> None:
    mocked.post(ORDER, status=429, body=b"<html>429</html>", headers={"Retry-After": "2"})
    mocked.post(ORDER, status=429, body=b"Too Many Requests")
    mocked.post(ORDER, payload=ORDER_ANSWER)
    order = await client.collateral_stop_limit_order(**ORDER_OK)
    assert order.order_id == 4180284841
    assert limiter.paused == [("collateral_stop_limit_order", 2.0),
                              ("collateral_stop_limit_order", None)]
    bodies = [decode_signed(kw) for kw in requests_to(mocked, ORDER_PATH)]
    assert len({b["nonce"] for b in bodies}) == 3
    assert client.stats.rate_limit_refusals == 2
    assert limiter.successes == 1


async def test_rate_limit_error_after_the_retry_budget(
    mocked: aioresponses, limiter: RecordingLimiter
) -> None:
    mocked.post(BALANCE, status=429, body=b"slow down", headers={"Retry-After": "7"}, repeat=True)
    async with retrying_client(limiter, max_rate_limit_retries=2) as c:
        with pytest.raises(RateLimitError) as caught:
            await c.main_balance()
    assert caught.value.retry_after == 7.0 and caught.value.status == 429
    # Every refusal reaches the limiter, the last one too: the server counted it.
    assert len(limiter.paused) == 3


async def test_application_throttle_is_a_rate_limit(
    mocked: aioresponses, client: txc_async.Client, limiter: RecordingLimiter
) -> None:
    mocked.post(CREATE, status=400, payload={"code": 0, "message": "Too Many Attempts.",
                                             "errors": {}})
    mocked.post(CREATE, payload={"data": {"name": "n", "createdAt": 1}})
    assert (await client.create_mining_account(name="n")).created_at == 1
    assert limiter.paused == [("create_mining_account", None)]
    assert limiter.successes == 1, "a throttle answer must not end the backoff streak"


async def test_a_throttling_message_in_a_success_answer_is_not_a_reason_to_send_a_write_again(
    mocked: aioresponses, client: txc_async.Client, limiter: RecordingLimiter
) -> None:
    # A 2xx may mean the write ran: the throttle pauses the scope, and the caller decides.
    throttled = {"code": 0, "message": "Too Many Attempts.", "errors": {}}
    mocked.post(ORDER, status=200, payload=throttled)
    mocked.post(ORDER, payload=ORDER_ANSWER)
    with pytest.raises(RateLimitError):
        await client.collateral_stop_limit_order(**ORDER_OK)
    assert len(requests_to(mocked, ORDER_PATH)) == 1
    assert limiter.paused == [("collateral_stop_limit_order", None)]
    # A read goes again after the pause.
    mocked.post(BALANCE, status=200, payload=throttled)
    mocked.post(BALANCE, payload={"BTC": {"main_balance": "1"}})
    assert await client.main_balance() == {"BTC": Decimal("1")}


async def test_a_json_429_to_an_unsigned_request_is_a_rate_limit_not_a_nonce_refusal(
    mocked: aioresponses, client: txc_async.Client, limiter: RecordingLimiter
) -> None:
    # The OAuth refresh carries no nonce: its JSON 429 pauses the scope like any rate limit.
    mocked.post(OAUTH, status=429, repeat=True,
                payload={"code": 0, "message": "Too many requests.", "errors": {}})
    async with retrying_client(limiter, max_rate_limit_retries=1) as c:
        with pytest.raises(RateLimitError) as caught:
            await c.refresh_oauth_token(client_id="cid", client_secret="cs", refresh_token="rt")
    assert "nonce" not in str(caught.value)
    assert limiter.paused == [("refresh_oauth_token", None)] * 2
    assert c.stats.nonce_refusals == 0


async def test_nonce_429_is_re_signed_at_once_without_pausing(
    mocked: aioresponses, client: txc_async.Client, limiter: RecordingLimiter
) -> None:
    mocked.post(ORDER, status=429, payload={"code": 0, "message": "Too many requests.",
                                            "errors": {}})
    mocked.post(ORDER, payload=ORDER_ANSWER)
    await client.collateral_stop_limit_order(**ORDER_OK)
    bodies = [decode_signed(kw) for kw in requests_to(mocked, ORDER_PATH)]
    assert len(bodies) == 2 and bodies[0]["nonce"] != bodies[1]["nonce"]
    assert limiter.paused == []
    assert client.stats.nonce_refusals == 1


async def test_persistent_nonce_refusal_is_an_authentication_error(
    mocked: aioresponses, client: txc_async.Client
) -> None:
    mocked.post(BALANCE, status=429, repeat=True, payload={
        "code": 0, "message": "Your nonce is more than 5 seconds lesser than the current nonce",
        "errors": {}})
    with pytest.raises(AuthenticationError, match="nonce"):
        await client.main_balance()
    assert len(requests_to(mocked, "/api/v4/main-account/balance")) == 6


# -- safety --------------------------------------------------------------------------------------


async def test_repr_never_shows_secrets(client: txc_async.Client) -> None:
    for text in (repr(client), str(client), repr(client._pipeline.signer)):
        assert SECRET not in text and KEY not in text


async def test_closed_client_refuses_calls(mocked: aioresponses) -> None:
    c = txc_async.Client(base_url=BASE, limiter=RecordingLimiter(),
                         transport=AiohttpTransport(direct=False))
    await c.close()
    with pytest.raises(TransportError, match="closed"):
        await c.ping()
    assert not mocked.requests


async def test_injected_session_is_left_open(mocked: aioresponses) -> None:
    mocked.get(PING, payload=["pong"])
    async with aiohttp.ClientSession() as session:
        async with txc_async.Client(base_url=BASE, session=session,
                                    limiter=RecordingLimiter()) as c:
            assert await c.ping()
        assert not session.closed


async def test_close_ends_calls_under_way_with_a_clear_error(
    mocked: aioresponses, limiter: RecordingLimiter
) -> None:
    from aioresponses import CallbackResult

    async def slow(url: Any, **kwargs: Any) -> CallbackResult:
        await asyncio.sleep(30)
        return CallbackResult(payload={})

    mocked.post(BALANCE, callback=slow, repeat=True)
    c = txc_async.Client(api_key=KEY, api_secret=SECRET, base_url=BASE, limiter=limiter,
                         transport=AiohttpTransport(direct=False))
    calls = [asyncio.create_task(c.main_balance()) for _ in range(5)]
    await asyncio.sleep(0.05)
    async with asyncio.timeout(2):
        await c.close()
        results = await asyncio.gather(*calls, return_exceptions=True)
    assert all(isinstance(r, TransportError) and "closed" in str(r) for r in results)


async def test_a_cancelled_call_leaves_the_client_usable(
    mocked: aioresponses, client: txc_async.Client
) -> None:
    from aioresponses import CallbackResult

    calls = []

    async def first_slow(url: Any, **kwargs: Any) -> CallbackResult:
        calls.append(url)
        if len(calls) == 1:
            await asyncio.sleep(30)
        return CallbackResult(payload={"BTC": {"main_balance": "2"}})

    mocked.post(BALANCE, callback=first_slow, repeat=True)
    call = asyncio.create_task(client.main_balance())
    await asyncio.sleep(0.05)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert await client.main_balance() == {"BTC": Decimal(2)}

