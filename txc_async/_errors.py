"""The exception tree every failure of the library surfaces as."""

from __future__ import annotations

from typing import Any

__all__ = [
    "AnswerFormatError",
    "ApiError",
    "AuthenticationError",
    "InvalidParameterError",
    "PermissionDeniedError",
    "RateLimitError",
    "RegionBlockedError",
    "RequestTimeout",
    "ServiceMaintenanceError",
    "TransportError",
    "TxcError",
    "ValidationError",
    "client_closed",
]

#: Most bytes of an unreadable answer an [`AnswerFormatError`][txc_async.AnswerFormatError] keeps.
MAX_KEPT_BODY = 4096


class TxcError(Exception):
    """Base class of every error raised by txc_async.

    ``operation`` is the name of the client method during which the error was raised (``None``
    outside a call); the message then begins with it.
    """

    operation: str | None = None

    def _attach_operation(self, name: str, *, outer: bool = False) -> None:
        """Name the operation the error belongs to. The wire operation names it first; the
        client method the caller called (``outer``) has the last word."""
        if outer or self.operation is None:
            self.operation = name

    def _describe(self) -> str:
        """The message without the operation's name."""
        return super().__str__()

    def __str__(self) -> str:
        text = self._describe()
        operation = self.operation
        if operation is None or text.startswith(operation + ":"):
            return text
        return f"{operation}: {text}"

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt from its attributes, not by calling its constructor with ``args`` (each
        # class takes other arguments), so that an error crosses to another process whole: a
        # worker of a process pool raising it, say.
        return _rebuild, (type(self), self.args, dict(self.__dict__))


def _rebuild(cls: type[TxcError], args: tuple[Any, ...], state: dict[str, Any]) -> TxcError:
    error = cls.__new__(cls, *args)
    error.args = args  # OSError's __new__ (RequestTimeout is a TimeoutError) leaves them out
    error.__dict__.update(state)
    return error


class ApiError(TxcError):
    """The server answered with an error body.

    ``status`` is the HTTP status, ``code`` the error code of the body (``None`` when the body has
    none), ``message`` its message and ``errors`` the per-parameter messages. ``meaning`` is what
    the operation's page says its ``code`` means (``None`` when the page says nothing of it); the
    message ends with it.
    """

    #: The operation whose answer this is, as the catalogue names it (the first name attached:
    #: a walk such as ``iter_...`` names itself over it), which the codes' meanings are keyed by.
    _answered_by: str | None = None

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: int | None = None,
        errors: dict[str, list[str]] | None = None,
    ) -> None:
        self.status = status
        self.code = code
        self.message = message
        self.errors: dict[str, list[str]] = errors or {}
        super().__init__(message)

    def _attach_operation(self, name: str, *, outer: bool = False) -> None:
        if not outer and self._answered_by is None:
            self._answered_by = name
        super()._attach_operation(name, outer=outer)

    @property
    def meaning(self) -> str | None:
        """What the operation's page says ``code`` means (for the answer's ``status`` when the
        page lists codes per status), or ``None`` when it does not say, or outside a call."""
        return documented_meaning(self._answered_by or self.operation, self.status, self.code)

    def _describe(self) -> str:
        parts = [self.message or "error"]
        if self.status is not None:
            parts.append(f"HTTP {self.status}")
        if self.code is not None:
            meaning = self.meaning
            parts.append(f"code {self.code}" + (f": {meaning}" if meaning else ""))
        text = " (" + ", ".join(parts[1:]) + ")" if len(parts) > 1 else ""
        if self.errors:
            fields = "; ".join(f"{k}: {', '.join(v)}" for k, v in self.errors.items())
            return f"{parts[0]}{text}: {fields}"
        return f"{parts[0]}{text}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(message={self.message!r}, status={self.status!r}, "
            f"code={self.code!r}, errors={self.errors!r}, operation={self.operation!r})"
        )


class ValidationError(ApiError):
    """The server refused the parameters (``Validation failed``, code 30 and kin)."""


class AuthenticationError(ApiError):
    """Bad key, signature or nonce (401), missing permission (403), or a refused OAuth token."""


class PermissionDeniedError(AuthenticationError):
    """The request was signed correctly, but the account or the API key is not allowed this
    endpoint or action: not a failure of the library, and the same request is refused again
    until the account changes.

    Endpoints for B2B partner accounts only (lending, fixed and flex), features enabled per
    account or per key (the mining pool, express withdraw, an endpoint off in the key's
    settings), a disabled key, two-factor authentication not enabled: "You don't have
    permission to use this endpoint", "This action is unauthorized". ``lacks`` says in one
    line what the account or the key lacks and where to get it; the message ends with it.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: int | None = None,
        errors: dict[str, list[str]] | None = None,
        lacks: str = "",
    ) -> None:
        super().__init__(message, status=status, code=code, errors=errors)
        self.lacks = lacks

    def _describe(self) -> str:
        text = super()._describe()
        return f"{text}; {self.lacks}" if self.lacks else text


class RegionBlockedError(ApiError):
    """The service refused the request for where the account is, not for its parameters'
    form: the same request is refused again.

    HTTP 453 (an order type, execution flag or BBO role the account's region does not offer,
    such as a limit order in the EU region; also any order but a post-only limit on a market
    not yet fully listed), HTTP 451 (margin or futures not offered in the caller's region), or
    an answer saying "This endpoint is disabled for your region". ``reason`` says which; the
    message ends with it.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: int | None = None,
        errors: dict[str, list[str]] | None = None,
        reason: str = "",
    ) -> None:
        super().__init__(message, status=status, code=code, errors=errors)
        self.reason = reason

    def _describe(self) -> str:
        text = super()._describe()
        return f"{text}; {self.reason}" if self.reason else text


class RateLimitError(ApiError):
    """The server kept answering 429 after the retry budget was spent.

    ``retry_after`` is the delay in seconds the server asked for, when it asked.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: int | None = None,
        errors: dict[str, list[str]] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, status=status, code=code, errors=errors)
        self.retry_after = retry_after


class TransportError(TxcError):
    """No usable answer: the connection failed or timed out, the answer was malformed, too large
    or not JSON, or a 5xx.

    ``status`` is the HTTP status when an answer arrived. ``may_have_reached_server`` tells whether
    the request could have been executed (False only when it certainly was not sent).
    ``check_first``, for a write that may have taken effect (it is never sent again), says what to
    look for before sending it once more (its client order id among the market's orders, the
    history a transfer shows in); the message ends with it.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        may_have_reached_server: bool = True,
    ) -> None:
        self.status = status
        self.message = message
        self.may_have_reached_server = may_have_reached_server
        self.check_first: str | None = None
        super().__init__(message)

    def _describe(self) -> str:
        text = self.message if self.status is None else f"{self.message} (HTTP {self.status})"
        if self.check_first:
            text += (f"; the write may have taken effect and was not sent again: "
                     f"{self.check_first}")
        return text

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(message={self.message!r}, status={self.status!r}, "
            f"may_have_reached_server={self.may_have_reached_server!r}, "
            f"operation={self.operation!r})"
        )


class AnswerFormatError(TransportError):
    """A success answer (2xx, no error shape) that cannot be read as the operation's result.

    The server took the request: for a write (an order, an account, a token refresh) it was most
    likely executed, so do not send it again blindly. ``status`` is the HTTP status, ``body`` the
    raw answer cut to its first 4 KiB (token values withheld), ``reason`` what did not fit.
    """

    def __init__(
        self,
        reason: str,
        *,
        status: int | None = None,
        body: bytes = b"",
        write: bool = False,
    ) -> None:
        self.reason = reason
        self.body = body[:MAX_KEPT_BODY]
        self.write = write
        super().__init__(_answer_message(reason, write), status=status)


def _answer_message(reason: str, write: bool) -> str:
    if write:
        return (
            "the server accepted the request, but its answer could not be read "
            f"({reason}); the operation most likely took effect: check before repeating it"
        )
    return f"the answer could not be read ({reason})"


def documented_meaning(operation: str | None, status: int | None, code: int | None) -> str | None:
    """What the page of ``operation`` says its error ``code`` means in an answer of ``status``:
    the code listed for that status, else listed for every error answer, else its one meaning
    across the operation's statuses; ``None`` when the page does not say."""
    if operation is None or code is None:
        return None
    # The table is read the first time a meaning is asked for, never at import.
    from ._models_generated.error_meanings import MEANINGS

    listed = [(at, text) for number, at, text in MEANINGS.get(operation, ()) if number == code]
    for wanted in (status, None):
        for at, text in listed:
            if at == wanted:
                return text
    texts = {text for _, text in listed}
    return texts.pop() if len(texts) == 1 else None


def client_closed(operation: str | None = None) -> TransportError:
    """The error of a call made on a closed client (or reaching a budget's admission once it
    closed): nothing was sent. ``operation`` names the call."""
    error = TransportError("the client is closed", may_have_reached_server=False)
    if operation is not None:
        error._attach_operation(operation)
    return error


class RequestTimeout(TransportError, TimeoutError):  # asyncio.TimeoutError is TimeoutError
    """The HTTP exchange took longer than the client's timeout."""


class ServiceMaintenanceError(TransportError):
    """The service is under maintenance: HTTP 503 with the gateway's page instead of a JSON
    body, the answer of every endpoint while it lasts (the public ``platform_status`` then
    says ``"system maintenance"``).

    A read was retried as after any 5xx (within ``max_retries``, with backoff) before this is
    raised; a write is never sent again: the gateway refused it, so it most likely did not take
    effect, but check (its client order id, the transfer) before sending it once more.
    """


class InvalidParameterError(TxcError, ValueError):
    """A parameter was refused before anything was sent. ``parameter`` names it.

    Refused by an operation's checks, it names that operation (``operation``), and its message
    begins with it.
    """

    def __init__(self, parameter: str, rule: str) -> None:
        self.parameter = parameter
        self.rule = rule
        super().__init__(f"{parameter}: {rule}")
