"""Each wire operation declared once: method, path, budget scope, authentication, retry safety,
and how its answer decodes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from enum import Enum
from typing import Any, Generic, TypeVar

import msgspec

from ._answers.results import AnswerDecoder, Unreadable
from ._errors import AnswerFormatError
from ._models import (
    CollateralOrder,
    Hashrate,
    InvestmentsPage,
    MiningAccount,
    OAuthToken,
    RewardsPage,
    _Balance,
    _FlatBalance,
    _HashrateEnvelope,
    _MiningAccountEnvelope,
    _OAuthEnvelope,
)

__all__ = [
    "BALANCE",
    "BALANCE_OF_TICKER",
    "COLLATERAL_STOP_LIMIT",
    "CREATE_MINING_ACCOUNT",
    "DEFAULT_BASE_URL",
    "EU_BASE_URL",
    "INVESTMENTS",
    "MAX_OFFSET",
    "MINING_HASHRATE",
    "MINING_REWARDS",
    "OPERATIONS",
    "PAGE_LIMIT",
    "PING",
    "REFRESH_OAUTH_TOKEN",
    "Auth",
    "Operation",
    "group_of",
]

R = TypeVar("R")

#: The service (whitebit-exchange/docs: the API's host).
DEFAULT_BASE_URL = "https://whitebit.com"
#: The regional EU deployment (same paths).
EU_BASE_URL = "https://whitebit.eu"

#: Records per request: the most a page of rewards or investments holds.
PAGE_LIMIT = 100
#: The deepest offset the paged operations accept.
MAX_OFFSET = 10_000


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

    @property
    def group(self) -> str | None:
        """The rate-limit group the operation draws on besides its own scope (see
        `group_of`)."""
        return group_of(self.path)


def group_of(path: str) -> str | None:
    """The service's rate-limit group of a path (whitebit-exchange/docs,
    api-reference/rate-limits.mdx; counted per IP address): ``main_account`` for
    ``/api/v4/main-account/*``, ``default`` for every path outside the listed groups, and None
    for ``/api/v4/public/*``, whose group (20,000 per 10 s) no operation here can reach before
    its own limit (ping: 2,000)."""
    if path.startswith("/api/v4/main-account/"):
        return "main_account"
    if path.startswith("/api/v4/public/"):
        return None
    return "default"


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


def _mining_account(answer: _MiningAccountEnvelope) -> MiningAccount:
    return answer.data


def _hashrate(answer: _HashrateEnvelope) -> Hashrate:
    # A disabled account's empty data: an empty series, its account named by the caller.
    return answer.data if answer.data is not None else Hashrate("", [])


def _oauth(answer: _OAuthEnvelope) -> OAuthToken:
    return answer.data


PING: Operation[bool] = Operation(
    "ping", "GET", "/api/v4/public/ping", "public", Auth.NONE, True,
    AnswerDecoder(list[str], _ping, write=False),
)
_decode_balance = AnswerDecoder(
    dict[str, _Balance], _balance, write=False, checked_result=dict[str, Decimal],
    twice=_balance_twice,
)
BALANCE: Operation[dict[str, Decimal]] = Operation(
    "main_balance", "POST", "/api/v4/main-account/balance", "main_balance", Auth.SIGNED, True,
    _decode_balance,
)
#: The balance asked for one ticker (whitebit-exchange/docs, openapi/private/main_api_v4.yaml,
#: ``/api/v4/main-account/balance``: "An unknown or non-existent ticker is not an error").
BALANCE_OF_TICKER: Operation[Decimal | dict[str, Decimal]] = Operation(
    BALANCE.name, BALANCE.method, BALANCE.path, BALANCE.scope, Auth.SIGNED, True, _ticker_balance,
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
