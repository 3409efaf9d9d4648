"""What reached the sandbox: the counters and records ``Sandbox.stats`` holds."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SandboxStats"]


@dataclass(slots=True)
class SandboxStats:
    """What reached the sandbox. Refusal counters count the sandbox's own refusals, not faults.

    ``arrivals`` holds the arrival times of every request, refused ones included, under its
    endpoint's scope and under its group (``"main_account"``, ``"public_group"``, ``"default"``),
    from every IP address together. ``refused`` counts rate-limit refusals by the name of the
    budget whose window was full (both names when both were); ``rate_limited`` counts each refused
    request once. ``arrivals_by_ip`` counts the requests from each client IP address.
    """

    received: Counter[str] = field(default_factory=Counter)
    executed: Counter[str] = field(default_factory=Counter)
    rate_limited: int = 0
    nonce_refused: int = 0
    auth_failed: int = 0
    faults_served: int = 0
    arrivals: dict[str, list[float]] = field(default_factory=dict)
    refused: Counter[str] = field(default_factory=Counter)
    arrivals_by_ip: Counter[str] = field(default_factory=Counter)
    orders: list[dict[str, Any]] = field(default_factory=list)

    def max_in_window(self, scope: str, per_seconds: float) -> int:
        """The most arrivals of ``scope`` (an endpoint's scope or a group) in any span of
        ``per_seconds`` (strict sliding window)."""
        times = sorted(self.arrivals.get(scope, ()))
        best = first = 0
        for last, moment in enumerate(times):
            while times[first] <= moment - per_seconds:
                first += 1
            best = max(best, last - first + 1)
        return best

    def reset(self) -> None:
        """Forget everything counted and recorded so far."""
        self.received.clear()
        self.executed.clear()
        self.rate_limited = self.nonce_refused = self.auth_failed = self.faults_served = 0
        self.arrivals.clear()
        self.refused.clear()
        self.arrivals_by_ip.clear()
        self.orders.clear()


