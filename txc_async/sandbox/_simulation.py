"""The sandbox's hook for simulations: a model of part of the service that answers some of its
operations from state of its own (an exchange, say) before the sandbox falls back to the
documents' examples."""

from __future__ import annotations

from typing import Any, Final, Protocol

__all__ = ["UNHANDLED", "Simulation", "SimulationError"]

#: What `Simulation.answer` returns for an operation it does not simulate.
UNHANDLED: Final = object()


class Simulation(Protocol):
    """A model of part of the service, consulted by the sandbox for every authenticated or public
    request before its example fallback."""

    def answer(
        self, method: str, path: str, account: str | None, params: dict[str, Any], now: float
    ) -> Any:
        """The JSON-able answer of the operation at ``path`` (its documented template, such as
        ``/api/v4/public/orderbook/{market}``), or `UNHANDLED` when it is not simulated.

        ``account`` is the API key's name (None for a public request), ``params`` the request's
        parameters by wire name (path, query and body together, values as received), ``now``
        the sandbox's clock. A refusal in the service's shape is raised as `SimulationError`."""
        ...


class SimulationError(Exception):
    """A refusal in the service's shape: HTTP ``status`` with JSON ``body``."""

    status: int
    body: Any

    def __init__(self, status: int, body: Any) -> None:
        super().__init__(status)
        self.status = status
        self.body = body
