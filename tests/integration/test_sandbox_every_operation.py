"""The sandbox answers every operation the service documents (generator/facts.json): through the
client, every operation it can send answers and reads into its result; spoken to raw, every
documented method and path answers its documented status, a missing required parameter gets the
operation's documented refusal, a bearer operation wants a token the sandbox issued; faults,
limits and simulations work on any operation. (That the sandbox reads none of the client's
tables is tests/repo/test_layers.py's.)"""

from __future__ import annotations

import json
import re
import time
import typing
from collections.abc import AsyncIterator, Callable
from decimal import Decimal
from typing import Any

import aiohttp
import msgspec
import pytest

import txc_async
from txc_async import RateLimit
from txc_async._operations import Auth
from txc_async._operations.answers import GeneratedAnswer, NoAnswer
from txc_async.sandbox import (
    PATH_GROUPS,
    PATH_SCOPES,
    UNHANDLED,
    Sandbox,
    Simulation,
    SimulationError,
)
from txc_async.sandbox._exchange import Exchange, ExchangeSimulation

from ..support.documented import FACTS, example_of, resolve, value_for
from .test_sandbox_server import signed as signed_with

_last_nonce = [0]


def signed(
    box: Sandbox, path: str, params: dict[str, Any] | None = None
) -> tuple[bytes, dict[str, str]]:
    """A signed request of ``path``, with a nonce never used before (two requests may be
    signed in one millisecond)."""
    _last_nonce[0] = max(time.time_ns() // 1_000_000, _last_nonce[0] + 1)
    return signed_with(box, path, params, nonce=_last_nonce[0])

DOCUMENTED: list[dict[str, Any]] = FACTS["operations"]
BY_ROUTE = {(op["method"], op["path"]): op for op in DOCUMENTED}
_PLACEHOLDER = re.compile(r"\{(\w+)\}")

#: Values the operations the sandbox simulates itself take (by wire name): what it knows.
KNOWN: dict[str, Callable[[Sandbox], dict[str, Any]]] = {
    "get_mining_hashrate": lambda box: {"account": box.mining_account_names[0]},
    "oauth2_refresh_token": lambda box: {"client_id": box.oauth_client_id,
                                         "client_secret": box.oauth_client_secret,
                                         "token": box.oauth_refresh_token},
    "oauth2_token": lambda box: {"client_id": box.oauth_client_id,
                                 "client_secret": box.oauth_client_secret,
                                 "code": box.oauth_code},
}


@pytest.fixture
async def box() -> AsyncIterator[Sandbox]:
    # The documented answers of every operation: the exchange's operations answer their
    # examples too (its own answers, which hang on its state, are tested below and in
    # test_sandbox_exchange_flow.py).
    async with Sandbox(mining_accounts=3, rewards_days=30, exchange=False) as sandbox:
        yield sandbox


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


# -- through the client ---------------------------------------------------------------------


def sendable() -> list[str]:
    return sorted(name for name, op in txc_async.OPERATIONS.items() if not op.unsendable)


def client_params(box: Sandbox, name: str) -> dict[str, Any]:
    """The client's required keywords of ``name``, made of the documents' examples."""
    op = txc_async.OPERATIONS[name]
    facts = BY_ROUTE[op.method, op.path]
    schemas = {p["name"]: p["schema"] or {} for p in facts["params"]}
    known = KNOWN.get(facts["name"], lambda box: {})(box)
    return {
        param.name: known[param.wire[0]] if param.wire[0] in known
        else value_for(param, schemas.get(param.wire[0], {}))
        for param in op.params if param.required
    }


def conforms(value: Any, kind: Any) -> bool:
    """Whether ``value`` is of the answer type ``kind`` (its models, lists and maps)."""
    origin = typing.get_origin(kind) or kind
    if origin is list:
        (item,) = typing.get_args(kind)
        return isinstance(value, list) and all(conforms(v, item) for v in value)
    if origin is dict:
        return isinstance(value, dict)
    if isinstance(origin, type) and issubclass(origin, msgspec.Struct):
        return isinstance(value, origin)
    return True


def test_every_operation_is_routed() -> None:
    assert len(DOCUMENTED) == 129
    assert set(PATH_SCOPES) == {op["path"] for op in DOCUMENTED} == set(PATH_GROUPS)
    # Every operation the client knows has its path in the sandbox's own table.
    assert {op.path for op in txc_async.OPERATIONS.values()} == set(PATH_SCOPES)


@pytest.mark.parametrize("name", sendable())
async def test_the_client_calls_every_operation_and_reads_its_answer(
    box: Sandbox, http: aiohttp.ClientSession, name: str
) -> None:
    op = txc_async.OPERATIONS[name]
    params = client_params(box, name)
    if op.auth is Auth.BEARER:
        params["access_token"] = await access_token(http, box)
    async with txc_async.Client(
        api_key=box.api_key, api_secret=box.api_secret, base_url=box.url,
        limiter=txc_async.InProcessLimiter(),
    ) as client:
        result = await client.call(name, **params)
    # One request of the operation (besides the token exchange a bearer operation needs).
    executed = box.stats.executed
    tokens = executed["/oauth2/refresh_token"] if op.auth is Auth.BEARER else 0
    assert sum(executed.values()) - tokens == 1
    if isinstance(op.decode, NoAnswer):
        assert result is None
    elif isinstance(op.decode, GeneratedAnswer):
        assert conforms(result, op.decode.wire_type), (name, result)
    else:
        assert result is not None


#: The operations the sandbox's exchange answers from its state.
EXCHANGE = sorted(
    op["name"] for op in DOCUMENTED
    if op["path"] in ExchangeSimulation(Exchange(seed=0)).paths
)


@pytest.mark.parametrize("name", EXCHANGE)
async def test_the_exchange_answers_each_of_its_operations_as_its_type_or_refuses_typed(
    name: str,
) -> None:
    """With the exchange on, each of its operations answers from its state: a result of its
    type, or a refusal the client reads as a typed error (an order on a market without the
    balance it needs, a cancel of an order that is not there), never an unreadable answer."""
    op = txc_async.OPERATIONS[name]
    balances = {"USDT": Decimal("1000000"), "BTC": Decimal("100")}
    async with Sandbox(trade_balances=balances) as box, txc_async.Client(
        api_key=box.api_key, api_secret=box.api_secret, base_url=box.url,
        limiter=txc_async.InProcessLimiter(),
    ) as client:
        try:
            result = await client.call(name, **client_params(box, name))
        except txc_async.ApiError as refused:
            assert refused.status is not None and 400 <= refused.status < 500, refused
            return
    if isinstance(op.decode, GeneratedAnswer):
        assert conforms(result, op.decode.wire_type), (name, result)


# -- raw HTTP -------------------------------------------------------------------------------


def _concrete(path: str, values: dict[str, Any] | None = None) -> str:
    """``path`` with each ``{name}`` filled with ``values[name]`` (default: ``BTC_USDT``, or
    the documented example)."""
    return _PLACEHOLDER.sub(lambda m: str((values or {}).get(m[1], "BTC_USDT")), path)


def wire_params(box: Sandbox, facts: dict[str, Any], *, leave_out: str = "") -> dict[str, Any]:
    """The required parameters of ``facts`` by wire name, made of the documents' examples."""
    params = {p["name"]: example_of(p["schema"]) for p in facts["params"]
              if p["required"] and p["name"] != leave_out}
    known = KNOWN.get(facts["name"], lambda box: {})(box)
    return params | {k: v for k, v in known.items() if k != leave_out}


async def access_token(http: aiohttp.ClientSession, box: Sandbox) -> str:
    form = {"client_id": box.oauth_client_id, "client_secret": box.oauth_client_secret,
            "token": box.oauth_refresh_token}
    async with http.post(box.url + "/oauth2/refresh_token", data=form) as response:
        assert response.status == 200
        token: str = (await response.json())["data"]["access_token"]
        return token


async def jwt(http: aiohttp.ClientSession, box: Sandbox) -> str:
    body, headers = signed(box, "/api/v4/jwt")
    async with http.post(box.url + "/api/v4/jwt", data=body, headers=headers) as response:
        assert response.status == 200
        token: str = (await response.json())["data"]["token"]
        return token


async def send(
    http: aiohttp.ClientSession, box: Sandbox, facts: dict[str, Any], params: dict[str, Any],
    *, authorization: str | None = None,
) -> tuple[int, bytes]:
    """A request of ``facts`` as the service documents it: signed, a form, or plain; the path's
    parameters in the path, the query's in the query."""
    in_path = {p["name"] for p in facts["params"] if p["in"] == "path"}
    in_query = {p["name"] for p in facts["params"] if p["in"] == "query"}
    path = _concrete(facts["path"], {k: v for k, v in params.items() if k in in_path})
    query = {k: str(v).lower() if isinstance(v, bool) else str(v)
             for k, v in params.items() if k in in_query}
    rest = {k: v for k, v in params.items() if k not in in_path | in_query}
    headers: dict[str, str] = {}
    data: bytes | dict[str, Any] | None = None
    auth = facts["auth"]
    if facts["name"] == "issue_card_token":
        auth = "bearer"  # a JWT the sandbox issued, as its page says
    if auth == "signed":
        data, headers = signed(box, path, rest)
    elif auth == "form":
        data = rest
    elif rest:
        data, headers = json.dumps(rest).encode(), {"Content-Type": "application/json"}
    if authorization is not None:
        headers["Authorization"] = authorization
    async with http.request(facts["method"], box.url + path, params=query, data=data,
                            headers=headers) as response:
        return response.status, await response.read()


async def authorization_for(
    http: aiohttp.ClientSession, box: Sandbox, facts: dict[str, Any]
) -> str | None:
    if facts["name"] == "issue_card_token":
        return await jwt(http, box)
    if facts["auth"] == "bearer":
        return "Bearer " + await access_token(http, box)
    return None


@pytest.mark.parametrize("facts", DOCUMENTED, ids=[op["name"] for op in DOCUMENTED])
async def test_every_documented_method_and_path_answers_its_documented_status(
    box: Sandbox, http: aiohttp.ClientSession, facts: dict[str, Any]
) -> None:
    authorization = await authorization_for(http, box, facts)
    status, body = await send(http, box, facts, wire_params(box, facts),
                              authorization=authorization)
    assert status == facts["answer"]["status"], body
    if facts["answer"]["schema"] is None:
        assert body == b""
    else:
        answer = json.loads(body)
        examples = list(facts["answer"]["examples"].values())
        if examples and facts["name"] not in SIMULATED:
            # The documented example, the request's values where its shape has them.
            assert _shape(answer) == _shape(examples[0])


#: The operations the sandbox simulates itself (their answers are its own, in the documented
#: shapes the client's tests check).
SIMULATED = frozenset({
    "ping", "get_main_balance", "get_fixed_investments_history", "get_mining_rewards",
    "get_mining_hashrate", "create_collateral_stop_limit_order", "create_mining_account",
    "oauth2_refresh_token", "oauth2_token", "issue_jwt_token",
})


def _shape(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shape(item) for item in value]
    return type(value).__name__


def missing_cases() -> list[tuple[dict[str, Any], str]]:
    """Each operation with a required parameter outside its path, and that parameter."""
    cases = []
    for facts in DOCUMENTED:
        required = [p["name"] for p in facts["params"] if p["required"] and p["in"] != "path"]
        if required and facts["name"] not in SIMULATED:
            cases.append((facts, required[0]))
    return cases


def refusal_statuses(facts: dict[str, Any]) -> set[int]:
    """The statuses the documents give this operation's refusals of parameters: its 400 and
    422 answers with per-field errors (422 where it documents none)."""
    statuses = set()
    for response in facts["errors"]["responses"]:
        schema = resolve(response["schema"]) if response["schema"] else {}
        fields = schema.get("properties") or {}
        if response["status"] in (400, 422) and (
            "errors" in fields or schema.get("additionalProperties")
        ):
            statuses.add(response["status"])
    return statuses or {422}


@pytest.mark.parametrize(("facts", "param"), missing_cases(),
                         ids=[f"{facts['name']}-{param}" for facts, param in missing_cases()])
async def test_a_missing_required_parameter_gets_the_documented_refusal(
    box: Sandbox, http: aiohttp.ClientSession, facts: dict[str, Any], param: str
) -> None:
    authorization = await authorization_for(http, box, facts)
    status, body = await send(http, box, facts, wire_params(box, facts, leave_out=param),
                              authorization=authorization)
    assert status in refusal_statuses(facts), body
    refusal = json.loads(body)
    if facts["auth"] == "none":
        # The public market data's flat refusal (openapi/public/http-v4.yaml,
        # PublicValidationError).
        assert refusal == {param: [f"The {param} field is required."]}
    else:
        assert refusal["errors"] == {param: [f"The {param} field is required."]}
        if "code" in refusal:
            assert refusal["message"] == "Validation failed" and refusal["code"] in (0, 30)
    assert box.stats.executed[_concrete(facts["path"])] == 0


@pytest.mark.parametrize(
    ("path", "params", "field", "message"),
    [
        ("/api/v4/order/new", {"market": "BTC_USDT", "side": "hold", "amount": "1"}, "side",
         "The selected side is invalid."),
        ("/api/v4/order/new", {"market": "BTC_USDT", "side": "buy", "amount": 1.5}, "amount",
         "The amount must be a number."),
        ("/api/v4/order/new", {"market": "BTC_USDT", "side": "buy", "amount": "1",
                               "postOnly": "yes"}, "postOnly",
         "The postOnly field must be true or false."),
        ("/api/v4/order/new", {"market": 7, "side": "buy", "amount": "1"}, "market",
         "The market must be a string."),
        ("/api/v4/orders", {"limit": "10"}, "limit", "The limit must be an integer."),
        ("/api/v4/orders", {"limit": 1000}, "limit", "The limit may not be greater than 100."),
        ("/api/v4/order/bulk", {"orders": [{"market": "BTC_USDT", "side": "buy"}]},
         "orders.0.amount", "The orders.0.amount field is required."),
    ],
)
async def test_a_value_of_the_wrong_type_enum_or_bounds_is_refused(
    box: Sandbox, http: aiohttp.ClientSession, path: str, params: dict[str, Any], field: str,
    message: str,
) -> None:
    body, headers = signed(box, path, params)
    async with http.post(box.url + path, data=body, headers=headers) as response:
        assert response.status == 422
        assert await response.json() == {"code": 30, "message": "Validation failed",
                                          "errors": {field: [message]}}


async def test_public_query_values_are_checked_as_text(
    box: Sandbox, http: aiohttp.ClientSession
) -> None:
    url = box.url + "/api/v4/public/orderbook/BTC_USDT"
    async with http.get(url, params={"limit": "5", "level": "2"}) as response:
        assert response.status == 200
    async with http.get(url, params={"limit": "five", "level": "11"}) as response:
        assert response.status == 422
        assert await response.json() == {"limit": ["The limit must be an integer."],
                                          "level": ["The level may not be greater than 10."]}
    async with http.get(box.url + "/api/v4/public/trades/BTC_USDT",
                        params={"type": "both"}) as response:
        assert response.status == 422
        assert await response.json() == {"type": ["The selected type is invalid."]}


async def test_the_answer_repeats_the_request_s_values(
    box: Sandbox, http: aiohttp.ClientSession
) -> None:
    body, headers = signed(box, "/api/v4/order/new",
                           {"market": "ETH_BTC", "side": "sell", "amount": "3"})
    async with http.post(box.url + "/api/v4/order/new", data=body, headers=headers) as response:
        order = await response.json()
    assert (order["market"], order["side"], order["amount"]) == ("ETH_BTC", "sell", "3")
    async with http.get(box.url + "/api/v4/public/funding-history/ETH_PERP") as response:
        assert response.status == 200


@pytest.mark.parametrize("facts", [op for op in DOCUMENTED if op["auth"] == "bearer"],
                         ids=lambda op: op["name"])
async def test_a_bearer_operation_wants_an_access_token_the_sandbox_issued(
    box: Sandbox, http: aiohttp.ClientSession, facts: dict[str, Any]
) -> None:
    params = wire_params(box, facts)
    for authorization in (None, "Bearer not-issued", "Basic x"):
        status, body = await send(http, box, facts, params, authorization=authorization)
        assert status == 401
        assert json.loads(body) == {"data": {"message": ["Unauthorized."]}}
    token = await access_token(http, box)
    status, _ = await send(http, box, facts, params, authorization=f"Bearer {token}")
    assert status == 200


async def test_the_card_token_wants_a_jwt_the_sandbox_issued(
    box: Sandbox, http: aiohttp.ClientSession
) -> None:
    facts = next(op for op in DOCUMENTED if op["name"] == "issue_card_token")
    params = wire_params(box, facts)
    assert (await send(http, box, facts, params, authorization="made-up"))[0] == 401
    token = await jwt(http, box)
    assert (await send(http, box, facts, params, authorization=token))[0] == 201


async def test_oauth_tokens_come_from_the_application_s_code_once(
    box: Sandbox, http: aiohttp.ClientSession
) -> None:
    form = {"client_id": box.oauth_client_id, "client_secret": box.oauth_client_secret,
            "code": box.oauth_code}
    async with http.post(box.url + "/oauth2/token", data=form) as response:
        assert response.status == 200
        token = (await response.json())["data"]
    assert token["token_type"] == "Bearer" and token["refresh_token"] == box.oauth_refresh_token
    async with http.post(box.url + "/oauth2/token", data=form) as response:
        assert response.status == 401
        assert await response.json() == {"data": {"message": ["Invalid request"]}}
    async with http.get(box.url + "/oauth2/api-key/info",
                        headers={"Authorization": f"Bearer {token['access_token']}"}) as response:
        assert response.status == 200


async def test_faults_apply_to_any_operation_and_a_templated_path(
    http: aiohttp.ClientSession,
) -> None:
    async with Sandbox(trade_balances={"USDT": Decimal("100000")}) as box:
        await _faults_apply(box, http)


async def _faults_apply(box: Sandbox, http: aiohttp.ClientSession) -> None:
    box.faults.add("/api/v4/public/orderbook/BTC_USDT", "json_503")
    box.faults.add("/api/v4/public/orderbook/{market}", "text_503")
    box.faults.add("/api/v4/order/new", "json_500", execute=True)
    # The request path's fault first, then the documented path's, for any market.
    async with http.get(box.url + "/api/v4/public/orderbook/ETH_USDT") as response:
        assert response.status == 503 and await response.text() == "Service is under maintenance"
    async with http.get(box.url + "/api/v4/public/orderbook/BTC_USDT") as response:
        assert response.status == 503 and (await response.json())["code"] == 503
    async with http.get(box.url + "/api/v4/public/orderbook/BTC_USDT") as response:
        assert response.status == 200
    body, headers = signed(box, "/api/v4/order/new",
                           {"market": "BTC_USDT", "side": "buy", "amount": "0.01",
                            "price": "50000"})
    async with http.post(box.url + "/api/v4/order/new", data=body, headers=headers) as response:
        assert response.status == 500
    assert box.stats.executed["/api/v4/order/new"] == 1
    with pytest.raises(ValueError, match="no documented operation's path"):
        box.faults.add("/api/v4/public/orderbook/BTC_USDT/extra", "json_503")


async def test_every_endpoint_and_group_is_limited(http: aiohttp.ClientSession) -> None:
    limits = {"orderbook": RateLimit(2, 60.0), "trade_account": RateLimit(3, 60.0)}
    async with Sandbox(rate_limits=limits, mining_accounts=3, rewards_days=30) as box:
        url = box.url + "/api/v4/public/orderbook/"
        statuses = []
        for market in ("BTC_USDT", "ETH_USDT", "ETH_BTC"):
            async with http.get(url + market) as response:
                statuses.append(response.status)
        assert statuses == [200, 200, 429]
        # The trade account's group: its endpoints together.
        statuses = []
        for path in ("/api/v4/trade-account/balance", "/api/v4/trade-account/order/history") * 2:
            body, headers = signed(box, path)
            async with http.post(box.url + path, data=body, headers=headers) as response:
                statuses.append(response.status)
        assert statuses == [200, 200, 200, 429]
        assert box.stats.refused == {"orderbook": 1, "trade_account": 1}
        assert PATH_GROUPS["/api/v4/trade-account/balance"] == "trade_account"


class OrderBook:
    """A simulation of the order book alone, which refuses one market."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str, str | None, dict[str, Any]]] = []

    def answer(self, method: str, path: str, account: str | None, params: dict[str, Any],
               now: float) -> Any:
        self.asked.append((method, path, account, params))
        if path != "/api/v4/public/orderbook/{market}" and path != "/api/v4/order/new":
            return UNHANDLED
        if params.get("market") == "SOL_USDT":
            raise SimulationError(422, {"market": ["Market is not available."]})
        return {"asks": [], "bids": [], "ticker_id": params["market"], "timestamp": int(now)}


async def test_simulations_answer_first_with_the_checked_parameters(
    http: aiohttp.ClientSession,
) -> None:
    book = OrderBook()
    simulation: Simulation = book
    async with Sandbox(simulations=[simulation], mining_accounts=3, rewards_days=30) as box:
        async with http.get(box.url + "/api/v4/public/orderbook/ETH_USDT",
                            params={"limit": "5"}) as response:
            assert (await response.json())["ticker_id"] == "ETH_USDT"
        async with http.get(box.url + "/api/v4/public/orderbook/SOL_USDT") as response:
            assert response.status == 422
            assert await response.json() == {"market": ["Market is not available."]}
        # Refused before any simulation is asked.
        async with http.get(box.url + "/api/v4/public/orderbook/ETH_USDT",
                            params={"limit": "many"}) as response:
            assert response.status == 422
        # Not simulated: the documented answer, or the sandbox's own simulation.
        async with http.get(box.url + "/api/v4/public/ping") as response:
            assert await response.json() == ["pong"]
        body, headers = signed(box, "/api/v4/order/new",
                               {"market": "BTC_USDT", "side": "buy", "amount": "1"})
        async with http.post(box.url + "/api/v4/order/new", data=body,
                             headers=headers) as response:
            assert response.status == 200
    assert book.asked[0] == ("GET", "/api/v4/public/orderbook/{market}", None,
                             {"limit": "5", "market": "ETH_USDT"})
    # A signed request: the key's name, the body's parameters without the signing fields.
    assert book.asked[-1] == ("POST", "/api/v4/order/new", box.api_key,
                              {"market": "BTC_USDT", "side": "buy", "amount": "1"})
    assert len(book.asked) == 4
