"""Counters of what a client sent and what came back, for progress reports and summaries."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

__all__ = ["ClientStats"]


@dataclass(slots=True)
class ClientStats:
    """What a client has done so far.

    ``requests`` counts every HTTP request sent (retries included), ``by_scope`` the same per
    rate-limit scope; the refusal counters count answers the client handled itself.
    """

    requests: int = 0
    retries: int = 0
    rate_limit_refusals: int = 0
    nonce_refusals: int = 0
    by_scope: Counter[str] = field(default_factory=Counter)
