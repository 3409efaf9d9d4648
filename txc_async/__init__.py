"""Asyncio client of the exchange HTTP API v4.

Signed requests with millisecond nonces, exact ``Decimal`` money, per-endpoint rate-limit budgets
that the server never sees exceeded, typed msgspec answers, and precise errors.
"""

from __future__ import annotations

from ._backfill import backfill_mining_rewards
from ._client import DEFAULT_BASE_URL, EU_BASE_URL, Client
from ._errors import (
    ApiError,
    AuthenticationError,
    InvalidParameterError,
    RateLimitError,
    RequestTimeout,
    TransportError,
    TxcError,
    ValidationError,
)
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
    PlanStatus,
    PositionSide,
    RewardsPage,
    Side,
)
from ._pipeline import RequestRecord
from ._ratelimit import DEFAULT_RATE_LIMITS, Admission, Limiter, Outcome, RateLimit
from ._redis_limiter import RedisLimiter
from ._retry import RetryPolicy
from ._scheduler import InProcessLimiter
from ._sqlite_limiter import SQLiteLimiter
from ._stats import ClientStats
from ._version import __version__

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_RATE_LIMITS",
    "EU_BASE_URL",
    "Admission",
    "ApiError",
    "AuthenticationError",
    "Client",
    "ClientStats",
    "CollateralOrder",
    "FixedPlan",
    "Hashrate",
    "HashratePoint",
    "InProcessLimiter",
    "InvalidParameterError",
    "Investment",
    "InvestmentStatus",
    "InvestmentsPage",
    "Limiter",
    "MiningAccount",
    "MiningReward",
    "OAuthToken",
    "OrderStatus",
    "OtoOrder",
    "Outcome",
    "PlanStatus",
    "PositionSide",
    "RateLimit",
    "RateLimitError",
    "RedisLimiter",
    "RequestRecord",
    "RequestTimeout",
    "RetryPolicy",
    "RewardsPage",
    "SQLiteLimiter",
    "Side",
    "TransportError",
    "TxcError",
    "ValidationError",
    "__version__",
    "backfill_mining_rewards",
]
