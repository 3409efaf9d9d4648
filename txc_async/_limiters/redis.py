"""Budgets kept in Redis (or a Redis Cluster), shared by every process and machine that leaves
through one IP address (one namespace), for every API key it uses with a server.

Each budget is a sorted set of anchors, one per request: the latest moment it could have reached
the server (its deadline while in flight, then its answer), in microseconds on Redis's own clock,
so every process measures time alike. One atomic Lua script admits a request while, in each
budget it draws on (its scope's and its groups'), fewer than ``max_requests`` anchors lie in the
last ``per_seconds``: it anchors the request in all of them or in none, and draws the nonce from
the API key's counter. Within a process, waiters queue first-in-first-out and only the head asks
Redis.

Every key of one server carries the server's id as a hash tag (``{…}``), the API keys' nonce
counters included, so a Redis Cluster keeps them in one hash slot and the scripts stay atomic
there. A generation marker beside them tells a process that the store lost its data (a restart
without persistence, a failover to an empty replica): the process then writes its own recent
anchors and nonces back before it is admitted again.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
import os
import secrets
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .._errors import TransportError
from .._nonces.sources import MAX_NONCE_LEAD_MS, known_ceiling
from .._secrets import mask_text, safe_url, url_secrets
from .._validate import check_positive_seconds
from .base import Admission, Outcome
from .scripts import AdmitAnswer, DrawStatus, ScriptStatus, lua_script
from .stored import Admitted, Budget, Entry, Request, StoredLimiter, Verdict

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.asyncio.cluster import RedisCluster
    from redis.commands.core import AsyncScript

__all__ = ["RESEED_GRACE", "WATCH_INTERVAL", "RedisLimiter"]

#: While a process has anchors in a window, it checks the generation marker this often (seconds),
#: so that it writes them back soon after the store lost its data.
WATCH_INTERVAL = 0.1
#: When a server's generation marker is missing (the store lost its data, or the server was not
#: used for a day, or ever), its admissions hold this long (seconds): every process still sending
#: finds out meanwhile (it looks every `WATCH_INTERVAL`) and writes its anchors back. A
#: process cannot tell a loss from a first use, so a first use waits too.
RESEED_GRACE = 0.5

#: Names a budget's scope may not take, since the server's own entries use them.
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
    """What this process knows of one server's entries (its ``key_id``): the generation it last
    saw, its own recent anchors per budget (to write back if the store loses them), and the last
    nonce it drew from each API key's counter."""

    __slots__ = (
        "anchors", "carried", "generation", "key_id", "last_nonce", "nonce_clock", "offset",
        "per", "seen", "ttl_ms",
    )

    def __init__(self, key_id: str) -> None:
        self.key_id = key_id
        self.generation = ""
        # budget (scope or group) -> member -> score (us on Redis's clock); only anchors within
        # the window stay.
        self.anchors: dict[str, dict[str, int]] = {}
        self.per: dict[str, int] = {}
        self.ttl_ms: dict[str, int] = {}
        # API key's id -> the last nonce drawn from its counter, and the server-aligned clock it
        # was drawn on.
        self.last_nonce: dict[str, int] = {}
        self.nonce_clock: dict[str, Callable[[], int]] = {}
        # API key's id -> the carrying over of its previous layout's counter (done, or under
        # way: every first admission of the key waits for it).
        self.carried: dict[str, asyncio.Future[None]] = {}
        # Redis's clock (s) minus this process's monotonic clock, from the last answer.
        self.offset = 0.0
        # When (monotonic) the store last showed this generation.
        self.seen = -math.inf

    def knows_a_loss(self) -> bool:
        """Whether a missing generation marker now means the store lost the server's data: this
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


def _read_outcome(future: asyncio.Future[None]) -> None:
    if not future.cancelled():
        future.exception()


class RedisLimiter(StoredLimiter):
    """A [`txc_async.Limiter`][txc_async.Limiter] whose budgets live in Redis (``cluster=True``: a
    Redis Cluster).

    The service counts requests per IP address: budgets belong to the server, and every API key used
    with it draws on the same ones. Give every process that leaves through one IP address a
    ``RedisLimiter`` on the same Redis and ``namespace``: together they never let the server count
    more than a budget's limit in any window, whatever the network delays (each request is anchored
    at its deadline until its answer, as in
    [`txc_async.InProcessLimiter`][txc_async.InProcessLimiter]). Machines that leave through
    different IP addresses are counted apart by the service: give each its own ``namespace``
    (sharing one would hold each to a share of its own budget). The service takes each nonce once
    per API key, whatever the address: machines that use the same API keys under different
    namespaces give them one ``nonce_namespace`` (by default their ``namespace``), so that each
    key's nonces still come from one counter. A request draws on its scope's budget and on its
    groups' in one script: from every one of them, or, when one has no room, from none. Signed
    requests draw their nonces from one counter per API key on the server-aligned clock, so no two
    processes send the same nonce. Keys (ids are hashes, never a key):

    ```text
    {namespace}:{<server id>}:<scope or group>          the budget's anchors (a sorted set)
    {namespace}:{<server id>}:<scope or group>:pause    the budget's pause after a refusal
    {namespace}:{<server id>}:<scope or group>:window   the longest window it is counted in
    {nonce_namespace}:{<server id>}:nonce:<API key id>  the API key's nonce counter
    {namespace}:{<server id>}:generation                the marker that tells a loss of data
    ```

    The braces make the server id a hash tag: a cluster keeps every key of one server in one
    slot. Every key expires once nothing depends on it. When the store loses its data, the
    server's admissions hold for `RESEED_GRACE` seconds while every running process
    writes back the anchors and nonces it knows of (so does the first use of a server, which a
    process cannot tell from a loss); requests of a process that had already ended are known to
    no one. The pause after a refusal is shared through Redis (for the budget the refusal is
    blamed on); a learned limit stays in the process that learned it.

    If Redis cannot be reached, [`acquire`][txc_async.Limiter.acquire] raises
    [`txc_async.TransportError`][txc_async.TransportError] rather than let requests go out
    unlimited. A limiter belongs to one event loop (its connections do). Needs ``pip install
    'txc_async[redis]'``.
    """

    def __init__(
        self,
        url: str,
        *,
        namespace: str = "txc",
        nonce_namespace: str | None = None,
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
        if nonce_namespace is None:
            nonce_namespace = namespace
        for name, value in (("namespace", namespace), ("nonce_namespace", nonce_namespace)):
            if not isinstance(value, str) or not value or any(c in value for c in ":{}"):
                raise ValueError(f"{name}: must be a non-empty string without ':', '{{' or '}}'")
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
        self._nonce_namespace = nonce_namespace
        self._admit_script: AsyncScript = self._redis.register_script(lua_script("admit"))
        self._check_script: AsyncScript = self._redis.register_script(lua_script("check"))
        self._draw_script: AsyncScript = self._redis.register_script(lua_script("draw"))
        self._reseed_script: AsyncScript = self._redis.register_script(lua_script("reseed"))
        self._carry_script: AsyncScript = self._redis.register_script(lua_script("carry"))
        self._get_script: AsyncScript = self._redis.register_script(
            "return redis.call('GET', KEYS[1])"
        )
        self._answered_script: AsyncScript = self._redis.register_script(lua_script("answered"))
        self._pause_script: AsyncScript = self._redis.register_script(lua_script("pause"))
        self._forget_script: AsyncScript = self._redis.register_script(lua_script("forget"))
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
    def nonce_namespace(self) -> str:
        """The prefix of the API keys' nonce counters (by default the ``namespace``): limiters
        with the same nonce namespace draw each key's nonces from one counter."""
        return self._nonce_namespace

    @property
    def cluster(self) -> bool:
        """Whether the store is a Redis Cluster."""
        return self._cluster

    @property
    def namespace(self) -> str:
        """The prefix of every key this limiter keeps in Redis: limiters with the same
        namespace share budgets."""
        return self._namespace

    def _key_prefix(self, key_id: str) -> str:
        return f"{self._namespace}:{{{key_id}}}"

    def budget_key(self, key_id: str, scope: str) -> str:
        """The Redis key of a budget's anchors; its pause key adds ``:pause``, the key of the
        longest window its clients count in ``:window``."""
        if not scope or ":" in scope or scope in _RESERVED_SCOPES:
            raise ValueError(f"scope: {scope!r} cannot name a budget")
        return f"{self._key_prefix(key_id)}:{scope}"

    def nonce_key(self, key_id: str, nonce_key: str | None = None) -> str:
        """The Redis key of the nonce counter every request of one API key (``nonce_key``, its
        id; ``key_id`` when not given) to the server ``key_id`` draws from: under the server's
        hash tag, so one script reaches it with the server's budgets."""
        # The hash tag is the server's id alone: under another namespace, the counter still
        # lies in the slot of the server's budgets.
        api_key = key_id if nonce_key is None else nonce_key
        return f"{self._nonce_namespace}:{{{key_id}}}:nonce:{api_key}"

    def generation_key(self, key_id: str) -> str:
        """The Redis key of the marker that tells this server's entries were lost."""
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

    async def _admit(self, request: Request, caps: Sequence[int]) -> Admitted | Verdict:
        budgets, limits, timeout = request.budgets, request.limits, request.timeout
        nonce_clock, nonce_key = request.nonce_clock, request.nonce_key
        key_id = budgets[0].key_id
        state = self._key_state(key_id)
        if nonce_clock is not None:
            await self._carried(state, key_id if nonce_key is None else nonce_key)
        logs = [self.budget_key(key_id, budget.scope) for budget in budgets]
        keys = [self.generation_key(key_id), self.nonce_key(key_id, nonce_key)]
        timeout_us = math.ceil(timeout * 1_000_000)
        member = self._new_token()
        clock_ms, ceiling_ms = ("", "") if nonce_clock is None else _clock_args(nonce_clock)
        windows: list[tuple[int, int]] = []
        per_budget: list[Any] = []
        for log, limit, cap in zip(logs, limits, caps, strict=True):
            keys += [log, log + ":pause", log + ":window"]
            per_us = round(limit.per_seconds * 1_000_000)
            ttl_ms = math.ceil((timeout + limit.per_seconds) * 1000) + 1000
            per_budget += [cap, per_us, ttl_ms]
            windows.append((per_us, ttl_ms))
        # The marker and the counter live as long as the longest-lived log.
        marker_ttl_ms = max(_KEY_TTL_MS, *(ttl_ms for _, ttl_ms in windows))
        args: list[Any] = [
            timeout_us, member, state.generation, self._new_token(),
            round(RESEED_GRACE * 1_000_000), clock_ms, MAX_NONCE_LEAD_MS, ceiling_ms,
            marker_ttl_ms, int(state.knows_a_loss()), *per_budget,
        ]
        status, value, extra, generation, blocking = await self._run_admit(
            keys, args, logs, member
        )
        if status is ScriptStatus.ADMITTED or status is ScriptStatus.RESEED:
            state.offset = value / 1_000_000 - time.monotonic()
            state.seen = time.monotonic()
        if status is ScriptStatus.RESEED:
            await self._reseed(state, generation)
            return Verdict(0.0, False)
        if status is not ScriptStatus.ADMITTED:
            state.seen = time.monotonic()
            return Verdict(
                value / 1_000_000, bool(extra), status is ScriptStatus.NONCE_AHEAD, blocking
            )
        for budget, (per_us, ttl_ms) in zip(budgets, windows, strict=True):
            state.per[budget.scope] = per_us
            state.ttl_ms[budget.scope] = ttl_ms
            state.anchors.setdefault(budget.scope, {})[member] = value + timeout_us
        nonce: int | None = None
        if nonce_clock is not None:
            nonce = state.last_nonce[nonce_key] = extra
            state.nonce_clock[nonce_key] = nonce_clock
        self._watch()
        return Admitted((value + timeout_us) / 1_000_000, member, nonce)

    async def _run_admit(
        self, keys: list[str], args: list[Any], logs: list[str], member: str
    ) -> AdmitAnswer:
        """Run the admit script: its answer, decoded."""
        task = asyncio.current_task()
        cancels = task.cancelling() if task is not None else 0
        try:
            raw = await self._run(self._admit_script, keys, args)
            if task is not None and task.cancelling() > cancels:
                # Cancelled while Redis answered, and the cancellation got lost on the way (a
                # library swallowed it): honour it all the same.
                raise asyncio.CancelledError
        except asyncio.CancelledError:
            # The script may have admitted this member before the answer came back: give the
            # slot back in every budget, since no request will use it.
            self._background(self._remove(logs, member))
            raise
        return AdmitAnswer.of(raw)

    async def redraw_nonce(
        self, admission: Admission, nonce_clock: Callable[[], int]
    ) -> int | None:
        """A new nonce for an admitted request whose nonce grew too old while it waited (for
        a connection), from its API key's counter; None when none can be drawn now (the counter
        is too far ahead, or the store lost its data)."""
        key_id = admission.key_id
        entry = admission.token
        nonce_key = entry.nonce_key if isinstance(entry, Entry) else key_id
        state = self._key_state(key_id)
        clock_ms, ceiling_ms = _clock_args(nonce_clock)
        status, value = await self._run(
            self._draw_script,
            [self.generation_key(key_id), self.nonce_key(key_id, nonce_key)],
            [state.generation, clock_ms, MAX_NONCE_LEAD_MS, ceiling_ms, _KEY_TTL_MS],
        )
        if DrawStatus(int(status)) is not DrawStatus.DRAWN:
            return None
        nonce = state.last_nonce[nonce_key] = int(value)
        state.nonce_clock[nonce_key] = nonce_clock
        return nonce

    async def _carried(self, state: _KeyState, api_key: str) -> None:
        """Wait until the API key's previous counter is carried over (see
        `_carry_previous_counter`), carrying it when no call of this process did yet, or
        when the last try failed."""
        carrying = state.carried.get(api_key)
        if carrying is not None and carrying.done():
            if not carrying.cancelled() and carrying.exception() is None:
                return
            carrying = None
        if carrying is None:
            carrying = state.carried[api_key] = asyncio.ensure_future(
                self._carry_previous_counter(state.key_id, api_key)
            )
            # Its failure is read here even when every caller waiting for it has left.
            carrying.add_done_callback(_read_outcome)
        # Shielded: one caller leaving does not cancel the others' wait.
        await asyncio.shield(carrying)

    async def _carry_previous_counter(self, key_id: str, api_key: str) -> None:
        """Raise the API key's nonce counter to the last nonce the previous layout's counter
        gave, when that counter is still in the store: the version that kept budgets per API
        key (0.2.0 in the changelog) kept one counter per key under the key's own hash tag
        (``{namespace}:{<API key id>}:nonce``), and a burst can leave it seconds ahead of the
        clock. Once per API key and process (a separate read:
        in a cluster the two counters lie in different slots). A process of the previous
        version still running beside this one keeps drawing from its own counter: upgrade
        every process sharing a store together."""
        previous = await self._run(
            self._get_script, [f"{self._namespace}:{{{api_key}}}:nonce"], []
        )
        if previous is not None:
            await self._run(
                self._carry_script, [self.nonce_key(key_id, api_key)],
                [int(previous), _KEY_TTL_MS],
            )

    async def _reseed(self, state: _KeyState, generation: str) -> None:
        """Write this process's anchors of ``state``'s server back into ``generation``, every
        budget's, and its nonce counters past every nonce it drew."""
        state.prune()
        scopes = [scope for scope, anchors in state.anchors.items() if anchors]
        # A counter must stay past every nonce this process drew; and when the marker says the
        # store lost data, past what any process may have drawn (at most the lead ahead).
        lost = generation.endswith("/1")
        floors = {
            nonce_key: max(last, int(state.nonce_clock[nonce_key]()) + MAX_NONCE_LEAD_MS)
            if lost else last
            for nonce_key, last in state.last_nonce.items()
        }
        keys = [self.generation_key(state.key_id)]
        keys += [self.nonce_key(state.key_id, nonce_key) for nonce_key in floors]
        keys += [self.budget_key(state.key_id, scope) for scope in scopes]
        args: list[Any] = [generation, len(floors), _KEY_TTL_MS, *floors.values()]
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

    async def _remove(
        self, logs: list[str], member: str, budgets: Sequence[Budget] = ()
    ) -> None:
        # On failure the anchors simply expire with the window (``_background`` keeps quiet).
        try:
            await self._run(self._forget_script, logs, [member])
        finally:
            for budget in budgets:
                budget.wake_head()

    async def _answered(self, admission: Admission, logs: list[str], member: str) -> None:
        now_us = int(await self._run(self._answered_script, logs, [member]))
        entry = admission.token
        assert isinstance(entry, Entry)
        state = self._key_state(admission.key_id)
        for budget in entry.budgets:
            anchors = state.anchors.get(budget.scope, {})
            if anchors.get(member, -1) > now_us:
                anchors[member] = now_us
        for budget in entry.budgets:
            budget.wake_head()

    def _record(
        self, admission: Admission, outcome: Outcome, paused: Budget | None, pause: float
    ) -> None:
        entry = admission.token
        assert isinstance(entry, Entry) and isinstance(entry.ident, str)
        member = entry.ident
        key_id = admission.key_id
        logs = [self.budget_key(key_id, budget.scope) for budget in entry.budgets]
        if outcome is Outcome.NOT_SENT:
            state = self._key_state(key_id)
            for budget in entry.budgets:
                state.anchors.get(budget.scope, {}).pop(member, None)
            self._background(self._remove(logs, member, entry.budgets))
        elif outcome is not Outcome.NO_ANSWER:
            # It arrived before its answer: that moment is the latest it counts from. Until
            # Redis has it, the deadlines stand (the safe value).
            self._background(self._answered(admission, logs, member))
            if paused is not None:
                pause_key = self.budget_key(key_id, paused.scope) + ":pause"
                self._background(
                    self._run(self._pause_script, [pause_key], [max(1, round(pause * 1000))])
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
