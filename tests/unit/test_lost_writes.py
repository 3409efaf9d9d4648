"""A write whose answer was lost is not sent again, and its error says what to look for before
sending it once more."""

from __future__ import annotations

import pickle
from decimal import Decimal

import pytest

import txc_async
from txc_async import MockRequest, MockTransport, RawResponse


def client_of(seen: list[MockRequest]) -> txc_async.Client:
    def handler(request: MockRequest) -> RawResponse:
        seen.append(request)
        raise txc_async.TransportError("connection reset by peer")

    return txc_async.Client(api_key="k", api_secret="s", base_url="https://api.example.test",
                            transport=MockTransport(handler), limiter=txc_async.InProcessLimiter())


async def test_a_lost_order_names_its_client_order_id_and_market() -> None:
    seen: list[MockRequest] = []
    async with client_of(seen) as client:
        with pytest.raises(txc_async.TransportError) as caught:
            await client.spot.create_limit_order(
                market="BTC_USDT", side="buy", amount=Decimal("0.01"), price=Decimal("40000"),
                client_order_id="desk-7")
    error = caught.value
    assert len(seen) == 1 and error.may_have_reached_server
    assert error.check_first is not None
    assert "'desk-7'" in error.check_first and "'BTC_USDT'" in error.check_first
    text = str(error)
    assert text.startswith("create_limit_order: connection reset by peer")
    assert "may have taken effect and was not sent again" in text and "desk-7" in text
    assert pickle.loads(pickle.dumps(error)).check_first == error.check_first


async def test_a_lost_transfer_points_at_the_history_and_a_read_says_nothing_of_it() -> None:
    seen: list[MockRequest] = []
    async with client_of(seen) as client:
        with pytest.raises(txc_async.TransportError) as caught:
            await client.transfers.transfer_between_balances(
                ticker="USDT", amount=Decimal("5"), from_="main", to="spot")
        assert caught.value.check_first is not None
        assert "get_deposit_withdraw_history" in caught.value.check_first
        assert len(seen) == 1
        with pytest.raises(txc_async.TransportError) as read:
            await client.spot.get_active_orders(market="BTC_USDT")
        assert read.value.check_first is None
        assert len(seen) > 2  # a read is tried again
