"""Refusals in the service's shape: ``{"code": ..., "message": ..., "errors": {field: [...]}}``
(whitebit-exchange/docs, openapi/private/http-trade-v4.yaml, ``ErrorResponse``)."""

from __future__ import annotations

from .._simulation import SimulationError

__all__ = ["refused", "unknown_order"]


def refused(
    code: int, field: str, *messages: str, status: int = 422, message: str = "Validation failed"
) -> SimulationError:
    """A validation refusal of ``field``."""
    return SimulationError(status, {"code": code, "message": message,
                                    "errors": {field: list(messages)}})


def unknown_order() -> SimulationError:
    """The documented answer to cancelling or modifying an order that is not open."""
    return refused(2, "orderId", "Unexecuted order was not found.", status=400,
                   message="Inner validation failed")
