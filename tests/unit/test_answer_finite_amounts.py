"""The finite check of decoded amounts, in every position it covers: whatever shortcut the
decoders take, a non-finite amount is refused wherever it stands, and text that merely looks
like one (a ticker "NAN", an id "Infinity-1") is read as it is."""

from __future__ import annotations

import json
import re
from decimal import Decimal, InvalidOperation
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from txc_async import AnswerFormatError
from txc_async._answers.results import _spells_no_non_finite
from txc_async._operations import (
    BALANCE,
    COLLATERAL_STOP_LIMIT,
    INVESTMENTS,
    MINING_REWARDS,
)

SPELLINGS = ["NaN", "-Infinity", "sNaN1", "i_nf", " inf "]
PLAN_AMOUNTS = ["percent", "interestRatio", "minInvestment", "maxInvestment",
                "maxPossibleInvestment"]
INVESTMENT_AMOUNTS = ["amount", "interestPaid"]
REWARD_AMOUNTS = ["totalReward", "reward", "fee", "fppsRate"]
ORDER_AMOUNTS = ["amount", "price", "activation_price", "deal_money", "deal_stock", "left",
                 "deal_fee"]


def encode(value: Any) -> bytes:
    return json.dumps(value).encode()


def plan(**changes: Any) -> dict[str, Any]:
    return {"id": "Infinity-plan", "ticker": "NAN", "status": 1, "percent": "8", "duration": 60,
            "interestTicker": "INF", "interestRatio": "1", "minInvestment": "1",
            "maxInvestment": "100", "maxPossibleInvestment": "50", **changes}


def investment(**changes: Any) -> dict[str, Any]:
    return {"id": "Nano-1", "status": 1, "created": 1, "updated": 2, "paymentTime": 3,
            "amount": "10", "interestPaid": "0.5", "plan": plan(), **changes}


def reward(**changes: Any) -> dict[str, Any]:
    return {"miningAccountName": "info_nan", "totalReward": "1.5", "reward": "1.4",
            "fee": "0.1", "fppsRate": "0.01", "hashRate": "Infinity TH/s", "date": 1, **changes}


def order(**changes: Any) -> dict[str, Any]:
    return {"order_id": 1, "market": "BTC_USDT", "side": "buy", "type": "stop limit",
            "timestamp": 1.5, "amount": "1", "price": "2", "activation_price": "3",
            "status": "NEW", "client_order_id": "nan-inf", "deal_money": "0", "deal_stock": "0",
            "left": "1", "deal_fee": "0", "oto": {"otoId": 1, "stopLoss": "1", "takeProfit": "2"},
            **changes}


def investments_page(*records: dict[str, Any]) -> bytes:
    return encode({"offset": 0, "limit": 100, "records": list(records)})


def test_text_that_looks_non_finite_is_read_as_text() -> None:
    page = INVESTMENTS.decode(investments_page(investment(), investment()))
    assert page.records[0].plan.ticker == "NAN" and page.records[0].id == "Nano-1"
    assert page.records[1].plan.id == "Infinity-plan"
    rewards = MINING_REWARDS.decode(encode({"offset": 0, "limit": 1, "data": [reward()]}))
    assert rewards.data[0].hash_rate == "Infinity TH/s"
    assert rewards.data[0].mining_account_name == "info_nan"
    assert COLLATERAL_STOP_LIMIT.decode(encode(order())).client_order_id == "nan-inf"
    assert BALANCE.decode(b'{"NAN": {"main_balance": "1"}, "INF": {"main_balance": ""}}') == {
        "NAN": Decimal(1)}


@pytest.mark.parametrize("spelling", SPELLINGS)
@pytest.mark.parametrize("field", PLAN_AMOUNTS)
def test_every_plan_amount_is_checked(field: str, spelling: str) -> None:
    body = investments_page(investment(), investment(plan=plan(**{field: spelling})))
    with pytest.raises(AnswerFormatError, match=rf"records\[1\]\.plan\.{field}"):
        INVESTMENTS.decode(body)


@pytest.mark.parametrize("spelling", SPELLINGS)
@pytest.mark.parametrize("field", INVESTMENT_AMOUNTS)
def test_every_investment_amount_is_checked(field: str, spelling: str) -> None:
    # The other records have empty amounts (None): the check must look past them.
    body = investments_page(investment(amount=""), investment(**{field: spelling}))
    with pytest.raises(AnswerFormatError, match=rf"records\[1\]\.{field}"):
        INVESTMENTS.decode(body)


@pytest.mark.parametrize("spelling", SPELLINGS)
@pytest.mark.parametrize("field", REWARD_AMOUNTS)
def test_every_reward_amount_is_checked(field: str, spelling: str) -> None:
    records = [reward(fee=None), reward(**{field: spelling})]
    body = encode({"offset": 0, "limit": 2, "data": records})
    with pytest.raises(AnswerFormatError, match=rf"data\[1\]\.{field}"):
        MINING_REWARDS.decode(body)


@pytest.mark.parametrize("spelling", SPELLINGS)
@pytest.mark.parametrize("field", [*ORDER_AMOUNTS, "oto.stopLoss", "oto.takeProfit"])
def test_every_order_amount_is_checked(field: str, spelling: str) -> None:
    if field.startswith("oto."):
        answer = order(oto={"otoId": 1, "stopLoss": "1", "takeProfit": "2",
                            field[4:]: spelling})
    else:
        answer = order(**{field: spelling})
    with pytest.raises(AnswerFormatError, match="non-finite"):
        COLLATERAL_STOP_LIMIT.decode(encode(answer))


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_every_balance_is_checked(spelling: str) -> None:
    body = encode({"BTC": {"main_balance": "1"}, "ETH": {"main_balance": ""}, "SOL": {},
                   "XRP": {"main_balance": spelling}})
    with pytest.raises(AnswerFormatError, match=r"XRP"):
        BALANCE.decode(body)


@given(st.from_regex(re.compile(r"\s*[+-]?(s?nan[0-9]*|inf(inity)?)\s*", re.I), fullmatch=True),
       st.data())
def test_the_scan_finds_every_spelling_of_a_non_finite_decimal(spelling: str,
                                                                data: st.DataObject) -> None:
    # Underscores may split it anywhere Decimal allows (between two characters of its letters
    # or digits): the answer may hold it so, and the scan must still find it.
    core = spelling.strip()
    cut = data.draw(st.lists(st.integers(1, max(1, len(core) - 1)), max_size=3, unique=True))
    for at in sorted(cut, reverse=True):
        if 0 < at < len(core) and core[at - 1].isalnum() and core[at].isalnum():
            core = core[:at] + "_" + core[at:]
    try:
        value = Decimal(core)
    except InvalidOperation:
        return
    assert not value.is_finite()
    assert not _spells_no_non_finite(json.dumps({"amount": core}).encode())


def test_the_scan_lets_an_answer_of_finite_amounts_through() -> None:
    assert _spells_no_non_finite(b'{"amount": "1.5", "price": "30000", "id": 7}')
    assert not _spells_no_non_finite(b'{"note": "\\u004eaN"}')
