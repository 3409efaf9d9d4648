"""The rate-limit seam: the interface a limiter implements ([`Limiter`][txc_async.limiters.Limiter],
with the optional abilities of [`BaseLimiter`][txc_async.limiters.BaseLimiter] to derive from), what
it is given and gives back, and the limiters the package provides."""

from __future__ import annotations

from typing import TypeAlias

from ._limiters import base as _base
from ._limiters.base import Admission, BaseLimiter, Limiter, Outcome, RateLimit
from ._limiters.memory import InProcessLimiter
from ._limiters.redis import RedisLimiter
from ._limiters.sqlite import SQLiteLimiter
from ._limiters.url import limiter_from_url

__all__ = [
    "Admission",
    "BaseLimiter",
    "Groups",
    "InProcessLimiter",
    "Limiter",
    "Outcome",
    "RateLimit",
    "RedisLimiter",
    "SQLiteLimiter",
    "limiter_from_url",
]

Groups: TypeAlias = _base.Groups
"""The group budgets a request draws on besides its scope's, as ``(name, limit)`` pairs: what
[`Limiter.acquire`][txc_async.limiters.Limiter.acquire] and ``try_acquire`` take as ``groups``
from a limiter whose [`takes_groups`][txc_async.limiters.BaseLimiter] is True."""
