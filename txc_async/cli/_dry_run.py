"""``--dry-run``: the request a command would send, built by the client itself and never sent.

A client whose transport captures the request instead of sending it runs the operation: the
client's own checks refuse bad input exactly as for a real call, and the body is the one it
would sign. That client has a budget of its own (a private in-memory limiter) and a placeholder
key, so no budget of the real key is drawn on and no nonce of its counter is used.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn

import txc_async

if TYPE_CHECKING:
    pass

#: Stands for the key and secret while a request is built: never sent, never shown.
_PLACEHOLDER_KEY = "txc-async-dry-run-key"
_PLACEHOLDER_SECRET = "txc-async-dry-run-secret"
#: What the body shows for the nonce, drawn only when a request leaves.
NONCE_PLACEHOLDER = "<nonce: Unix milliseconds, drawn when sent>"
_NONCE = re.compile(rb'"nonce":"\d+"')
#: Form fields that are secrets (OAuth).
_SECRET_FIELDS = frozenset({"client_secret", "token"})


@dataclass(frozen=True)
class CapturedRequest:
    """What the client handed its transport: method, URL, headers and body."""

    method: str
    url: str
    headers: Mapping[str, str]
    body: bytes | None


class _Captured(Exception):
    """Raised by the capturing transport in place of sending: the request it was given."""

    def __init__(self, request: CapturedRequest) -> None:
        super().__init__("dry run: captured, not sent")
        self.request = request


def _capture(request: txc_async.MockRequest) -> NoReturn:
    raise _Captured(
        CapturedRequest(request.method, str(request.url), dict(request.headers or {}),
                        request.body)
    )


class _CapturingTransport(txc_async.MockTransport):
    """A transport that sends nothing: it raises the request it was handed."""

    def __init__(self) -> None:
        super().__init__(_capture)

    def sent_nothing(self) -> bool:
        return True


async def capture(
    base_url: str, run: Callable[[txc_async.Client], Awaitable[object]]
) -> CapturedRequest:
    """The first request ``run`` makes of a client bound to ``base_url``, captured unsent.

    Raises what the client raises before sending (``InvalidParameterError`` for bad input).
    """
    async with txc_async.Client(
        _PLACEHOLDER_KEY, _PLACEHOLDER_SECRET, base_url=base_url,
        limiter=txc_async.InProcessLimiter(), transport=_CapturingTransport(),
    ) as client:
        try:
            await run(client)
        except _Captured as captured:
            return captured.request
    raise RuntimeError("the operation sent no request")  # pragma: no cover


def mask_key(key: str | None) -> str:
    """An API key as it may be shown: its first 4 characters and its length, or 'not set'."""
    if not key:
        return "not set (TXC_API_KEY or a profile's api_key)"
    shown = key[:4] if len(key) >= 12 else ""
    return f"{shown}… ({len(key)} characters)"


def _hidden(value: str) -> str:
    return f"<hidden: {len(value)} characters>"


def _is_form(request: CapturedRequest) -> bool:
    return request.headers.get("Content-Type") == "application/x-www-form-urlencoded"


def _form_fields(request: CapturedRequest) -> dict[str, str]:
    """The fields of a form body, secrets hidden."""
    fields = urllib.parse.parse_qsl((request.body or b"").decode(), keep_blank_values=True)
    return {name: _hidden(value) if name in _SECRET_FIELDS else value for name, value in fields}


def body_text(request: CapturedRequest) -> str | None:
    """The body as it would be sent, the nonce replaced by a placeholder and secrets hidden."""
    if request.body is None:
        return None
    if _is_form(request):
        return "&".join(f"{name}={value}" for name, value in _form_fields(request).items())
    placeholder = json.dumps({"nonce": NONCE_PLACEHOLDER}, separators=(",", ":"))[1:-1]
    return _NONCE.sub(placeholder.encode().replace(b"\\", b"\\\\"), request.body).decode()


def describe(request: CapturedRequest, api_key: str | None) -> dict[str, object]:
    """The request as data: method, URL, the headers that matter (the key masked, no
    signature) and the body."""
    headers: dict[str, str] = {}
    content_type = request.headers.get("Content-Type")
    if content_type:
        headers["Content-Type"] = content_type
    signed = "X-TXC-SIGNATURE" in request.headers
    if signed:
        headers["X-TXC-APIKEY"] = mask_key(api_key)
        headers["X-TXC-PAYLOAD"] = "<base64 of the body, made when sent>"
        headers["X-TXC-SIGNATURE"] = "<HMAC-SHA512 of the payload, made when sent>"
    text = body_text(request)
    body: object = None
    if _is_form(request):
        body = _form_fields(request)
    elif text is not None:
        body = json.loads(text)
    return {"method": request.method, "url": request.url, "headers": headers, "body": body}


def render(request: CapturedRequest, api_key: str | None) -> str:
    """The request as an operator reads it: the request line, the headers, the body."""
    described = describe(request, api_key)
    lines = [f"{request.method} {request.url}"]
    headers = described["headers"]
    assert isinstance(headers, dict)
    lines += [f"{name}: {value}" for name, value in headers.items()]
    text = body_text(request)
    if text is not None:
        lines += ["", text]
    return "\n".join(lines)
