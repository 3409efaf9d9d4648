"""How the sandbox reads a request's body and writes its answers: JSON responses, refusals in
the service's validation shape, and where parameters arrive as text."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

import msgspec
from aiohttp import web

from ._table import Refusal, Where

__all__ = [
    "HTML_429", "TEXT", "TEXT_FORM", "decode", "encode", "form", "json_body", "json_response",
    "validation",
]

encode = msgspec.json.Encoder().encode
decode = msgspec.json.Decoder().decode

#: The service's rate-limit refusal: a 429 that is not JSON.
HTML_429 = b"<html><head><title>429 Too Many Requests</title></head><body>429</body></html>"
#: Where the parameters of a request arrive as text: a path and a query string always, a form
#: body too.
TEXT: frozenset[Where] = frozenset({"path", "query"})
TEXT_FORM: frozenset[Where] = frozenset({"path", "query", "body"})


def validation(status: int, code: int, message: str, errors: Mapping[str, list[str]]) -> Refusal:
    """A refusal in the service's validation shape: ``code``, ``message`` and field ``errors``."""
    return Refusal(status, {"code": code, "message": message, "errors": dict(errors)})


def json_response(status: int, body: Any, headers: Mapping[str, str] | None = None) -> web.Response:
    """``body`` (JSON-able) as a JSON answer of ``status``."""
    return web.Response(
        status=status, body=encode(body), content_type="application/json", headers=headers
    )


def form(body: bytes) -> dict[str, Any]:
    """A form body's fields (the first value of each)."""
    try:
        pairs = parse_qs(body.decode(), keep_blank_values=True)
    except UnicodeDecodeError:
        return {}
    return {name: values[0] for name, values in pairs.items()}


def json_body(body: bytes) -> dict[str, Any]:
    """A JSON body's fields; a body that is not a JSON object is refused."""
    try:
        params = decode(body)
    except msgspec.DecodeError:
        raise validation(400, 0, "Invalid JSON body", {}) from None
    if not isinstance(params, dict):
        raise validation(400, 0, "Invalid JSON body", {})
    return params
