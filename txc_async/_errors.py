"""The exception tree every failure of the library surfaces as."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import json
import sys
import urllib.parse
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable
from types import CodeType, FrameType
from typing import Any, AnyStr, ParamSpec, TypeVar

__all__ = [
    "AnswerFormatError",
    "ApiError",
    "AuthenticationError",
    "InvalidParameterError",
    "RateLimitError",
    "RequestTimeout",
    "TransportError",
    "TxcError",
    "ValidationError",
    "client_closed",
    "mask_secrets",
    "name_operations",
    "named_iterator",
]

T = TypeVar("T")
C = TypeVar("C", bound=type)
P = ParamSpec("P")

#: Most bytes of an unreadable answer an :class:`AnswerFormatError` keeps.
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

    def _describe(self) -> str:
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
            f"code={self.code!r}, errors={self.errors!r}, operation={self.operation!r})"
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
    """No usable answer: the connection failed or timed out, the answer was malformed, too large
    or not JSON, or a 5xx.

    ``status`` is the HTTP status when an answer arrived. ``may_have_reached_server`` tells whether
    the request could have been executed (False only when it certainly was not sent).
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

    def _describe(self) -> str:
        if self.status is not None:
            return f"{self.message} (HTTP {self.status})"
        return self.message

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


def client_closed(operation: str | None = None) -> TransportError:
    """The error of a call made on a closed client (or reaching a budget's admission once it
    closed): nothing was sent. ``operation`` names the call."""
    error = TransportError("the client is closed", may_have_reached_server=False)
    if operation is not None:
        error._attach_operation(operation)
    return error


#: The shortest secret :func:`mask_secrets` masks.
MIN_MASKED = 6


def _spellings(secret: str) -> set[str]:
    """How a server quoting ``secret`` back may spell it: as sent, form-encoded, or escaped in
    JSON text."""
    return {
        secret,
        urllib.parse.quote_plus(secret),
        urllib.parse.quote(secret, safe=""),
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
    }


def _masked(value: AnyStr, secrets: list[AnyStr], mark: AnyStr, mask: AnyStr) -> AnyStr:
    """``value`` with every secret, and one that a cut to length left at its end (before the
    ``mark`` of the cut, if any), masked: the first characters of a secret are a secret too."""
    for secret in secrets:
        if secret in value:
            value = value.replace(secret, mask)
    end = len(value) - len(mark) if value.endswith(mark) else len(value)
    for secret in secrets:
        head = secret[:MIN_MASKED]
        # Where a cut secret could begin: within its length of the end.
        at = value.find(head, max(0, end - len(secret) + 1), end)
        while at != -1:
            if secret.startswith(value[at:end]):
                return value[:at] + mask + value[end:]
            at = value.find(head, at + 1, end)
    return value


def mask_secrets(error: BaseException, secrets: Iterable[str]) -> None:
    """Replace ``secrets`` (what a request carried that must never be shown: the API key, the
    signature and payload, OAuth secrets and tokens) with ``***`` wherever a server's answer
    quoted them into ``error``: its arguments and attributes, and those of every exception
    reachable from it (``__cause__``, ``__context__``, an attribute holding one)."""
    spellings: set[str] = set()
    for secret in secrets:
        # A value of a few characters cannot be told from the words around it (and no real
        # credential is that short): masking it would garble the message, not protect it.
        if len(secret) >= MIN_MASKED:
            spellings |= _spellings(secret)
    if not spellings:
        return
    # Longest first: a secret's form-encoded spelling may contain the secret itself.
    texts = sorted(spellings, key=len, reverse=True)
    raw = [text.encode() for text in texts]
    seen: set[int] = set()

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            return _masked(value, texts, "…", "***")
        if isinstance(value, bytes):
            return _masked(value, raw, "…".encode(), b"***")
        if isinstance(value, dict):
            return {clean(k): clean(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(clean(v) for v in value)
        if isinstance(value, BaseException):
            walk(value)
        return value

    def walk(exc: BaseException | None) -> None:
        while exc is not None and id(exc) not in seen:
            seen.add(id(exc))
            exc.args = clean(exc.args)
            state = getattr(exc, "__dict__", None)
            if state is not None:
                for name, value in list(state.items()):
                    state[name] = clean(value)
            walk(exc.__cause__)
            exc = exc.__context__

    walk(error)


class RequestTimeout(TransportError, asyncio.TimeoutError):
    """The HTTP exchange took longer than the client's timeout."""


class InvalidParameterError(TxcError, ValueError):
    """A parameter was refused before anything was sent. ``parameter`` names it."""

    def __init__(self, parameter: str, rule: str) -> None:
        self.parameter = parameter
        self.rule = rule
        super().__init__(f"{parameter}: {rule}")
        # Raised by the checks of an operation, before anything is sent: it names that one.
        self.operation = _running_operation()


# -- naming the operation of every error raised during a call ---------------------------------
#
# Three places name an error, none of them adding work to a call that succeeds:
#
# - the request pipeline names every error of an exchange with the operation it runs (the
#   coroutine operations are named like their wire operation);
# - an argument error, raised by a coroutine operation's own checks before the pipeline starts,
#   names the operation whose code is running (looked up on the stack once the error is made);
# - an async-generator operation (``iter_...``) names every error raised while it runs, over
#   the name of the wire operation it pages through.

_NOT_OPERATIONS = frozenset({"close", "aclose"})
#: The code of every coroutine operation, by the name it goes by.
_OPERATION_CODE: dict[CodeType, str] = {}
#: How many frames up an argument error looks for its operation.
_MAX_DEPTH = 32


def _running_operation() -> str | None:
    """The coroutine operation on whose behalf the caller runs, or None outside one."""
    frame: FrameType | None = sys._getframe(2)
    for _ in range(_MAX_DEPTH):
        if frame is None:
            return None
        name = _OPERATION_CODE.get(frame.f_code)
        if name is not None:
            return name
        frame = frame.f_back
    return None


def _generator_naming(
    name: str, method: Callable[P, AsyncGenerator[T, None]]
) -> Callable[P, AsyncIterator[T]]:
    @functools.wraps(method)
    async def walk(*args: P.args, **kwargs: P.kwargs) -> AsyncIterator[T]:
        # Closed with the wrapper, so a caller that stops early ends the walk at once.
        async with contextlib.aclosing(method(*args, **kwargs)) as inner:
            try:
                async for item in inner:
                    yield item
            except TxcError as exc:
                exc._attach_operation(name, outer=True)
                raise

    return walk


def named_iterator(
    method: Callable[P, AsyncGenerator[T, None]],
) -> Callable[P, AsyncIterator[T]]:
    """Decorator of an async-generator operation outside the client (such as
    ``backfill_mining_rewards``): every :class:`TxcError` raised while it runs, its argument
    errors included, names it."""
    return _generator_naming(method.__name__, method)


def name_operations(cls: C) -> C:
    """Class decorator: every public coroutine or async-generator method of ``cls`` (its
    operations) names itself on any :class:`TxcError` raised while it runs.

    A coroutine operation is left as it is (a wrapper would be one more coroutine to resume at
    every wake-up of every call): its code is recorded, so that an argument error it raises
    names it, and every other error comes from the request pipeline, which names the wire
    operation of the same name. An async-generator operation is wrapped.
    """
    for name, member in list(vars(cls).items()):
        if name.startswith("_") or name in _NOT_OPERATIONS:
            continue
        if inspect.iscoroutinefunction(member):
            _OPERATION_CODE[member.__code__] = name
        elif inspect.isasyncgenfunction(member):
            setattr(cls, name, _generator_naming(name, member))
    return cls
