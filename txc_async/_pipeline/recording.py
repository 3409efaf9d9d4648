"""One record of every HTTP exchange of a call: a DEBUG log line and the ``on_request`` hook."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from .._answers.errors import NonceRefused, RateLimited
from .._errors import ApiError, RequestTimeout, TransportError
from .._operations import Operation

__all__ = ["EndedAttempt", "Recorder", "RequestRecord", "error_kind"]

logger = logging.getLogger("txc_async")

_debug_enabled = logger.isEnabledFor
_DEBUG = logging.DEBUG


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One HTTP exchange of a call, as given to ``Client(on_request=...)`` after it ends.

    - ``operation``: the method name (``"main_balance"``); ``scope``: its rate-limit budget.
    - ``attempt``: 1 for the first exchange of a call, 2 for its first retry, ...
    - ``status``: the HTTP status, or None when no answer came.
    - ``error``: None for a success, else what went wrong: ``"rate_limited"``,
      ``"nonce_refused"``, ``"api_error"``, ``"server_error"``, ``"bad_answer"``, ``"timeout"``,
      ``"connection"``.
    - ``budget_wait``: seconds the call waited for its scope's budget before this exchange;
      ``elapsed``: seconds of the exchange itself; ``sent_bytes``, ``received_bytes``: body sizes.
    - ``retried``: another attempt follows; ``final``: this exchange ended the call.
    """

    operation: str
    scope: str
    attempt: int
    status: int | None
    error: str | None
    budget_wait: float
    elapsed: float
    sent_bytes: int
    received_bytes: int
    retried: bool

    @property
    def final(self) -> bool:
        """This exchange ended the call (no other attempt follows)."""
        return not self.retried


class EndedAttempt(NamedTuple):
    """An attempt of a call that has ended, as its record tells it: made only when someone
    listens (the ``on_request`` hook, or the logger at DEBUG level)."""

    op: Operation[Any]
    #: 1 for the call's first attempt.
    number: int
    #: The HTTP status, or None when no answer came.
    status: int | None
    #: None for a success, else the kind of what went wrong (see `error_kind`).
    error: str | None
    #: Seconds waited for the budget before the attempt, and of the exchange itself.
    waited: float
    elapsed: float
    sent_bytes: int
    received_bytes: int
    #: Another attempt follows.
    retried: bool


class Recorder:
    """Tells of every ended attempt: a DEBUG line in the ``txc_async`` logger and the
    ``on_request`` hook, whose own failures are logged and ignored."""

    __slots__ = ("hook",)

    def __init__(self, hook: Callable[[RequestRecord], object] | None) -> None:
        self.hook = hook

    def record(self, ended: EndedAttempt) -> None:
        """Log ``ended`` at DEBUG level, and give it to the hook as a `RequestRecord`."""
        op = ended.op
        if _debug_enabled(_DEBUG):
            status, error = ended.status, ended.error
            logger.debug(
                "%s [%s] attempt %d: %s in %.1f ms, sent %d B, received %d B, "
                "budget wait %.1f ms%s",
                op.name, op.scope, ended.number,
                f"HTTP {status}" if status is not None else "no answer",
                ended.elapsed * 1000, ended.sent_bytes, ended.received_bytes,
                ended.waited * 1000,
                f", {error}" + ("; retrying" if ended.retried else "") if error else "",
            )
        hook = self.hook
        if hook is None:
            return
        record = RequestRecord(
            op.name, op.scope, ended.number, ended.status, ended.error, ended.waited,
            ended.elapsed, ended.sent_bytes, ended.received_bytes, ended.retried,
        )
        try:
            hook(record)
        except Exception:
            # A metrics hook must never break the call it observes.
            logger.exception("on_request hook failed (ignored)")


def error_kind(exc: BaseException) -> str:
    """What went wrong in an attempt, as its record names it."""
    if isinstance(exc, RateLimited):
        return "rate_limited"
    if isinstance(exc, NonceRefused):
        return "nonce_refused"
    if isinstance(exc, ApiError):
        return "api_error"
    if isinstance(exc, RequestTimeout):
        return "timeout"
    if isinstance(exc, TransportError):
        if exc.status is None:
            return "connection"
        return "server_error" if exc.status >= 500 else "bad_answer"
    return "error"
