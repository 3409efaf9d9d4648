"""Every operation of the whole API v4, called by its name through ``Client.call`` against a
mock transport: the request sent (method, path, wire names), the documented answer read into its
model (amounts as Decimal), floats refused as amounts, and every write never sent twice."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import msgspec
import pytest

import txc_async
from txc_async import InvalidParameterError, MockRequest, MockTransport, Operation
from txc_async._operations import GROUP_LIMITS, OPERATIONS, Auth, overrides
from txc_async._operations.generated.index import WHERE

from ..support.documented import BY_NAME, example_of, value_for

#: Operations whose own decoder (declared by hand) reads a shape of its own.
#: Every generated name's operation, through the catalogue (an alias: the hand-declared one).
GENERATED = {name: txc_async.OPERATIONS[name] for name in WHERE}
HAND = {name for name in GENERATED if name in overrides.ALIASES}

#: Every operation of the documents with its classification: a write may change state and is
#: never sent twice; a read is.
CLASSIFICATION: dict[str, str] = {
    "create_code": "write", "apply_code": "write", "get_my_codes": "read",
    "get_codes_history": "read", "collateral_account_balance": "read",
    "collateral_account_balance_summary": "read", "create_collateral_limit_order": "write",
    "create_collateral_bulk_order": "write", "create_collateral_market_order": "write",
    "create_collateral_stop_limit_order": "write",
    "create_collateral_trigger_market_order": "write", "collateral_account_summary": "read",
    "get_open_positions": "read", "close_position": "write", "get_positions_history": "read",
    "get_closed_positions_pnl": "read", "get_funding_history": "read",
    "change_collateral_account_leverage": "write", "get_collateral_hedge_mode": "read",
    "update_hedge_mode": "write", "get_collateral_account_adl_quantile": "read",
    "get_conditional_orders": "read", "get_oco_orders": "read",
    "create_collateral_oco_order": "write", "cancel_conditional_order": "write",
    "cancel_oco_order": "write", "cancel_oto_order": "write", "convert_estimate": "write",
    "convert_confirm": "write", "convert_history": "read", "get_credit_line_info": "read",
    "get_deposit_address": "read", "get_fiat_deposit_url": "write", "issue_card_token": "write",
    "refund_deposit": "write", "create_new_address": "write", "get_market_fee": "read",
    "get_fees": "read", "issue_jwt_token": "write", "get_web_socket_token": "write",
    "get_fixed_plans": "read", "create_fixed_investment": "write",
    "close_fixed_investment": "write", "get_fixed_investments_history": "read",
    "get_interest_payment_history": "read", "get_flex_plans": "read",
    "get_user_flex_investments": "read", "get_flex_investment_history": "read",
    "get_flex_payment_history": "read", "create_flex_investment": "write",
    "withdraw_from_flex_investment": "write", "close_flex_investment": "write",
    "update_flex_auto_reinvestment": "write", "get_main_balance": "read",
    "get_deposit_withdraw_history": "read", "platform_status": "read", "markets": "read",
    "ticker": "read", "assets": "read", "orderbook": "read", "orderbook_depth": "read",
    "trades": "read", "fee": "read", "time": "read", "ping": "read", "collateral_markets": "read",
    "futures": "read", "funding_history": "read", "mining_pool": "read",
    "get_mining_rewards": "read", "get_mining_hashrate": "read",
    "get_mining_payout_destination": "read", "set_mining_payout_destination": "write",
    "get_mining_miner_info": "read", "get_mining_worker_names": "read",
    "get_mining_worker_hashrate": "read", "create_mining_watcher_link": "write",
    "list_mining_watcher_links": "read", "create_mining_account": "write",
    "get_mining_accounts": "read", "oauth2_token": "write", "oauth2_refresh_token": "write",
    "oauth2_api_key_info": "read", "oauth2_api_key_secret": "write",
    "delete_oauth2_api_key": "write", "trade_account_balance": "read",
    "create_limit_order": "write", "create_bulk_limit_order": "write",
    "create_market_order": "write", "create_stock_market_order": "write",
    "create_stop_limit_order": "write", "create_stop_market_order": "write",
    "cancel_order": "write", "cancel_bulk_orders": "write", "cancel_all_orders": "write",
    "get_active_orders": "read", "get_executed_order_history": "read", "get_order_deals": "read",
    "get_order_history": "read", "get_delisting_order_history": "read", "modify_order": "write",
    "set_kill_switch": "write", "get_kill_switch_status": "read", "create_sub_account": "write",
    "delete_sub_account": "write", "edit_sub_account": "write", "list_sub_accounts": "read",
    "sub_account_transfer": "write", "block_sub_account": "write", "unblock_sub_account": "write",
    "get_sub_account_balances": "read", "get_sub_account_transfer_history": "read",
    "list_unconfirmed_sub_account_withdrawals": "read", "confirm_sub_account_withdrawal": "write",
    "create_sub_account_api_key": "write", "edit_sub_account_api_key": "write",
    "delete_sub_account_api_key": "write", "list_sub_account_api_keys": "read",
    "reset_sub_account_api_key": "write", "list_sub_account_api_key_ip_addresses": "read",
    "create_sub_account_api_key_ip_address": "write",
    "delete_sub_account_api_key_ip_address": "write", "get_sub_account_kyc_url": "write",
    "transfer_between_balances": "write", "get_travel_rule_vasps": "read",
    "submit_travel_rule_deposit_verification": "write", "create_withdraw": "write",
    "create_withdraw_pay": "write", "create_express_withdraw_token": "write",
}


def answers_of(name: str) -> list[Any]:
    answer = BY_NAME[name]["answer"]
    if answer["schema"] is None:
        return []
    return [*answer["examples"].values(), example_of(answer["schema"])]


def minimal(name: str) -> dict[str, Any]:
    op = GENERATED[name]
    schemas = {p["name"]: p["schema"] or {} for p in BY_NAME[name]["params"]}
    return {p.name: value_for(p, schemas.get(p.wire[0], {})) for p in op.params if p.required}


class Server:
    """Answers each request with ``body``, and keeps the requests."""

    def __init__(self, status: int, body: bytes) -> None:
        self.status, self.body, self.requests = status, body, list[MockRequest]()

    def __call__(self, request: MockRequest) -> txc_async.RawResponse:
        self.requests.append(request)
        headers = {"Date": "Sun, 22 Nov 2026 10:00:00 GMT", "Content-Type": "application/json"}
        return txc_async.RawResponse(self.status, headers, self.body)


async def call(name: str, body: bytes = b"{}", status: int = 200, /,
               **params: Any) -> tuple[Any, Server]:
    server = Server(status, body)
    client = txc_async.Client(
        api_key="k", api_secret="s", base_url="https://api.example.test",
        limiter=txc_async.InProcessLimiter(), transport=MockTransport(server),
    )
    try:
        return await client.call(name, **params), server
    finally:
        await client.close()


def sendable() -> Iterator[str]:
    return (name for name, op in GENERATED.items() if not op.unsendable)


# -- the catalogue --------------------------------------------------------------------------


def test_the_catalogue_holds_every_documented_operation_once() -> None:
    operations = txc_async.OPERATIONS
    assert set(GENERATED) == set(BY_NAME) and len(GENERATED) == 129
    assert len(set(map(id, operations.values()))) == 129
    assert set(operations) == set(GENERATED) | set(overrides.ALIASES.values())
    for generated, hand in overrides.ALIASES.items():
        assert operations[generated] is operations[hand]
        assert operations[hand].name == hand


def test_every_operation_is_classified_and_writes_are_never_sent_twice() -> None:
    assert set(CLASSIFICATION) == set(GENERATED)
    for name, op in GENERATED.items():
        assert op.retry_safe is (CLASSIFICATION[name] == "read"), name
        assert (name in overrides.WRITES) is (CLASSIFICATION[name] == "write"), name
        assert op.decode.write is not op.retry_safe or name in HAND, name  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", [n for n in BY_NAME if n not in HAND])
def test_a_declaration_says_what_its_facts_say(name: str) -> None:
    op, facts = GENERATED[name], BY_NAME[name]
    assert (op.name, op.method, op.path, op.scope) == (name, facts["method"], facts["path"], name)
    assert op.summary == f"{facts['method']} {facts['path']}"
    wire = [p["name"] for p in facts["params"]
            if (name, p["name"]) not in overrides.DROPPED_PARAMS]
    wire += [p["name"] for p in overrides.EXTRA_PARAMS.get(name, [])]
    if name in overrides.BEARER_TOKEN:
        wire.append("access_token")
    assert [p.wire for p in op.params] == [(w,) for w in wire]
    required = {p["name"] for p in facts["params"] if p["required"]}
    if name in overrides.BEARER_TOKEN:
        required.add("access_token")
    assert {p.wire[0] for p in op.params if p.required} == required & set(wire)
    limit = facts["rate_limit"]
    if limit is not None:
        assert (op.rate_limit.max_requests, op.rate_limit.per_seconds) == (
            limit["requests"], limit["seconds"])
    for param in op.params:
        assert param.help and "\n" not in param.help
        assert param.name == param.name.lower()


# -- requests -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(sendable()))
async def test_call_sends_the_method_the_path_and_the_wire_names(name: str) -> None:
    op = GENERATED[name]
    params = minimal(name)
    answers = answers_of(name)
    body = json.dumps(answers[0]).encode() if answers else b""
    _, server = await call(name, body, BY_NAME[name]["answer"]["status"], **params)
    (request,) = server.requests
    assert request.method == op.method
    expected = op.wire_params(params)
    assert set(expected) == {p.wire[0] for p in op.params if p.required}
    # A parameter of the path (``{market}``) is sent in the path, and only there.
    path = op.path
    for part in re.findall(r"\{(\w+)\}", op.path):
        path = path.replace("{" + part + "}", str(expected.pop(part)))
    assert request.url.path == path
    if op.auth is Auth.SIGNED:
        assert request.headers is not None and "X-TXC-SIGNATURE" in request.headers
        assert request.body is not None
        sent = json.loads(request.body)
        assert sent["request"] == path and "nonce" in sent
        signing = ("request", "nonce", "nonceWindow")
        assert {k: v for k, v in sent.items() if k not in signing} == expected
    elif op.auth is Auth.FORM:
        assert request.body is not None
        assert dict(
            pair.split("=", 1) for pair in request.body.decode().split("&")
        ) == {k: str(v) for k, v in expected.items()}
    else:
        assert request.body is None
        if op.auth is Auth.BEARER:
            # The access token goes in the Authorization header, and nowhere else.
            token = expected.pop("access_token")
            assert request.headers is not None
            assert request.headers["Authorization"] == f"Bearer {token}"
            assert token not in str(request.url)
        assert dict(request.url.query) == {k: str(v) for k, v in expected.items()}


@pytest.mark.parametrize("name", [n for n, op in GENERATED.items() if op.unsendable])
async def test_an_operation_this_version_cannot_send_is_refused_before_sending(
    name: str,
) -> None:
    with pytest.raises(InvalidParameterError, match="cannot be sent by this version") as caught:
        await call(name, **minimal(name))
    assert caught.value.operation == name


def decimal_params() -> Iterator[tuple[str, str]]:
    for name in sendable():
        for param in GENERATED[name].params:
            if param.kind == "decimal":
                yield name, param.name


@pytest.mark.parametrize(("name", "param"), list(decimal_params()))
async def test_a_float_amount_is_refused_before_sending(name: str, param: str) -> None:
    params = minimal(name) | {param: 1.5}
    server = Server(200, b"{}")
    client = txc_async.Client(
        api_key="k", api_secret="s", base_url="https://api.example.test",
        limiter=txc_async.InProcessLimiter(), transport=MockTransport(server),
    )
    try:
        with pytest.raises(InvalidParameterError, match="float") as caught:
            await client.call(name, **params)
    finally:
        await client.close()
    assert caught.value.parameter == param and server.requests == []


# -- answers --------------------------------------------------------------------------------


def decimals_are_decimals(value: Any, where: str) -> int:
    """The number of Decimal fields checked in ``value``; fails on one that is not a Decimal."""
    count = 0
    if isinstance(value, msgspec.Struct):
        for info in msgspec.structs.fields(value):
            field = getattr(value, info.name)
            if info.type in (Decimal, Decimal | None) and field is not None:
                assert type(field) is Decimal, f"{where}.{info.name}"
                count += 1
            count += decimals_are_decimals(field, f"{where}.{info.name}")
    elif isinstance(value, list):
        count += sum(decimals_are_decimals(v, f"{where}[]") for v in value)
    elif isinstance(value, dict):
        count += sum(decimals_are_decimals(v, f"{where}.{k}") for k, v in value.items())
    return count


def documented_answers() -> Iterator[tuple[str, int]]:
    for name in sendable():
        if name not in HAND:
            for index in range(len(answers_of(name))):
                yield name, index


@pytest.mark.parametrize(("name", "index"), list(documented_answers()))
async def test_the_documented_answer_decodes_into_its_model(name: str, index: int) -> None:
    body = json.dumps(answers_of(name)[index]).encode()
    result, _ = await call(name, body, BY_NAME[name]["answer"]["status"], **minimal(name))
    decimals_are_decimals(result, name)


def test_the_answers_amounts_are_decimals() -> None:
    op: Operation[Any] = GENERATED["create_limit_order"]
    order = op.decode(json.dumps(example_of(BY_NAME["create_limit_order"]["answer"]["schema"]))
                      .encode())
    assert decimals_are_decimals(order, "order") >= 5
    assert order.amount == Decimal("0.01") and order.deal_fee == Decimal("0")


@pytest.mark.parametrize("name", [n for n in sendable() if BY_NAME[n]["answer"]["schema"] is None])
async def test_an_answer_without_a_body_is_none(name: str) -> None:
    result, _ = await call(name, b"", BY_NAME[name]["answer"]["status"], **minimal(name))
    assert result is None


def test_a_value_the_documents_do_not_list_still_decodes() -> None:
    op = GENERATED["trades"]
    (trade,) = op.decode(b'[{"tradeID": 1, "price": "1.5", "quote_volume": "1", '
                         b'"base_volume": "2", "trade_timestamp": 1, "type": "lend", '
                         b'"rpi": false}]')
    assert trade.type == "lend" and trade.price == Decimal("1.5")


async def test_a_path_parameter_is_quoted_whole_into_the_path() -> None:
    body = json.dumps({"ticker_id": "BTC_USDT", "timestamp": 1, "asks": [], "bids": []})
    _, server = await call("orderbook", body.encode(), 200, market="BTC_USDT", limit=5)
    (request,) = server.requests
    assert request.url.raw_path == "/api/v4/public/orderbook/BTC_USDT"
    assert dict(request.url.query) == {"limit": "5"}
    # A value that would leave its part of the path stays inside it.
    _, server = await call("trades", b"[]", 200, market="../../private")
    (request,) = server.requests
    assert request.url.raw_path == "/api/v4/public/trades/..%2F..%2Fprivate"


def test_the_catalogue_loads_a_group_s_declarations_when_one_of_them_is_first_looked_up() -> None:
    import subprocess
    import sys

    program = (
        "import sys, txc_async\n"
        "loaded = lambda: sorted(m.rsplit('.', 1)[1] for m in sys.modules\n"
        "                        if m.startswith('txc_async._operations.generated.')\n"
        "                        and not m.endswith(('.index',)))\n"
        "print(loaded())\n"
        "names = list(txc_async.OPERATIONS)\n"
        "print(len(names), 'create_limit_order' in txc_async.OPERATIONS, loaded())\n"
        "print(txc_async.OPERATIONS['create_limit_order'].path, loaded())\n"
        "print(len({id(op) for op in txc_async.OPERATIONS.values()}))\n"
    )
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out[0] == "[]"
    assert out[1] == "135 True []"
    assert out[2] == "/api/v4/order/new ['spot']"
    assert out[3] == "129"


#: The endpoints whose own limit the service's rate-limit page lists (whitebit-exchange/docs
#: 4a67f22, data/rate-limits.yaml, ``endpointLimits``; shown in api-reference/rate-limits.mdx).
ENDPOINT_LIMITS = {
    ("GET", "/api/v4/public/markets"): 2000,
    ("GET", "/api/v4/public/ticker"): 2000,
    ("GET", "/api/v4/public/orderbook/{market}"): 600,
    ("POST", "/api/v4/trade-account/balance"): 12000,
    ("POST", "/api/v4/order/new"): 10000,
    ("POST", "/api/v4/order/market"): 10000,
    ("POST", "/api/v4/order/bulk"): 10000,
    ("POST", "/api/v4/order/cancel"): 10000,
    ("POST", "/api/v4/order/modify"): 10000,
    ("POST", "/api/v4/order/kill-switch"): 10000,
    ("POST", "/api/v4/collateral-account/balance"): 12000,
    ("POST", "/api/v4/order/collateral/limit"): 10000,
    ("POST", "/api/v4/order/collateral/bulk"): 10000,
    ("POST", "/api/v4/main-account/history"): 200,
}


def test_the_endpoint_limits_of_the_rate_limit_page_are_the_operations_limits() -> None:
    by_route = {(op.method, op.path): op for op in OPERATIONS.values()}
    for route, limit in ENDPOINT_LIMITS.items():
        assert by_route[route].rate_limit == txc_async.RateLimit(limit, 10.0), route


def test_every_operation_draws_on_the_group_of_its_path() -> None:
    expected = {"/api/v4/public/": "public_group", "/api/v4/main-account/": "main_account",
                "/api/v4/trade-account/": "trade_account"}
    for op in OPERATIONS.values():
        group = next((g for prefix, g in expected.items() if op.path.startswith(prefix)),
                     "default")
        assert op.group == group, op.name
        assert txc_async.DEFAULT_RATE_LIMITS[group] == GROUP_LIMITS[group]
