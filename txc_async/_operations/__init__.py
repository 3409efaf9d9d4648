"""Every operation of the API, declared once (one module per group of the service's
documentation), and what derives from the declarations: the catalogue by name, and the rate
limits of every scope and group."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from .._errors import InvalidParameterError
from .._limiters.base import RateLimit
from .._paging import MAX_OFFSET, PAGE_LIMIT
from .catalogue import Catalogue
from .collateral import COLLATERAL_STOP_LIMIT
from .declaration import Auth, Excludes, Kind, NotAfter, Operation, Param, Rule, group_of
from .generated.index import LIMITS, WHERE
from .main_account import BALANCE, BALANCE_OF_TICKER, INVESTMENTS
from .mining import CREATE_MINING_ACCOUNT, MINING_HASHRATE, MINING_REWARDS
from .oauth import REFRESH_OAUTH_TOKEN
from .public import PING

__all__ = [
    "BALANCE",
    "BALANCE_OF_TICKER",
    "COLLATERAL_STOP_LIMIT",
    "CREATE_MINING_ACCOUNT",
    "DEFAULT_BASE_URL",
    "DEFAULT_RATE_LIMITS",
    "EU_BASE_URL",
    "GROUPS",
    "GROUP_LIMITS",
    "INVESTMENTS",
    "MAX_OFFSET",
    "MINING_HASHRATE",
    "MINING_REWARDS",
    "OPERATIONS",
    "PAGE_LIMIT",
    "PING",
    "REFRESH_OAUTH_TOKEN",
    "SCOPES",
    "Auth",
    "Excludes",
    "Kind",
    "NotAfter",
    "Operation",
    "Param",
    "Rule",
    "group_of",
    "merge_rate_limits",
]

#: The service (whitebit-exchange/docs: the API's host).
DEFAULT_BASE_URL = "https://whitebit.com"
#: The regional EU deployment (same paths).
EU_BASE_URL = "https://whitebit.eu"

#: The operations declared by hand.
_HAND: tuple[Operation[Any], ...] = (
    PING, BALANCE, INVESTMENTS, COLLATERAL_STOP_LIMIT, CREATE_MINING_ACCOUNT, MINING_REWARDS,
    MINING_HASHRATE, REFRESH_OAUTH_TOKEN,
)
#: Every operation by its name: the ones declared by hand first, then every operation of the
#: documents by its generated name (``generated/``), where the hand-declared ones appear again
#: under their generated names (``get_main_balance`` is ``main_balance``: the same object).
OPERATIONS: Mapping[str, Operation[Any]] = Catalogue({op.name: op for op in _HAND}, WHERE)

#: The service's groups, counted per IP address (whitebit-exchange/docs,
#: api-reference/rate-limits.mdx and data/rate-limits.yaml): every operation under
#: /api/v4/public/ shares one budget (the fourteen public operations' own limits add up to
#: 26,600 per 10 s, above the group's 20,000), every one under /api/v4/main-account/ another,
#: every one under /api/v4/trade-account/ a third, every one outside the listed groups the
#: default one.
GROUP_LIMITS: Mapping[str, RateLimit] = MappingProxyType({
    "public_group": RateLimit(20000, 10.0),
    "main_account": RateLimit(1000, 10.0),
    "trade_account": RateLimit(12000, 10.0),
    "default": RateLimit(10000, 10.0),
})


def _scope_limits() -> dict[str, RateLimit]:
    """Each operation's scope with its limit (the generated ones' from their index, so that no
    group's declarations load for it); operations sharing a scope must agree on it."""
    limits: dict[str, RateLimit] = {}
    declared = [(op.scope, op.rate_limit) for op in _HAND]
    declared += [(scope, RateLimit(*limit)) for scope, limit in LIMITS.items()]
    for scope, limit in declared:
        if limits.setdefault(scope, limit) != limit:
            raise ValueError(f"scope {scope!r}: two limits declared")
    return limits


#: The documented limits of the service, per scope and group (requests per span of seconds):
#: each operation's own, then its groups'.
DEFAULT_RATE_LIMITS: Mapping[str, RateLimit] = MappingProxyType(
    _scope_limits() | dict(GROUP_LIMITS)
)
#: The group budgets: each operation draws on its own scope and on its group's.
GROUPS: frozenset[str] = frozenset(GROUP_LIMITS)
#: Every scope and group a limit may be given for.
SCOPES: frozenset[str] = frozenset(DEFAULT_RATE_LIMITS)


def merge_rate_limits(overrides: Mapping[str, RateLimit] | None) -> dict[str, RateLimit]:
    """The default limits with ``overrides`` applied; unknown scopes and bad values are refused."""
    merged = dict(DEFAULT_RATE_LIMITS)
    if overrides is not None and not isinstance(overrides, Mapping):
        raise InvalidParameterError(
            "rate_limits", "must be a mapping of scope to txc_async.RateLimit, such as "
            "{'mining_rewards': RateLimit(500, 10)}"
        )
    for scope, limit in (overrides or {}).items():
        if scope not in SCOPES:
            raise InvalidParameterError(
                "rate_limits", f"unknown scope {scope!r}; scopes are {', '.join(sorted(SCOPES))}"
            )
        if not isinstance(limit, RateLimit):
            raise InvalidParameterError(
                "rate_limits", f"the value for {scope!r} must be a txc_async.RateLimit"
            )
        merged[scope] = limit
    return merged
