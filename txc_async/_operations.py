"""Each wire operation declared once: method, path, budget scope, authentication, retry safety,
and how its answer decodes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from enum import Enum
from typing import Any, Generic, TypeVar

import msgspec

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


def _decoder(kind: type[R]) -> Callable[[bytes], R]:
    return msgspec.json.Decoder(kind).decode


_decode_ping = _decoder(list[str])
_decode_balance = _decoder(dict[str, _Balance])
_decode_mining_account = _decoder(_MiningAccountEnvelope)
_decode_hashrate = _decoder(_HashrateEnvelope)
_decode_oauth = _decoder(_OAuthEnvelope)


def _ping(body: bytes) -> bool:
    return _decode_ping(body) == ["pong"]


def _balance(body: bytes) -> dict[str, Decimal]:
    return {ticker: entry.main_balance for ticker, entry in _decode_balance(body).items()}


def _mining_account(body: bytes) -> MiningAccount:
    return _decode_mining_account(body).data


def _hashrate(body: bytes) -> Hashrate:
    return _decode_hashrate(body).data


def _oauth(body: bytes) -> OAuthToken:
    return _decode_oauth(body).data


PING: Operation[bool] = Operation(
    "ping", "GET", "/api/v4/public/ping", "public", Auth.NONE, True, _ping
)
BALANCE: Operation[dict[str, Decimal]] = Operation(
    "main_balance", "POST", "/api/v4/main-account/balance", "main_balance", Auth.SIGNED, True,
    _balance,
)
INVESTMENTS: Operation[InvestmentsPage] = Operation(
    "investments_history", "POST", "/api/v4/main-account/smart/investments", "investments",
    Auth.SIGNED, True, _decoder(InvestmentsPage),
)
COLLATERAL_STOP_LIMIT: Operation[CollateralOrder] = Operation(
    "collateral_stop_limit_order", "POST", "/api/v4/order/collateral/stop-limit",
    "collateral_stop_limit_order", Auth.SIGNED, False, _decoder(CollateralOrder),
)
CREATE_MINING_ACCOUNT: Operation[MiningAccount] = Operation(
    "create_mining_account", "POST", "/api/v4/mining/accounts/create", "create_mining_account",
    Auth.SIGNED, False, _mining_account,
)
MINING_REWARDS: Operation[RewardsPage] = Operation(
    "mining_rewards", "POST", "/api/v4/mining/rewards", "mining_rewards", Auth.SIGNED, True,
    _decoder(RewardsPage),
)
MINING_HASHRATE: Operation[Hashrate] = Operation(
    "mining_hashrate", "POST", "/api/v4/mining/hashrate", "mining_hashrate", Auth.SIGNED, True,
    _hashrate,
)
REFRESH_OAUTH_TOKEN: Operation[OAuthToken] = Operation(
    "refresh_oauth_token", "POST", "/oauth2/refresh_token", "refresh_oauth_token", Auth.FORM,
    False, _oauth,
)

OPERATIONS: tuple[Operation[Any], ...] = (
    PING, BALANCE, INVESTMENTS, COLLATERAL_STOP_LIMIT, CREATE_MINING_ACCOUNT, MINING_REWARDS,
    MINING_HASHRATE, REFRESH_OAUTH_TOKEN,
)
