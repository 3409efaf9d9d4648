"""Budgets kept in Redis, shared by every process and machine that uses one API key.

Each budget is a sliding-window log in a sorted set, updated by one atomic Lua script that reads
Redis's own clock, so every process measures time alike. Within a process, waiters queue
first-in-first-out and only the head asks Redis.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
import os
import random as _random
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, quote_plus, unquote, unquote_plus, urlsplit, urlunsplit

from ._backoff import RefusalState
from ._errors import TransportError
from ._ratelimit import Admission, Outcome, RateLimit
from ._scheduler import FifoTurns
from ._signing import MAX_NONCE_LEAD_MS

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.commands.core import AsyncScript

__all__ = ["RedisLimiter"]

# KEYS[1]: the log (a sorted set of admission times in microseconds, one unique member each);
# KEYS[2]: the pause key; KEYS[3]: the API key's nonce counter.
# ARGV: max_requests, the window in microseconds, this admission's member, how far (ms) the
# nonce may run ahead of the clock.
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
local now_ms = math.floor(now / 1000)
local nonce = math.max(now_ms, tonumber(redis.call('GET', KEYS[3]) or '0') + 1)
local ahead = nonce - now_ms - tonumber(ARGV[4])
if ahead > 0 then
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


def default_jitter_allowance(per_seconds: float) -> float:
    """How much longer than ``per_seconds`` the admission window is: 5 % of it, 50..250 ms."""
    return min(0.25, max(0.05, 0.05 * per_seconds))


def check_jitter_allowance(value: float | None) -> float | None:
    """``value`` if it is None or a finite number of seconds of at least 0, else ValueError."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
        math.isfinite(value) and value >= 0
    ):
        raise ValueError("jitter_allowance: must be a finite number of seconds, at least 0")
    return float(value)
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


def _passwords(url: str) -> list[str]:
    """Every spelling of every secret of the URL: the user-info's password (or the whole
    user-info when it has no password: it may be a token) and secret query values, raw and
    decoded; longest first, so that scrubbing leaves no piece of a longer one."""
    try:
        parts = urlsplit(url)
    except ValueError:
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


def _safe_url(url: str) -> str:
    """The URL with its secrets masked, for messages and repr."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<a URL that cannot be parsed>"
    netloc = parts.netloc
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
        problem: str | None = None
        try:
            # No socket_timeout: redis-py then sends through asyncio.wait_for, which on Python
            # 3.11 can swallow a cancellation; every call is bounded by asyncio.timeout instead.
            self._redis: Redis = redis_asyncio.Redis.from_url(
                url, socket_connect_timeout=self._timeout
            )
        except ValueError as exc:
            problem = self._scrub(str(exc))
        if problem is not None:
            # Raised outside the except clause: redis-py's error, which may quote the URL, is
            # not kept as the context.
            raise ValueError(f"url: {problem}")
        self._namespace = namespace
        self._sleep = sleep
        self._random = random if random is not None else _random.random
        self._admit: AsyncScript = self._redis.register_script(_ADMIT)
        self._pause: AsyncScript = self._redis.register_script(_PAUSE)
        self._turns: dict[str, FifoTurns] = {}
        self._refusals: dict[str, RefusalState] = {}
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
        except (RedisError, TypeError, ValueError) as exc:
            # TypeError/ValueError: redis-py refusing a URL parameter when it first connects.
            what = "failed"
            detail = f"{type(exc).__name__}: {exc}"
        # Chained exceptions are left out: the message says what happened, without the password.
        raise TransportError(
            f"rate-limit store {what}: {self._safe_url}: {self._scrub(detail)}",
            may_have_reached_server=False,
        )

    def try_acquire(
        self, key_id: str, scope: str, limit: RateLimit, timeout: float
    ) -> Admission | None:
        """Always None: only Redis can tell whether the budget has room."""
        return None

    async def acquire(
        self,
        key_id: str,
        scope: str,
        limit: RateLimit,
        timeout: float,
        nonce_clock: Callable[[], int] | None = None,
    ) -> Admission:
        """Wait for the budget, then return the admission with the nonce to sign with: drawn in
        Redis from one counter per API key, so processes sharing a key never send the same
        nonce."""
        key = self.budget_key(key_id, scope)
        keys = [key, key + ":pause", self.nonce_key(key_id)]
        window_us = round(self.window(limit) * 1_000_000)
        turns = self._turns.get(key)
        if turns is None:
            turns = self._turns.setdefault(key, FifoTurns())
        refusals = self._refusal_state(key, scope)
        task = asyncio.current_task()
        cancels = task.cancelling() if task is not None else 0
        ticket = await turns.enter()
        try:
            while True:
                local_wait = refusals.paused_until - time.monotonic()
                if local_wait > 0:
                    await self._sleep(local_wait)
                    continue
                member = f"{self._member_prefix}{next(self._members)}"
                args = [limit.max_requests, window_us, member, MAX_NONCE_LEAD_MS]
                asked = time.monotonic()
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
                    return Admission(
                        key_id, scope, limit, asked, asked + timeout, member, int(nonce)
                    )
                await self._sleep(int(wait_us) / 1_000_000)
        finally:
            turns.leave(ticket)

    def _refusal_state(self, key: str, scope: str) -> RefusalState:
        state = self._refusals.get(key)
        if state is None:
            state = self._refusals.setdefault(key, RefusalState(scope))
        return state

    def _forget(self, key: str, member: str) -> None:
        self._background(self._remove(key, member))

    def _background(self, work: Coroutine[Any, Any, Any]) -> None:
        try:
            task = asyncio.get_running_loop().create_task(self._quietly(work))
        except RuntimeError:  # the loop is shutting down: the entry expires with the window
            work.close()
            return
        self._cleanups.add(task)
        task.add_done_callback(self._cleanups.discard)

    @staticmethod
    async def _quietly(work: Coroutine[Any, Any, Any]) -> None:
        # On failure Redis keeps the safer state: the entry stays until its window passes.
        with contextlib.suppress(TransportError):
            await work

    async def _remove(self, key: str, member: str) -> None:
        from redis.exceptions import RedisError

        # On failure the entry simply expires with the window.
        with contextlib.suppress(RedisError, OSError):
            await self._redis.zrem(key, member)

    def settle(
        self, admission: Admission, outcome: Outcome, retry_after: float | None = None
    ) -> float:
        """Record how an admitted request ended; a rate-limit refusal pauses the budget for
        every process sharing it. Returns the pause in seconds (0 unless rate-limited)."""
        key = self.budget_key(admission.key_id, admission.scope)
        refusals = self._refusal_state(key, admission.scope)
        now = time.monotonic()
        if outcome is Outcome.NOT_SENT and isinstance(admission.token, str):
            self._forget(key, admission.token)
        elif outcome is Outcome.ANSWERED:
            refusals.on_accepted(admission.admitted, now, admission.limit)
        elif outcome is Outcome.RATE_LIMITED:
            pause = refusals.on_refused(
                admission.admitted, now, admission.limit, retry_after, self._random
            )
            if pause > 0:
                self._background(
                    self._run(self._pause, [key + ":pause"], [max(1, round(pause * 1000))])
                )
            return pause
        return 0.0

    def effective_limit(self, key_id: str, scope: str, limit: RateLimit) -> RateLimit:
        """``limit``, or the lower limit this process learned from the server's refusals."""
        state = self._refusals.get(self.budget_key(key_id, scope))
        return limit if state is None else state.effective(limit, time.monotonic())

    async def aclose(self) -> None:
        """Close the connections to Redis (after giving back slots of cancelled waiters)."""
        if self._cleanups:
            await asyncio.gather(*self._cleanups, return_exceptions=True)
        await self._redis.aclose()
