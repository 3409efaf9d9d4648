"""A limiter named by a URL, for configuration files, environment variables and the command line."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from .._runtime import current_runtime
from .base import Limiter
from .redis import RedisLimiter
from .sqlite import SQLiteLimiter

__all__ = ["check_limiter_url", "default_limiter_url", "limiter_from_url"]

_SCHEMES = "memory://, sqlite:///path, redis://host:port/db or rediss://host:port/db"
#: The query parameters of a redis:// URL that are the limiter's own (the others are redis-py's).
_REDIS_OPTIONS = ("namespace", "nonce_namespace", "cluster")
_TRUE, _FALSE = ("1", "true", "yes"), ("0", "false", "no")


def default_limiter_url() -> str:
    """``sqlite:///`` + a file in this user's cache directory: what the command line shares its
    budgets through when neither ``--limiter`` nor ``TXC_LIMITER`` says otherwise, so a run
    started right after another (a rerun after Ctrl-C, a second backfill) keeps to the same
    windows."""
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return "sqlite:///" + str(base / "txc_async" / "budgets.sqlite3")


def check_limiter_url(url: object) -> str:
    """``url`` if it names a limiter [`limiter_from_url`][txc_async.limiter_from_url] can make
    (nothing is opened or connected), else a ``ValueError`` naming the accepted forms."""
    if not isinstance(url, str):
        raise ValueError(f"a limiter URL is a string ({_SCHEMES})")
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme == "memory":
        if parts.netloc or parts.path.strip("/"):
            raise ValueError("memory:// takes no host or path")
    elif scheme in ("redis", "rediss"):
        if not parts.netloc:
            # redis:/x or redis:///0 would put a password in the path, where it is not masked,
            # and make redis-py connect to localhost without a word.
            raise ValueError(f"{scheme}:// needs a host, e.g. {scheme}://127.0.0.1:6379/0")
        try:
            port = parts.port
        except ValueError:  # not a number, or out of range (the message would quote it)
            port = 0
        if port == 0:
            raise ValueError(f"{scheme}:// takes a port from 1 to 65535, e.g. "
                             f"{scheme}://127.0.0.1:6379/0")
        _redis_options(parts.query)
    elif scheme == "sqlite":
        if parts.netloc or not parts.path.strip("/"):
            raise ValueError("sqlite:// needs a file: sqlite:///relative/path or sqlite:////abs/path")
    else:
        # The URL itself is never quoted: a mistyped one may still hold a password.
        shown = f"{scheme}://" if scheme.isalpha() and "://" in url else "(no scheme)"
        raise ValueError(f"unknown limiter URL {shown}: use {_SCHEMES}")
    return url.strip()


def limiter_from_url(url: str) -> Limiter:
    """The limiter ``url`` names.

    * ``memory://``: budgets kept in this process (the ``InProcessLimiter`` that the clients
      given no limiter share: [`Runtime.limiter`][txc_async.Runtime.limiter]);
    * ``sqlite:///path`` (relative to the working directory; ``sqlite:////abs/path`` for an
      absolute one): budgets and nonces shared by every process of this machine through one
      SQLite file (``SQLiteLimiter``); its folder is made when missing;
    * ``redis://...`` or ``rediss://...`` (TLS): budgets shared through Redis by every process
      and machine using the same server (``RedisLimiter(url)``).

    A Redis URL's query may set the limiter's own options, which are taken out of the URL
    before redis-py reads it: ``namespace`` and ``nonce_namespace`` (see
    [`RedisLimiter`][txc_async.RedisLimiter]: one namespace per IP address the machines leave
    through, one nonce namespace per set of machines sharing API keys) and ``cluster`` (``1``
    or ``true`` for a Redis Cluster), e.g.
    ``redis://10.0.0.5:6379/0?namespace=eu-egress&nonce_namespace=txc``.

    Anything else is refused with a ``ValueError`` that names the accepted forms; the message
    never repeats the URL's password.
    """
    url = check_limiter_url(url)
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "memory":
        return current_runtime().limiter
    if scheme == "sqlite":
        path = Path(unquote(parts.path[1:]))
        path.parent.mkdir(parents=True, exist_ok=True)
        return SQLiteLimiter(path)
    options = _redis_options(parts.query)
    rest = urlencode([
        (name, value) for name, value in parse_qsl(parts.query, keep_blank_values=True)
        if name not in _REDIS_OPTIONS
    ])
    return RedisLimiter(
        urlunsplit(parts._replace(query=rest)),
        namespace=options.get("namespace", "txc"),
        nonce_namespace=options.get("nonce_namespace"),
        cluster=options.get("cluster") in _TRUE,
    )


def _redis_options(query: str) -> dict[str, str]:
    """The limiter's own options in a redis:// URL's query, checked (a ``ValueError`` names
    the one that is wrong; redis-py's own parameters are left to it)."""
    options: dict[str, str] = {}
    for name, value in parse_qsl(query, keep_blank_values=True):
        if name not in _REDIS_OPTIONS:
            continue
        if name in options:
            raise ValueError(f"{name}: given twice in the limiter URL")
        if name == "cluster":
            if value.lower() not in _TRUE + _FALSE:
                raise ValueError(f"cluster: must be one of {', '.join(_TRUE + _FALSE)}")
            value = value.lower()
        elif not value or any(c in value for c in ":{}"):
            raise ValueError(f"{name}: must be a non-empty string without ':', '{{' or '}}'")
        options[name] = value
    return options
