"""The public operations (the documentation's market data, ``/api/v4/public/*``): no key, no
signature."""

from __future__ import annotations

from .._answers.results import AnswerDecoder
from .._limiters.base import RateLimit
from .declaration import Auth, Operation

__all__ = ["PING"]


def _ping(answer: list[str]) -> bool:
    return answer == ["pong"]


PING: Operation[bool] = Operation(
    name="ping", method="GET", path="/api/v4/public/ping", auth=Auth.NONE, retry_safe=True,
    decode=AnswerDecoder(list[str], _ping, write=False),
    scope="public", rate_limit=RateLimit(2000, 10.0), tag="market",
    summary="check that the API answers",
)
