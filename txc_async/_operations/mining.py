"""The mining pool's operations (``/api/v4/mining/*``): creating an account, its rewards and its
hashrate, with the decoders of their answers."""

from __future__ import annotations

from typing import TypeVar, get_args

from .._answers.results import AnswerDecoder
from .._limiters.base import RateLimit
from .._models import (
    Hashrate,
    IntervalLiteral,
    MiningAccount,
    RewardsPage,
    _HashrateEnvelope,
    _MiningAccountEnvelope,
)
from .._paging import MAX_OFFSET, PAGE_LIMIT
from .._validate import (
    ACCOUNT_NAME,
    ACCOUNT_NAME_RULE,
    account_filter,
    check_timestamp,
    choice,
    int_range,
    pattern,
    text,
)
from .declaration import Auth, NotAfter, Operation, Param

__all__ = ["CREATE_MINING_ACCOUNT", "MINING_HASHRATE", "MINING_REWARDS"]

T = TypeVar("T")

_INTERVALS: tuple[str, ...] = get_args(IntervalLiteral)
_START = Param("start", kind="time", wire=("from",), check=check_timestamp, metavar="DATE",
               help="from this moment: Unix seconds or an aware datetime (default: none)")
_END = Param("end", kind="time", wire=("to",), check=check_timestamp, metavar="DATE",
             help="to this moment: Unix seconds or an aware datetime (default: none)")


def _same(value: T) -> T:
    return value


def _mining_account(answer: _MiningAccountEnvelope) -> MiningAccount:
    return answer.data


def _hashrate(answer: _HashrateEnvelope) -> Hashrate:
    # A disabled account's empty data: an empty series, its account named by the caller.
    return answer.data if answer.data is not None else Hashrate("", [])


CREATE_MINING_ACCOUNT: Operation[MiningAccount] = Operation(
    name="create_mining_account", method="POST", path="/api/v4/mining/accounts/create",
    auth=Auth.SIGNED, retry_safe=False,
    decode=AnswerDecoder(_MiningAccountEnvelope, _mining_account, write=True),
    scope="create_mining_account", rate_limit=RateLimit(1000, 10.0), tag="mining",
    summary="create a mining-pool account",
    params=(
        Param("name", kind="text", required=True, metavar="NAME",
              check=pattern(ACCOUNT_NAME, ACCOUNT_NAME_RULE),
              help="the account's name: letters, digits and underscores"),
        Param("referral_code", kind="text", wire=("referralCode",), check=text(max_length=50),
              metavar="CODE", help="a referral code (default: none)"),
    ),
)
MINING_REWARDS: Operation[RewardsPage] = Operation(
    name="mining_rewards", method="POST", path="/api/v4/mining/rewards",
    auth=Auth.SIGNED, retry_safe=True, decode=AnswerDecoder(RewardsPage, _same, write=False),
    scope="mining_rewards", rate_limit=RateLimit(1000, 10.0), tag="mining",
    summary="one page of mining rewards, newest first",
    params=(
        Param("account", kind="text", check=account_filter, metavar="A",
              help="only this account (default: every account)"),
        _START,
        _END,
        Param("limit", kind="integer", check=int_range(1, PAGE_LIMIT),
              help=f"records per page, 1 to {PAGE_LIMIT} (default: the service's, 30)"),
        Param("offset", kind="integer", check=int_range(0, MAX_OFFSET),
              help=f"records to skip, 0 to {MAX_OFFSET} (default: 0)"),
    ),
    rules=(NotAfter("start", "end"),),
)
MINING_HASHRATE: Operation[Hashrate] = Operation(
    name="mining_hashrate", method="POST", path="/api/v4/mining/hashrate",
    auth=Auth.SIGNED, retry_safe=True,
    decode=AnswerDecoder(_HashrateEnvelope, _hashrate, write=False),
    scope="mining_hashrate", rate_limit=RateLimit(1000, 10.0), tag="mining",
    summary="the hashrate series of a mining account",
    params=(
        # Required: the service refuses a request without it.
        Param("account", kind="text", required=True, check=account_filter, metavar="A",
              help="the mining account whose hashrate to read"),
        _START,
        _END,
        Param("interval", kind="choice", check=choice(_INTERVALS), choices=_INTERVALS,
              help="step of the series (default: the service's, 1h)"),
    ),
    rules=(NotAfter("start", "end"),),
)
