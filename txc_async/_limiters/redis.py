"""Budgets kept in Redis (or a Redis Cluster), shared by every process and machine that uses one
API key.

Each budget is a sorted set of anchors, one per request: the latest moment it could have reached
the server (its deadline while in flight, then its answer), in microseconds on Redis's own clock,
so every process measures time alike. One atomic Lua script admits a request while fewer than
``max_requests`` anchors lie in the last ``per_seconds``, and draws the nonce from the key's shared
counter. Within a process, waiters queue first-in-first-out and only the head asks Redis.

Every key of one API key carries its key id as a hash tag (``{…}``), so a Redis Cluster keeps them
in one hash slot and the scripts stay atomic there. A generation marker beside them tells a
process that the store lost its data (a restart without persistence, a failover to an empty
replica): the process then writes its own recent anchors back before it is admitted again.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
import os
import secrets
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .._errors import TransportError
from .._secrets import mask_text, safe_url, url_secrets
from .._time.nonces import MAX_NONCE_LEAD_MS, known_ceiling
from .._validate import check_positive_seconds
from .base import Admission, Outcome, RateLimit
from .scripts import lua_script
from .shared import Budget, Entry, SharedLimiter, Verdict

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.asyncio.cluster import RedisCluster
    from redis.commands.core import AsyncScript

__all__ = ["RESEED_GRACE", "WATCH_INTERVAL", "RedisLimiter"]

#: While a process has anchors in a window, it checks the generation marker this often (seconds),
#: so that it writes them back soon after the store lost its data.
WATCH_INTERVAL = 0.1
#: When an API key's generation marker is missing (the store lost its data, or the key was not
#: used for a day, or ever), its admissions hold this long (seconds): every process still sending
#: finds out meanwhile (it looks every :data:`WATCH_INTERVAL`) and writes its anchors back. A
#: process cannot tell a loss from a first use, so a first use waits too.
RESEED_GRACE = 0.5

#: Names a budget's scope may not take, since the key's own entries use them.
_RESERVED_SCOPES = frozenset({"nonce", "generation"})


def _clock_args(nonce_clock: Callable[[], int]) -> tuple[str, str]:
    """The scripts' arguments for a nonce drawn on ``nonce_clock``: its time now (ms), and the
    highest nonce the server can have accepted ('' while unknown)."""
    ceiling = known_ceiling(nonce_clock)
    return str(int(nonce_clock())), "" if ceiling is None else str(ceiling)
#: How often a call is sent again when its connection turns out closed before it left.
_CLOSED_CONNECTION_RETRIES = 2
#: At most this many calls to Redis are under way at once from one limiter (a cluster client
#: refuses more than 100 connections per node, and one connection serves one call at a time).
MAX_CONCURRENT_CALLS = 32
#: The generation marker and the nonce counter live this long after the last admission.
_KEY_TTL_MS = 86_400_000


def _closed_under(exc: BaseException) -> bool:
    """Whether ``exc`` says the call's connection was closed under it."""
    text = str(exc)
    if isinstance(exc, AttributeError):
        return "'NoneType' object has no attribute" in text
    return "closed" in text


def _hostless(url: str) -> bool:
    """A redis:// or rediss:// URL with nothing after the scheme's '//' (or no '//' at all):
    redis-py would connect to localhost, and credentials would sit in the path, unmasked."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False  # redis-py refuses it, and the refusal is scrubbed
    return parts.scheme.lower() in ("redis", "rediss") and not parts.netloc


class _KeyState:
    """What this process knows of one API key's entries: the generation it last saw, its own
    recent anchors per budget (to write back if the store loses them), its last nonce."""

    __slots__ = (
        "anchors", "generation", "key_id", "last_nonce", "nonce_clock", "offset", "per",
        "seen", "ttl_ms",
    )

    def __init__(self, key_id: str) -> None:
        self.key_id = key_id
        self.generation = ""
        # scope -> member -> score (us on Redis's clock); only anchors within the window stay.
        self.anchors: dict[str, dict[str, int]] = {}
        self.per: dict[str, int] = {}
        self.ttl_ms: dict[str, int] = {}
        self.last_nonce: int | None = None
        # The server-aligned clock the last nonce was drawn on.
        self.nonce_clock: Callable[[], int] | None = None
        # Redis's clock (s) minus this process's monotonic clock, from the last answer.
        self.offset = 0.0
        # When (monotonic) the store last showed this generation.
        self.seen = -math.inf

    def knows_a_loss(self) -> bool:
        """Whether a missing generation marker now means the store lost the key's data: this
        process saw the marker recently enough that it cannot have expired since (every
        admission keeps it for a day). A process that never saw it, or not for that long,
        cannot tell a loss from a first use."""
        return bool(self.generation) and time.monotonic() - self.seen < _KEY_TTL_MS / 1000 - 5

    def store_now_us(self) -> int:
        return int((time.monotonic() + self.offset) * 1_000_000)

    def prune(self) -> bool:
        """Drop anchors that left their window; whether any is left."""
        # A second of margin: the offset ignores the time the answer took.
        horizon = self.store_now_us() - 1_000_000
        left = False
        for scope, anchors in self.anchors.items():
            cut = horizon - self.per[scope]
            for member in [m for m, at in anchors.items() if at <= cut]:
                del anchors[member]
            left = left or bool(anchors)
        return left


class RedisLimiter(SharedLimiter):
    """A :class:`txc_async.Limiter` whose budgets live in Redis (``cluster=True``: a Redis
    Cluster).

    Give every process that uses one API key a ``RedisLimiter`` on the same Redis and
    ``namespace``: together they never let the server count more than a scope's limit in any
    window, whatever the network delays (each request is anchored at its deadline until its
    answer, as in :class:`txc_async.InProcessLimiter`), and signed requests draw their nonces
    from one counter per API key on the server-aligned clock, so no two processes send the same
    nonce. Keys (the key id is a hash of the server and API key, never the key)::

        {namespace}:{<key id>}:<scope>          the budget's anchors (a sorted set)
        {namespace}:{<key id>}:<scope>:pause    the budget's pause after a refusal
        {namespace}:{<key id>}:nonce            the key's nonce counter
        {namespace}:{<key id>}:generation       the marker that tells a loss of data

    The braces make the key id a hash tag: a cluster keeps every key of one API key in one
    slot. Every key expires once nothing depends on it. When the store loses its data, the
    key's admissions hold for :data:`RESEED_GRACE` seconds while every running process writes
    back the anchors it knows of (so does the first use of a key, which a process cannot tell
    from a loss); requests of a process that had already ended are known to no one. The pause
    after a refusal is shared through Redis; a learned limit stays in the process that learned
    it.

    If Redis cannot be reached, :meth:`acquire` raises :class:`txc_async.TransportError` rather
    than let requests go out unlimited. A limiter belongs to one event loop (its connections
    do). Needs ``pip install 'txc_async[redis]'``.
    """

    def __init__(
        self,
        url: str,
        *,
        namespace: str = "txc",
        cluster: bool = False,
        timeout: float = 5.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        random: Callable[[], float] | None = None,
    ) -> None:
        try:
            import redis.asyncio as redis_asyncio
            from redis.asyncio.cluster import RedisCluster
        except ImportError:
            raise ImportError(
                "RedisLimiter needs redis-py: pip install 'txc_async[redis]'"
            ) from None
        if (
            not isinstance(namespace, str)
            or not namespace
            or any(c in namespace for c in ":{}")
        ):
            raise ValueError("namespace: must be a non-empty string without ':', '{' or '}'")
        check_positive_seconds("timeout", timeout)
        if _hostless(url):
            raise ValueError(
                "url: a redis:// URL needs a host after '//', e.g. redis://127.0.0.1:6379/0"
            )
        super().__init__(sleep=sleep, random=random)
        self._timeout = float(timeout)
        self._safe_url = safe_url(url)
        self._secrets = url_secrets(url)
        self._cluster = bool(cluster)
        problem: str | None = None
        try:
            # No socket_timeout: redis-py then sends through asyncio.wait_for, which on Python
            # 3.11 can swallow a cancellation; every call is bounded by asyncio.timeout instead.
            if self._cluster:
                self._redis: Redis | RedisCluster = RedisCluster.from_url(
                    url, socket_connect_timeout=self._timeout
                )
            else:
                self._redis = redis_asyncio.Redis.from_url(
                    url, socket_connect_timeout=self._timeout
                )
        except ValueError as exc:
            problem = self._scrub(str(exc))
        except Exception as exc:  # e.g. a cluster URL that redis-py refuses
            problem = self._scrub(f"{type(exc).__name__}: {exc}")
        if problem is not None:
            # Raised outside the except clause: redis-py's error, which may quote the URL, is
            # not kept as the context.
            raise ValueError(f"url: {problem}")
        self._namespace = namespace
        self._admit_script: AsyncScript = self._redis.register_script(lua_script("admit"))
        self._check_script: AsyncScript = self._redis.register_script(lua_script("check"))
        self._draw_script: AsyncScript = self._redis.register_script(lua_script("draw"))
        self._reseed_script: AsyncScript = self._redis.register_script(lua_script("reseed"))
        self._answered_script: AsyncScript = self._redis.register_script(lua_script("answered"))
        self._pause_script: AsyncScript = self._redis.register_script(lua_script("pause"))
        self._keys: dict[str, _KeyState] = {}
        # Members and generation tokens must be unique across every process: pid and random
        # bits, then a counter.
        self._member_prefix = f"{os.getpid()}-{secrets.token_hex(6)}-"
        self._members = itertools.count()
        self._cleanups: set[asyncio.Task[None]] = set()
        self._watcher: asyncio.Task[None] | None = None
        self._calls: asyncio.Semaphore | None = None

    def __repr__(self) -> str:
        cluster = ", cluster=True" if self._cluster else ""
        return f"RedisLimiter({self._safe_url!r}, namespace={self._namespace!r}{cluster})"

    @property
    def namespace(self) -> str:
        return self._namespace

    def _key_prefix(self, key_id: str) -> str:
        return f"{self._namespace}:{{{key_id}}}"

    def budget_key(self, key_id: str, scope: str) -> str:
        """The Redis key of a budget's anchors; its pause key adds ``:pause``, the key of the
        longest window its clients count in ``:window``."""
        if not scope or ":" in scope or scope in _RESERVED_SCOPES:
            raise ValueError(f"scope: {scope!r} cannot name a budget")
        return f"{self._key_prefix(key_id)}:{scope}"

    def nonce_key(self, key_id: str) -> str:
        """The Redis key of the nonce counter every scope of one API key draws from."""
        return f"{self._key_prefix(key_id)}:nonce"

    def generation_key(self, key_id: str) -> str:
        """The Redis key of the marker that tells this API key's entries were lost."""
        return f"{self._key_prefix(key_id)}:generation"

    def _scrub(self, text: str) -> str:
        return mask_text(text, self._secrets)

    async def _run(self, script: AsyncScript, keys: list[str], args: list[Any]) -> Any:
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import RedisClusterException, RedisError
        from redis.exceptions import TimeoutError as RedisTimeoutError

        calls = self._calls
        if calls is None:
            calls = self._calls = asyncio.Semaphore(MAX_CONCURRENT_CALLS)
        try:
            async with asyncio.timeout(self._timeout), calls:
                for attempt in range(_CLOSED_CONNECTION_RETRIES + 1):
                    try:
                        return await script(keys=keys, args=args)
                    except (RuntimeError, AttributeError) as exc:
                        # A connection closed under the call: uvloop refuses to write to one
                        # the pool still held ("the handler is closed"), and redis-py's
                        # cluster client can reset a connection's streams while another call
                        # is connecting on it ("'NoneType' object has no attribute
                        # 'writelines'"). It goes again on a fresh connection; should it have
                        # left after all, running the script twice only logs one more request
                        # or skips a nonce, never lets more through.
                        if attempt == _CLOSED_CONNECTION_RETRIES or not _closed_under(exc):
                            raise
                raise AssertionError("unreachable")  # pragma: no cover - the loop returns
        except TimeoutError:
            what = "unreachable"
            detail = f"no answer within {self._timeout:g} s"
        except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
            what = "unreachable"
            detail = f"{type(exc).__name__}: {exc}"
        except RedisClusterException as exc:  # no node of the cluster could be reached
            what = "unreachable"
            detail = f"{type(exc).__name__}: {exc}"
        except (RuntimeError, AttributeError) as exc:
            if isinstance(exc, AttributeError) and not _closed_under(exc):
                raise
            # A connection closed under it, again and again.
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

    def _key_state(self, key_id: str) -> _KeyState:
        state = self._keys.get(key_id)
        if state is None:
            state = self._keys.setdefault(key_id, _KeyState(key_id))
        return state

    def _new_token(self) -> str:
        return f"{self._member_prefix}{next(self._members)}"

    async def _admit(
        self,
        budget: Budget,
        limit: RateLimit,
        cap: int,
        timeout: float,
        nonce_clock: Callable[[], int] | None,
    ) -> Admission | Verdict:
        key_id, scope = budget.key_id, budget.scope
        state = self._key_state(key_id)
        key = self.budget_key(key_id, scope)
        keys = [
            key, key + ":pause", self.nonce_key(key_id), self.generation_key(key_id),
            key + ":window",
        ]
        per_us = round(limit.per_seconds * 1_000_000)
        timeout_us = math.ceil(timeout * 1_000_000)
        ttl_ms = math.ceil((timeout + limit.per_seconds) * 1000) + 1000
        member = self._new_token()
        grace_us = round(RESEED_GRACE * 1_000_000)
        clock_ms, ceiling_ms = ("", "") if nonce_clock is None else _clock_args(nonce_clock)
        args = [
            cap, per_us, timeout_us, member, state.generation, self._new_token(), grace_us,
            clock_ms, MAX_NONCE_LEAD_MS, ceiling_ms, ttl_ms, max(_KEY_TTL_MS, ttl_ms),
            int(state.knows_a_loss()),
        ]
        task = asyncio.current_task()
        cancels = task.cancelling() if task is not None else 0
        try:
            status, value, extra, generation = await self._run(self._admit_script, keys, args)
            if task is not None and task.cancelling() > cancels:
                # Cancelled while Redis answered, and the cancellation got lost on the way (a
                # library swallowed it): honour it all the same.
                raise asyncio.CancelledError
        except asyncio.CancelledError:
            # The script may have admitted this member before the answer came back: give the
            # slot back, since no request will use it.
            self._background(self._remove(key, member))
            raise
        status, value, extra = int(status), int(value), int(extra)
        generation = generation.decode() if isinstance(generation, bytes) else str(generation)
        if status == 0 or status == 2:
            state.offset = value / 1_000_000 - time.monotonic()
            state.seen = time.monotonic()
        if status == 2:
            await self._reseed(state, generation)
            return Verdict(0.0, False)
        if status == 1 or status == 3:
            state.seen = time.monotonic()
            # 3: the nonce counter is too far ahead of the clock given.
            return Verdict(value / 1_000_000, bool(extra), status == 3)
        state.per[scope] = per_us
        state.ttl_ms[scope] = ttl_ms
        state.anchors.setdefault(scope, {})[member] = value + timeout_us
        nonce: int | None = None
        if nonce_clock is not None:
            nonce = state.last_nonce = extra
            state.nonce_clock = nonce_clock
        self._watch()
        return Admission(
            key_id, scope, limit, 0.0, (value + timeout_us) / 1_000_000, Entry(budget, member),
            nonce,
        )

    async def redraw_nonce(
        self, admission: Admission, nonce_clock: Callable[[], int]
    ) -> int | None:
        """A new nonce for an admitted request whose nonce grew too old while it waited (for
        a connection); None when none can be drawn now (the counter is too far ahead, or the
        store lost its data)."""
        key_id = admission.key_id
        state = self._key_state(key_id)
        clock_ms, ceiling_ms = _clock_args(nonce_clock)
        status, value = await self._run(
            self._draw_script,
            [self.generation_key(key_id), self.nonce_key(key_id)],
            [state.generation, clock_ms, MAX_NONCE_LEAD_MS, ceiling_ms, _KEY_TTL_MS],
        )
        if int(status) != 0:
            return None
        nonce = state.last_nonce = int(value)
        state.nonce_clock = nonce_clock
        return nonce

    async def _reseed(self, state: _KeyState, generation: str) -> None:
        """Write this process's anchors of ``state``'s key back into ``generation``."""
        state.prune()
        scopes = [scope for scope, anchors in state.anchors.items() if anchors]
        keys = [self.generation_key(state.key_id), self.nonce_key(state.key_id)]
        keys += [self.budget_key(state.key_id, scope) for scope in scopes]
        # The counter must stay past every nonce this process drew; and when the marker says
        # the store lost data, past what any process may have drawn (at most the lead ahead).
        floor = state.last_nonce
        if generation.endswith("/1") and state.nonce_clock is not None:
            floor = max(floor or 0, int(state.nonce_clock()) + MAX_NONCE_LEAD_MS)
        args: list[Any] = [generation, "" if floor is None else floor, _KEY_TTL_MS]
        for scope in scopes:
            anchors = state.anchors[scope]
            args += [state.ttl_ms[scope], len(anchors)]
            for member, at in anchors.items():
                args += [member, at]
        if await self._run(self._reseed_script, keys, args):
            state.generation = generation

    def _watch(self) -> None:
        watcher = self._watcher
        if watcher is None or watcher.done():
            self._watcher = asyncio.get_running_loop().create_task(self._watch_generations())

    async def _watch_generations(self) -> None:
        """While this process has anchors in a window, look at the generation markers, and
        write the anchors back as soon as the store lost them."""
        grace_us = round(RESEED_GRACE * 1_000_000)
        while True:
            await asyncio.sleep(WATCH_INTERVAL)
            active = [state for state in list(self._keys.values()) if state.prune()]
            if not active:
                return
            for state in active:
                keys = [self.generation_key(state.key_id)]
                with contextlib.suppress(TransportError):
                    found = await self._run(
                        self._check_script, keys,
                        [self._new_token(), grace_us, _KEY_TTL_MS, int(state.knows_a_loss())],
                    )
                    generation = found.decode() if isinstance(found, bytes) else str(found)
                    if generation == state.generation:
                        state.seen = time.monotonic()
                    else:
                        await self._reseed(state, generation)

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
        # On failure Redis keeps the safer state: the anchor stays at its deadline.
        with contextlib.suppress(TransportError):
            await work

    async def _remove(self, key: str, member: str, budget: Budget | None = None) -> None:
        from redis.exceptions import RedisError

        # On failure the anchor simply expires with the window.
        calls = self._calls or asyncio.Semaphore(MAX_CONCURRENT_CALLS)
        self._calls = calls
        with contextlib.suppress(RedisError, OSError):
            async with asyncio.timeout(self._timeout), calls:
                await self._redis.zrem(key, member)
        if budget is not None:
            budget.wake_head()

    async def _answered(self, admission: Admission, key: str, member: str) -> None:
        now_us = int(await self._run(self._answered_script, [key], [member]))
        anchors = self._key_state(admission.key_id).anchors.get(admission.scope, {})
        if anchors.get(member, -1) > now_us:
            anchors[member] = now_us
        entry = admission.token
        assert isinstance(entry, Entry)
        entry.budget.wake_head()

    def _record(self, admission: Admission, outcome: Outcome, pause: float) -> None:
        entry = admission.token
        assert isinstance(entry, Entry) and isinstance(entry.ident, str)
        member = entry.ident
        key = self.budget_key(admission.key_id, admission.scope)
        if outcome is Outcome.NOT_SENT:
            self._key_state(admission.key_id).anchors.get(admission.scope, {}).pop(member, None)
            self._background(self._remove(key, member, entry.budget))
        elif outcome is not Outcome.NO_ANSWER:
            # It arrived before its answer: that moment is the latest it counts from. Until
            # Redis has it, the deadline stands (the safe value).
            self._background(self._answered(admission, key, member))
            if pause > 0:
                self._background(
                    self._run(self._pause_script, [key + ":pause"], [max(1, round(pause * 1000))])
                )

    async def aclose(self) -> None:
        """Close the connections to Redis (after the answers and give-backs under way land)."""
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.cancel()
            # Waited for without taking its CancelledError: a cancellation of aclose's own
            # caller still goes through.
            await asyncio.wait((watcher,))
        if self._cleanups:
            await asyncio.gather(*self._cleanups, return_exceptions=True)
        await self._redis.aclose()
