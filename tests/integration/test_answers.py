"""Success answers are read tolerantly where the API's documentation leaves things open, hostile
values are refused, answers are bounded, client order ids follow the exchange's rule, and every
error names its operation; against unit answers and against the sandbox's answer faults."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any

import pytest

import txc_async
from txc_async import (
    AnswerFormatError,
    CollateralOrder,
    InvalidParameterError,
    InvestmentStatus,
    OrderStatus,
    PlanStatus,
    PositionSide,
    Side,
    TransportError,
)
from txc_async._operations import (
    BALANCE,
    COLLATERAL_STOP_LIMIT,
    INVESTMENTS,
    MINING_REWARDS,
    REFRESH_OAUTH_TOKEN,
)
from txc_async.sandbox import Sandbox
from txc_async.transports import RawResponse

from ..support.common import RecordingLimiter, fast_retry, served
from ..support.transports import make_client

ORDER_PATH = "/api/v4/order/collateral/stop-limit"
BALANCE_PATH = "/api/v4/main-account/balance"
INVEST_PATH = "/api/v4/main-account/smart/investments"
REWARDS_PATH = "/api/v4/mining/rewards"
OAUTH_PATH = "/oauth2/refresh_token"

ORDER_ARGS: dict[str, Any] = {
    "market": "BTC_USDT", "side": "buy", "amount": Decimal("0.01"), "price": "40000",
    "activation_price": "39950",
}


def order_answer(**changes: Any) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "order_id": 4180284841, "client_order_id": "my-1", "market": "BTC_USDT", "side": "buy",
        "type": "stop limit", "timestamp": 1595792396.165973, "deal_money": "0",
        "deal_stock": "0", "amount": "0.001", "left": "0.001", "deal_fee": "0",
        "price": "40000", "activation_price": "39950", "status": "NEW", "stp": "no",
        "positionSide": "LONG", "oto": {"otoId": 777, "stopLoss": "39000", "takeProfit": ""},
    }
    answer.update(changes)
    return answer


def encode(value: Any) -> bytes:
    return json.dumps(value).encode()


# -- item 1: tolerant success answers ------------------------------------------------------------


def test_one_leg_oto_with_an_empty_other_leg_reads_as_none() -> None:
    order = COLLATERAL_STOP_LIMIT.decode(encode(order_answer()))
    assert order.oto is not None
    assert order.oto.oto_id == 777
    assert order.oto.stop_loss == Decimal("39000")
    assert order.oto.take_profit is None
    null_leg = order_answer(oto={"otoId": 7, "stopLoss": None, "takeProfit": "45000"})
    legs = COLLATERAL_STOP_LIMIT.decode(encode(null_leg)).oto
    assert legs is not None and legs.stop_loss is None and legs.take_profit == Decimal("45000")


@pytest.mark.parametrize("oto", ["", None, [], {}])
def test_an_empty_optional_object_reads_as_none(oto: Any) -> None:
    assert COLLATERAL_STOP_LIMIT.decode(encode(order_answer(oto=oto))).oto is None


def test_empty_null_or_missing_decimals_read_as_none() -> None:
    answer = order_answer(deal_fee="", left=None, price="")
    del answer["deal_money"]
    del answer["amount"]
    order = COLLATERAL_STOP_LIMIT.decode(encode(answer))
    assert order.deal_fee is None and order.left is None and order.price is None
    assert order.deal_money is None and order.amount is None
    assert order.activation_price == Decimal("39950")


def test_unlisted_enum_values_read_as_the_wire_value() -> None:
    order = COLLATERAL_STOP_LIMIT.decode(
        encode(order_answer(status="PENDING_NEW", side="short", positionSide="HEDGE"))
    )
    assert order.status == "PENDING_NEW" and not isinstance(order.status, OrderStatus)
    assert order.side == "short" and not isinstance(order.side, Side)
    assert order.position_side == "HEDGE" and not isinstance(order.position_side, PositionSide)
    listed = COLLATERAL_STOP_LIMIT.decode(encode(order_answer()))
    assert listed.status is OrderStatus.NEW and listed.side is Side.BUY
    assert listed.position_side is PositionSide.LONG


def camel_order(**changes: Any) -> dict[str, Any]:
    """`order_answer` with ``orderId`` in the service's camelCase, the rest as given."""
    answer = order_answer()
    answer["orderId"] = answer.pop("order_id")
    return answer | changes


async def test_one_answer_mixing_the_spellings_reads_every_field() -> None:
    # orderId as the service writes it, deal_* and client_order_id as the first specification.
    client, _ = make_client(RawResponse(200, {}, encode(camel_order(
        deal_money="12.5", deal_stock="0.0005", deal_fee="0.0125"))))
    order = await client.collateral_stop_limit_order(**ORDER_ARGS)
    assert order.order_id == 4180284841
    assert order.client_order_id == "my-1"
    assert (order.deal_money, order.deal_stock, order.deal_fee) == (
        Decimal("12.5"), Decimal("0.0005"), Decimal("0.0125"))


@pytest.mark.parametrize("changes", [
    {"dealFee": None, "deal_fee": "0.0125"},
    {"dealFee": "0.0125", "deal_fee": None},
    {"dealFee": "", "deal_fee": "0.0125"},
    {"dealFee": "0.01250", "deal_fee": "0.0125"},  # the same amount, written two ways
    {"clientOrderId": "", "client_order_id": "my-1"},
    {"clientOrderId": "my-1", "client_order_id": None},
    {"order_id": None},
])
async def test_a_field_in_both_spellings_one_empty_or_null_reads_the_other(
    changes: dict[str, Any],
) -> None:
    client, transport = make_client(RawResponse(200, {}, encode(camel_order(**changes))))
    order = await client.collateral_stop_limit_order(**ORDER_ARGS)
    assert order.order_id == 4180284841
    assert order.client_order_id == "my-1"
    assert order.deal_fee == (Decimal("0.0125") if "dealFee" in changes else Decimal("0"))
    assert len(transport.sent) == 1


@pytest.mark.parametrize("changes", [
    {"dealFee": "0.5", "deal_fee": "0.0125"},
    {"clientOrderId": "my-2"},
    {"order_id": 7},
])
async def test_a_field_in_both_spellings_with_two_values_is_refused_as_maybe_placed(
    changes: dict[str, Any],
) -> None:
    client, transport = make_client(RawResponse(200, {}, encode(camel_order(**changes))))
    with pytest.raises(AnswerFormatError, match="two different values") as caught:
        await client.collateral_stop_limit_order(**ORDER_ARGS)
    assert caught.value.may_have_reached_server
    assert len(transport.sent) == 1


def investment(**changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": "inv-1", "status": 1, "created": 1, "updated": 2, "paymentTime": 3,
        "amount": "10", "interestPaid": "0.5",
        "plan": {"id": "p", "ticker": "USDT", "status": 1, "percent": "8", "duration": 60,
                 "interestTicker": "USDT", "interestRatio": "1", "minInvestment": "1",
                 "maxInvestment": "100", "maxPossibleInvestment": "50"},
    }
    record.update(changes)
    return record


def test_unlisted_integer_statuses_and_unknown_fields() -> None:
    record = investment(status=7, novel={"x": 1})
    record["plan"] = {**record["plan"], "status": 9, "minInvestment": "", "future": [1]}
    page = INVESTMENTS.decode(encode({"offset": 0, "limit": 100, "records": [record],
                                      "total": 1}))
    (read,) = page.records
    assert read.status == 7 and not isinstance(read.status, InvestmentStatus)
    assert read.plan.status == 9 and not isinstance(read.plan.status, PlanStatus)
    assert read.plan.min_investment is None
    assert read.amount == Decimal("10")


def test_the_tolerant_reading_equals_the_fast_one_on_regular_answers() -> None:
    from txc_async.sandbox._data import InvestmentBook, RewardBook

    investments = encode({"offset": 0, "limit": 100,
                          "records": InvestmentBook(seed=3).records[:100]})
    rewards = encode({"offset": 0, "limit": 100,
                      "data": RewardBook(3, 5, 1704067200, 30, 1).page(None, None, None, 0, 100)})
    for operation, body in ((INVESTMENTS, investments), (MINING_REWARDS, rewards),
                            (COLLATERAL_STOP_LIMIT, encode(order_answer(oto=None)))):
        decoder = operation.decode
        assert decoder.tolerant(body) == decoder(body)  # type: ignore[attr-defined]


def test_balances_without_a_value_are_left_out() -> None:
    body = b'{"BTC": {"main_balance": "0.5"}, "ETH": {"main_balance": ""}, "SOL": null}'
    with pytest.raises(AnswerFormatError):  # null is not an asset's entry
        BALANCE.decode(body)
    body = (b'{"BTC": {"main_balance": "0.5"}, "ETH": {"main_balance": ""}, '
            b'"SOL": {"main_balance": null}}')
    assert BALANCE.decode(body) == {"BTC": Decimal("0.5")}
    assert BALANCE.decode(b"[]") == {}


@pytest.mark.parametrize("body", [
    b'{"BTC": {"Main_Balance": "0.1"}}',
    b'{"BTC": {"mainBalance": "0.1"}}',
    b'{"BTC": {"main_balance": "0.1"}, "ETH": {"balance": "3"}}',
    b'{"BTC": {"main_balance": "0.1"}, "SOL": {}}',
    b'{"data": {"BTC": {"main_balance": "0.1"}}}',
    b'{"errors": {"nonce": ["The nonce is invalid."]}}',
])
async def test_an_asset_without_main_balance_is_no_balance_it_is_refused(body: bytes) -> None:
    # Read as "no balance", a renamed field or a wrapper would hide money that is there.
    client, _ = make_client(RawResponse(200, {}, body))
    with pytest.raises(AnswerFormatError, match="no main_balance at") as caught:
        await client.main_balance()
    assert "accepted" not in str(caught.value)


@pytest.mark.parametrize(("body", "kind"), [
    (b'{"BTC": {"main_balance": "0.1"}, "BTC": {"main_balance": "99"}}', "balance"),
    (b'{"BTC": {"main_balance": "0.1", "main_balance": "99"}}', "balance"),
    (b'{"main_balance": {"main_balance": "1"}, "X": {"main_balance": "2", "main_balance": "3"}}',
     "balance"),
    (encode(order_answer()).replace(b'"amount": "0.001"', b'"amount": "0.001", "amount": "1000"'),
     "order"),
    (encode(order_answer()).replace(b'"otoId": 777', b'"otoId": 777, "otoId": 778'), "order"),
    (b'{"data": {"name": "acc_1", "createdAt": 1, "name": "acc_2"}}', "account"),
])
async def test_an_answer_naming_a_key_twice_is_refused(body: bytes, kind: str) -> None:
    from txc_async._answers.results import has_duplicate_keys

    assert json.loads(body) and has_duplicate_keys(body)  # valid JSON; a key repeats
    client, transport = make_client(RawResponse(200, {}, body))
    call = {
        "balance": client.main_balance,
        "order": lambda: client.collateral_stop_limit_order(**ORDER_ARGS),
        "account": lambda: client.create_mining_account(name="acc_1"),
    }[kind]
    with pytest.raises(AnswerFormatError, match="a key named twice") as caught:
        await call()
    assert ("accepted the request" in str(caught.value)) is (kind != "balance")
    if kind != "balance":
        assert len(transport.sent) == 1, "a write is never sent again"


async def test_main_balance_named_in_text_but_never_twice_reads_as_it_is() -> None:
    body = (b'{"main_balance": {"main_balance": "1.5"}, '
            b'"BTC": {"main_balance": "2", "n": "main_balance"}}')
    client, _ = make_client(RawResponse(200, {}, body))
    assert await client.main_balance() == {"main_balance": Decimal("1.5"), "BTC": Decimal("2")}


@pytest.mark.parametrize("status", [200, 201])
async def test_a_data_map_of_lists_is_a_token_refusal_only_for_the_oauth_refresh(
    status: int
) -> None:
    # A write answered 2xx with a shape it cannot read took effect, most likely: never
    # reported as refused (the caller would send it again).
    body = b'{"data": {"name": ["acc_1"]}}'
    client, _ = make_client(RawResponse(status, {}, body))
    with pytest.raises(AnswerFormatError, match="accepted the request"):
        await client.create_mining_account(name="acc_1")
    client, _ = make_client(RawResponse(status, {}, b'{"data": {"hashrate": []}}'))
    with pytest.raises(AnswerFormatError):
        await client.mining_hashrate(account="acc")
    client, _ = make_client(RawResponse(400, {}, b'{"data": {"token": ["Invalid token."]}}'))
    with pytest.raises(txc_async.AuthenticationError, match="Invalid token"):
        await client.refresh_oauth_token(client_id="c", client_secret="s", refresh_token="t")
    client, _ = make_client(RawResponse(400, {}, body))
    with pytest.raises(txc_async.ValidationError) as refused:
        await client.create_mining_account(name="acc_1")
    assert refused.value.errors == {"name": ["acc_1"]}
    client, _ = make_client(RawResponse(401, {}, body))
    with pytest.raises(txc_async.AuthenticationError):
        await client.create_mining_account(name="acc_1")


def test_integer_statuses_written_as_digits_read_as_those_integers() -> None:
    record = investment(status="2")
    record["plan"] = {**record["plan"], "status": "1"}
    page = INVESTMENTS.decode(encode({"offset": 0, "limit": 100, "records": [record]}))
    (read,) = page.records
    assert read.status is InvestmentStatus.CLOSED and read.plan.status is PlanStatus.ACTIVE
    with pytest.raises(AnswerFormatError):
        INVESTMENTS.decode(encode({"offset": 0, "limit": 100,
                                   "records": [investment(status="one")]}))


async def test_an_unreadable_write_answer_says_the_request_was_accepted() -> None:
    body = encode({"order_id": 5, "market": "BTC_USDT", "status": "NEW"})
    client, transport = make_client(RawResponse(200, {}, body))
    with pytest.raises(AnswerFormatError) as caught:
        await client.collateral_stop_limit_order(**ORDER_ARGS)
    err = caught.value
    assert isinstance(err, TransportError)
    assert err.status == 200 and err.body == body and err.may_have_reached_server
    assert "accepted the request" in str(err) and "$.side" in str(err)
    assert len(transport.sent) == 1, "a write is never sent again"


async def test_an_unreadable_read_answer_does_not_claim_acceptance() -> None:
    client, _ = make_client(RawResponse(200, {}, b'{"offset": "x"}'))
    with pytest.raises(AnswerFormatError) as caught:
        await client.mining_rewards()
    assert "accepted" not in str(caught.value)
    assert caught.value.body == b'{"offset": "x"}'


async def test_the_kept_body_is_cut() -> None:
    body = encode({"offset": 0, "limit": 1, "records": [investment(status="x")] * 200})
    assert len(body) > 10_000
    client, _ = make_client(RawResponse(200, {}, body))
    with pytest.raises(AnswerFormatError) as caught:
        await client.investments_history()
    assert caught.value.body == body[:4096]


REFRESHED = {"access_token": "AT-new", "refresh_token": "RT-new", "expires_in": 300,
             "scope": "codes.apply,show.userinfo", "token_type": "Bearer"}


@pytest.mark.parametrize(("changes", "read"), [
    # RFC 6749, section 5.1: scope is optional, expires_in only recommended.
    ({"scope": None}, {"scope": None}),
    ({"scope": ...}, {"scope": None}),
    ({"expires_in": ...}, {"expires_in": None}),
    ({"expires_in": None, "token_type": None}, {"expires_in": None, "token_type": None}),
    ({"expires_in": "soon"}, {"expires_in": None}),
    ({"expires_in": "300"}, {"expires_in": 300}),
    ({"scope": ["codes.apply"], "token_type": 1}, {"scope": None, "token_type": None}),
])
async def test_a_token_answer_lacking_or_garbling_what_is_not_a_token_keeps_the_new_tokens(
    changes: dict[str, Any], read: dict[str, Any],
) -> None:
    answer = {k: v for k, v in (REFRESHED | changes).items() if v is not ...}
    client, _ = make_client(RawResponse(200, {}, encode({"data": answer})))
    token = await client.refresh_oauth_token(client_id="c", client_secret="s", refresh_token="t")
    assert (token.access_token, token.refresh_token) == ("AT-new", "RT-new")
    expected = {"expires_in": 300, "scope": "codes.apply,show.userinfo", "token_type": "Bearer"}
    assert {k: getattr(token, k) for k in expected} == expected | read
    assert token.scopes == ([] if token.scope is None else ["codes.apply", "show.userinfo"])


async def test_a_token_answer_with_a_number_beyond_any_decimal_keeps_the_new_tokens() -> None:
    body = encode({"data": REFRESHED}).replace(b'"expires_in": 300',
                                               b'"expires_in": ' + HUGE_NUMBER)
    token = REFRESH_OAUTH_TOKEN.decode(body)
    assert (token.refresh_token, token.expires_in) == ("RT-new", None)


async def test_an_unreadable_oauth_answer_keeps_no_token() -> None:
    # No refresh token (a list is not one): there is nothing to keep, and the error masks all.
    body = encode({"data": {"access_token": "AT-very-secret", "refresh_token": ["RT-very-secret"],
                            "expires_in": 300, "scope": "a", "token_type": "Bearer"}})
    client, _ = make_client(RawResponse(200, {}, body))
    with pytest.raises(AnswerFormatError) as caught:
        await client.refresh_oauth_token(client_id="c", client_secret="s", refresh_token="t")
    err = caught.value
    assert b"very-secret" not in err.body and b"access_token" in err.body
    assert "very-secret" not in str(err) + repr(err)
    cut = REFRESH_OAUTH_TOKEN.decode
    assert cut.kept_body(b'{"data": {"access_token": "AT-1') == b""  # type: ignore[attr-defined]


async def test_an_error_shape_in_a_success_answer_stays_an_api_error() -> None:
    client, _ = make_client(RawResponse(200, {}, b'{"success": false, "message": "down"}'))
    with pytest.raises(txc_async.ApiError):
        await client.collateral_stop_limit_order(**ORDER_ARGS)


@pytest.mark.parametrize(("body", "error"), [
    (b'{"error": {"message": "Internal server error.", "code": 500}}', txc_async.ApiError),
    (b'{"code": 0, "message": "Validation failed", "errors": {"nonce": ["too old"]}}',
     txc_async.ValidationError),
    (b'{"data": {"token": ["Invalid token."]}}', AnswerFormatError),
])
async def test_an_error_body_at_200_is_never_a_balance(
    body: bytes, error: type[Exception]
) -> None:
    """A map of balances reads almost any object; an error body at 200 is the error it says,
    and a shape that is not a balance's (the OAuth refusal is the OAuth refresh's) is
    unreadable, never an empty balance."""
    with pytest.raises(AnswerFormatError):
        BALANCE.decode(body)
    client, _ = make_client(RawResponse(200, {}, body))
    with pytest.raises(error):
        await client.main_balance()


async def test_an_empty_balance_stays_an_empty_balance() -> None:
    for body in (b"{}", b"[]", b'{"ETH": {"main_balance": ""}}'):
        client, _ = make_client(RawResponse(200, {}, body))
        assert await client.main_balance() == {}


# -- item 2: non-finite numbers ------------------------------------------------------------------

NON_FINITE = ["NaN", "nan", "-NaN", "sNaN", "-sNaN", "NaN123", "Infinity", "-Infinity",
              "inf", "+Inf", "-INF", "iNfInItY", " NaN ", "N_aN", "\tinf", "\u2003NaN"]


@pytest.mark.parametrize("spelling", NON_FINITE)
def test_non_finite_amounts_are_refused(spelling: str) -> None:
    assert not Decimal(spelling.strip()).is_finite()  # the spelling is what Decimal reads
    with pytest.raises(AnswerFormatError, match="non-finite"):
        COLLATERAL_STOP_LIMIT.decode(encode(order_answer(amount=spelling)))
    with pytest.raises(AnswerFormatError, match="non-finite"):
        BALANCE.decode(encode({"BTC": {"main_balance": spelling}}))
    record = investment()
    record["plan"] = {**record["plan"], "maxPossibleInvestment": spelling}
    with pytest.raises(AnswerFormatError, match=r"records\[1\]\.plan\.maxPossibleInvestment"):
        INVESTMENTS.decode(encode({"offset": 0, "limit": 2, "records": [investment(), record]}))


def test_escaped_non_finite_spellings_are_refused() -> None:
    body = b'{"BTC": {"main_balance": "\\u004eaN"}}'
    with pytest.raises(AnswerFormatError):
        BALANCE.decode(body)


def test_huge_timestamps_are_refused() -> None:
    with pytest.raises(AnswerFormatError, match="timestamp"):
        COLLATERAL_STOP_LIMIT.decode(
            encode(order_answer()).replace(b"1595792396.165973", b"1e999")
        )


HUGE_NUMBER = b"1e999999999999999999999"  # beyond the exponents a Decimal can hold


async def test_a_number_beyond_what_a_decimal_holds_is_an_unreadable_answer() -> None:
    """A JSON number whose exponent no Decimal can hold: the answer is unreadable, said as
    AnswerFormatError (for a write: the server accepted it), never a bare decimal error."""
    body = encode(order_answer()).replace(b'"0.001"', HUGE_NUMBER, 1)
    assert HUGE_NUMBER in body
    client, transport = make_client(RawResponse(200, {}, body))
    with pytest.raises(AnswerFormatError) as caught:
        await client.collateral_stop_limit_order(**ORDER_ARGS)
    assert "accepted the request" in str(caught.value)
    assert caught.value.operation == "collateral_stop_limit_order"
    assert caught.value.__context__ is None and caught.value.__cause__ is None
    assert len(transport.sent) == 1
    with pytest.raises(AnswerFormatError, match="beyond what a decimal can hold at"):
        BALANCE.decode(b'{"BTC": {"main_balance": ' + HUGE_NUMBER + b"}}")


async def test_a_call_ended_by_an_unforeseen_error_in_decoding_still_concludes_its_admission(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Should decoding ever raise what nothing foresaw, the answered request does not stay
    counted in flight in its budget."""

    def broken(body: bytes) -> Any:
        raise LookupError("unforeseen")

    monkeypatch.setattr(BALANCE.decode, "_strict", broken)
    client, _ = make_client(RawResponse(200, {}, b'{"BTC": {"main_balance": "1"}}'))
    limiter = client._pipeline.limiter
    assert isinstance(limiter, RecordingLimiter)
    with pytest.raises(LookupError):
        await client.main_balance()
    assert limiter.outcomes == [txc_async.Outcome.ANSWERED]


async def test_a_reward_beyond_what_a_decimal_holds_never_reaches_the_walk() -> None:
    record = b'{"miningAccountName": "a", "totalReward": "1", "reward": ' + HUGE_NUMBER + (
        b', "fee": "0", "fppsRate": "1", "hashRate": "1 TH/s", "date": 1704067200}')
    page = b'{"offset": 0, "limit": 100, "data": [' + b", ".join([record] * 3) + b"]}"
    client, _ = make_client(RawResponse(200, {}, page))
    with pytest.raises(AnswerFormatError):
        async for _ in client.iter_mining_rewards(start=0, end=1704067200):
            pass


@pytest.mark.parametrize("date", [5, -1, b"-99999999999999999999", b'"-99999999999999999999"'])
async def test_a_reward_dated_before_the_range_ends_the_walk_with_a_txc_error(
    date: int | bytes,
) -> None:
    """A reward dated before the range asked for (or before 1970, or past what a 64-bit date
    holds) is an answer the walk cannot place: a TxcError, not a record returned (once per
    check pass, before) nor an OverflowError."""
    shown = date if isinstance(date, bytes) else str(date).encode()
    record = b'{"miningAccountName": "a", "totalReward": "1", "reward": "1", "fee": "0", ' + (
        b'"fppsRate": "1", "hashRate": "1 TH/s", "date": ' + shown + b"}")
    page = b'{"offset": 0, "limit": 100, "data": [' + record + b"]}"
    # Without a start, only a date before 1970 is out of the range.
    for start in (1704067200, None) if date != 5 else (1704067200,):
        client, _ = make_client(RawResponse(200, {}, page))
        with pytest.raises(txc_async.TxcError, match="before the range's start"):
            async for _ in client.iter_mining_rewards(start=start, end=1704153599):
                pass
        with pytest.raises(txc_async.TxcError, match="before the range's start"):
            async for _ in txc_async.backfill_mining_rewards(
                client, start=start or 1704067200, end=1704153599
            ):
                pass


async def test_a_signalling_nan_reward_never_reaches_the_walk() -> None:
    record = {"miningAccountName": "a", "totalReward": "1", "reward": "sNaN", "fee": "0",
              "fppsRate": "1", "hashRate": "1 TH/s", "date": 1704067200}
    client, _ = make_client(RawResponse(200, {}, encode(
        {"offset": 0, "limit": 100, "data": [record] * 100}
    )))
    with pytest.raises(AnswerFormatError):
        async for _ in client.iter_mining_rewards(start=0, end=1704067200):
            pass


# -- item 3: bounded answers ---------------------------------------------------------------------


def test_max_answer_bytes_is_checked() -> None:
    for bad in (0, 100, -1, 1.5, True, "8MB"):
        with pytest.raises(InvalidParameterError, match="max_answer_bytes"):
            txc_async.Client(max_answer_bytes=bad)  # type: ignore[arg-type]


async def test_a_declared_length_over_the_limit_is_refused_unread() -> None:
    from aiohttp import web

    written: list[int] = []

    async def huge(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Length": str(1 << 30)})
        await response.prepare(request)
        try:
            for _ in range(1 << 14):
                await response.write(b" " * 65536)
                written.append(65536)
        except (ConnectionError, RuntimeError):
            pass
        return response

    app = web.Application()
    app.router.add_get("/api/v4/public/ping", huge)
    async with served(app) as url:
        async with txc_async.Client(base_url=url,
                                    limiter=RecordingLimiter(), retry=fast_retry(max_retries=0),
                                    max_answer_bytes=1 << 20) as client:
            with pytest.raises(TransportError, match="max_answer_bytes") as caught:
                await client.ping()
        assert caught.value.status == 200
        assert caught.value.operation == "ping"


# -- item 5: every error names its operation -----------------------------------------------------


async def test_errors_name_their_operation() -> None:
    client, _ = make_client(RawResponse(502, {}, b"<html>502</html>"))
    with pytest.raises(TransportError) as caught:
        await client.mining_hashrate(account="acc")
    assert caught.value.operation == "mining_hashrate"
    assert str(caught.value).startswith("mining_hashrate: ")
    with pytest.raises(InvalidParameterError) as refused:
        await client.collateral_stop_limit_order(**{**ORDER_ARGS, "amount": 0.1})
    assert refused.value.operation == "collateral_stop_limit_order"
    assert str(refused.value).startswith("collateral_stop_limit_order: amount: ")
    with pytest.raises(TransportError) as walked:
        async for _ in client.iter_investments_history():
            pass
    assert walked.value.operation == "iter_investments_history"
    assert str(walked.value).startswith("iter_investments_history: ")
    assert repr(walked.value).endswith("operation='iter_investments_history')")


async def test_an_error_raised_outside_a_call_names_none() -> None:
    with pytest.raises(InvalidParameterError) as caught:
        txc_async.Client(base_url="ftp://x")
    assert caught.value.operation is None
    assert str(caught.value).startswith("base_url: ")


# -- item 7: client order ids --------------------------------------------------------------------


@pytest.mark.parametrize("value", ["", " my-1", "my-1 ", "my 1", "ordér", "id#1", "a/b",
                                   "x" * 256, "\n", "١٢٣"])
async def test_client_order_ids_outside_the_rule_are_refused_unsent(value: str) -> None:
    client, transport = make_client(RawResponse(200, {}, encode(order_answer())))
    with pytest.raises(InvalidParameterError) as caught:
        await client.collateral_stop_limit_order(**ORDER_ARGS, client_order_id=value)
    assert caught.value.parameter == "client_order_id"
    assert not transport.sent


@pytest.mark.parametrize("value", ["a", "my-order.1_B", "0", "-", "x" * 255])
async def test_client_order_ids_within_the_rule_are_sent(value: str) -> None:
    client, transport = make_client(RawResponse(200, {}, encode(order_answer())))
    await client.collateral_stop_limit_order(**ORDER_ARGS, client_order_id=value)
    (sent,) = transport.sent
    assert sent[3] is not None and json.loads(sent[3])["client_order_id"] == value


# -- item 8: the sandbox answers like this -------------------------------------------------------


@pytest.fixture
async def sandbox() -> AsyncIterator[Sandbox]:
    async with Sandbox() as box:
        yield box


def client_for(box: Sandbox, **kwargs: Any) -> txc_async.Client:
    kwargs.setdefault("retry", fast_retry())
    kwargs.setdefault("limiter", txc_async.InProcessLimiter())
    return txc_async.Client(
        api_key=box.api_key, api_secret=box.api_secret, base_url=box.url, **kwargs
    )


async def test_sandbox_one_leg_oto_is_a_placed_order(sandbox: Sandbox) -> None:
    sandbox.faults.add(ORDER_PATH, "oto_empty_leg")
    async with client_for(sandbox) as client:
        order = await client.collateral_stop_limit_order(**ORDER_ARGS, stop_loss="39000")
    assert isinstance(order, CollateralOrder)
    assert order.oto is not None and order.oto.stop_loss == Decimal("39000")
    assert order.oto.take_profit is None
    assert sandbox.stats.orders[-1]["orderId"] == order.order_id
    assert sandbox.faults.pending(ORDER_PATH) == 0


async def test_sandbox_unlisted_statuses_are_read(sandbox: Sandbox) -> None:
    sandbox.faults.add(ORDER_PATH, "unlisted_status")
    sandbox.faults.add(INVEST_PATH, "unlisted_status")
    async with client_for(sandbox) as client:
        order = await client.collateral_stop_limit_order(**ORDER_ARGS)
        page = await client.investments_history(limit=3)
    assert order.status == "ACTIVATING"
    assert page.records and all(r.status == 9 and r.plan.status == 9 for r in page.records)


@pytest.mark.parametrize("spelling", ["NaN", "sNaN", "-Infinity", "inf"])
async def test_sandbox_non_finite_amounts_are_refused(sandbox: Sandbox, spelling: str) -> None:
    for path in (ORDER_PATH, BALANCE_PATH, REWARDS_PATH, INVEST_PATH):
        sandbox.faults.add(path, "non_finite", value=spelling)
    # Reads go again after an unreadable answer (as after a 5xx); here they may not.
    async with client_for(sandbox, retry=fast_retry(max_retries=0)) as client:
        with pytest.raises(AnswerFormatError, match="accepted the request") as placed:
            await client.collateral_stop_limit_order(**ORDER_ARGS)
        assert placed.value.operation == "collateral_stop_limit_order"
        assert sandbox.stats.executed[ORDER_PATH] == 1, "the order was placed once"
        with pytest.raises(AnswerFormatError, match="non-finite"):
            await client.main_balance()
        with pytest.raises(AnswerFormatError, match="non-finite"):
            await client.mining_rewards(limit=5)
        with pytest.raises(AnswerFormatError, match="non-finite"):
            await client.investments_history(limit=5)


async def test_sandbox_oversized_answers_are_refused(sandbox: Sandbox) -> None:
    sandbox.faults.add(BALANCE_PATH, "oversized", size=4 << 20, times=2)
    async with client_for(
        sandbox, max_answer_bytes=1 << 20, retry=fast_retry(max_retries=0)
    ) as client:
        with pytest.raises(TransportError, match="max_answer_bytes") as caught:
            await client.main_balance()
    assert caught.value.operation == "main_balance"
    assert caught.value.may_have_reached_server
    async with client_for(sandbox, max_answer_bytes=8 << 20) as client:
        # The same padded answer under a larger limit is read whole.
        assert await client.main_balance() == {
            ticker: Decimal(entry["main_balance"]) for ticker, entry in sandbox.balance.items()
        }


async def test_sandbox_malformed_http_answer(sandbox: Sandbox) -> None:
    sandbox.faults.add(ORDER_PATH, "malformed_http")
    async with client_for(sandbox) as client:
        with pytest.raises(TransportError, match=r"malformed HTTP answer from 127\.0\.0\.1:") as (
            caught
        ):
            await client.collateral_stop_limit_order(**ORDER_ARGS)
    err = caught.value
    assert type(err) is TransportError and err.may_have_reached_server
    assert err.__context__ is None and err.__cause__ is None
    assert sandbox.stats.received[ORDER_PATH] == 1, "a write is not sent again"


def test_fault_kinds_are_listed() -> None:
    from txc_async.sandbox._server import FAULT_KINDS

    assert {"oto_empty_leg", "unlisted_status", "non_finite", "oversized",
            "malformed_http"} <= FAULT_KINDS


def _paged_client(answer: Any) -> tuple[txc_async.Client, Any]:
    """A client whose every request is answered with ``answer(params)``: (status, JSON value)."""

    def respond(body: bytes | None) -> RawResponse:
        status, value = answer(json.loads(body or b"{}"))
        return RawResponse(status, {}, json.dumps(value).encode())

    return make_client(respond)


REWARD = {"miningAccountName": "a", "totalReward": "1", "reward": "1", "fee": "0",
          "fppsRate": "1", "hashRate": "1", "date": 1704067200}
THROTTLED_PAGE = {"offset": 0, "limit": 100, "data": [], "code": 0,
                  "message": "Too Many Attempts.", "errors": {}}


@pytest.mark.parametrize("how", ["iter_mining_rewards", "mining_rewards", "backfill"])
async def test_an_error_in_the_shape_of_an_empty_page_is_the_error(how: str) -> None:
    # A 200 that fits a page (offset, limit, no records) and says it was throttled: the error
    # it says (a throttle, sent again), never an empty last page that ends a walk.
    answers = iter([(200, THROTTLED_PAGE)])
    client, transport = _paged_client(
        lambda params: next(answers, (200, {"offset": 0, "limit": 100, "data": [REWARD]})))
    async with client:
        if how == "iter_mining_rewards":
            got = [r async for r in client.iter_mining_rewards(start=1704067200 - 10,
                                                               end=1704067200 + 10)]
        elif how == "mining_rewards":
            got = (await client.mining_rewards()).data
        else:
            got = [r async for r in txc_async.backfill_mining_rewards(
                client, start=1704067200 - 10, end=1704067200 + 10)]
    assert len(got) == 1 and len(transport.sent) >= 2
    client, _ = _paged_client(lambda params: (200, {**THROTTLED_PAGE, "code": None,
                                                   "success": False, "message": "Unavailable"}))
    with pytest.raises(txc_async.ApiError, match="Unavailable"):
        [r async for r in client.iter_mining_rewards(start=1, end=2)]
    page = {"offset": 0, "limit": 100, "records": [], "success": False, "message": "Unavailable"}
    client, _ = _paged_client(lambda params: (200, page))
    with pytest.raises(txc_async.ApiError, match="Unavailable"):
        await client.investments_history()


def _investments_server(total: int, cap: int) -> Any:
    records = [investment(id=f"inv-{i}") for i in range(total)]

    def answer(params: dict[str, Any]) -> tuple[int, Any]:
        limit, offset = params["limit"], params["offset"]
        assert 1 <= limit <= 100 and 0 <= offset <= 10_000, "out of the API's bounds"
        used = min(limit, cap)
        return 200, {"offset": offset, "limit": used, "records": records[offset:offset + used]}

    return answer


@pytest.mark.parametrize(("total", "cap"), [(10_029, 30), (10_006, 7), (10_099, 100)])
async def test_short_pages_are_read_to_the_deepest_offset_once(total: int, cap: int) -> None:
    client, transport = _paged_client(_investments_server(total, cap))
    async with client:
        ids = [i.id async for i in client.iter_investments_history()]
    assert len(ids) == len(set(ids)) == total
    assert max(json.loads(sent[3])["offset"] for sent in transport.sent) == 10_000


async def test_more_investments_than_the_deepest_offset_reaches_are_counted_right() -> None:
    client, _ = _paged_client(_investments_server(10_010, 10))
    async with client:
        with pytest.raises(txc_async.TxcError, match="more than 10010 investments match"):
            async for _ in client.iter_investments_history():
                pass


@pytest.mark.parametrize("body", [
    rb'{"BTC": {"main_balance": "1", "main\u005fbalance": "999"}}',
    rb'{"B\u0054C": {"main_balance": "1"}, "BTC": {"main_balance": "999"}}',
])
def test_a_key_named_twice_through_an_escape_is_refused(body: bytes) -> None:
    with pytest.raises(AnswerFormatError, match="a key named twice"):
        BALANCE.decode(body)


@pytest.mark.parametrize("deep", [False, True])
def test_a_write_answer_that_cannot_be_searched_for_keys_named_twice_is_refused(
    deep: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from txc_async._answers import results as _results
    from txc_async._operations import CREATE_MINING_ACCOUNT

    # Bytes that are not UTF-8, in a string msgspec skips: still searched.
    body = b'{"data": {"name": "first", "createdAt": 1, "name": "second", "note": "caf\xe9"}}'
    once = body.replace(b', "name": "second"', b"")
    if deep:
        # Nested deeper than Python's reader goes (msgspec reads deeper): what cannot be
        # searched is refused, even without a key named twice.
        def too_deep(*args: Any, **kwargs: Any) -> Any:
            raise RecursionError

        monkeypatch.setattr(_results.json, "loads", too_deep)
        body = once
    with pytest.raises(AnswerFormatError,
                       match="too deeply nested" if deep else "a key named twice") as caught:
        CREATE_MINING_ACCOUNT.decode(body)
    assert "accepted the request" in str(caught.value)
    if not deep:
        assert CREATE_MINING_ACCOUNT.decode(once).name == "first"
