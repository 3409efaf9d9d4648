"""Decode throughput: records per second for 100-record investments and rewards answers, as the
library's msgspec structs (Decimal money), as json.loads dicts (money left as strings), and as
equivalent pydantic v2 models; and answers per second for a collateral order, in the live service's
camelCase and in the snake_case of the API's first specification, against the leanest typed msgspec
decoder of the live answer.

    python benchmarks/decode.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import msgspec

from txc_async._operations import COLLATERAL_STOP_LIMIT, INVESTMENTS, MINING_REWARDS
from txc_async.sandbox._data import InvestmentBook, RewardBook

try:
    import pydantic
except ImportError:  # pragma: no cover - the bench extra installs it
    pydantic = None


def answers() -> dict[str, bytes]:
    book = InvestmentBook(seed=0)
    rewards = RewardBook(seed=0, accounts=40, start=1704067200, days=366, per_day=1)
    return {
        "investments": msgspec.json.encode(
            {"offset": 0, "limit": 100, "records": book.records[:100]}
        ),
        "rewards": msgspec.json.encode(
            {"offset": 0, "limit": 100, "data": rewards.page(None, None, None, 0, 100)}
        ),
    }


def pydantic_decoders() -> dict[str, Callable[[bytes], Any]]:
    if pydantic is None:
        return {}
    from pydantic import BaseModel, ConfigDict, Field

    class Model(BaseModel):
        model_config = ConfigDict(populate_by_name=True)

    class Plan(Model):
        id: str
        ticker: str
        status: int
        percent: Decimal
        duration: int
        interest_ticker: str = Field(alias="interestTicker")
        interest_ratio: Decimal = Field(alias="interestRatio")
        min_investment: Decimal = Field(alias="minInvestment")
        max_investment: Decimal = Field(alias="maxInvestment")
        max_possible_investment: Decimal = Field(alias="maxPossibleInvestment")

    class Investment(Model):
        id: str
        plan: Plan
        status: int
        created: int
        updated: int
        payment_time: int = Field(alias="paymentTime")
        amount: Decimal
        interest_paid: Decimal = Field(alias="interestPaid")

    class InvestmentsPage(Model):
        offset: int
        limit: int
        records: list[Investment]

    class Reward(Model):
        mining_account_name: str = Field(alias="miningAccountName")
        total_reward: Decimal = Field(alias="totalReward")
        reward: Decimal
        fee: Decimal
        fpps_rate: Decimal = Field(alias="fppsRate")
        hash_rate: str = Field(alias="hashRate")
        date: int

    class RewardsPage(Model):
        offset: int
        limit: int
        data: list[Reward]

    return {
        "investments": InvestmentsPage.model_validate_json,
        "rewards": RewardsPage.model_validate_json,
    }


#: A filled order as the live service answers it (whitebit-exchange/docs,
#: openapi/private/http-trade-v4.yaml), and the same in the first specification's spelling.
LIVE_ORDER: dict[str, Any] = {
    "orderId": 4180284841, "clientOrderId": "order1987111", "market": "BTC_USDT",
    "side": "buy", "type": "stop limit", "timestamp": 1595792396.165973, "dealMoney": "40",
    "dealStock": "0.001", "amount": "0.001", "left": "0", "dealFee": "0.04", "price": "40000",
    "activation_price": "40000", "status": "FILLED", "stp": "no",
    "oto": {"otoId": 29457221, "stopLoss": "30000", "takeProfit": "50000"},
    "positionSide": "LONG", "reduceOnly": False,
}
SPEC_ORDER = {
    {"orderId": "order_id", "clientOrderId": "client_order_id", "dealMoney": "deal_money",
     "dealStock": "deal_stock", "dealFee": "deal_fee"}.get(name, name): value
    for name, value in LIVE_ORDER.items()
}


class _LeanOto(msgspec.Struct, rename="camel"):
    oto_id: int
    stop_loss: Decimal | None = None
    take_profit: Decimal | None = None


class _LeanOrder(msgspec.Struct, rename="camel"):
    """The leanest typed reading of the live answer: one msgspec decoder, no checks."""

    order_id: int
    client_order_id: str
    market: str
    side: str
    type: str
    timestamp: float
    deal_money: Decimal
    deal_stock: Decimal
    amount: Decimal
    left: Decimal
    deal_fee: Decimal
    price: Decimal
    activation_price: Decimal = msgspec.field(name="activation_price")
    status: str = ""
    stp: str = ""
    oto: _LeanOto | None = None
    position_side: str = ""
    reduce_only: bool = False


def answers_per_second(decode: Callable[[bytes], Any], body: bytes, seconds: float) -> float:
    return records_per_second(decode, body, seconds) / 100


def orders(seconds: float) -> dict[str, float]:
    """Answers per second for one order answer, best of 3 runs each."""
    live, spec = msgspec.json.encode(LIVE_ORDER), msgspec.json.encode(SPEC_ORDER)
    lean = msgspec.json.Decoder(_LeanOrder).decode
    contenders = {
        "lean msgspec (live answer)": (lean, live),
        "txc_async (live answer)": (COLLATERAL_STOP_LIMIT.decode, live),
        "txc_async (snake_case answer)": (COLLATERAL_STOP_LIMIT.decode, spec),
    }
    figures = {label: max(answers_per_second(f, body, seconds) for _ in range(3))
               for label, (f, body) in contenders.items()}
    base = figures["lean msgspec (live answer)"]
    print(f"  collateral order ({len(live):,} bytes per answer)")
    for label, value in figures.items():
        print(f"    {label:32} {value:>12,.0f} answers/s  {value / base:5.2f}x lean msgspec")
    return figures


def records_per_second(decode: Callable[[bytes], Any], body: bytes, seconds: float) -> float:
    decode(body)
    rounds = 0
    began = time.perf_counter()
    while True:
        for _ in range(50):
            decode(body)
        rounds += 50
        elapsed = time.perf_counter() - began
        if elapsed >= seconds:
            return rounds * 100 / elapsed


def main(quick: bool) -> dict[str, dict[str, float]]:
    seconds = 0.3 if quick else 1.0
    bodies = answers()
    ours = {"investments": INVESTMENTS.decode, "rewards": MINING_REWARDS.decode}
    peers = pydantic_decoders()
    results: dict[str, dict[str, float]] = {}
    print("decode throughput, records per second (100-record answers; best of 3 runs)")
    for name, body in bodies.items():
        contenders: dict[str, Callable[[bytes], Any]] = {
            "txc_async (msgspec, Decimal)": ours[name],
            "json.loads (dicts, str money)": json.loads,
        }
        if name in peers:
            contenders["pydantic v2 (Decimal)"] = peers[name]
        figures = {label: max(records_per_second(f, body, seconds) for _ in range(3))
                   for label, f in contenders.items()}
        results[name] = figures
        base = figures["json.loads (dicts, str money)"]
        print(f"  {name} ({len(body):,} bytes per answer)")
        for label, value in figures.items():
            print(f"    {label:32} {value:>12,.0f} records/s  {value / base:5.2f}x json.loads")
    results["orders"] = orders(seconds)
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    main(parser.parse_args().quick)
