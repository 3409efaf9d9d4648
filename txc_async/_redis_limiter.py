"""Budgets kept in Redis, shared by every process and machine that uses one API key.

Each budget is a sliding-window log in a sorted set, updated by one atomic Lua script that reads
Redis's own clock, so every process measures time alike. Nonces come from one counter per API key
on the server's clock, as each caller estimates it. Within a process, waiters queue
first-in-first-out and only the head asks Redis.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
import os
import random as _random
import secrets
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

from ._clock import budget_clock
from ._errors import TransportError
from ._ratelimit import RateLimit
from ._scheduler import FifoTurns, backoff_pause, check_jitter_allowance, default_jitter_allowance

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.commands.core import AsyncScript

__all__ = ["RedisLimiter"]

# KEYS[1]: the log (a sorted set of admission times in microseconds, one unique member each);
# KEYS[2]: the pause key; KEYS[3]: the API key's nonce counter.
# ARGV: max_requests, the window in microseconds, this admission's member, how far (ms) the
# nonce may run ahead of the server's clock (the lead, less the estimate's uncertainty), the
# server's time now (ms) as the caller estimates it, and the highest nonce the server can have
# accepted so far (ms: the latest its clock can read plus its nonce window), or 0 when the caller
# has seen no answer yet and its "server time" is only its wall clock: it then never brings the
# counter back, and does not wait for a counter more than twice the lead ahead of it (processes
# that measured the server's clock drew it).
# The log is on Redis's clock (spacing between admissions); the nonce counter only ever sees the
# server's clock, never Redis's: mixing the two would push nonces off the server's window.
# Returns {0, nonce} when admitted, else {microseconds to wait before asking again, 0}.
_ADMIT = """
if redis.replicate_commands then
  redis.replicate_commands() -- Redis before 5 must be told TIME may precede writes
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local paused = redis.call('PTTL', KEYS[2])
if paused > 0 then
  return {paused * 1000, 0}
end
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
if count >= limit then
  local blocking = redis.call('ZRANGE', KEYS[1], count - limit, count - limit, 'WITHSCORES')
  return {math.max(1, tonumber(blocking[2]) + window - now), 0}
end
local server_ms = tonumber(ARGV[5])
local last = tonumber(redis.call('GET', KEYS[3]) or '0')
local ceiling = tonumber(ARGV[6])
if ceiling > 0 and last > ceiling then
  -- Drawn on an estimate of the server's clock that has since moved back (or by a process whose
  -- estimate was off). The server refuses, and never records, a nonce more than its window
  -- ahead of its clock, so no value above the ceiling can have been accepted: the counter comes
  -- back to it (kept, so the wait below is one wait) instead of waiting for the server's clock.
  last = ceiling
  redis.call('SET', KEYS[3], last, 'PX', 60000)
end
local nonce = math.max(server_ms, last + 1)
local lead = tonumber(ARGV[4])
local ahead = nonce - server_ms - lead
if ahead > 0 and (ceiling > 0 or ahead <= lead) then
  return {ahead * 1000, 0}
end
redis.call('ZADD', KEYS[1], now, ARGV[3])
redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000) + 1000)
redis.call('SET', KEYS[3], nonce, 'PX', 60000)
return {0, nonce}
"""

# KEYS[1]: the pause key; ARGV[1]: the pause in milliseconds. A longer pause already set stays.
_PAUSE = """
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
end
return 0
"""


def _passwords(url: str) -> list[str]:
    """Every spelling of the URL's passwords (in the authority and in the query)."""
    parts = urlsplit(url)
    found = [parts.password] if parts.password else []
    found += [value for name, value in parse_qsl(parts.query) if name == "password" and value]
    return [s for p in found for s in {p, unquote(p), quote(p, safe="")}]


def _safe_url(url: str) -> str:
    """The URL with its passwords masked, for messages."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        netloc = f"{quote(parts.username or '', safe='')}:***@{netloc.rsplit('@', 1)[1]}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, "***" if k == "password" else v) for k, v in pairs], safe="*")
    return urlunsplit(parts._replace(netloc=netloc, query=query))


class RedisLimiter:
    """A :class:`txc_async.Limiter` whose budgets live in Redis.

    Give every process that uses one API key a ``RedisLimiter`` on the same Redis and
    ``namespace``: together they never send more than a scope's limit in any window (with the
    same jitter allowance as :class:`txc_async.InProcessLimiter`), and they draw nonces from one
    counter per API key, so no two processes send the same nonce. Budget keys are
    ``{namespace}:{scope}:{key_id}`` (its pause ``…:pause``, the nonce counter
    ``{namespace}:nonce:{key_id}``), where the key id is a hash of the server and API key; every
    key expires once its window has passed.

    If Redis cannot be reached, :meth:`acquire` raises :class:`txc_async.TransportError` rather
    than let requests go out unlimited. A limiter belongs to one event loop (its connections
    do). Needs ``pip install 'txc_async[redis]'``.
    """

    def __init__(
        self,
        url: str,
        *,
        namespace: str = "txc",
        jitter_allowance: float | None = None,
        timeout: float = 5.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        random: Callable[[], float] | None = None,
    ) -> None:
        try:
            import redis.asyncio as redis_asyncio
        except ImportError:
            raise ImportError(
                "RedisLimiter needs redis-py: pip install 'txc_async[redis]'"
            ) from None
        if not isinstance(namespace, str) or not namespace or ":" in namespace:
            raise ValueError("namespace: must be a non-empty string without ':'")
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not (
            0 < timeout < math.inf
        ):
            raise ValueError("timeout: must be a finite number of seconds greater than 0")
        self._allowance = check_jitter_allowance(jitter_allowance)
        self._timeout = float(timeout)
        self._safe_url = _safe_url(url)
        self._secrets = _passwords(url)
        try:
            # No socket_timeout: redis-py then sends through asyncio.wait_for, which on Python
            # 3.11 can swallow a cancellation; every call is bounded by asyncio.timeout instead.
            self._redis: Redis = redis_asyncio.Redis.from_url(
                url, socket_connect_timeout=self._timeout
            )
        except ValueError as exc:
            raise ValueError(f"url: {self._scrub(str(exc))}") from None
        self._namespace = namespace
        self._sleep = sleep
        self._random = random if random is not None else _random.random
        self._admit: AsyncScript = self._redis.register_script(_ADMIT)
        self._pause: AsyncScript = self._redis.register_script(_PAUSE)
        self._turns: dict[str, FifoTurns] = {}
        self._streaks: dict[str, int] = {}
        # Members must be unique across every process: pid and random bits, then a counter.
        self._member_prefix = f"{os.getpid()}-{secrets.token_hex(6)}-"
        self._members = itertools.count()
        self._cleanups: set[asyncio.Task[None]] = set()

    def __repr__(self) -> str:
        return f"RedisLimiter({self._safe_url!r}, namespace={self._namespace!r})"

    @property
    def namespace(self) -> str:
        return self._namespace

    def budget_key(self, key_id: str, scope: str) -> str:
        """The Redis key of a budget's log; its pause key adds ``:pause``."""
        return f"{self._namespace}:{scope}:{key_id}"

    def nonce_key(self, key_id: str) -> str:
        """The Redis key of the nonce counter every scope of one API key draws from."""
        return f"{self._namespace}:nonce:{key_id}"

    def window(self, limit: RateLimit) -> float:
        """The span, in seconds, in which at most ``limit.max_requests`` requests are admitted."""
        allowance = self._allowance
        if allowance is None:
            allowance = default_jitter_allowance(limit.per_seconds)
        return limit.per_seconds + allowance

    def _scrub(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    async def _run(self, script: AsyncScript, keys: list[str], args: list[Any]) -> Any:
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import RedisError
        from redis.exceptions import TimeoutError as RedisTimeoutError

        try:
            async with asyncio.timeout(self._timeout):
                return await script(keys=keys, args=args)
        except TimeoutError:
            what = "unreachable"
            detail = f"no answer within {self._timeout:g} s"
        except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
            what = "unreachable"
            detail = f"{type(exc).__name__}: {exc}"
        except RedisError as exc:
            what = "failed"
            detail = f"{type(exc).__name__}: {exc}"
        # Chained exceptions are left out: the message says what happened, without the password.
        raise TransportError(
            f"rate-limit store {what}: {self._safe_url}: {self._scrub(detail)}",
            may_have_reached_server=False,
        )

    async def acquire(self, key_id: str, scope: str, limit: RateLimit) -> int:
        """Wait for the budget, then return the nonce to sign with: drawn in Redis from one
        counter per API key, so processes sharing a key never send the same nonce, on the
        server's clock as estimated by the client of ``key_id``."""
        key = self.budget_key(key_id, scope)
        keys = [key, key + ":pause", self.nonce_key(key_id)]
        window_us = round(self.window(limit) * 1_000_000)
        turns = self._turns.get(key)
        if turns is None:
            turns = self._turns.setdefault(key, FifoTurns())
        clock = budget_clock(key_id)
        task = asyncio.current_task()
        cancels = task.cancelling() if task is not None else 0
        ticket = await turns.enter()
        try:
            while True:
                member = f"{self._member_prefix}{next(self._members)}"
                server_ms, lead_ms = clock.reading()
                ceiling_ms = clock.ceiling_ms() if clock.samples else 0
                args = [limit.max_requests, window_us, member, lead_ms, server_ms, ceiling_ms]
                try:
                    wait_us, nonce = await self._run(self._admit, keys, args)
                    if task is not None and task.cancelling() > cancels:
                        # Cancelled while Redis answered, and the cancellation got lost on
                        # the way (a library swallowed it): honour it all the same.
                        raise asyncio.CancelledError
                except asyncio.CancelledError:
                    # The script may have admitted this member before the answer came back:
                    # give the slot back, since no request will use it.
                    self._forget(key, member)
                    raise
                if int(wait_us) <= 0:
                    return int(nonce)
                await self._sleep(int(wait_us) / 1_000_000)
        finally:
            turns.leave(ticket)

    def _forget(self, key: str, member: str) -> None:
        try:
            task = asyncio.get_running_loop().create_task(self._remove(key, member))
        except RuntimeError:  # the loop is shutting down: the entry expires with the window
            return
        self._cleanups.add(task)
        task.add_done_callback(self._cleanups.discard)

    async def _remove(self, key: str, member: str) -> None:
        from redis.exceptions import RedisError

        # On failure the entry simply expires with the window.
        with contextlib.suppress(RedisError, OSError):
            await self._redis.zrem(key, member)

    async def rate_limited(
        self, key_id: str, scope: str, limit: RateLimit, retry_after: float | None
    ) -> float:
        key = self.budget_key(key_id, scope)
        streak = self._streaks.get(key, 0)
        pause = backoff_pause(streak, retry_after, self._random)
        self._streaks[key] = streak + 1
        await self._run(self._pause, [key + ":pause"], [max(1, round(pause * 1000))])
        return pause

    def succeeded(self, key_id: str, scope: str) -> None:
        self._streaks.pop(self.budget_key(key_id, scope), None)

    async def aclose(self) -> None:
        """Close the connections to Redis (after giving back slots of cancelled waiters)."""
        if self._cleanups:
            await asyncio.gather(*self._cleanups, return_exceptions=True)
        await self._redis.aclose()
