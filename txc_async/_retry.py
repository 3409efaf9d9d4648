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

    def after_no_answer(
        self, retry_safe: bool, may_have_reached_server: bool, failures: int
    ) -> float | None:
        """After an attempt that got no answer (a connection error, a timeout): the seconds to
        wait before the next attempt, or None when none follows.

        A read (``retry_safe``) goes again, and so does a write that certainly never reached
        the server; a write that may have reached it is never sent again. ``failures`` counts
        the call's earlier attempts that ended in a failure, at most ``max_retries``.
        """
        if failures >= self.max_retries or (may_have_reached_server and not retry_safe):
            return None
        return self.backoff(failures)

    def after_error_answer(
        self, retry_safe: bool, failures: int, retry_after: float | None = None
    ) -> float | None:
        """After an attempt whose answer is a failure (a 5xx, an undecodable answer): the seconds
        to wait before the next attempt (``retry_after``, the answer's Retry-After, honoured up
        to ``max_retry_after``), or None when none follows.

        The answer shows the request reached the server: only a read goes again, while
        ``failures`` (the call's earlier failed attempts) is below ``max_retries``.
        """
        if not retry_safe or failures >= self.max_retries:
            return None
        return self.backoff(failures, retry_after)

    def after_rate_limit(self, retry_safe: bool, refused: bool, refusals: int) -> bool:
        """After a rate-limit refusal: whether another attempt follows, once the budget's pause
        is over (the pause is the budget's, not set here).

        Any request goes again when the answer shows it was ``refused`` (nothing was executed);
        a throttling message in a success answer does not show it, and only a read then goes
        again. ``refusals`` counts the call's earlier ones, at most ``max_rate_limit_retries``.
        """
        return refusals < self.max_rate_limit_retries and (refused or retry_safe)

    def after_nonce_refusal(self, refusals: int) -> bool:
        """After the server refused a nonce (nothing was executed): whether the request is
        signed again with a fresh nonce and sent at once. ``refusals`` counts the call's earlier
        ones, at most ``max_nonce_retries``."""
        return refusals < self.max_nonce_retries

    def backoff(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before re-send number ``attempt + 1`` (``attempt`` counts from 0)."""
        delay = min(self.backoff_cap, self.backoff_base * (2.0**attempt))
        delay *= 0.5 + 0.5 * self.random()
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.max_retry_after))
        return delay
