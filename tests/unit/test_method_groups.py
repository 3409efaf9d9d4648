"""The typed methods: ``client.<group>.<operation>(...)`` for every operation, grouped by the
documentation's tags, sending what ``client.call`` sends; ``iter_<name>`` walking every page of
every paged operation."""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

import txc_async
from txc_async import MockRequest, MockTransport, RawResponse, TxcError
from txc_async._methods import groups as groups_module
from txc_async._methods.base import MethodGroup

from .test_whole_api import BY_NAME, GENERATED, HAND, answers_of, minimal

GROUP_NAMES = sorted(
    name for name, member in vars(groups_module.MethodGroups).items()
    if isinstance(member, functools.cached_property)
)
DATE = {"Date": "Sun, 22 Nov 2026 10:00:00 GMT", "Content-Type": "application/json"}


def client_of(handler: Callable[[MockRequest], RawResponse]) -> txc_async.Client:
    return txc_async.Client(
        api_key="k", api_secret="s", base_url="https://api.example.test",
        limiter=txc_async.InProcessLimiter(), transport=MockTransport(handler),
    )


def group_of(name: str) -> str:
    return GENERATED[name].tag


def sent(request: MockRequest) -> tuple[str, str, Any]:
    """What a request carried, without the parts that differ between two sends (the nonce)."""
    body: Any = request.body
    if body and request.headers and "X-TXC-SIGNATURE" in request.headers:
        body = json.loads(body)
        body.pop("nonce", None)
    return request.method, str(request.url), body


def test_the_client_has_the_documentation_groups_api_md_names() -> None:
    named = {"spot", "collateral", "market", "main_account", "deposits", "withdrawals",
             "transfers", "codes", "lending", "sub_accounts", "mining", "convert", "fees", "jwt",
             "oauth"}
    assert named <= set(GROUP_NAMES)
    assert set(GROUP_NAMES) == {op.tag for op in GENERATED.values()}


def test_every_operation_is_a_method_of_its_group_and_every_paged_one_walks() -> None:
    client = client_of(lambda request: RawResponse(200, DATE, b"{}"))
    methods = {
        group: {n for n in dir(getattr(client, group)) if not n.startswith("_")}
        for group in GROUP_NAMES
    }
    for name, facts in BY_NAME.items():
        group = group_of(name)
        assert name in methods[group], (group, name)
        assert inspect.iscoroutinefunction(getattr(getattr(client, group), name)), name
        assert (f"iter_{name}" in methods[group]) is facts["paged"], name
    assert sum(len(found) for found in methods.values()) == len(BY_NAME) + sum(
        1 for facts in BY_NAME.values() if facts["paged"])


def test_a_group_is_made_once_per_client_and_says_whose_it_is() -> None:
    client = client_of(lambda request: RawResponse(200, DATE, b"{}"))
    assert client.spot is client.spot
    assert isinstance(client.spot, MethodGroup)
    assert "SpotMethods" in repr(client.spot) and "secret" not in repr(client.spot).lower()
    other = client_of(lambda request: RawResponse(200, DATE, b"{}"))
    assert other.spot is not client.spot


@pytest.mark.parametrize("name", [n for n in GENERATED if not GENERATED[n].unsendable
                                  and n not in HAND])
async def test_a_typed_method_sends_what_call_sends(name: str) -> None:
    answers = answers_of(name)
    body = json.dumps(answers[0]).encode() if answers else b""
    status = BY_NAME[name]["answer"]["status"]
    requests: list[MockRequest] = []

    def handler(request: MockRequest) -> RawResponse:
        requests.append(request)
        return RawResponse(status, DATE, body)

    params = minimal(name)
    async with client_of(handler) as client:
        by_call = await client.call(name, **params)
        by_method = await getattr(getattr(client, group_of(name)), name)(**params)
    assert by_method == by_call
    assert sent(requests[0]) == sent(requests[1])


async def test_a_method_declared_by_hand_is_the_hand_written_method() -> None:
    requests: list[MockRequest] = []

    def handler(request: MockRequest) -> RawResponse:
        requests.append(request)
        return RawResponse(200, DATE, b'{"BTC": {"main_balance": "1.5"}}')

    async with client_of(handler) as client:
        assert await client.main_account.get_main_balance() == {"BTC": Decimal("1.5")}
        assert await client.main_balance() == {"BTC": Decimal("1.5")}
    assert sent(requests[0]) == sent(requests[1])


async def test_a_float_is_refused_before_sending() -> None:
    def handler(request: MockRequest) -> RawResponse:
        raise AssertionError("sent")

    async with client_of(handler) as client:
        with pytest.raises(txc_async.InvalidParameterError, match="amount"):
            await client.spot.create_limit_order(
                market="BTC_USDT", side="buy", amount=0.1,  # type: ignore[arg-type]
                price=Decimal("40000"),
            )


def paging_server(pages: list[Any]) -> tuple[Callable[[MockRequest], RawResponse],
                                             list[dict[str, Any]]]:
    asked: list[dict[str, Any]] = []

    def handler(request: MockRequest) -> RawResponse:
        body = json.loads(request.body) if request.body else dict(request.url.query)
        asked.append(body)
        return RawResponse(200, DATE, json.dumps(pages[len(asked) - 1]).encode())

    return handler, asked


async def test_a_walk_over_a_page_that_is_a_list_reads_every_page_once() -> None:
    order = {"orderId": 1, "market": "BTC_USDT", "side": "buy", "amount": "1", "price": "2"}
    pages = [[{**order, "orderId": i} for i in range(100)],
             [{**order, "orderId": 100 + i} for i in range(30)]]
    handler, asked = paging_server(pages)
    async with client_of(handler) as client:
        found = [o async for o in client.spot.iter_get_active_orders(market="BTC_USDT")]
    assert [o.order_id for o in found] == list(range(130))
    assert [(a["limit"], a["offset"], a["market"]) for a in asked] == [
        (100, 0, "BTC_USDT"), (100, 100, "BTC_USDT")]


async def test_a_walk_over_records_of_a_page_and_over_a_page_keyed_by_market() -> None:
    deal = {"id": 1, "time": 1.5, "fee": "0.1", "price": "2", "amount": "3", "role": 1,
            "deal": "6", "clientOrderId": "", "orderId": 9}
    pages = [{"limit": 2, "offset": 0, "records": [deal, {**deal, "id": 2}]},
             {"limit": 2, "offset": 2, "records": [{**deal, "id": 3}]}]
    handler, asked = paging_server(pages)
    async with client_of(handler) as client:
        found = [d async for d in client.spot.iter_get_order_deals(order_id=9)]
    assert [d.id for d in found] == [1, 2, 3]
    # The server echoed a smaller limit than asked: the walk goes on from what it gave.
    assert [a["offset"] for a in asked] == [0, 2]

    entry = {"id": 1, "amount": "1", "price": "2", "side": "buy", "type": "limit"}
    handler, asked = paging_server([{"BTC_USDT": [entry], "ETH_USDT": [{**entry, "id": 2}]}])
    async with client_of(handler) as client:
        history = [r async for r in client.spot.iter_get_order_history()]
    assert [(market, record.id) for market, record in history] == [
        ("BTC_USDT", 1), ("ETH_USDT", 2)]


async def test_a_walk_names_its_operation_in_its_errors_and_checks_filters_first() -> None:
    def handler(request: MockRequest) -> RawResponse:
        return RawResponse(422, DATE, b'{"code": 30, "message": "Validation failed", '
                                      b'"errors": {"market": ["bad"]}}')

    async with client_of(handler) as client:
        with pytest.raises(TxcError) as caught:
            async for _ in client.spot.iter_get_active_orders(market="BTC_USDT"):
                pass
        assert caught.value.operation == "iter_get_active_orders"
        with pytest.raises(txc_async.InvalidParameterError, match="market"):
            async for _ in client.spot.iter_get_active_orders(market=""):
                pass


def test_the_client_loads_no_group_until_one_is_used() -> None:
    import subprocess
    import sys

    program = (
        "import sys, txc_async\n"
        "txc_async.Client\n"
        "heavy = ('txc_async._methods.spot', 'txc_async._operations.generated.spot',\n"
        "         'txc_async._models_generated.spot', 'txc_async._backfill',\n"
        "         'txc_async._limiters.redis', 'txc_async._limiters.sqlite', 'sqlite3')\n"
        "print([m for m in heavy if m in sys.modules])\n"
        "client = txc_async.Client()\n"
        "client.spot.create_limit_order\n"
        "print([m for m in heavy if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out == [
        "[]", "['txc_async._methods.spot', 'txc_async._operations.generated.spot']"]


async def test_public_reads_are_sent_to_the_url_of_their_own_parameters() -> None:
    urls: list[str] = []

    def handler(request: MockRequest) -> RawResponse:
        urls.append(str(request.url))
        return RawResponse(200, DATE, b'{"ticker_id": "X", "timestamp": 1, "asks": [], "bids": []}')

    async with client_of(handler) as client:
        for market, limit in (("BTC_USDT", 5), ("ETH_USDT", 5), ("BTC_USDT", 7), ("BTC_USDT", 5),
                              ("A/B", 5)):
            await client.market.orderbook(market=market, limit=limit)
    assert [url.split("/api/v4/public/orderbook/")[1] for url in urls] == [
        "BTC_USDT?limit=5", "ETH_USDT?limit=5", "BTC_USDT?limit=7", "BTC_USDT?limit=5",
        "A%2FB?limit=5"]
