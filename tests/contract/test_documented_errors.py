"""Every error example the service's documentation gives, of every operation, raises its typed
error through the client's reading of an answer (`decode_answer`, as the request pipeline calls
it, then names the operation as the pipeline does): the class the documents' words and status
call for, the documented status, code and message, and the meaning the operation's page gives
of the code.

The examples are those of ``generator/error_facts.json`` (each error response's examples, its
schema's example, a response documented without a body, and the JSON error bodies of the
operation's description, answered with the status that lists their code), taken from
whitebit-exchange/docs at the commit it names."""

from __future__ import annotations

import pytest

import txc_async
from txc_async import (
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
from txc_async._answers.errors import NonceRefused, RateLimited, decode_answer
from txc_async._operations import Auth
from txc_async._transports.base import RawResponse

from .documents import Documented, error_facts, errors, facts, meaning

ERRORS = errors()

#: The service's words for a permission the account or the key lacks (whitebit-exchange/docs,
#: data/error-codes.yaml, authErrors; openapi/private/main_api_v4.yaml).
PERMISSION_WORDS = (
    "don't have permission to use this endpoint",
    "this action is unauthorized",
    "api key is not authorized",
)
#: An endpoint off for the account's region (the travel rule operations' examples).
REGION_WORDS = "disabled for your region"


def _texts(body: object) -> list[str]:
    """The message and the per-field messages of a documented error body, lowered."""
    if not isinstance(body, dict):
        return []
    found = [body["message"].lower()] if isinstance(body.get("message"), str) else []
    for value in (body.get("errors"), body.get("message")):
        if isinstance(value, dict):
            found += [m.lower() for ms in value.values() if isinstance(ms, list) for m in ms
                      if isinstance(m, str)]
    return found


def expected_error(example: Documented) -> type[TxcError]:
    """The error a documented answer calls for, by its status and the service's words."""
    status, texts = example.status, _texts(example.body)
    if example.body is None:
        # A status documented without a body: the gateway's answer.
        return {453: RegionBlockedError, 451: RegionBlockedError, 401: AuthenticationError,
                403: PermissionDeniedError, 503: ServiceMaintenanceError}.get(status,
                                                                              TransportError)
    if status in (451, 453) or any(REGION_WORDS in text for text in texts):
        return RegionBlockedError
    if any(words in text for text in texts[:1] for words in PERMISSION_WORDS) or status == 403:
        return PermissionDeniedError
    if any("too many attempts" in text for text in texts[:1]):
        return RateLimitError
    if status >= 500:
        return TransportError
    if status == 401:
        return AuthenticationError
    if set(example.body) == {"error"}:
        # {"error": [...]}: the service failed behind the gateway ("unable to get funding
        # history"), not a refused parameter.
        return ApiError
    if status in (400, 422):
        return ValidationError
    return ValidationError if isinstance(example.body, dict) and example.body.get("errors") \
        else ApiError


def read_error(example: Documented) -> TxcError:
    """The error the client makes of the documented answer, once its retries are spent."""
    operation = txc_async.OPERATIONS[example.operation]
    raw = RawResponse(example.status, {}, example.wire)
    try:
        decode_answer(raw, operation.decode, operation.auth is Auth.SIGNED,
                      operation.auth is Auth.FORM)
    except (RateLimited, NonceRefused) as signal:
        error: TxcError = signal.error
    except TxcError as exc:
        error = exc
    else:
        pytest.fail(f"{example.id} ({example.source}): read as a success")
    error._attach_operation(operation.name)
    return error


@pytest.mark.parametrize("example", ERRORS, ids=[e.id for e in ERRORS])
def test_a_documented_error_raises_its_typed_error(example: Documented) -> None:
    error = read_error(example)
    where = f"{example.id} ({example.source}, {example.documented_in})"
    assert type(error) is expected_error(example), f"{where}: {error!r}"
    assert isinstance(error, ApiError | TransportError), where
    assert error.status == example.status, where
    assert str(error).startswith(txc_async.OPERATIONS[example.operation].name + ":")
    if not isinstance(error, ApiError):
        return
    body = example.body
    code = body.get("code") if isinstance(body, dict) else None
    if isinstance(code, int) and not isinstance(code, bool):
        assert error.code == code, where
        assert error.meaning == meaning(example.operation, example.status, code), where
        if error.meaning is not None:
            assert error.meaning in str(error)
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        assert body["message"].rstrip(".") in error.message, where


def test_the_documented_permission_refusal_says_what_the_account_lacks() -> None:
    """The lending operations' 403 (B2B partners only): the error says what is missing, not
    that the request or the library failed."""
    example = next(e for e in ERRORS if e.operation == "get_fixed_plans" and e.status == 403)
    error = read_error(example)
    assert isinstance(error, PermissionDeniedError)
    assert isinstance(error, AuthenticationError)  # a 403 stays an AuthenticationError
    assert "B2B" in error.lacks and error.lacks in str(error)


def test_a_code_carries_the_meaning_its_operation_documents() -> None:
    """Code 32 on a collateral limit order: its page's "Error Codes" meaning."""
    examples = [e for e in ERRORS if e.operation == "create_limit_order"
                and isinstance(e.body, dict) and e.body.get("code") == 32]
    assert examples
    for example in examples:
        error = read_error(example)
        assert isinstance(error, ValidationError)
        assert error.meaning == "amount validation failed"


def test_every_documented_error_is_a_test() -> None:
    """Every operation's documented error statuses are covered, and the error facts come from
    the same documents as the facts."""
    assert error_facts()["source"]["commit"] == facts()["source"]["commit"]
    assert error_facts()["source"]["repository"] == "whitebit-exchange/docs"
    assert set(error_facts()["operations"]) == {op["name"] for op in facts()["operations"]}
    tested = {(e.operation, e.status) for e in ERRORS if e.documented_in != "description"}
    for op in facts()["operations"]:
        for response in op["errors"]["responses"]:
            # A status documented with an example body, or without a body at all.
            shown = response["example_shapes"] or response["content_type"] is None
            if isinstance(response["status"], int) and shown:
                assert (op["name"], response["status"]) in tested, (op["name"], response)
    assert len({e.id for e in ERRORS}) == len(ERRORS)
