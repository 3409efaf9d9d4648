"""When to send a request again, and how long to wait first."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from ._errors import InvalidParameterError

__all__ = ["MAX_WAIT", "RetryPolicy"]

#: The longest wait (seconds) a retry policy may set: a day.
MAX_WAIT = 86_400.0


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Bounds and backoff of the client's retries.

    - ``max_retries``: re-sends of a read (ping, balance, investments, rewards, hashrate) after a
      connection error, a timeout, a 5xx or an undecodable answer. Writes are re-sent after such a
      failure only when the connection was never made.
    - ``max_rate_limit_retries``: re-sends of any request after the server refused it for its rate
      limit (nothing was executed); the scope's budget pauses before each.
    - ``max_nonce_retries``: re-sends, freshly signed, after the server refused a nonce.
    - Backoff of the re-sends after a failure (``max_retries``): ``backoff_base * 2**attempt``
      seconds, capped at ``backoff_cap``, times a jitter factor in [0.5, 1.0]; a Retry-After
      that comes with such a failure (a 503, say) is honoured up to ``max_retry_after``. Each of
      the three is a number of seconds from 0 to a day (``MAX_WAIT``): a retried call never
      waits without end. A rate-limit refusal's pause is not set here: the budget it is blamed
      on pauses for the server's Retry-After or a doubling backoff, always from 1 to 30 s.
    """

    max_retries: int = 3
    max_rate_limit_retries: int = 5
    max_nonce_retries: int = 5
    backoff_base: float = 0.5
    backoff_cap: float = 8.0
    max_retry_after: float = 30.0
    random: Callable[[], float] = field(default=random.random, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("max_retries", "max_rate_limit_retries", "max_nonce_retries"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidParameterError(name, "must be an integer of at least 0")
        for name in ("backoff_base", "backoff_cap", "max_retry_after"):
            value = getattr(self, name)
            if (
                isinstance(value, bool) or not isinstance(value, int | float)
                or not 0 <= value <= MAX_WAIT
            ):
                # A wait without end (infinity) would hold a retried call for ever.
                raise InvalidParameterError(
                    name, f"must be a number of seconds from 0 to {MAX_WAIT:g}"
                )
        if not callable(self.random):
            raise InvalidParameterError("random", "must be a callable returning a float in [0, 1)")

    def backoff(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before re-send number ``attempt + 1`` (``attempt`` counts from 0)."""
        delay = min(self.backoff_cap, self.backoff_base * (2.0**attempt))
        delay *= 0.5 + 0.5 * self.random()
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.max_retry_after))
        return delay
