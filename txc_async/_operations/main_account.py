"""The main account's operations (``/api/v4/main-account/*``): the balance and the fixed-lending
investments, with the decoders of their answers."""

from __future__ import annotations

import dataclasses
import re
from decimal import Decimal
from typing import TypeVar

import msgspec

from .._answers.results import AnswerDecoder, Unreadable
from .._errors import AnswerFormatError
from .._limiters.base import RateLimit
from .._models import InvestmentsPage, InvestmentStatus, _Balance, _FlatBalance
from .._paging import MAX_OFFSET, PAGE_LIMIT
from .._validate import choice, int_range, pattern, text
from .declaration import Auth, Operation, Param

__all__ = ["BALANCE", "BALANCE_OF_TICKER", "INVESTMENTS"]

T = TypeVar("T")

_TICKER = re.compile(r"[A-Za-z0-9]{1,20}")
_TICKER_RULE = "must be 1 to 20 letters or digits"


def _same(value: T) -> T:
    return value


def _balance(answer: dict[str, _Balance]) -> dict[str, Decimal]:
    # An asset whose balance is empty ("" or null) is left out, like an asset with none.
    balance = {
        ticker: entry.main_balance
        for ticker, entry in answer.items()
        if type(entry.main_balance) is Decimal
    }
    if len(balance) < len(answer):
        for ticker, entry in answer.items():
            if entry.main_balance is msgspec.UNSET:
                # Another shape (a renamed field, a wrapper): reading it as no balance would be
                # a wrong value.
                raise Unreadable(f"no main_balance at $.{ticker}")
    return balance


def _balance_twice(body: bytes, answer: dict[str, _Balance]) -> bool:
    # Every asset read has one "main_balance": any other count in the text may be a key named
    # twice, and so may any escape (a key can be spelled "main\u005fbalance").
    return body.count(b'"main_balance"') != len(answer) or b"\\" in body


def _flat_balance(answer: _FlatBalance) -> Decimal | None:
    """The flat answer's balance; None when the answer has no ``main_balance`` at all (another
    shape)."""
    value = answer.main_balance
    if value is msgspec.UNSET:
        return None
    # "" or null: no balance, as for an asset left out of the full answer.
    return value if value is not None else Decimal(0)


def _flat_balance_twice(body: bytes, answer: _FlatBalance) -> bool:
    return body.count(b'"main_balance"') != 1 or b"\\" in body


_decode_balance = AnswerDecoder(
    dict[str, _Balance], _balance, write=False, checked_result=dict[str, Decimal],
    twice=_balance_twice,
)
_decode_flat_balance = AnswerDecoder(
    _FlatBalance, _flat_balance, write=False, twice=_flat_balance_twice
)


def _ticker_balance(body: bytes) -> Decimal | dict[str, Decimal]:
    """The answer to a balance asked for one ticker: the service's flat ``{"main_balance":
    "0.5"}`` (a Decimal; whitebit-exchange/docs, openapi/private/main_api_v4.yaml,
    getMainBalance), or the keyed answer of a server that does not filter (the shape of the
    API's first specification: every asset, zero balances perhaps left out)."""
    try:
        value = _decode_flat_balance(body)
    except AnswerFormatError as exc:
        flat_error = exc  # a flat answer that cannot be read, or another shape
    else:
        if value is None:
            return _decode_balance(body)
        if body.count(b'"main_balance"') > 1:
            # One balance and more beside it: which one was asked for cannot be told.
            raise AnswerFormatError("a balance beside balances of assets", body=body)
        return value
    try:
        return _decode_balance(body)
    except AnswerFormatError:
        pass
    # Neither reading fits: the flat reading's reason is the one that names the value.
    raise flat_error


BALANCE: Operation[dict[str, Decimal]] = Operation(
    name="main_balance", method="POST", path="/api/v4/main-account/balance",
    auth=Auth.SIGNED, retry_safe=True, decode=_decode_balance,
    scope="main_balance", rate_limit=RateLimit(1000, 10.0), tag="main_account",
    summary="the main-account balance of every currency",
)
#: The balance, perhaps of one ticker (whitebit-exchange/docs, openapi/private/main_api_v4.yaml,
#: ``/api/v4/main-account/balance``: "An unknown or non-existent ticker is not an error"). A
#: variant of ``BALANCE``, not in the catalogue: with a ticker the service answers a flat
#: ``{"main_balance": ...}``, which this decoder reads as well as the keyed answer.
BALANCE_OF_TICKER: Operation[Decimal | dict[str, Decimal]] = dataclasses.replace(
    BALANCE.with_decoder(_ticker_balance),
    summary="the main-account balance of one currency (or of every one)",
    params=(
        Param("ticker", kind="text", check=pattern(_TICKER, _TICKER_RULE), metavar="T",
              help="only this currency (default: every currency)"),
    ),
)
INVESTMENTS: Operation[InvestmentsPage] = Operation(
    name="investments_history", method="POST", path="/api/v4/main-account/smart/investments",
    auth=Auth.SIGNED, retry_safe=True, decode=AnswerDecoder(InvestmentsPage, _same, write=False),
    scope="investments", rate_limit=RateLimit(1000, 10.0), tag="lending",
    summary="one page of the fixed-lending investments (B2B partner keys)",
    params=(
        Param("id", kind="text", check=text(max_length=128), metavar="ID",
              help="only this investment (default: any)"),
        Param("ticker", kind="text", check=pattern(_TICKER, _TICKER_RULE), metavar="T",
              help="only this currency (default: any)"),
        Param("status", kind="choice", check=choice((1, 2), InvestmentStatus),
              choices=(1, 2), enum=InvestmentStatus,
              help="only active or closed ones (default: both)"),
        Param("limit", kind="integer", check=int_range(1, PAGE_LIMIT),
              help=f"records per page, 1 to {PAGE_LIMIT} (default: 100)"),
        Param("offset", kind="integer", check=int_range(0, MAX_OFFSET),
              help=f"records to skip, 0 to {MAX_OFFSET} (default: 0)"),
    ),
)
