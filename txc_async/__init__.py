"""Asyncio client of the exchange HTTP API v4.

Signed requests with millisecond nonces, exact ``Decimal`` money, per-endpoint rate-limit budgets
that the server never sees exceeded, typed msgspec answers, and precise errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

from . import _models, _operations
from ._errors import (
    AnswerFormatError,
    ApiError,
    AuthenticationError,
    InvalidParameterError,
    PermissionDeniedError,
    RateLimitError,
    RegionBlockedError,
    RequestTimeout,
    ServiceMaintenanceError,
    TransportError,
    TxcError,
    ValidationError,
)
from ._limiters.base import Admission, Limiter, Outcome, RateLimit
from ._models import (
    CollateralOrder,
    FixedPlan,
    Hashrate,
    HashratePoint,
    Investment,
    InvestmentsPage,
    InvestmentStatus,
    MiningAccount,
    MiningReward,
    OAuthToken,
    OrderStatus,
    OtoOrder,
    PayoutDestination,
    PlanStatus,
    PositionSide,
    RewardsPage,
    RewardStatus,
    Side,
)
from ._operations import Operation
from ._retry import RetryPolicy
from ._stats import ClientStats
from ._version import __version__

if TYPE_CHECKING:
    from ._backfill.mining_rewards import backfill_mining_rewards
    from ._client import Client
    from ._limiters.memory import InProcessLimiter
    from ._limiters.redis import RedisLimiter
    from ._limiters.sqlite import SQLiteLimiter
    from ._limiters.url import limiter_from_url
    from ._nonces.clock import LocalClock
    from ._pipeline.recording import RequestRecord
    from ._runtime import Runtime, current_runtime, use_runtime
    from ._transports.base import RawResponse
    from ._transports.mock import MockRequest, MockTransport
else:
    # The client and the request pipeline import aiohttp, which takes most of the time of
    # importing the package, and the backfill and the shared limiters are more than most
    # programs use: each is imported when first used, so that a program that only needs the
    # models, the errors or the command line's help starts without them.
    _LAZY = {
        "Client": "._client", "RequestRecord": "._pipeline.recording",
        "backfill_mining_rewards": "._backfill.mining_rewards",
        "RedisLimiter": "._limiters.redis", "SQLiteLimiter": "._limiters.sqlite",
        "limiter_from_url": "._limiters.url",
        "InProcessLimiter": "._limiters.memory", "LocalClock": "._nonces.clock",
        "Runtime": "._runtime", "current_runtime": "._runtime", "use_runtime": "._runtime",
        "RawResponse": "._transports.base", "MockRequest": "._transports.mock",
        "MockTransport": "._transports.mock",
    }

    def __getattr__(name: str) -> object:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(module, __name__), name)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *_LAZY})

# Names defined in private modules, documented where users find them.

DEFAULT_BASE_URL = _operations.DEFAULT_BASE_URL
"""The service's address, ``https://whitebit.com``: the default ``base_url`` of
[`Client`][txc_async.Client]."""
EU_BASE_URL = _operations.EU_BASE_URL
"""The regional EU deployment of the API, ``https://whitebit.eu`` (the same paths)."""
DEFAULT_RATE_LIMITS = _operations.DEFAULT_RATE_LIMITS
"""The limit of every scope, as the service documents it: what ``Client(rate_limits=...)``
overrides. Derived from the operations (each operation's ``scope`` and ``rate_limit``, see
[`OPERATIONS`][txc_async.OPERATIONS]) and the service's groups (``"main_account"``, 1,000 per
10 s; ``"default"``, 10,000 per 10 s)."""
OPERATIONS = _operations.OPERATIONS
"""Every operation of the API by its name (a read-only mapping of
[`Operation`][txc_async.Operation]s): ``txc_async.OPERATIONS["mining_hashrate"].rate_limit``.
[`Client.call`][txc_async.Client.call] calls any of them by name."""
SideLiteral: TypeAlias = _models.SideLiteral
"""``side`` of an order as a plain string, ``"buy"`` or ``"sell"`` (the values of
[`Side`][txc_async.Side]): methods take either, and a type checker refuses any other string."""
PositionSideLiteral: TypeAlias = _models.PositionSideLiteral
"""``position_side`` of a collateral order as a plain string, ``"LONG"``, ``"SHORT"`` or
``"BOTH"`` (the values of [`PositionSide`][txc_async.PositionSide])."""
IntervalLiteral: TypeAlias = _models.IntervalLiteral
"""The step of a hashrate series (``Client.mining_hashrate(interval=...)``): ``"5m"``, ``"1h"``
or ``"24h"``."""
StpLiteral: TypeAlias = _models.StpLiteral
"""Self-trade prevention of an order (``Client.collateral_stop_limit_order(stp=...)``):
``"no"``, ``"cb"`` (cancel both), ``"cn"`` (cancel the new order) or ``"co"`` (cancel the
existing one)."""

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_RATE_LIMITS",
    "EU_BASE_URL",
    "OPERATIONS",
    "Admission",
    "AnswerFormatError",
    "ApiError",
    "AuthenticationError",
    "Client",
    "ClientStats",
    "CollateralOrder",
    "FixedPlan",
    "Hashrate",
    "HashratePoint",
    "InProcessLimiter",
    "IntervalLiteral",
    "InvalidParameterError",
    "Investment",
    "InvestmentStatus",
    "InvestmentsPage",
    "Limiter",
    "LocalClock",
    "MiningAccount",
    "MiningReward",
    "MockRequest",
    "MockTransport",
    "OAuthToken",
    "Operation",
    "OrderStatus",
    "OtoOrder",
    "Outcome",
    "PayoutDestination",
    "PermissionDeniedError",
    "PlanStatus",
    "PositionSide",
    "PositionSideLiteral",
    "RateLimit",
    "RateLimitError",
    "RawResponse",
    "RedisLimiter",
    "RegionBlockedError",
    "RequestRecord",
    "RequestTimeout",
    "RetryPolicy",
    "RewardStatus",
    "RewardsPage",
    "Runtime",
    "SQLiteLimiter",
    "ServiceMaintenanceError",
    "Side",
    "SideLiteral",
    "StpLiteral",
    "TransportError",
    "TxcError",
    "ValidationError",
    "__version__",
    "backfill_mining_rewards",
    "current_runtime",
    "limiter_from_url",
    "use_runtime",
]
