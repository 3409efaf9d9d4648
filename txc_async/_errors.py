"""The exception tree every failure of the library surfaces as."""

from __future__ import annotations

import asyncio

__all__ = [
    "ApiError",
    "AuthenticationError",
    "InvalidParameterError",
    "RateLimitError",
    "RequestTimeout",
    "TransportError",
    "TxcError",
    "ValidationError",
]


class TxcError(Exception):
    """Base class of every error raised by txc_async."""


class ApiError(TxcError):
    """The server answered with an error body.

    ``status`` is the HTTP status, ``code`` the error code of the body (``None`` when the body has
    none), ``message`` its message and ``errors`` the per-parameter messages.
    """

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

    def __str__(self) -> str:
        parts = [self.message or "error"]
        if self.status is not None:
            parts.append(f"HTTP {self.status}")
        if self.code is not None:
            parts.append(f"code {self.code}")
        text = " (" + ", ".join(parts[1:]) + ")" if len(parts) > 1 else ""
        if self.errors:
            fields = "; ".join(f"{k}: {', '.join(v)}" for k, v in self.errors.items())
            return f"{parts[0]}{text}: {fields}"
        return f"{parts[0]}{text}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(message={self.message!r}, status={self.status!r}, "
            f"code={self.code!r}, errors={self.errors!r})"
        )


class ValidationError(ApiError):
    """The server refused the parameters (``Validation failed``, code 30 and kin)."""


class AuthenticationError(ApiError):
    """Bad key, signature or nonce (401), missing permission (403), or a refused OAuth token."""


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
    """No usable answer: the connection failed or timed out, the body was not JSON, or a 5xx.

    ``status`` is the HTTP status when an answer arrived. ``may_have_reached_server`` tells whether
    the request could have been executed (False only when the connection was never made).
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
        super().__init__(message)

    def __str__(self) -> str:
        if self.status is not None:
            return f"{self.message} (HTTP {self.status})"
        return self.message


class RequestTimeout(TransportError, asyncio.TimeoutError):
    """The HTTP exchange took longer than the client's timeout."""


class InvalidParameterError(TxcError, ValueError):
    """A parameter was refused before anything was sent. ``parameter`` names it."""

    def __init__(self, parameter: str, rule: str) -> None:
        self.parameter = parameter
        self.rule = rule
        super().__init__(f"{parameter}: {rule}")
