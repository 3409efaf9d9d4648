"""Turns a raw answer into a typed result or the precise error, by status and by body shape."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any, NoReturn, TypeVar

import msgspec

from .._errors import (
    AnswerFormatError,
    ApiError,
    AuthenticationError,
    PermissionDeniedError,
    RateLimitError,
    RegionBlockedError,
    ServiceMaintenanceError,
    TransportError,
    TxcError,
    ValidationError,
)
from .._httpdate import parse_http_date
from .._transports.base import RawResponse

__all__ = ["NonceRefused", "RateLimited", "decode_answer", "parse_retry_after"]

T = TypeVar("T")

_decode_any = msgspec.json.Decoder().decode

# Error codes the service uses for refused parameters (whitebit-exchange/docs,
# openapi/private/http-trade-v4.yaml, createCollateralStopLimitOrder: 30-33, 36, 10, 111-116;
# 34 and 35, between them, read as refusals too).
_VALIDATION_CODES = frozenset({10, *range(30, 37), *range(111, 117)})
_THROTTLE_MESSAGES = ("too many attempts",)
_MAX_MESSAGE = 300

# What an account or a key lacks, by the words of the service's refusal (whitebit-exchange/docs:
# data/error-codes.yaml, authErrors; faq.mdx, "Lending (Smartplan) endpoint 403 access errors";
# openapi/private/main_api_v4.yaml: the lending operations' 403, the withdrawals' 412, the
# sub-account withdrawals' 401). The first whose words the message holds says it.
_LACKS: tuple[tuple[str, str], ...] = (
    ("don't have permission to use this endpoint",
     "the account or the API key has no access to this endpoint: some are for B2B partner "
     "accounts only (lending, express withdraw), others must be enabled in the key's settings; "
     "the request itself is well-formed"),
    ("two-factor",
     "the account must have two-factor authentication enabled for this action (its security "
     "settings)"),
    ("enable your key",
     "the API key is disabled, or used from an IP address it does not allow: enable it in the "
     "API settings"),
    ("api key is not authorized",
     "the API key is not allowed this action: give it the permission in the API key's settings"),
    ("this action is unauthorized",
     "the account or the API key is not allowed this action (a feature not enabled for it, such "
     "as the mining pool for the mining endpoints)"),
)
# A 403 with any other message, or none: a permission the key's account lacks (express
# withdraw's 403, documented without a body: main_api_v4.yaml).
_LACKS_AT_403 = (
    "the account or the API key is not allowed this endpoint (a feature or an access not "
    "enabled for it, or an address the key does not allow)"
)
# A 401 or a 403 whose message is about the request's signing is the key's or the signer's
# failure (data/error-codes.yaml, authErrors), not a permission.
_SIGNING_WORDS = ("payload", "signature", "signed", "nonce", "request not provided")

# Refusals for where the account is (whitebit-exchange/docs: concepts/order-types.mdx, "Regional
# restrictions" and "New-listing window", snippets/RegionalRestrictionNote.jsx; the 451 answers
# of /api/v4/public/collateral/markets and /futures in openapi/public/http-v4.yaml; the travel
# rule operations' "This endpoint is disabled for your region" in main_api_v4.yaml).
_REGION_REASONS = {
    453: "not available in the account's region (an order type, flag or BBO role it does not "
         "offer), or on a market not yet fully listed (only a post-only limit order until its "
         "trading opens)",
    451: "not offered in the caller's region",
}
_REGION_WORDS = "disabled for your region"
_REGION_REASON = "the endpoint is disabled for the account's region"


class RateLimited(Exception):
    """Internal signal: the server throttled the request.

    ``refused``: the answer shows that nothing was executed (an HTTP 429, or a throttling
    message with an error status). A throttling message in a success answer does not: a write
    is then not sent again.
    """

    def __init__(self, error: RateLimitError, *, refused: bool = True) -> None:
        super().__init__(str(error))
        self.error = error
        self.refused = refused


class NonceRefused(Exception):
    """Internal signal: the server refused the nonce (JSON 429); nothing was executed."""

    def __init__(self, error: AuthenticationError) -> None:
        super().__init__(str(error))
        self.error = error


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """The Retry-After header in seconds: a number of seconds, or an HTTP date measured from the
    answer's own ``Date`` header (both on the server's clock), else from this machine's clock."""
    value = headers.get("Retry-After")
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        moment = parse_http_date(value)
        if moment is None:
            return None
        sent = parse_http_date(headers.get("Date") or "")
        seconds = moment - (sent if sent is not None else time.time())
        return max(0.0, seconds)
    if not math.isfinite(seconds) or seconds < 0:
        return None
    return seconds


def _is_nonce_refusal(message: str) -> bool:
    """A refused nonce answers 429 with "Too many requests." or a message about the nonce (the
    messages: whitebit-exchange/docs, data/error-codes.yaml, ``authErrors``, listed in
    api-reference/authentication.mdx); "Too Many Attempts." and any other 429 are rate limits."""
    # The service's own words, capital for capital: a gateway's generic "Too Many Requests" is a
    # rate limit, and re-sending at once into one is what gets a key restricted.
    return message.strip().rstrip(".") == "Too many requests" or "nonce" in message.lower()


def _try_json(body: bytes) -> Any:
    if not body:
        return None
    try:
        return _decode_any(body)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return None


def _text(value: object) -> str:
    text = value if isinstance(value, str) else msgspec.json.encode(value).decode()
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


def _messages(value: object) -> list[str]:
    if isinstance(value, list):
        return [_text(v) for v in value]
    return [_text(value)]


def _field_errors(value: object) -> dict[str, list[str]]:
    # An empty map is sometimes serialised as an empty list.
    if isinstance(value, dict):
        return {str(k): _messages(v) for k, v in value.items()}
    return {}


def _is_message_list_map(data: object) -> bool:
    return (
        isinstance(data, dict)
        and bool(data)
        and all(isinstance(v, list) and all(isinstance(m, str) for m in v) for v in data.values())
    )


def _is_message_map(data: object) -> bool:
    """``{field: [message, ...]}`` or ``{field: message}``."""
    return (
        isinstance(data, dict)
        and bool(data)
        and all(
            isinstance(v, str) or (isinstance(v, list) and all(isinstance(m, str) for m in v))
            for v in data.values()
        )
    )


def error_from_body(status: int, data: object, oauth: bool = False) -> ApiError | None:
    """The error an answer body describes, recognised by its shape; None when it is not one.

    ``oauth``: the answer is the OAuth refresh's, whose refusal is ``{data: {token: [...]}}``;
    the same shape in another operation's answer is a refusal only with an error status (at
    2xx it may be the operation's own data, such as a mining account's ``{data: {name: ...}}``).
    """
    if not isinstance(data, dict):
        return None
    code: int | None = None
    errors: dict[str, list[str]] = {}
    if "message" in data and ("code" in data or "errors" in data):
        # Private shape {code, message, errors}.
        raw_code = data.get("code")
        code = raw_code if isinstance(raw_code, int) and not isinstance(raw_code, bool) else None
        message_value = data.get("message")
        errors = _field_errors(data.get("errors"))
        if isinstance(message_value, dict):
            errors = {**_field_errors(message_value), **errors}
            message = "request refused"
        else:
            message = _text(message_value) if message_value is not None else "request refused"
    elif data.get("success") is False:
        # Public shapes {success: false, message, params} and {success: false, message: {...}}.
        message_value = data.get("message")
        if isinstance(message_value, dict):
            errors = _field_errors(message_value)
            message = "request refused"
        else:
            message = _text(message_value) if message_value is not None else "request refused"
    elif set(data) == {"data"} and _is_message_list_map(data["data"]) and (
        oauth or status >= 400
    ):
        messages = "; ".join(m for ms in data["data"].values() for m in ms)
        errors = _field_errors(data["data"])
        if oauth:
            # OAuth refusal {data: {token: [...]}}.
            return AuthenticationError(messages or "token refused", status=status, errors=errors)
        # Field messages under data, from another operation: classified as any refusal.
        message = messages or "request refused"
    elif set(data) == {"error"}:
        message = "; ".join(_messages(data["error"])) or "error"
        refusal = _refusal_for_place_or_access(status, message, code, errors)
        return refusal or ApiError(message, status=status, errors={})
    elif status >= 400 and (
        isinstance(data.get("message"), str) or _is_message_list_map(data.get("errors"))
    ):
        # A message alone ({"message": "API key not found"}) or field messages alone
        # ({"errors": {field: [message]}}), with an error status (the sub-account API keys'
        # and unconfirmed withdrawals' answers, openapi/private/main_api_v4.yaml).
        message = _text(data["message"]) if isinstance(data.get("message"), str) \
            else "Validation failed"
        errors = _field_errors(data.get("errors"))
    elif _is_message_map(data) and status >= 400:
        # Flat {field: [message]}, or {field: message} (funding-history's, in
        # openapi/public/http-v4.yaml).
        errors = _field_errors(data)
        refusal = _refusal_for_place_or_access(status, "Validation failed", code, errors)
        return refusal or ValidationError("Validation failed", status=status, errors=errors)
    else:
        return None

    lowered = message.lower()
    if any(t in lowered for t in _THROTTLE_MESSAGES):
        return RateLimitError(message, status=status, code=code, errors=errors)
    refusal = _refusal_for_place_or_access(status, message, code, errors)
    if refusal is not None:
        return refusal
    if status in (401, 403):
        return AuthenticationError(message, status=status, code=code, errors=errors)
    if (
        (code is not None and code in _VALIDATION_CODES)
        or "validation" in lowered
        or errors
        or status in (400, 422)
    ):
        return ValidationError(message, status=status, code=code, errors=errors)
    return ApiError(message, status=status, code=code, errors=errors)


def _refusal_for_place_or_access(
    status: int, message: str, code: int | None, errors: dict[str, list[str]]
) -> ApiError | None:
    """A refusal for where the account is (`RegionBlockedError`) or for what it may do
    (`PermissionDeniedError`), told by the status and the service's words; None for any
    other error."""
    lowered = message.lower()
    texts = [lowered, *(m.lower() for ms in errors.values() for m in ms)]
    if status in _REGION_REASONS or any(_REGION_WORDS in text for text in texts):
        reason = _REGION_REASONS.get(status, _REGION_REASON)
        return RegionBlockedError(message, status=status, code=code, errors=errors,
                                  reason=reason)
    for words, lacks in _LACKS:
        if words in lowered:
            return PermissionDeniedError(message, status=status, code=code, errors=errors,
                                         lacks=lacks)
    if status == 403 and not any(words in lowered for words in _SIGNING_WORDS):
        return PermissionDeniedError(message, status=status, code=code, errors=errors,
                                     lacks=_LACKS_AT_403)
    return None


def _error_without_body(status: int) -> TxcError:
    """The error of an error status whose answer has no JSON body."""
    if status in _REGION_REASONS:
        return RegionBlockedError("request refused", status=status,
                                  reason=_REGION_REASONS[status])
    if status == 403:
        return PermissionDeniedError("access refused", status=status, lacks=_LACKS_AT_403)
    if status == 401:
        # The gateway's refusal of the key, the signature or the nonce, with no body to say.
        return AuthenticationError("unauthorized: the key, its signature or the nonce was "
                                   "refused", status=status)
    if status == 503:
        return ServiceMaintenanceError(
            "the service is under maintenance: the gateway answered without a JSON body "
            "(the public platform_status says \"system maintenance\" while it lasts)",
            status=status,
        )
    if status >= 500:
        return TransportError("server error", status=status)
    return TransportError("the answer is not JSON", status=status)


def decode_answer(
    raw: RawResponse, decode: Callable[[bytes], T], signed: bool = True, oauth: bool = False
) -> T:
    """The typed result of ``raw``, or the error it carries. ``signed``: the request carried a
    nonce (only then can a JSON 429 be a refused nonce); ``oauth``: the answer is the OAuth
    refresh's (see `error_from_body`).

    Raises `RateLimited` / `NonceRefused` for refusals the client retries itself,
    [`AnswerFormatError`][txc_async.AnswerFormatError] for a success answer that cannot be read,
    [`ServiceMaintenanceError`][txc_async.ServiceMaintenanceError] for a 503 without a JSON body,
    [`TransportError`][txc_async.TransportError] for other answers with no usable content,
    [`ApiError`][txc_async.ApiError] subclasses for error bodies (whatever the status, 2xx
    included) and for the refusals a status says alone (453 and 451: a region block; 401;
    403: a permission the account lacks).
    """
    status, headers, body = raw
    if 200 <= status < 300:
        unreadable: AnswerFormatError | None = None
        try:
            result = decode(body)
        except AnswerFormatError as exc:
            unreadable = exc
        except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError, RecursionError):
            unreadable = AnswerFormatError("not the expected shape", body=body)
        else:
            if result:
                return result
        # An error body: one the answer's shape cannot read, or one its tolerant shape reads as
        # empty (no balance, ``False`` for ping: {"error": {...}} as a map of balances). Raised
        # outside the except clauses: no internal exception rides along as context.
        data = _try_json(body)
        if data is not None:
            error = error_from_body(status, data, oauth)
            if error is not None:
                _raise_error(error, headers, status)
        if unreadable is None:
            return result
        unreadable.status = status
        unreadable.__context__ = None
        raise unreadable
    if status == 429:
        data = _try_json(body)
        if data is None:
            raise RateLimited(
                RateLimitError(
                    "rate limit exceeded",
                    status=429,
                    retry_after=parse_retry_after(headers),
                )
            )
        error = error_from_body(status, data, oauth)
        if error is None or not signed or not _is_nonce_refusal(error.message):
            # A JSON 429 that is not about the nonce ("Too Many Attempts.", anything else):
            # a rate limit, which pauses the scope.
            raise RateLimited(
                RateLimitError(
                    error.message if error is not None else "rate limit exceeded",
                    status=429,
                    code=error.code if error is not None else None,
                    errors=error.errors if error is not None else {},
                    retry_after=parse_retry_after(headers),
                )
            )
        message = error.message
        raise NonceRefused(
            AuthenticationError(
                f"nonce refused: {message}",
                status=429,
                code=error.code,
                errors=error.errors,
            )
        )
    data = _try_json(body)
    if data is None:
        raise _error_without_body(status)
    if status >= 500:
        found = error_from_body(status, data, oauth)
        detail = f": {found.message}" if found is not None else ""
        raise TransportError(f"server error{detail}", status=status)
    error = error_from_body(status, data, oauth)
    if error is None:
        error = ApiError("unexpected error answer", status=status)
    _raise_error(error, headers, status)


def _raise_error(error: ApiError, headers: Mapping[str, str], status: int) -> NoReturn:
    if isinstance(error, RateLimitError):
        error.retry_after = parse_retry_after(headers)
        raise RateLimited(error, refused=status >= 400)
    raise error
