"""Each wire operation declared once: method, path, budget scope, authentication, retry safety,
and how its answer decodes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from enum import Enum
from typing import Any, Generic, TypeVar

import msgspec

from ._decoding import AnswerDecoder, Unreadable
from ._models import (
    CollateralOrder,
    Hashrate,
    InvestmentsPage,
    MiningAccount,
    OAuthToken,
    RewardsPage,
    _Balance,
    _HashrateEnvelope,
    _MiningAccountEnvelope,
    _OAuthEnvelope,
)

__all__ = [
    "BALANCE",
    "COLLATERAL_STOP_LIMIT",
    "CREATE_MINING_ACCOUNT",
    "INVESTMENTS",
    "MINING_HASHRATE",
    "MINING_REWARDS",
    "OPERATIONS",
    "PING",
    "REFRESH_OAUTH_TOKEN",
    "Auth",
    "Operation",
]

R = TypeVar("R")


class Auth(Enum):
    """How a request authenticates."""

    NONE = "none"  # public GET
    SIGNED = "signed"  # JSON body signed with the API key and secret
    FORM = "form"  # form body carrying its own credentials (OAuth)


@dataclass(frozen=True, slots=True)
class Operation(Generic[R]):
    """One operation of the API."""

    name: str
    method: str
    path: str
    scope: str
    auth: Auth
    #: True when re-sending after the request may have reached the server cannot do harm.
    retry_safe: bool
    decode: Callable[[bytes], R]
    #: Parameters whose values are secrets (masked wherever an answer quotes them).
    secret_params: tuple[str, ...] = ()


def _same(value: R) -> R:
    return value


def _ping(answer: list[str]) -> bool:
    return answer == ["pong"]


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


def _mining_account(answer: _MiningAccountEnvelope) -> MiningAccount:
    return answer.data


def _hashrate(answer: _HashrateEnvelope) -> Hashrate:
    return answer.data


def _oauth(answer: _OAuthEnvelope) -> OAuthToken:
    return answer.data


PING: Operation[bool] = Operation(
    "ping", "GET", "/api/v4/public/ping", "public", Auth.NONE, True,
    AnswerDecoder(list[str], _ping, write=False),
)
BALANCE: Operation[dict[str, Decimal]] = Operation(
    "main_balance", "POST", "/api/v4/main-account/balance", "main_balance", Auth.SIGNED, True,
    AnswerDecoder(dict[str, _Balance], _balance, write=False, checked_result=dict[str, Decimal],
                  twice=_balance_twice),
)
INVESTMENTS: Operation[InvestmentsPage] = Operation(
    "investments_history", "POST", "/api/v4/main-account/smart/investments", "investments",
    Auth.SIGNED, True, AnswerDecoder(InvestmentsPage, _same, write=False),
)
COLLATERAL_STOP_LIMIT: Operation[CollateralOrder] = Operation(
    "collateral_stop_limit_order", "POST", "/api/v4/order/collateral/stop-limit",
    "collateral_stop_limit_order", Auth.SIGNED, False,
    AnswerDecoder(CollateralOrder, _same, write=True),
)
CREATE_MINING_ACCOUNT: Operation[MiningAccount] = Operation(
    "create_mining_account", "POST", "/api/v4/mining/accounts/create", "create_mining_account",
    Auth.SIGNED, False,
    AnswerDecoder(_MiningAccountEnvelope, _mining_account, write=True),
)
MINING_REWARDS: Operation[RewardsPage] = Operation(
    "mining_rewards", "POST", "/api/v4/mining/rewards", "mining_rewards", Auth.SIGNED, True,
    AnswerDecoder(RewardsPage, _same, write=False),
)
MINING_HASHRATE: Operation[Hashrate] = Operation(
    "mining_hashrate", "POST", "/api/v4/mining/hashrate", "mining_hashrate", Auth.SIGNED, True,
    AnswerDecoder(_HashrateEnvelope, _hashrate, write=False),
)
REFRESH_OAUTH_TOKEN: Operation[OAuthToken] = Operation(
    "refresh_oauth_token", "POST", "/oauth2/refresh_token", "refresh_oauth_token", Auth.FORM,
    False,
    AnswerDecoder(_OAuthEnvelope, _oauth, write=True, secret_answer=True),
    secret_params=("client_secret", "token"),
)

OPERATIONS: tuple[Operation[Any], ...] = (
    PING, BALANCE, INVESTMENTS, COLLATERAL_STOP_LIMIT, CREATE_MINING_ACCOUNT, MINING_REWARDS,
    MINING_HASHRATE, REFRESH_OAUTH_TOKEN,
)
