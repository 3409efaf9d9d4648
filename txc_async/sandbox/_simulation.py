"""What a simulation plugged into the sandbox answers: ``Sandbox(simulations=[...])`` asks each
in turn, after the request is authenticated and its parameters validated, before the sandbox's own
simulations and the documented example."""

from __future__ import annotations

from typing import Any, Final, Protocol

__all__ = ["UNHANDLED", "Simulation", "SimulationError"]

#: What :meth:`Simulation.answer` returns for an operation it does not simulate: the next
#: simulation is asked, then the sandbox answers as it would without simulations.
UNHANDLED: Final = object()


class SimulationError(Exception):
    """A refusal in the service's shape: the sandbox answers ``body`` (JSON-able) with HTTP
    ``status``."""

    def __init__(self, status: int, body: Any) -> None:
        super().__init__(status)
        self.status = status
        self.body = body


class Simulation(Protocol):
    """A part of the exchange the sandbox simulates (trading, balances, market data...)."""

    def answer(
        self,
        method: str,
        path: str,
        account: str | None,
        params: dict[str, Any],
        now: float,
    ) -> Any:
        """The JSON-able answer to one request, or :data:`UNHANDLED`.

        ``method`` is the HTTP method; ``path`` the documented path template
        (``"/api/v4/public/orderbook/{market}"``); ``account`` the name of the API key that signed
        the request (None for a public or bearer operation); ``params`` the path, query and body
        parameters by wire name, as received, after validation; ``now`` the sandbox's clock
        (seconds). Raises :class:`SimulationError` to refuse.
        """
        ...
