"""Decode throughput: records per second for 100-record investments and rewards answers, as the
library's msgspec structs (Decimal money), as json.loads dicts (money left as strings), and as
equivalent pydantic v2 models.

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

from txc_async._operations import INVESTMENTS, MINING_REWARDS
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
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    main(parser.parse_args().quick)
