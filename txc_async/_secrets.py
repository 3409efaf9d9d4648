"""Keeping secrets out of what the library shows: the spellings in which a server may quote a
secret back, masking them in an error and everything reachable from it, and the secrets of a
store's URL with the URL masked for messages."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any, AnyStr
from urllib.parse import quote, quote_plus, unquote, unquote_plus, urlsplit, urlunsplit

__all__ = ["MIN_MASKED", "mask_secrets", "mask_text", "safe_url", "url_secrets"]

#: The shortest secret `mask_secrets` masks.
MIN_MASKED = 6


def _spellings(secret: str) -> set[str]:
    """How a server quoting ``secret`` back may spell it: as sent, form-encoded, or escaped in
    JSON text."""
    return {
        secret,
        quote_plus(secret),
        quote(secret, safe=""),
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


def mask_text(text: str, secrets: list[str]) -> str:
    """``text`` with every one of ``secrets`` (longest first), and one cut off at its end,
    masked."""
    return _masked(text, secrets, "…", "***")


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


# Query parameters whose values are secret (redis-py passes every query parameter on as a
# connection argument: password, ssl_password, ...).
_SECRET_PARAMETER = re.compile(r"pass|secret|token|auth|cred", re.IGNORECASE)


def _query_pieces(query: str) -> list[tuple[str, str, bool]]:
    """``(raw name, raw value, secret?)`` of every ``name=value`` piece, undecoded."""
    pieces = []
    for piece in query.split("&"):
        name, _, value = piece.partition("=")
        pieces.append((name, value, bool(_SECRET_PARAMETER.search(unquote_plus(name)))))
    return pieces


def url_secrets(url: str) -> list[str]:
    """Every spelling of every secret of the URL: the user-info's password (or the whole
    user-info when it has no password: it may be a token) and secret query values, raw and
    decoded; longest first, so that scrubbing leaves no piece of a longer one."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return [url]
    if not parts.netloc and "@" in url:
        # Credentials outside the place a URL keeps them (redis:/user:pw@host): all of it, as
        # `safe_url` shows none of it.
        return [url]
    found: list[str] = []
    userinfo, at, _ = parts.netloc.rpartition("@")
    if at:
        user, colon, password = userinfo.partition(":")
        found.append(password if colon else user)
    found += [value for _, value, secret in _query_pieces(parts.query) if secret]
    spellings = {
        s
        for p in found
        if p
        for s in (p, unquote(p), unquote_plus(p), quote(unquote(p), safe=""),
                  quote_plus(unquote_plus(p), safe=""))
    }
    return sorted(spellings, key=len, reverse=True)


def safe_url(url: str) -> str:
    """The URL with its secrets masked, for messages and repr."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<a URL that cannot be parsed>"
    netloc = parts.netloc
    if not netloc and "@" in url:
        # Credentials outside the place a URL keeps them (redis:/user:pw@host): none of it shown.
        return f"{parts.scheme}:***"
    userinfo, at, hostport = netloc.rpartition("@")
    if at:
        user, colon, _ = userinfo.partition(":")
        netloc = f"{user}:***@{hostport}" if colon else f"***@{hostport}"
    query = "&".join(
        f"{name}=***" if secret else piece
        for (name, _, secret), piece in zip(
            _query_pieces(parts.query), parts.query.split("&"), strict=True
        )
    )
    return urlunsplit(parts._replace(netloc=netloc, query=query))
