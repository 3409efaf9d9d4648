"""Rate-limit scopes, their documented defaults, and the interface of every limiter backend."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["DEFAULT_RATE_LIMITS", "SCOPES", "Limiter", "RateLimit", "merge_rate_limits"]


@dataclass(frozen=True, slots=True)
class RateLimit:
    """At most ``max_requests`` requests in any span of ``per_seconds`` seconds."""

    max_requests: int
    per_seconds: float

    def __post_init__(self) -> None:
        if (
            isinstance(self.max_requests, bool)
            or not isinstance(self.max_requests, int)
            or self.max_requests < 1
        ):
            raise ValueError("max_requests: must be an integer of at least 1")
        if (
            isinstance(self.per_seconds, bool)
            or not isinstance(self.per_seconds, int | float)
            or not math.isfinite(self.per_seconds)
            or self.per_seconds <= 0
        ):
            raise ValueError("per_seconds: must be a finite number greater than 0")


#: The documented limits of the service, per scope (requests per span of seconds).
DEFAULT_RATE_LIMITS: Mapping[str, RateLimit] = {
    "public": RateLimit(2000, 10.0),
    "investments": RateLimit(1000, 10.0),
    "main_balance": RateLimit(1000, 10.0),
    "collateral_stop_limit_order": RateLimit(10000, 10.0),
    "create_mining_account": RateLimit(1000, 10.0),
    "mining_rewards": RateLimit(1000, 10.0),
    "mining_hashrate": RateLimit(1000, 10.0),
    "refresh_oauth_token": RateLimit(1, 1.0),
}

SCOPES: frozenset[str] = frozenset(DEFAULT_RATE_LIMITS)


def merge_rate_limits(overrides: Mapping[str, RateLimit] | None) -> dict[str, RateLimit]:
    """The default limits with ``overrides`` applied; unknown scopes and bad values are refused."""
    from ._errors import InvalidParameterError

    merged = dict(DEFAULT_RATE_LIMITS)
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


@runtime_checkable
class Limiter(Protocol):
    """A backend that keeps request budgets.

    A budget is named by ``key_id`` (a hash identifying the API key and server, never the key
    itself) and ``scope``. Implementations serve waiters first-in-first-out; a waiter cancelled
    before it is admitted consumes no budget.
    """

    async def acquire(self, key_id: str, scope: str, limit: RateLimit) -> int | None:
        """Wait until one more request may be sent within ``limit``, then count it as sent.

        A backend shared by several processes returns the nonce the request must be signed
        with (drawn from one counter per key); an in-process one returns None, and the client
        draws the nonce from the process's own source.
        """
        ...

    async def rate_limited(
        self, key_id: str, scope: str, limit: RateLimit, retry_after: float | None
    ) -> float:
        """Record a rate-limit refusal: pause the whole budget and return the pause in seconds.

        The pause is ``retry_after`` when the server gave one, else 1 s doubling per consecutive
        refusal up to 30 s, with jitter.
        """
        ...

    def succeeded(self, key_id: str, scope: str) -> None:
        """Record an answer that was not a rate-limit refusal (ends a backoff streak)."""
        ...

    async def aclose(self) -> None:
        """Release the backend's resources."""
        ...
