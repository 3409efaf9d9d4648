"""Every answer the service's official documentation gives for the eight operations
(``tests/integration/contract/``), served with its documented status to the public client: a
success reads as the documented values, an error raises the matching error with the documented
code, message and per-field errors. When the documentation changes, this is where it shows."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from enum import Enum
from http import HTTPStatus
from pathlib import Path
from typing import Any

import msgspec
import pytest

import txc_async
from txc_async import (
    ApiError,
    AuthenticationError,
    CollateralOrder,
    Hashrate,
    InvestmentsPage,
    InvestmentStatus,
    MiningAccount,
    OAuthToken,
    OrderStatus,
    PermissionDeniedError,
    PlanStatus,
    PositionSide,
    RewardsPage,
    ServiceMaintenanceError,
    Side,
    TransportError,
    TxcError,
    ValidationError,
)

from ..support.common import KEY, SECRET, RecordingLimiter, fast_retry
from ..support.raw_server import read_head, serve

CONTRACT = Path(__file__).parent / "contract"
DOCS_COMMIT = "4a67f22deab047617e65230197a8a605835b536a"

#: What a documented body is: JSON as ``json.load`` reads it.
Json = Any
Call = Callable[[txc_async.Client], Awaitable[object]]


@dataclass(frozen=True)
class Example:
    """One documented answer of one operation."""

    operation: str  # the fixture's name: the client method
    path: str
    method: str
    name: str
    status: int
    body: Json
    no_content: bool

    @property
    def id(self) -> str:
        return f"{self.operation}/{self.name}"

    @property
    def wire(self) -> bytes:
        return b"" if self.no_content else json.dumps(self.body).encode()


def _fixtures() -> Iterator[tuple[str, dict[str, Json]]]:
    for file in sorted(CONTRACT.glob("*.json")):
        yield file.stem, json.loads(file.read_text())


def _examples() -> list[Example]:
    found: list[Example] = []
    for operation, fixture in _fixtures():
        path, method = fixture["source"]["operation"].split()
        for example in fixture["examples"]:
            found.append(Example(
                operation, path, method.upper(), example["name"], example["status"],
                example["body"], bool(example.get("no_content")),
            ))
    return found


EXAMPLES = _examples()


# -- the calls: the arguments of the documentation's request examples ------------------------------

MINER = "miner123"  # the request examples' account (rewards, hashrate)
FROM, TO = 1640995200, 1641081600  # the request examples' from and to

CALLS: dict[str, Call] = {
    "ping": lambda c: c.ping(),
    # The balance's error is classified by its answer alone: the call without a ticker works
    # with every version of the client.
    "main_balance": lambda c: c.main_balance(),
    "investments_history": lambda c: c.investments_history(
        id="0d7b66ff-1909-4938-ab7a-d16d9a64dcd5", ticker="USDT", status=1,
    ),
    # The request example also sends reduceOnly false, the service's default: leaving it out
    # places the same order.
    "collateral_stop_limit_order": lambda c: c.collateral_stop_limit_order(
        market="BTC_USDT", side="buy", amount="0.001", price="40000", activation_price="40000",
        stop_loss="30000", take_profit="50000", client_order_id="order1987111",
        position_side="LONG",
    ),
    "create_mining_account": lambda c: c.create_mining_account(
        name="my_miner_01", referral_code="REF123"
    ),
    "mining_rewards": lambda c: c.mining_rewards(
        account=MINER, start=FROM, end=TO, limit=30, offset=0
    ),
    "mining_hashrate": lambda c: c.mining_hashrate(
        account=MINER, start=FROM, end=TO, interval="1h"
    ),
    "refresh_oauth_token": lambda c: c.refresh_oauth_token(
        client_id="YOUR_CLIENT_ID", client_secret="YOUR_CLIENT_SECRET",
        refresh_token="REFRESH_TOKEN",
    ),
}


# -- reading a success: every documented value, concretely -----------------------------------------


def decimal(value: object, documented: str) -> None:
    """``value`` is the Decimal of the documented string."""
    assert type(value) is Decimal, f"{value!r} is not a Decimal"
    assert value == Decimal(documented)


def member(value: object, enum: type[Enum], documented: object) -> None:
    """``value`` is the member of ``enum`` the documented value names."""
    assert isinstance(value, enum), f"{value!r} is not a {enum.__name__}"
    assert value is enum(documented)


#: Fields documented as JSON numbers with a fraction or a rate; every other number is an int and
#: every amount a Decimal.
FLOAT_FIELDS = frozenset({"timestamp", "reject_rate"})


def no_float(value: object, where: str = "$") -> None:
    """No float anywhere in ``value`` but in the fields documented as JSON numbers."""
    if isinstance(value, msgspec.Struct):
        for name in value.__struct_fields__:
            field = getattr(value, name)
            if name in FLOAT_FIELDS and isinstance(field, float):
                continue
            no_float(field, f"{where}.{name}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            no_float(item, f"{where}[{index}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            no_float(item, f"{where}.{key}")
    else:
        assert not isinstance(value, float), f"{where} is a float: {value!r}"


def decimals(value: object, wire: Json, names: dict[str, str]) -> None:
    """Every Decimal field named (model field -> wire key) equals the documented string."""
    for field, key in names.items():
        decimal(getattr(value, field), wire[key])


def reads_ping(result: object, body: Json) -> None:
    assert body == ["pong"]
    assert result is True


def reads_balances(result: object, body: Json) -> None:
    assert isinstance(result, dict)
    assert sorted(result) == sorted(body)
    for ticker, entry in body.items():
        decimal(result[ticker], entry["main_balance"])


def reads_one_balance(result: object, body: Json) -> None:
    # Asked with ticker="BTC", the flat answer is that ticker's entry.
    assert result == {"BTC": Decimal(body["main_balance"])}
    assert isinstance(result, dict)
    decimal(result["BTC"], body["main_balance"])


def reads_investments(page: object, body: Json) -> None:
    assert isinstance(page, InvestmentsPage)
    assert (page.offset, page.limit) == (body["offset"], body["limit"])
    assert len(page.records) == len(body["records"]) > 0
    for record, documented in zip(page.records, body["records"], strict=True):
        assert record.id == documented["id"]
        member(record.status, InvestmentStatus, documented["status"])
        assert record.created == documented["created"]
        assert record.updated == documented["updated"]
        assert record.payment_time == documented["paymentTime"]
        decimal(record.amount, documented["amount"])
        decimal(record.interest_paid, documented["interestPaid"])
        plan, wire = record.plan, documented["plan"]
        assert (plan.id, plan.ticker, plan.duration) == (wire["id"], wire["ticker"],
                                                         wire["duration"])
        member(plan.status, PlanStatus, wire["status"])
        assert plan.interest_ticker == wire["interestTicker"]
        decimals(plan, wire, {
            "percent": "percent", "interest_ratio": "interestRatio",
            "min_investment": "minInvestment", "max_investment": "maxInvestment",
            "max_possible_investment": "maxPossibleInvestment",
        })


def reads_order(order: object, body: Json) -> None:
    assert isinstance(order, CollateralOrder)
    assert order.order_id == body["orderId"]
    assert order.client_order_id == body["clientOrderId"]
    assert order.market == body["market"]
    member(order.side, Side, body["side"])
    assert order.type == body["type"]
    assert order.timestamp == body["timestamp"]
    decimals(order, body, {
        "deal_money": "dealMoney", "deal_stock": "dealStock", "amount": "amount", "left": "left",
        "deal_fee": "dealFee", "price": "price", "activation_price": "activation_price",
    })
    member(order.status, OrderStatus, body["status"])
    assert order.stp == body["stp"]
    assert order.oto is not None
    assert order.oto.oto_id == body["oto"]["otoId"]
    decimal(order.oto.stop_loss, body["oto"]["stopLoss"])
    decimal(order.oto.take_profit, body["oto"]["takeProfit"])
    member(order.position_side, PositionSide, body["positionSide"])
    assert order.reduce_only is body["reduceOnly"]


def reads_mining_account(account: object, body: Json) -> None:
    assert isinstance(account, MiningAccount)
    assert account.name == body["data"]["name"]
    assert account.created_at == body["data"]["createdAt"]


def reads_rewards(page: object, body: Json) -> None:
    assert isinstance(page, RewardsPage)
    assert (page.offset, page.limit) == (body["offset"], body["limit"])
    assert len(page.data) == len(body["data"])
    for reward, documented in zip(page.data, body["data"], strict=True):
        assert reward.mining_account_name == documented["miningAccountName"]
        member(reward.payout_destination, txc_async.PayoutDestination,
               documented["payoutDestination"])
        assert reward.payout_transaction_hash == documented["payoutTransactionHash"]
        assert reward.payout_address == documented["payoutAddress"]
        assert reward.payout_time == documented["payoutTime"]
        assert reward.reward_currency == documented["rewardCurrency"]
        decimal(reward.total_reward, documented["totalReward"])
        decimal(reward.reward, documented["reward"])
        decimal(reward.fee, documented["fee"])
        decimal(reward.fpps_rate, documented["fppsRate"])
        assert reward.hash_rate == documented["hashRate"]
        assert reward.date == documented["date"]
        member(reward.status, txc_async.RewardStatus, documented["status"])


def reads_hashrate(hashrate: object, body: Json) -> None:
    assert isinstance(hashrate, Hashrate)
    data = body["data"]
    assert hashrate.account == data["account"]
    assert len(hashrate.hashrate) == len(data["hashrate"]) > 0
    for point, documented in zip(hashrate.hashrate, data["hashrate"], strict=True):
        assert point.timestamp == documented["timestamp"]
        assert point.hashrate == documented["hashrate"]
        assert point.reject_rate is not None
        assert not isinstance(point.reject_rate, bool | str)
        assert point.reject_rate == documented["rejectRate"]


def reads_token(token: object, body: Json) -> None:
    assert isinstance(token, OAuthToken)
    data = body["data"]
    assert token.access_token == data["access_token"]
    assert token.expires_in == data["expires_in"]
    assert token.refresh_token == data["refresh_token"]
    assert token.scope == data["scope"]
    assert token.scopes == data["scope"].split(",")
    assert token.token_type == data["token_type"]


# -- what the client makes of each documented answer -----------------------------------------------


@dataclass(frozen=True)
class Reads:
    """A success: the result carries the documented values."""

    check: Callable[[object, Json], None]
    call: Call | None = None  # instead of the operation's usual call


@dataclass(frozen=True)
class Raises:
    """An error answer: raised as ``error``. An :class:`ApiError` carries the body's code,
    message and per-field errors (under ``errors_under``); ``message`` is the one expected when
    the body has none."""

    error: type[TxcError]
    message: str | None = None
    errors_under: str = "errors"
    call: Call | None = None


EXPECTATIONS: dict[str, Reads | Raises] = {
    "ping/200": Reads(reads_ping),
    "main_balance/200": Reads(reads_balances),
    "main_balance/200-ticker-description": Reads(
        reads_one_balance, call=lambda c: c.main_balance(ticker="BTC")
    ),
    "main_balance/422-description": Raises(ValidationError),
    "investments_history/200": Reads(reads_investments),
    "investments_history/invalidFields": Raises(ValidationError),
    # No lending access on the key's account (B2B only): a permission the account lacks.
    "investments_history/403": Raises(PermissionDeniedError),
    "collateral_stop_limit_order/200": Reads(reads_order),
    "collateral_stop_limit_order/400": Raises(ValidationError),
    "collateral_stop_limit_order/422": Raises(ValidationError),
    # 503 without a body: the gateway's maintenance answer.
    "collateral_stop_limit_order/503": Raises(ServiceMaintenanceError),
    "create_mining_account/200": Reads(reads_mining_account),
    "create_mining_account/nameTaken": Raises(ValidationError),
    "create_mining_account/maxAccounts": Raises(ValidationError),
    "mining_rewards/200": Reads(reads_rewards),
    "mining_rewards/200-empty-description": Reads(reads_rewards),
    "mining_rewards/limitOutOfRange": Raises(ValidationError),
    "mining_rewards/offsetTooLarge": Raises(ValidationError),
    "mining_rewards/nonInteger": Raises(ValidationError),
    # "Incorrect timestamp", code 422: a refused parameter, so the ApiError's ValidationError.
    "mining_rewards/422": Raises(ValidationError),
    "mining_hashrate/200-quickstart": Reads(
        # The quickstart's request: the account it created, hourly, no range.
        reads_hashrate, call=lambda c: c.mining_hashrate(account="my_miner_01", interval="1h")
    ),
    "mining_hashrate/400": Raises(ValidationError),
    "mining_hashrate/422": Raises(ValidationError),
    "refresh_oauth_token/200": Reads(reads_token),
    # The refused token {"data": {"token": ["Invalid token."]}}.
    "refresh_oauth_token/400": Raises(
        AuthenticationError, message="Invalid token.", errors_under="data"
    ),
}


# -- serving an answer -----------------------------------------------------------------------------


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


def _response(example: Example) -> bytes:
    status = HTTPStatus(example.status)
    payload = example.wire
    content_type = b"" if example.no_content else b"Content-Type: application/json\r\n"
    return (
        f"HTTP/1.1 {status.value} {status.phrase}\r\n".encode() + content_type
        + f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode() + payload
    )


async def exchange(example: Example, call: Call, requests: list[bytes]) -> object:
    """``call`` on a client whose server answers ``example``; appends each request line the
    server received to ``requests``."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await read_head(reader)
        await reader.readexactly(_content_length(head))
        requests.append(head.split(b"\r\n", 1)[0])
        writer.write(_response(example))
        await writer.drain()

    running = serve(answer)
    assert isinstance(running, AsyncGenerator)
    async with contextlib.aclosing(running):
        url = await anext(running)
        async with txc_async.Client(
            api_key=KEY, api_secret=SECRET, base_url=url, limiter=RecordingLimiter(),
            retry=fast_retry(max_retries=0, max_rate_limit_retries=0, max_nonce_retries=0),
            timeout=5.0,
        ) as client:
            return await call(client)


def expectation_of(example: Example) -> Reads | Raises:
    found = EXPECTATIONS.get(example.id)
    if found is None:
        pytest.fail(f"the documentation has a new example {example.id}: decide what the client "
                    "should make of it and add it to EXPECTATIONS")
    return found


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.id for e in EXAMPLES])
async def test_a_documented_answer_reads_as_documented(example: Example) -> None:
    expected = expectation_of(example)
    call = expected.call or CALLS[example.operation]
    requests: list[bytes] = []
    if isinstance(expected, Reads):
        assert 200 <= example.status < 300
        result = await exchange(example, call, requests)
        expected.check(result, example.body)
        no_float(result)
    else:
        with pytest.raises(TxcError) as caught:
            await exchange(example, call, requests)
        error = caught.value
        assert type(error) is expected.error, repr(error)
        assert error.operation == example.operation
        if isinstance(error, ApiError):
            body = example.body
            assert error.status == example.status
            assert error.code == body.get("code")
            assert error.message == (expected.message or body["message"])
            assert error.errors == body.get(expected.errors_under, {})
        else:
            assert isinstance(error, TransportError)
            assert error.status == example.status
    # Sent once, to the documented path, with the documented method.
    assert requests == [f"{example.method} {example.path} HTTP/1.1".encode()]


# -- the values the documentation enumerates -------------------------------------------------------

#: Where each enumerated field of a success answer appears in the result, and the enum it reads
#: as (by its name: an enum the client does not define yet fails only its own cases).
ENUM_READS: dict[tuple[str, str], tuple[Callable[[Any], object], str]] = {
    ("collateral_stop_limit_order", "side"): (lambda order: order.side, "Side"),
    ("collateral_stop_limit_order", "status"): (lambda order: order.status, "OrderStatus"),
    ("collateral_stop_limit_order", "positionSide"): (
        lambda order: order.position_side, "PositionSide"
    ),
    ("mining_rewards", "data[].status"): (lambda page: page.data[0].status, "RewardStatus"),
    ("mining_rewards", "data[].payoutDestination"): (
        lambda page: page.data[0].payout_destination, "PayoutDestination"
    ),
}


def _enum_cases() -> list[Any]:
    cases: list[Any] = []
    for operation, fixture in _fixtures():
        for field, values in fixture.get("answer_enums", {}).items():
            for value in values:
                cases.append(pytest.param(operation, field, value,
                                          id=f"{operation}/{field}={value}"))
    return cases


def replaced(body: Json, path: str, value: object) -> Json:
    """A copy of ``body`` with the field at ``path`` (``data[].status``: in every item) set."""
    changed = copy.deepcopy(body)
    nodes = [changed]
    *parents, last = path.split(".")
    for part in parents:
        key, many = part.removesuffix("[]"), part.endswith("[]")
        nodes = [item for node in nodes for item in (node[key] if many else [node[key]])]
    for node in nodes:
        assert last in node, f"{path} is not in the documented success answer"
        node[last] = value
    return changed


@pytest.mark.parametrize(("operation", "field", "value"), _enum_cases())
async def test_every_documented_value_reads_as_its_enum_member(
    operation: str, field: str, value: str
) -> None:
    read = ENUM_READS.get((operation, field))
    if read is None:
        pytest.fail(f"the documentation enumerates {operation}'s {field}: say which enum it "
                    "reads as in ENUM_READS")
    attribute, enum_name = read
    success = next(e for e in EXAMPLES if e.id == f"{operation}/200")
    example = Example(operation, success.path, success.method, f"{field}={value}", 200,
                      replaced(success.body, field, value), False)
    result = await exchange(example, CALLS[operation], [])
    enum = getattr(txc_async, enum_name, None)
    assert isinstance(enum, type) and issubclass(enum, Enum), f"txc_async.{enum_name} is missing"
    member(attribute(result), enum, value)


# -- the fixtures themselves -----------------------------------------------------------------------


def test_every_operation_has_its_documented_examples() -> None:
    operations = {stem for stem, _ in _fixtures()}
    assert operations == set(CALLS)
    for stem, fixture in _fixtures():
        source = fixture["source"]
        assert source["repository"] == "whitebit-exchange/docs"
        assert source["commit"] == DOCS_COMMIT, f"{stem}: refreshed fixtures, refresh DOCS_COMMIT"
        names = [example["name"] for example in fixture["examples"]]
        assert len(names) == len(set(names)), f"{stem}: two examples named alike"
        statuses = {example["status"] for example in fixture["examples"]}
        assert any(200 <= s < 300 for s in statuses), f"{stem}: no documented success"
    # Every expectation still has its example: one the documentation dropped shows here.
    assert set(EXPECTATIONS) == {example.id for example in EXAMPLES}
