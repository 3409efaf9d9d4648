"""The operations' declarations: what a caller's keywords become on the wire, which ones are
refused and how the refusal is named, the catalogue and the limits derived from it, and
``Client.call`` reaching any operation by its name or its ``Operation``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

import txc_async
from txc_async import InvalidParameterError, MockRequest, MockTransport, Operation, RateLimit
from txc_async._operations import BALANCE_OF_TICKER, GROUP_LIMITS, Param, merge_rate_limits

OPERATIONS = txc_async.OPERATIONS

#: Keywords every operation accepts, its required ones among them.
VALID: dict[str, dict[str, Any]] = {
    "ping": {},
    "main_balance": {},
    "investments_history": {"id": "inv-1", "ticker": "BTC", "status": 1, "limit": 10,
                            "offset": 20},
    "collateral_stop_limit_order": {
        "market": "BTC_USDT", "side": "buy", "amount": Decimal("0.01"), "price": "40000",
        "activation_price": 39950, "stop_loss": "39000", "take_profit": "45000",
        "client_order_id": "desk-1", "position_side": "LONG", "reduce_only": False,
        "stp": "cb",
    },
    "create_mining_account": {"name": "rig_01", "referral_code": "ref"},
    "mining_rewards": {"account": "pool-1", "start": 1704067200,
                       "end": datetime(2024, 2, 1, tzinfo=UTC), "limit": 30, "offset": 0},
    "mining_hashrate": {"account": "pool-1", "start": 1704067200, "end": 1706745600,
                        "interval": "1h"},
    "refresh_oauth_token": {"client_id": "cid", "client_secret": "cs", "refresh_token": "rt"},
}
#: What VALID becomes on the wire.
WIRE: dict[str, dict[str, Any]] = {
    "ping": {},
    "main_balance": {},
    "investments_history": {"id": "inv-1", "ticker": "BTC", "status": 1, "limit": 10,
                            "offset": 20},
    "collateral_stop_limit_order": {
        "market": "BTC_USDT", "side": "buy", "amount": "0.01", "price": "40000",
        "activation_price": "39950", "stopLoss": "39000", "takeProfit": "45000",
        "clientOrderId": "desk-1", "client_order_id": "desk-1", "positionSide": "LONG",
        "reduceOnly": False, "stp": "cb",
    },
    "create_mining_account": {"name": "rig_01", "referralCode": "ref"},
    "mining_rewards": {"account": "pool-1", "from": 1704067200, "to": 1706745600, "limit": 30,
                       "offset": 0},
    "mining_hashrate": {"account": "pool-1", "from": 1704067200, "to": 1706745600,
                        "interval": "1h"},
    "refresh_oauth_token": {"client_id": "cid", "client_secret": "cs", "token": "rt"},
}
#: The limit each operation's page of the service's documentation states (whitebit-exchange/
#: docs: openapi/public/http-v4.yaml, openapi/private/main_api_v4.yaml,
#: openapi/private/http-trade-v4.yaml, openapi/oauth2.yaml), as (requests, seconds).
DOCUMENTED = {
    "ping": (2000, 10), "main_balance": (1000, 10), "investments_history": (1000, 10),
    "collateral_stop_limit_order": (10000, 10), "create_mining_account": (1000, 10),
    "mining_rewards": (1000, 10), "mining_hashrate": (1000, 10), "refresh_oauth_token": (1, 1),
}


#: The operations declared by hand (the catalogue holds every other one of the documents too,
#: generated: tests/unit/test_whole_api.py).
HAND = {name: OPERATIONS[name] for name in VALID}


def every_param() -> Iterator[tuple[str, str]]:
    for op in HAND.values():
        for param in op.params:
            yield op.name, param.name


def param_of(operation: str, name: str) -> Param:
    (param,) = [p for p in OPERATIONS[operation].params if p.name == name]
    return param


def assert_names(error: InvalidParameterError, operation: str, parameter: str) -> None:
    assert (error.operation, error.parameter) == (operation, parameter)
    assert str(error).startswith(f"{operation}: {parameter}: ")


# -- the catalogue -------------------------------------------------------------------------------


def test_the_catalogue_holds_every_operation_by_its_name() -> None:
    assert list(OPERATIONS)[: len(VALID)] == list(VALID)
    for name, op in HAND.items():
        assert isinstance(op, Operation) and op.name == name
        assert op.summary and "\n" not in op.summary
    assert OPERATIONS["mining_hashrate"].rate_limit == RateLimit(1000, 10.0)
    with pytest.raises(TypeError):
        OPERATIONS["ping"] = OPERATIONS["main_balance"]  # type: ignore[index]


def test_each_operation_keeps_the_limit_its_documentation_states() -> None:
    limits = {name: (op.rate_limit.max_requests, op.rate_limit.per_seconds)
              for name, op in HAND.items()}
    assert limits == DOCUMENTED


def test_groups_and_tags_come_from_the_paths_and_the_documentation() -> None:
    groups = {name: op.group for name, op in HAND.items()}
    assert groups == {
        "ping": "public_group", "main_balance": "main_account",
        "investments_history": "main_account",
        "collateral_stop_limit_order": "default", "create_mining_account": "default",
        "mining_rewards": "default", "mining_hashrate": "default",
        "refresh_oauth_token": "default",
    }
    tags = {name: op.tag for name, op in HAND.items()}
    assert tags == {
        "ping": "market", "main_balance": "main_account", "investments_history": "lending",
        "collateral_stop_limit_order": "collateral", "create_mining_account": "mining",
        "mining_rewards": "mining", "mining_hashrate": "mining", "refresh_oauth_token": "oauth",
    }


def test_the_default_limits_derive_from_the_declarations_and_the_groups() -> None:
    derived = {op.scope: op.rate_limit for op in OPERATIONS.values()}
    assert dict(txc_async.DEFAULT_RATE_LIMITS) == derived | dict(GROUP_LIMITS)
    groups = {"public_group": RateLimit(20000, 10.0), "main_account": RateLimit(1000, 10.0),
              "trade_account": RateLimit(12000, 10.0), "default": RateLimit(10000, 10.0)}
    assert dict(GROUP_LIMITS) == groups
    with pytest.raises(TypeError):
        txc_async.DEFAULT_RATE_LIMITS["public"] = RateLimit(1, 1)  # type: ignore[index]
    # What a client is given overrides them, scope by scope; an unknown scope is refused.
    merged = merge_rate_limits({"mining_rewards": RateLimit(5, 1.0)})
    assert merged == dict(txc_async.DEFAULT_RATE_LIMITS) | {"mining_rewards": RateLimit(5, 1.0)}
    with pytest.raises(InvalidParameterError, match="unknown scope 'mining'"):
        merge_rate_limits({"mining": RateLimit(5, 1.0)})


def test_secret_parameters_are_masked_under_their_wire_names() -> None:
    assert OPERATIONS["refresh_oauth_token"].secret_params == ("client_secret", "token")
    assert [op.name for op in HAND.values() if op.secret_params] == ["refresh_oauth_token"]


def test_writes_are_never_retry_safe() -> None:
    writes = sorted(name for name, op in HAND.items() if not op.retry_safe)
    assert writes == ["collateral_stop_limit_order", "create_mining_account",
                      "refresh_oauth_token"]


@pytest.mark.parametrize(("operation", "name"), list(every_param()))
def test_every_parameter_says_what_it_is_and_what_leaving_it_out_means(
    operation: str, name: str
) -> None:
    param = param_of(operation, name)
    assert param.help and "\n" not in param.help
    assert name == name.lower() and " " not in name
    if not param.required:
        assert "(default: " in param.help, (operation, name)


@pytest.mark.parametrize(("operation", "name"),
                         [pair for pair in every_param() if param_of(*pair).choices])
def test_a_parameter_of_fixed_values_takes_each_and_nothing_else(
    operation: str, name: str
) -> None:
    param = param_of(operation, name)
    assert param.kind == "choice"
    for value in param.choices:
        assert param.check(name, value) == value
    if param.enum is not None:
        assert {member.value for member in param.enum} == set(param.choices)
        for member in param.enum:
            assert param.check(name, member) == member.value
    with pytest.raises(InvalidParameterError):
        param.check(name, "not one of them")


# -- keywords to the wire --------------------------------------------------------------------------


@pytest.mark.parametrize("operation", list(VALID))
def test_keywords_become_the_wire_parameters(operation: str) -> None:
    assert OPERATIONS[operation].wire_params(VALID[operation]) == WIRE[operation]


@pytest.mark.parametrize("operation", list(VALID))
def test_a_keyword_given_as_none_is_left_out(operation: str) -> None:
    op = OPERATIONS[operation]
    required = {p.name for p in op.params if p.required}
    given = {name: value if name in required else None for name, value in VALID[operation].items()}
    wire = op.wire_params(given)
    assert set(wire) == {w for p in op.params if p.required for w in p.wire}


@pytest.mark.parametrize(("operation", "name"), list(every_param()))
def test_a_refused_value_names_the_operation_and_the_parameter(
    operation: str, name: str
) -> None:
    with pytest.raises(InvalidParameterError) as caught:
        OPERATIONS[operation].wire_params(VALID[operation] | {name: object()})
    assert_names(caught.value, operation, name)


@pytest.mark.parametrize(("operation", "name"),
                         [pair for pair in every_param() if param_of(*pair).required])
def test_a_required_parameter_left_out_is_refused(operation: str, name: str) -> None:
    given = {key: value for key, value in VALID[operation].items() if key != name}
    with pytest.raises(InvalidParameterError) as caught:
        OPERATIONS[operation].wire_params(given)
    assert_names(caught.value, operation, name)
    assert "is required" in caught.value.rule
    with pytest.raises(InvalidParameterError) as caught:
        OPERATIONS[operation].wire_params(VALID[operation] | {name: None})
    assert_names(caught.value, operation, name)


@pytest.mark.parametrize("operation", list(VALID))
def test_an_unknown_keyword_is_refused_by_its_name(operation: str) -> None:
    with pytest.raises(InvalidParameterError) as caught:
        OPERATIONS[operation].wire_params(VALID[operation] | {"colour": "blue"})
    assert_names(caught.value, operation, "colour")
    for param in OPERATIONS[operation].params:
        assert param.name in caught.value.rule


@pytest.mark.parametrize(("operation", "change", "parameter", "fragment"), [
    ("collateral_stop_limit_order", {"reduce_only": True}, "reduce_only", "stop_loss"),
    ("collateral_stop_limit_order", {"reduce_only": True, "stop_loss": None}, "reduce_only",
     "take_profit"),
    ("mining_rewards", {"start": 1706745601}, "start", "must not be after end"),
    ("mining_hashrate", {"end": 1}, "start", "must not be after end"),
])
def test_the_rules_across_parameters(
    operation: str, change: dict[str, Any], parameter: str, fragment: str
) -> None:
    with pytest.raises(InvalidParameterError) as caught:
        OPERATIONS[operation].wire_params(VALID[operation] | change)
    assert_names(caught.value, operation, parameter)
    assert fragment in str(caught.value)
    # Each alone is taken.
    order = VALID["collateral_stop_limit_order"]
    without_legs = order | {"reduce_only": True, "stop_loss": None, "take_profit": None}
    assert OPERATIONS["collateral_stop_limit_order"].wire_params(without_legs)["reduceOnly"]


def test_a_variant_is_the_same_wire_operation_decoded_otherwise() -> None:
    raw = OPERATIONS["ping"].with_decoder(bytes)
    assert raw.decode(b'["pong"]') == b'["pong"]'
    assert (raw.name, raw.path, raw.scope, raw.rate_limit) == (
        "ping", "/api/v4/public/ping", "public", RateLimit(2000, 10.0))
    assert "ping" in OPERATIONS and raw not in OPERATIONS.values()
    assert BALANCE_OF_TICKER.name == "main_balance"
    assert BALANCE_OF_TICKER.decode(b'{"main_balance": "0.5"}') == Decimal("0.5")
    assert BALANCE_OF_TICKER.wire_params({"ticker": "BTC"}) == {"ticker": "BTC"}


# -- Client.call -----------------------------------------------------------------------------------

ANSWERS = {
    "/api/v4/public/ping": b'["pong"]',
    "/api/v4/mining/rewards": b'{"offset": 0, "limit": 10, "data": []}',
    "/api/v4/mining/accounts/create": b'{"data": {"name": "rig_01", "createdAt": 1700000000}}',
    "/api/v4/mining/hashrate": b'{"data": {"account": "pool-1", "hashrate": []}}',
}


class Recorder:
    """Answers each path its recorded answer, and keeps the requests."""

    def __init__(self) -> None:
        self.requests: list[MockRequest] = []

    def __call__(self, request: MockRequest) -> txc_async.RawResponse:
        self.requests.append(request)
        headers = {"Date": "Sun, 22 Nov 2026 10:00:00 GMT", "Content-Type": "application/json"}
        return txc_async.RawResponse(200, headers, ANSWERS[request.url.path])

    def body(self) -> dict[str, Any]:
        (request,) = self.requests
        assert request.body is not None
        sent: dict[str, Any] = json.loads(request.body)
        return {k: v for k, v in sent.items() if k not in ("request", "nonce", "nonceWindow")}


@pytest.fixture
async def recorded() -> Any:
    recorder = Recorder()
    client = txc_async.Client(
        api_key="k", api_secret="s", base_url="https://api.example.test",
        limiter=txc_async.InProcessLimiter(), transport=MockTransport(recorder),
    )
    yield client, recorder
    await client.close()


async def test_call_by_name_sends_what_the_method_sends(recorded: Any) -> None:
    client, recorder = recorded
    page = await client.call("mining_rewards", account="pool-1", start=1704067200, limit=10)
    assert isinstance(page, txc_async.RewardsPage) and page.limit == 10
    assert recorder.body() == {"account": "pool-1", "from": 1704067200, "limit": 10}
    assert await client.call("ping") is True


async def test_call_by_operation_is_typed_and_passes_a_parameter_called_name(
    recorded: Any
) -> None:
    client, recorder = recorded
    account = await client.call(OPERATIONS["create_mining_account"], name="rig_01")
    assert account == txc_async.MiningAccount(name="rig_01", created_at=1700000000)
    assert recorder.body() == {"name": "rig_01"}
    raw = await client.call(OPERATIONS["ping"].with_decoder(bytes))
    assert raw == b'["pong"]'


async def test_call_refuses_before_sending_and_names_the_operation(recorded: Any) -> None:
    client, recorder = recorded
    with pytest.raises(InvalidParameterError) as caught:
        await client.call("mining_hashrate", interval="1h")
    assert_names(caught.value, "mining_hashrate", "account")
    with pytest.raises(InvalidParameterError) as caught:
        await client.call("mining_rewards", limit=0)
    assert_names(caught.value, "mining_rewards", "limit")
    with pytest.raises(InvalidParameterError) as caught:
        await client.call("ping", colour="blue")
    assert_names(caught.value, "ping", "colour")
    assert recorder.requests == []


@pytest.mark.parametrize("operation", [
    "get_everything", Operation(
        name="not_declared", method="GET", path="/api/v4/public/time", auth=OPERATIONS[
            "ping"].auth, retry_safe=True, decode=bytes, scope="public",
        rate_limit=RateLimit(1, 1.0), tag="market", summary="not in the catalogue",
    ), 7,
])
async def test_call_refuses_an_operation_outside_the_catalogue(
    recorded: Any, operation: object
) -> None:
    client, recorder = recorded
    with pytest.raises(InvalidParameterError) as caught:
        await client.call(operation)
    assert caught.value.parameter == "operation"
    assert recorder.requests == []
