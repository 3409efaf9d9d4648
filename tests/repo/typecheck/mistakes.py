"""Calls a type checker must refuse, each marked with a word its error must contain, beside
the same calls written correctly, which must pass. tests/repo/test_types.py runs
``mypy --strict`` on this file; it is never imported."""

from __future__ import annotations

from decimal import Decimal

import txc_async
from txc_async import PositionSide, Side


async def mistakes(client: txc_async.Client) -> None:
    await client.collateral_stop_limit_order(
        market="BTC_USDT",
        side="buyy",  # error: buyy
        amount=Decimal("0.01"), price="40000", activation_price="39950",
    )
    await client.collateral_stop_limit_order(
        market="BTC_USDT", side="sell",
        amount=0.01,  # error: float
        price="40000", activation_price="39950",
    )
    await client.collateral_stop_limit_order(
        market="BTC_USDT", side=Side.BUY, amount="1", price="2", activation_price="3",
        position_side="long",  # error: long
    )
    await client.mining_hashrate(interval="2h")  # error: 2h
    txc_async.Client.from_env(timout=5)  # error: timout
    order = await client.collateral_stop_limit_order(
        market="BTC_USDT", side="buy", amount="1", price="2", activation_price="3",
    )
    print(order.activation_prise)  # error: activation_prise
    page = await client.investments_history()
    print(page.records[0].interest_payed)  # error: interest_payed


async def correct(client: txc_async.Client) -> None:
    for side in (Side.BUY, Side.SELL):
        await client.collateral_stop_limit_order(
            market="BTC_USDT", side=side, amount=Decimal("0.01"), price="40000",
            activation_price="39950", position_side=PositionSide.LONG,
        )
    order = await client.collateral_stop_limit_order(
        market="BTC_USDT", side="sell", amount=1, price="40000", activation_price="39950",
        stop_loss="41000", position_side="SHORT",
    )
    print(order.activation_price, order.position_side)
    for interval in ("5m", "1h", "24h"):
        await client.mining_hashrate(interval=interval)
    async with txc_async.Client.from_env(
        timeout=5, max_connections=10, limiter=txc_async.InProcessLimiter()
    ) as other:
        print(await other.ping(), other.base_url, other.closed)
    page = await client.investments_history()
    print(page.records[0].interest_paid)
