"""Budgets kept in Redis, shared by every process and machine that uses one API key.

Each budget is a sliding-window log in a sorted set, updated by one atomic Lua script that reads
Redis's own clock, so every process measures time alike. Within a process, waiters queue
first-in-first-out and only the head asks Redis.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import random as _random
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ._errors import TransportError
from ._ratelimit import RateLimit
from ._scheduler import FifoTurns, backoff_pause, default_jitter_allowance
from ._signing import MAX_NONCE_LEAD_MS

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["RedisLimiter"]

# KEYS[1]: the log (sorted set of admission times in microseconds); KEYS[2]: the pause key;
# KEYS[3]: the key's nonce counter. ARGV: max_requests, window in microseconds, a unique member,
# the most the nonce may run ahead of the clock in milliseconds.
# Returns {0, nonce} when admitted, else {microseconds to wait before asking again, 0}.
_ADMIT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local pause = redis.call('PTTL', KEYS[2])
if pause > 0 then
  return {pause * 1000, 0}
end
local now_ms = math.floor(now / 1000)
local nonce = math.max(now_ms, tonumber(redis.call('GET', KEYS[3]) or '0') + 1)
if nonce - now_ms > tonumber(ARGV[4]) then
  return {(nonce - now_ms - tonumber(ARGV[4])) * 1000, 0}
end
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], math.floor(window / 1000) + 1000)
  redis.call('SET', KEYS[3], nonce, 'PX', 60000)
  return {0, nonce}
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {math.max(1, tonumber(oldest[2]) + window - now), 0}
"""

# KEYS[1]: the pause key; ARGV[1]: the pause in milliseconds. A longer pause already set stays.
_PAUSE = """
local left = redis.call('PTTL', KEYS[1])
if left < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
end
return 0
"""


def _safe_url(url: str) -> str:
    """The URL without its password, for messages."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = f"{parts.username}:***@" if parts.username else ":***@"
    return urlunsplit(parts._replace(netloc=user + netloc))


class RedisLimiter:
    """A :class:`txc_async.Limiter` whose budgets live in Redis.

    Give every process that uses one API key a ``RedisLimiter`` on the same Redis and
    ``namespace``: together they never send more than a scope's limit in any window, and they
    draw nonces from one counter per API key, so no two processes send the same nonce. Budget
    keys are ``{namespace}:{scope}:{key id}`` (the nonce counter ``{namespace}:nonce:{key id}``),
    where the key id is a hash of the server and API key.
    If Redis cannot be reached, requests fail with :class:`TransportError` rather than go out
    unlimited. Needs ``pip install 'txc_async[redis]'``.
    """

    def __init__(
        self,
        url: str,
        *,
        namespace: str = "txc",
        jitter_allowance: float | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        random: Callable[[], float] = _random.random,
    ) -> None:
        try:
            import redis.asyncio as redis_asyncio
        except ImportError:  # pragma: no cover - depends on the installation
            raise ImportError(
                "RedisLimiter needs redis-py: pip install 'txc_async[redis]'"
            ) from None
        if not namespace or ":" in namespace:
            raise ValueError("namespace: must be a non-empty string without ':'")
        if jitter_allowance is not None and not jitter_allowance >= 0:
            raise ValueError("jitter_allowance: must be a number of seconds, at least 0")
        self._url = url
        self._namespace = namespace
        self._allowance = jitter_allowance
        self._sleep = sleep
        self._random = random
        self._redis: Redis = redis_asyncio.Redis.from_url(
            url, socket_connect_timeout=5, socket_timeout=5
        )
        self._admit = self._redis.register_script(_ADMIT)
        self._pause = self._redis.register_script(_PAUSE)
        self._turns: dict[str, FifoTurns] = {}
        self._streaks: dict[str, int] = {}
        self._members = itertools.count()
        self._member_prefix = f"{os.getpid()}-{id(self):x}-{_random.getrandbits(32):x}-"

    def __repr__(self) -> str:
        return f"RedisLimiter({_safe_url(self._url)!r}, namespace={self._namespace!r})"

    def budget_key(self, key_id: str, scope: str) -> str:
        """The Redis key of a budget's log (its pause key adds ``:pause``)."""
        return f"{self._namespace}:{scope}:{key_id}"

    async def _run(self, script: Any, keys: list[str], args: list[Any]) -> Any:
        from redis.exceptions import RedisError

        try:
            return await script(keys=keys, args=args)
        except (RedisError, OSError) as exc:
            raise TransportError(
                f"rate-limit store unreachable at {_safe_url(self._url)}: {type(exc).__name__}",
                may_have_reached_server=False,
            ) from None

    async def acquire(self, key_id: str, scope: str, limit: RateLimit) -> int:
        """Wait for the budget, then return the nonce to sign with: drawn in Redis from one
        counter per key, so processes sharing a key never send the same nonce."""
        key = self.budget_key(key_id, scope)
        nonce_key = f"{self._namespace}:nonce:{key_id}"
        allowance = (
            self._allowance
            if self._allowance is not None
            else default_jitter_allowance(limit.per_seconds)
        )
        window_us = int((limit.per_seconds + allowance) * 1_000_000)
        turns = self._turns.get(key)
        if turns is None:
            turns = self._turns[key] = FifoTurns()
        ticket = await turns.enter()
        try:
            while True:
                member = f"{self._member_prefix}{next(self._members)}"
                wait_us, nonce = await self._run(
                    self._admit,
                    [key, key + ":pause", nonce_key],
                    [limit.max_requests, window_us, member, MAX_NONCE_LEAD_MS],
                )
                if int(wait_us) <= 0:
                    return int(nonce)
                await self._sleep(int(wait_us) / 1_000_000)
        finally:
            turns.leave(ticket)

    async def rate_limited(
        self, key_id: str, scope: str, limit: RateLimit, retry_after: float | None
    ) -> float:
        key = self.budget_key(key_id, scope)
        streak = self._streaks.get(key, 0)
        pause = backoff_pause(streak, retry_after, self._random)
        self._streaks[key] = streak + 1
        await self._run(self._pause, [key + ":pause"], [max(1, int(pause * 1000))])
        return pause

    def succeeded(self, key_id: str, scope: str) -> None:
        self._streaks.pop(self.budget_key(key_id, scope), None)

    async def aclose(self) -> None:
        await self._redis.aclose()
