"""The sandbox's own checks, spoken to with raw HTTP and an independent signer."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from txc_async import RateLimit
from txc_async.sandbox import Sandbox

BALANCE = "/api/v4/main-account/balance"
REWARDS = "/api/v4/mining/rewards"
ORDER = "/api/v4/order/collateral/stop-limit"
CREATE = "/api/v4/mining/accounts/create"
HASHRATE = "/api/v4/mining/hashrate"
INVEST = "/api/v4/main-account/smart/investments"


def signed(
    box: Sandbox, path: str, params: dict[str, Any] | None = None, *, nonce: int | None = None,
    secret: str | None = None, key: str | None = None, window: bool = True,
    request: str | None = None, tamper: bool = False, nonce_as: Any = None,
) -> tuple[bytes, dict[str, str]]:
    body_obj = dict(params or {})
    body_obj["request"] = path if request is None else request
    body_obj["nonce"] = str(nonce if nonce is not None else time.time_ns() // 1_000_000)
    if nonce_as is not None:  # the nonce spelled as given (nonce_as(the nonce's digits))
        body_obj["nonce"] = nonce_as(body_obj["nonce"])
    if window:
        body_obj["nonceWindow"] = True
    body = json.dumps(body_obj, separators=(",", ":")).encode()
    payload = base64.b64encode(body).decode()
    signature = hmac.new((secret or box.api_secret).encode(), payload.encode(),
                         hashlib.sha512).hexdigest()
    if tamper:
        body = body.replace(b"}", b',"x":1}')
    return body, {
        "Content-Type": "application/json", "X-TXC-APIKEY": key or box.api_key,
        "X-TXC-PAYLOAD": payload, "X-TXC-SIGNATURE": signature,
    }


@pytest.fixture
async def box() -> AsyncIterator[Sandbox]:
    async with Sandbox() as sandbox:
        yield sandbox


@pytest.fixture(params=["live", "spec"])
async def dialect_box(request: pytest.FixtureRequest) -> AsyncIterator[Sandbox]:
    """A sandbox in each dialect: the live service's, and the API's first specification's."""
    async with Sandbox(dialect=request.param) as sandbox:
        yield sandbox


def id_field(box: Sandbox) -> str:
    """The name under which the sandbox reads and answers the client order id."""
    return "clientOrderId" if box.dialect == "live" else "client_order_id"


#: The code of the refusal of a client order id already in use, per dialect.
DUPLICATE_ID_CODE = {"live": 36, "spec": 31}


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


_counter = [0]


async def post(http: aiohttp.ClientSession, box: Sandbox, path: str,
               params: dict[str, Any] | None = None, **kwargs: Any) -> tuple[int, bytes]:
    if "nonce" not in kwargs:
        # Distinct nonces for requests sent within the same millisecond.
        _counter[0] += 1
        kwargs["nonce"] = time.time_ns() // 1_000_000 + _counter[0] % 1000
    body, headers = signed(box, path, params, **kwargs)
    async with http.post(box.url + path, data=body, headers=headers) as response:
        return response.status, await response.read()


async def test_a_good_signature_is_accepted(box: Sandbox, http: aiohttp.ClientSession) -> None:
    status, body = await post(http, box, BALANCE)
    assert status == 200 and "BTC" in json.loads(body)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"key": "unknown-key"}, "Invalid key"),
        ({"secret": "wrong-secret"}, "Invalid signature"),
        ({"tamper": True}, "Invalid payload"),
        ({"request": "/api/v4/other"}, "Invalid request"),
    ],
)
async def test_bad_authentication_is_refused_with_401(
    box: Sandbox, http: aiohttp.ClientSession, kwargs: dict[str, Any], message: str
) -> None:
    status, body = await post(http, box, BALANCE, **kwargs)
    assert status == 401
    answer = json.loads(body)
    assert answer["message"].startswith(message) and answer["errors"] == {}
    assert box.stats.auth_failed == 1 and box.stats.executed[BALANCE] == 0


async def test_nonce_rules(box: Sandbox, http: aiohttp.ClientSession) -> None:
    now = time.time_ns() // 1_000_000
    assert (await post(http, box, BALANCE, nonce=now))[0] == 200
    status, body = await post(http, box, BALANCE, nonce=now)  # used twice
    assert status == 429 and json.loads(body)["message"] == "Too many requests."
    status, body = await post(http, box, BALANCE, nonce=now - 6000)  # out of the window
    assert status == 429 and "5 seconds" in json.loads(body)["message"]
    status, _ = await post(http, box, BALANCE, nonce=now + 6000)
    assert status == 429
    # Without nonceWindow: strictly increasing.
    assert (await post(http, box, BALANCE, nonce=100, window=False))[0] == 200
    assert (await post(http, box, BALANCE, nonce=100, window=False))[0] == 429
    assert (await post(http, box, BALANCE, nonce=101, window=False))[0] == 200
    assert box.stats.nonce_refused == 4
    assert box.stats.executed[BALANCE] == 3


async def test_rate_limits_answer_a_non_json_429(http: aiohttp.ClientSession) -> None:
    async with Sandbox(rate_limits={"main_balance": RateLimit(3, 60)}) as box:
        statuses = []
        for _ in range(5):
            body, headers = signed(box, BALANCE, nonce=time.time_ns() // 1_000_000 + _)
            async with http.post(box.url + BALANCE, data=body, headers=headers) as response:
                statuses.append(response.status)
                if response.status == 429:
                    text = await response.read()
                    assert response.content_type == "text/html"
                    with pytest.raises(json.JSONDecodeError):
                        json.loads(text)
        assert statuses == [200, 200, 200, 429, 429]
        assert box.stats.rate_limited == 2 and box.stats.executed[BALANCE] == 3
        assert box.stats.max_in_window("main_balance", 60) == 5  # arrivals, refused included


async def test_unknown_route_is_an_empty_404(box: Sandbox, http: aiohttp.ClientSession) -> None:
    async with http.get(box.url + "/api/v4/nothing") as response:
        assert response.status == 404 and await response.read() == b""


async def test_ping_is_public(box: Sandbox, http: aiohttp.ClientSession) -> None:
    async with http.get(box.url + "/api/v4/public/ping") as response:
        assert response.status == 200 and await response.json() == ["pong"]


@pytest.mark.parametrize(
    ("path", "params", "status", "code", "fields"),
    [
        (INVEST, {"status": 3}, 400, 0, {"status"}),
        (INVEST, {"limit": 101}, 400, 0, {"limit"}),
        (INVEST, {"offset": 10001}, 400, 0, {"offset"}),
        (ORDER, {"market": "BTC_USDT"}, 422, 30, {"side", "amount", "price", "activation_price"}),
        (ORDER, {"market": "NOPE_USDT", "side": "up", "amount": "1e3", "price": "-1",
                 "activation_price": "1"}, 422, 30, {"market", "side", "amount", "price"}),
        (ORDER, {"market": "BTC_USDT", "side": "buy", "amount": "0.00001", "price": "1",
                 "activation_price": "1"}, 400, 32, {"amount"}),
        (CREATE, {"name": "bad name"}, 400, 0, {"name"}),
        (CREATE, {"name": "pool_acc_000"}, 400, 0, {"name"}),
        (CREATE, {"name": "ok", "referralCode": "r" * 51}, 400, 0, {"referralCode"}),
        (REWARDS, {"limit": 0}, 400, 0, {"limit"}),
        (REWARDS, {"offset": 10001}, 400, 0, {"offset"}),
        (HASHRATE, {"interval": "2h"}, 400, 0, {"interval"}),
    ],
)
async def test_validation_failures_use_the_documented_shapes(
    box: Sandbox, http: aiohttp.ClientSession, path: str, params: dict[str, Any], status: int,
    code: int, fields: set[str],
) -> None:
    got, body = await post(http, box, path, params)
    answer = json.loads(body)
    assert got == status
    assert answer["code"] == code
    assert set(answer["errors"]) == fields
    assert all(isinstance(m, str) for ms in answer["errors"].values() for m in ms)


@pytest.mark.parametrize("params", [{"from": 10, "to": 5}, {"from": "x"}, {"to": -1}])
async def test_bad_timestamps_are_incorrect_timestamp(
    box: Sandbox, http: aiohttp.ClientSession, params: dict[str, Any]
) -> None:
    for path in (REWARDS, HASHRATE):
        status, body = await post(http, box, path, params)
        assert status == 422
        assert json.loads(body) == {"code": 422, "message": "Incorrect timestamp"}


async def test_duplicate_client_order_id_is_refused(
    dialect_box: Sandbox, http: aiohttp.ClientSession
) -> None:
    box = dialect_box
    order = {"market": "BTC_USDT", "side": "buy", "amount": "0.01", "price": "1",
             "activation_price": "1", id_field(box): "dup", "stopLoss": "0.5"}
    status, body = await post(http, box, ORDER, order)
    placed = json.loads(body)
    assert status == 200 and placed["oto"]["stopLoss"] == "0.5"
    assert "takeProfit" not in placed["oto"] and placed[id_field(box)] == "dup"
    status, body = await post(http, box, ORDER, order)
    assert status == 400 and json.loads(body)["code"] == DUPLICATE_ID_CODE[box.dialect]
    assert len(box.stats.orders) == 1


async def test_each_dialect_ignores_the_other_s_name_for_the_client_order_id(
    dialect_box: Sandbox, http: aiohttp.ClientSession
) -> None:
    box = dialect_box
    other = "client_order_id" if box.dialect == "live" else "clientOrderId"
    order = {"market": "BTC_USDT", "side": "buy", "amount": "0.01", "price": "1",
             "activation_price": "1", other: "ignored"}
    status, body = await post(http, box, ORDER, order)
    # Placed without the id, as the service places an order whose id it does not read.
    assert status == 200 and json.loads(body)[id_field(box)] == ""


@pytest.mark.parametrize("client_order_id", ["", " padded ", "order#1", "id with space",
                                             "ordér-é", "a/b:c", "x" * 256, 7])
async def test_client_order_ids_outside_the_service_s_rule_are_refused(
    dialect_box: Sandbox, http: aiohttp.ClientSession, client_order_id: Any
) -> None:
    box = dialect_box
    order = {"market": "BTC_USDT", "side": "buy", "amount": "0.01", "price": "1",
             "activation_price": "1", id_field(box): client_order_id}
    status, body = await post(http, box, ORDER, order)
    assert status == 422 and id_field(box) in json.loads(body)["errors"]
    assert not box.stats.orders


async def test_a_client_order_id_is_unique_per_market_only(
    dialect_box: Sandbox, http: aiohttp.ClientSession
) -> None:
    box = dialect_box
    order = {"market": "BTC_USDT", "side": "buy", "amount": "0.01", "price": "1",
             "activation_price": "1", id_field(box): "same-1.a_B"}
    assert (await post(http, box, ORDER, order))[0] == 200
    assert (await post(http, box, ORDER, order | {"market": "ETH_USDT"}))[0] == 200
    status, body = await post(http, box, ORDER, order)
    assert status == 400 and json.loads(body)["code"] == DUPLICATE_ID_CODE[box.dialect]
    without = {k: v for k, v in order.items() if k != id_field(box)}
    for _ in range(2):
        status, body = await post(http, box, ORDER, without)
        assert status == 200 and json.loads(body)[id_field(box)] == ""


ORDER_PARAMS = {"market": "BTC_USDT", "side": "buy", "amount": "0.01", "price": "1",
                "activation_price": "1"}


@pytest.mark.parametrize(("extra", "field", "status", "code"), [
    ({"reduceOnly": True, "stopLoss": "0.5"}, "reduceOnly", 400, 30),
    ({"reduceOnly": True, "takeProfit": "2"}, "reduceOnly", 400, 30),
    ({"reduceOnly": "true"}, "reduceOnly", 422, 30),
    ({"stp": "cancel_all"}, "stp", 422, 30),
])
async def test_the_live_sandbox_refuses_what_the_service_refuses_in_an_order(
    box: Sandbox, http: aiohttp.ClientSession, extra: dict[str, Any], field: str, status: int,
    code: int,
) -> None:
    answer_status, body = await post(http, box, ORDER, ORDER_PARAMS | extra)
    refusal = json.loads(body)
    assert (answer_status, refusal["code"]) == (status, code) and field in refusal["errors"]
    assert not box.stats.orders


async def test_the_live_sandbox_takes_legacy_stp_values_and_answers_the_short_ones(
    box: Sandbox, http: aiohttp.ClientSession
) -> None:
    status, body = await post(http, box, ORDER, ORDER_PARAMS | {"stp": "cancel_new",
                                                                 "reduceOnly": True})
    placed = json.loads(body)
    assert status == 200 and placed["stp"] == "cn" and placed["reduceOnly"] is True
    assert {"orderId", "dealMoney", "dealStock", "dealFee"} <= set(placed)
    assert not {"order_id", "deal_money", "deal_stock", "deal_fee"} & set(placed)


async def test_the_balance_of_one_ticker_in_each_dialect(
    dialect_box: Sandbox, http: aiohttp.ClientSession
) -> None:
    box = dialect_box
    status, body = await post(http, box, BALANCE, {"ticker": "ETH"})
    if box.dialect == "live":
        assert json.loads(body) == box.balance["ETH"]
        assert json.loads((await post(http, box, BALANCE, {"ticker": "NOPE"}))[1]) == {
            "main_balance": "0"}
        status, body = await post(http, box, BALANCE, {"ticker": 5})
        assert status == 422 and json.loads(body)["errors"] == {"ticker": ["validation.string"]}
    else:
        assert json.loads(body) == box.balance


async def test_the_hashrate_of_the_live_sandbox(box: Sandbox, http: aiohttp.ClientSession) -> None:
    status, body = await post(http, box, HASHRATE, {})
    assert status == 400 and "account" in json.loads(body)["errors"]
    status, body = await post(http, box, HASHRATE, {"account": "no_such_account"})
    assert status == 400 and json.loads(body)["errors"] == {"account": ["Account not found"]}
    name = box.mining_account_names[0]
    status, body = await post(http, box, HASHRATE, {"account": name, "interval": "24h"})
    points = json.loads(body)["data"]["hashrate"]
    assert status == 200 and points
    assert all(p["hashrate"].isdigit() and isinstance(p["rejectRate"], float) for p in points)
    box.disable_mining_account(name)
    status, body = await post(http, box, HASHRATE, {"account": name})
    assert status == 200 and json.loads(body) == {"data": []}


@pytest.mark.parametrize("spell", [
    int, lambda n: f" {n} ", lambda n: f"+{n}", lambda n: f"{n[:4]}_{n[4:]}",
    lambda n: n.translate(str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")), lambda n: f"{n}.0",
])
async def test_a_nonce_is_a_string_of_digits(
    box: Sandbox, http: aiohttp.ClientSession, spell: Any
) -> None:
    status, body = await post(http, box, BALANCE, nonce_as=spell)
    assert status == 400 and "nonce" in json.loads(body)["errors"]


async def test_a_late_request_is_judged_when_it_arrives(
    box: Sandbox, http: aiohttp.ClientSession
) -> None:
    import asyncio

    # Without nonceWindow, a request overtaken by one signed after it is refused; with it,
    # both are accepted (what the late fault is for: arrival order is not sending order).
    for window, expected in ((False, [429, 200]), (True, [200, 200])):
        box.faults.add(BALANCE, "late", delay=0.3)
        base = time.time_ns() // 1_000_000 + (0 if window else 10_000_000)
        first = asyncio.ensure_future(post(http, box, BALANCE, nonce=base, window=window))
        await asyncio.sleep(0.1)
        second = await post(http, box, BALANCE, nonce=base + 1, window=window)
        assert [(await first)[0], second[0]] == expected, window


def test_the_sandbox_keeps_the_service_s_limits_and_the_client_agrees() -> None:
    from txc_async import DEFAULT_RATE_LIMITS
    from txc_async.sandbox._server import SERVICE_GROUP_LIMITS, SERVICE_RATE_LIMITS

    # The limits each operation's description states (whitebit-exchange/docs,
    # openapi/public/http-v4.yaml, openapi/private/main_api_v4.yaml,
    # openapi/private/http-trade-v4.yaml, openapi/oauth2.yaml): per 10 s, ping 2000;
    # investments, balance, the three mining operations 1000; the stop-limit order 10000; the
    # OAuth refresh 1 per second; the order book 600, the deposit and withdrawal history 200,
    # applying a code 60 per second, the websocket token 10 per minute.
    documented = {"public": (2000, 10), "investments": (1000, 10), "main_balance": (1000, 10),
                  "create_mining_account": (1000, 10), "mining_rewards": (1000, 10),
                  "mining_hashrate": (1000, 10), "collateral_stop_limit_order": (10000, 10),
                  "refresh_oauth_token": (1, 1), "orderbook": (600, 10),
                  "get_deposit_withdraw_history": (200, 10), "apply_code": (60, 1),
                  "get_web_socket_token": (10, 60)}
    as_pairs = {s: (lim.max_requests, lim.per_seconds) for s, lim in SERVICE_RATE_LIMITS.items()}
    assert {scope: as_pairs[scope] for scope in documented} == documented
    # One budget per documented operation.
    assert len(SERVICE_RATE_LIMITS) == 129
    assert SERVICE_RATE_LIMITS is not DEFAULT_RATE_LIMITS
    # The client keeps the groups an operation can reach but the public group (of 20,000, beyond
    # every public operation's own 2,000); the sandbox's own tables say the same.
    kept_groups = {name: SERVICE_GROUP_LIMITS[name]
                   for name in ("main_account", "trade_account", "default")}
    # The client knows every operation of the catalogue; for every one, and for their groups,
    # the two agree.
    client_limits = dict(DEFAULT_RATE_LIMITS)
    served = SERVICE_RATE_LIMITS | kept_groups
    assert {scope: client_limits[scope] for scope in served} == served


async def test_created_accounts_exist_and_have_no_rewards(
    box: Sandbox, http: aiohttp.ClientSession
) -> None:
    status, body = await post(http, box, CREATE, {"name": "fresh_pool"})
    assert status == 200 and json.loads(body)["data"]["name"] == "fresh_pool"
    assert (await post(http, box, CREATE, {"name": "fresh_pool"}))[0] == 400
    status, body = await post(http, box, REWARDS, {"account": "fresh_pool"})
    assert status == 200 and json.loads(body)["data"] == []


async def test_rewards_default_page_ordering_and_totals(
    box: Sandbox, http: aiohttp.ClientSession
) -> None:
    status, body = await post(http, box, REWARDS, {})
    page = json.loads(body)
    assert status == 200 and page["limit"] == 30 and len(page["data"]) == 30
    keys = [(-r["date"], r["miningAccountName"]) for r in page["data"]]
    assert keys == sorted(keys), "newest first, then by account"
    from decimal import Decimal

    for r in page["data"]:
        assert Decimal(r["totalReward"]) == Decimal(r["reward"]) + Decimal(r["fee"])
        assert r["hashRate"].endswith("TH/s")


async def test_max_page_caps_pages_and_the_echoed_limit_says_so(
    box: Sandbox, http: aiohttp.ClientSession
) -> None:
    box.max_page = 20
    _, body = await post(http, box, REWARDS, {"limit": 100, "offset": 5})
    page = json.loads(body)
    assert (page["offset"], page["limit"], len(page["data"])) == (5, 20, 20)
    _, body = await post(http, box, REWARDS, {"limit": 10})
    assert json.loads(body)["limit"] == 10
    for wrong in (0, -1, True, 2.5):
        with pytest.raises(ValueError, match="max_page"):
            Sandbox(max_page=wrong)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="max_page"):
            box.max_page = wrong  # type: ignore[assignment]
    assert box.max_page == 20


async def test_rewards_pages_concatenate_to_the_whole_range_exactly_once(
    box: Sandbox, http: aiohttp.ClientSession
) -> None:
    # 40 accounts x 300 days = 12,000 records in the range: past the 10,100 an offset reaches.
    start, end = 1704067200, 1704067200 + 300 * 86400 - 1
    seen: list[tuple[str, int]] = []
    for offset in range(0, 10001, 100):
        _, body = await post(http, box, REWARDS, {"from": start, "to": end, "limit": 100,
                                                  "offset": offset})
        seen += [(r["miningAccountName"], r["date"]) for r in json.loads(body)["data"]]
    assert len(seen) == len(set(seen)) == 10_100
    # The oldest reachable date is then used as the new end.
    last = seen[-1][1]
    _, body = await post(http, box, REWARDS, {"from": start, "to": last, "limit": 100})
    first_again = json.loads(body)["data"]
    assert first_again[0]["date"] == last


async def test_the_same_seed_gives_the_same_data(http: aiohttp.ClientSession) -> None:
    answers = []
    for _ in range(2):
        async with Sandbox(seed=3) as box:
            _, rewards = await post(http, box, REWARDS, {"limit": 100, "offset": 500})
            _, invest = await post(http, box, INVEST, {"limit": 20})
            answers.append((rewards, invest, box.api_key, box.api_secret))
    assert answers[0] == answers[1]
    async with Sandbox(seed=4) as other:
        _, rewards = await post(http, other, REWARDS, {"limit": 100, "offset": 500})
    assert rewards != answers[0][0]


async def test_paging_a_huge_book_costs_only_the_page(http: aiohttp.ClientSession) -> None:
    async with Sandbox(mining_accounts=1000, rewards_per_day=24, rewards_days=730) as box:
        began = time.perf_counter()
        _, body = await post(http, box, REWARDS, {"limit": 100, "offset": 10000})
        _, single = await post(http, box, REWARDS, {"account": "pool_acc_999", "limit": 100,
                                                    "offset": 10000})
        assert time.perf_counter() - began < 1.0
    assert len(json.loads(body)["data"]) == 100
    assert {r["miningAccountName"] for r in json.loads(single)["data"]} == {"pool_acc_999"}


async def test_hashrate_series(box: Sandbox, http: aiohttp.ClientSession) -> None:
    status, body = await post(http, box, HASHRATE, {"account": "pool_acc_001", "from": 0,
                                                   "to": 86400, "interval": "1h"})
    data = json.loads(body)["data"]
    assert status == 200 and data["account"] == "pool_acc_001"
    assert [p["timestamp"] for p in data["hashrate"]] == list(range(0, 86401, 3600))


async def test_investments_filters_and_b2b_access(
    box: Sandbox, http: aiohttp.ClientSession
) -> None:
    _, body = await post(http, box, INVEST, {"ticker": "BTC", "status": 1})
    records = json.loads(body)["records"]
    assert records and all(r["plan"]["ticker"] == "BTC" and r["status"] == 1 for r in records)
    box.add_key("plain", "plain-secret")
    box.add_key("no-b2b", "no-b2b-secret", b2b=False)
    assert (await post(http, box, INVEST, key="plain", secret="plain-secret"))[0] == 200
    status, body = await post(http, box, INVEST, key="no-b2b", secret="no-b2b-secret")
    assert status == 403 and json.loads(body)["code"] == 0


async def test_oauth_refresh_rotates_tokens(http: aiohttp.ClientSession) -> None:
    async with Sandbox(enforce_limits=False) as box:
        await _refresh_rotation(box, http)


async def _refresh_rotation(box: Sandbox, http: aiohttp.ClientSession) -> None:
    form = {"client_id": box.oauth_client_id, "client_secret": box.oauth_client_secret,
            "token": box.oauth_refresh_token}
    async with http.post(box.url + "/oauth2/refresh_token", data=form) as response:
        first = await response.json()
    assert response.status == 200 and first["data"]["expires_in"] == 300
    assert first["data"]["refresh_token"] == box.oauth_refresh_token != form["token"]
    async with http.post(box.url + "/oauth2/refresh_token", data=form) as response:
        assert response.status == 400
        assert await response.json() == {"data": {"token": ["Invalid token."]}}
    async with http.post(box.url + "/oauth2/refresh_token",
                         data=form | {"client_secret": "nope"}) as response:
        assert response.status == 401


async def test_refresh_tokens_expire(http: aiohttp.ClientSession) -> None:
    now = [1_000_000.0]
    async with Sandbox(clock=lambda: now[0]) as box:
        now[0] += 601
        form = {"client_id": box.oauth_client_id, "client_secret": box.oauth_client_secret,
                "token": box.oauth_refresh_token}
        async with http.post(box.url + "/oauth2/refresh_token", data=form) as response:
            assert response.status == 400


@pytest.mark.parametrize(
    ("kind", "status", "json_body"),
    [("html_502", 502, False), ("json_503", 503, True), ("text_503", 503, False),
     ("json_500", 500, True), ("malformed_json", 200, False), ("nonce_429", 429, True),
     ("rate_limit_429", 429, False), ("throttle", 400, True), ("throttle/422", 422, True),
     ("validation_failed", 422, True), ("validation_failed/400", 400, True),
     ("error_200", 200, True), ("empty_404", 404, False)],
)
async def test_each_fault_kind(
    box: Sandbox, http: aiohttp.ClientSession, kind: str, status: int, json_body: bool
) -> None:
    kind, _, given = kind.partition("/")
    box.faults.add(BALANCE, kind, retry_after=3 if kind == "rate_limit_429" else None,
                   status=int(given) if given else None)
    assert box.faults.pending(BALANCE) == 1
    body, headers = signed(box, BALANCE)
    async with http.post(box.url + BALANCE, data=body, headers=headers) as response:
        text = await response.read()
        assert response.status == status
        if kind == "rate_limit_429":
            assert response.headers["Retry-After"] == "3"
    if json_body:
        json.loads(text)
    else:
        with pytest.raises(ValueError):
            json.loads(text)
    assert box.stats.executed[BALANCE] == 0 and box.stats.faults_served == 1
    assert box.faults.pending(BALANCE) == 0
    assert (await post(http, box, BALANCE))[0] == 200, "a fault applies once"
    if kind == "validation_failed":  # the order refusal the API's first specification shows
        assert json.loads(text) == {"code": 30, "message": "Validation failed", "errors": {}}
    for wrong in ((kind, 500), ("json_503", 400)):
        with pytest.raises(ValueError, match="status"):
            box.faults.add(BALANCE, wrong[0], status=wrong[1])


async def test_reset_and_slow_and_executed_faults(
    box: Sandbox, http: aiohttp.ClientSession
) -> None:
    box.faults.add(BALANCE, "reset")
    with pytest.raises(aiohttp.ClientError):
        await post(http, box, BALANCE)
    box.faults.add(BALANCE, "slow", delay=0.3)
    began = time.monotonic()
    assert (await post(http, box, BALANCE))[0] == 200
    assert time.monotonic() - began >= 0.3
    box.faults.add(CREATE, "html_502", execute=True)
    assert (await post(http, box, CREATE, {"name": "made_anyway"}))[0] == 502
    assert box.stats.executed[CREATE] == 1
    assert (await post(http, box, CREATE, {"name": "made_anyway"}))[0] == 400  # it exists
    with pytest.raises(ValueError, match="kind"):
        box.faults.add(BALANCE, "nonsense")


def test_a_hash_continued_from_a_prefix_is_the_whole_hash() -> None:
    from txc_async.sandbox._data import mix, mix_on

    for values in [(0, 0, 0), (7, 299, 10**6), (1, 2**70, -5)]:
        assert mix(*values) == mix_on(mix(*values[:2]), values[2])
        assert mix(*values) == mix_on(mix(), *values)
