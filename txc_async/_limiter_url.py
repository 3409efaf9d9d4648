"""A limiter named by a URL, for configuration files, environment variables and the command line."""

from __future__ import annotations

from urllib.parse import urlsplit

from ._ratelimit import Limiter
from ._redis_limiter import RedisLimiter
from ._scheduler import default_limiter

__all__ = ["limiter_from_url"]

_SCHEMES = "memory://, sqlite:///path, redis://host:port/db or rediss://host:port/db"


def limiter_from_url(url: str) -> Limiter:
    """The limiter ``url`` names.

    * ``memory://``: budgets kept in this process (the ``InProcessLimiter`` every client of the
      process shares by default);
    * ``redis://...`` or ``rediss://...`` (TLS): budgets shared through Redis by every process
      and machine using the same server (``RedisLimiter(url)``).

    Anything else is refused with a ``ValueError`` that names the accepted forms; the message
    never repeats the URL's password.
    """
    if not isinstance(url, str):
        raise ValueError(f"a limiter URL is a string ({_SCHEMES})")
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme == "memory":
        if parts.netloc or parts.path.strip("/"):
            raise ValueError("memory:// takes no host or path")
        return default_limiter()
    if scheme in ("redis", "rediss"):
        if not parts.hostname and not parts.path:
            raise ValueError(f"{scheme}:// needs a host, e.g. {scheme}://127.0.0.1:6379/0")
        return RedisLimiter(url.strip())
    if scheme == "sqlite":
        raise ValueError(
            "sqlite:// limiters are not available in this version of txc_async; "
            "use memory:// or redis://"
        )
    shown = f"{scheme}://" if scheme else repr(url.split("@")[-1][:40])
    raise ValueError(f"unknown limiter URL {shown}: use {_SCHEMES}")
