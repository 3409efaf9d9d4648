"""The request pipeline: one loop runs every operation.

budget (limiter) -> signer -> transport -> answer classifier and decoder, with the retry decisions
and one record of every HTTP exchange (a DEBUG log line and the ``on_request`` hook).
"""

from __future__ import annotations

import asyncio
import logging
import platform
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

import aiohttp
from yarl import URL

from ._answers.errors import NonceRefused, RateLimited, decode_answer, parse_retry_after
from ._errors import (
    ApiError,
    InvalidParameterError,
    RequestTimeout,
    TransportError,
    TxcError,
    client_closed,
)
from ._limiters.base import Admission, BaseLimiter, Groups, Limiter, Outcome, RateLimit
from ._nonces.clock import ServerClock
from ._nonces.sources import NonceClock, nonce_refusal_error
from ._operations import OPERATIONS, PING, Auth, Operation
from ._retry import RetryPolicy
from ._secrets import mask_secrets
from ._signing import Signer
from ._stats import ClientStats
from ._transports.base import BaseTransport, ConnectionSlots, RawResponse, Transport
from ._version import __version__

__all__ = ["Pipeline", "RequestRecord", "default_user_agent"]

logger = logging.getLogger("txc_async")

R = TypeVar("R")

_monotonic = time.monotonic
_current_task = asyncio.current_task
_debug_enabled = logger.isEnabledFor
_DEBUG = logging.DEBUG
_SIGNED = Auth.SIGNED
_FORM = Auth.FORM
_ANSWERED = Outcome.ANSWERED
_RATE_LIMITED = Outcome.RATE_LIMITED
_NOT_SENT = Outcome.NOT_SENT
_NO_ANSWER = Outcome.NO_ANSWER
_SIGNING_HEADERS = ("X-TXC-APIKEY", "X-TXC-PAYLOAD", "X-TXC-SIGNATURE")


def default_user_agent() -> str:
    """``txc_async/<version> (Python <x.y>; aiohttp <x.y>)``."""
    python = ".".join(platform.python_version_tuple()[:2])
    aiohttp_version = ".".join(aiohttp.__version__.split(".")[:2])
    return f"txc_async/{__version__} (Python {python}; aiohttp {aiohttp_version})"


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One HTTP exchange of a call, as given to ``Client(on_request=...)`` after it ends.

    - ``operation``: the method name (``"main_balance"``); ``scope``: its rate-limit budget.
    - ``attempt``: 1 for the first exchange of a call, 2 for its first retry, ...
    - ``status``: the HTTP status, or None when no answer came.
    - ``error``: None for a success, else what went wrong: ``"rate_limited"``,
      ``"nonce_refused"``, ``"api_error"``, ``"server_error"``, ``"bad_answer"``, ``"timeout"``,
      ``"connection"``.
    - ``budget_wait``: seconds the call waited for its scope's budget before this exchange;
      ``elapsed``: seconds of the exchange itself; ``sent_bytes``, ``received_bytes``: body sizes.
    - ``retried``: another attempt follows; ``final``: this exchange ended the call.
    """

    operation: str
    scope: str
    attempt: int
    status: int | None
    error: str | None
    budget_wait: float
    elapsed: float
    sent_bytes: int
    received_bytes: int
    retried: bool

    @property
    def final(self) -> bool:
        """This exchange ended the call (no other attempt follows)."""
        return not self.retried


#: The server's time is asked once: any answer, a refusal too, bounds the server's clock by its
#: Date, and a failure leaves the draw to wait.
_ASK_ONCE = RetryPolicy(max_retries=0, max_rate_limit_retries=0, max_nonce_retries=0)


#: The abilities of a transport or a limiter that declares none: the defaults.
_NO_TRANSPORT_ABILITIES = BaseTransport()
_NO_LIMITER_ABILITIES = BaseLimiter()


class _CallState:
    """What one call's attempts so far leave to the next attempts and to the call's end."""

    __slots__ = (
        "attempt", "failures", "first", "headers", "in_flight", "nonce_refused",
        "rate_limited", "reached",
    )

    def __init__(self) -> None:
        #: The attempt under way (1 for the first), and how many ended each way that counts
        #: against the retry policy.
        self.attempt = self.failures = self.rate_limited = self.nonce_refused = 0
        #: Whether an attempt is with the transport now, and whether one may have reached the
        #: server: what close() says of a call it ends.
        self.in_flight = self.reached = False
        #: This call's request is the first signed one to the server, the others waiting for
        #: its answer (see FirstAnswer).
        self.first = False
        #: The headers of the last request built (a signed one's are masked in its errors).
        self.headers: Mapping[str, str] | None = None

    def maybe_sent(self, sent_nothing: Callable[[], bool]) -> bool:
        """A request of the call may have reached the server: one was answered, or one was on
        its way that the transport cannot tell never left."""
        return self.reached or (self.in_flight and not sent_nothing())


class _Attempt(NamedTuple):
    """One attempt that ended without a result, as its outcome's handler and record need it."""

    op: Operation[Any]
    number: int
    admission: Admission
    waited: float
    elapsed: float
    body: bytes | None


def _retry_unanswered(
    op: Operation[Any], exc: TransportError, retry: RetryPolicy, failures: int, closed: bool
) -> bool:
    """Send again after no answer: a read, or a request that certainly never reached the server,
    while retries are left and the client is open."""
    return (
        not closed
        and failures < retry.max_retries
        and (op.retry_safe or not exc.may_have_reached_server)
    )


def _retry_rate_limited(
    op: Operation[Any], signal: RateLimited, retry: RetryPolicy, refusals: int
) -> bool:
    """Send again once the pause is over, unless it is a write the answer does not show was
    refused (a throttling message in a success answer)."""
    return refusals < retry.max_rate_limit_retries and (signal.refused or op.retry_safe)


def _retry_error_answer(op: Operation[Any], retry: RetryPolicy, failures: int) -> bool:
    """The server answered with a failure, so the request reached it: only reads go again."""
    return op.retry_safe and failures < retry.max_retries


def _too_late(timeout: float) -> RequestTimeout:
    """A request whose deadline passed while it waited for a connection or a nonce: sent now, it
    could arrive after the moment its budget counts it until. Not sent: a timeout, as a wait
    for a connection inside the exchange would be."""
    return RequestTimeout(f"no connection within {timeout:g} s", may_have_reached_server=False)


def _closed_during_call(op: Operation[Any], maybe_sent: bool) -> TransportError:
    """The error of a call that ``close()`` ended."""
    closed = TransportError(
        "the client was closed while the call was under way"
        + ("" if maybe_sent else "; its request was not sent"),
        may_have_reached_server=maybe_sent,
    )
    closed._attach_operation(op.name)
    return closed


def _error_kind(exc: BaseException) -> str:
    if isinstance(exc, RateLimited):
        return "rate_limited"
    if isinstance(exc, NonceRefused):
        return "nonce_refused"
    if isinstance(exc, ApiError):
        return "api_error"
    if isinstance(exc, RequestTimeout):
        return "timeout"
    if isinstance(exc, TransportError):
        if exc.status is None:
            return "connection"
        return "server_error" if exc.status >= 500 else "bad_answer"
    return "error"


class Pipeline:
    """What every client derived from one [`txc_async.Client`][txc_async.Client] shares: the HTTP
    session, the signer (so the nonce source), the limiter and its budgets, the counters, the
    hooks."""

    def __init__(
        self,
        *,
        base_url: URL,
        signer: Signer | None,
        server_clock: ServerClock,
        limiter: Limiter,
        key_id: str,
        nonce_key: str,
        rate_limits: dict[str, RateLimit],
        transport: Transport,
        user_agent: str | None,
        on_request: Callable[[RequestRecord], object] | None,
    ) -> None:
        self.base_url = base_url
        self.urls = {
            op.name: base_url.with_path(base_url.path.rstrip("/") + op.path)
            for op in OPERATIONS.values()
        }
        self.signer = signer
        self.server_clock = server_clock
        self._nonce_clock = NonceClock(server_clock, self._ask_server_time)
        self.limiter = limiter
        #: Names the budgets: the server's (every API key used with it shares them).
        self.key_id = key_id
        #: Names the API key's nonce counter in a limiter that draws nonces.
        self.nonce_key = nonce_key
        self.rate_limits = rate_limits
        self.transport = transport
        # The abilities the transport and the limiter declare; any other has the defaults.
        declared = transport if isinstance(transport, BaseTransport) else _NO_TRANSPORT_ABILITIES
        # Connection slots, when the transport has them (see ConnectionSlots).
        self.slots = declared.slots
        # Whether the request a task was sending when it ended certainly never left, when the
        # transport can tell (else it may have reached the server).
        self._sent_nothing = declared.sent_nothing
        abilities = limiter if isinstance(limiter, BaseLimiter) else _NO_LIMITER_ABILITIES
        self._holds = abilities.holds
        self._redraw_nonce = abilities.redraw_nonce
        #: The group budgets each operation draws on besides its scope's (none when the
        #: limiter keeps scopes only).
        self._groups: dict[str, Groups] = {
            op.name: ((op.group, rate_limits[op.group]),)
            if abilities.takes_groups and op.group is not None else ()
            for op in OPERATIONS.values()
        }
        self._takes_groups = abilities.takes_groups
        agent = default_user_agent()
        self.user_agent = f"{user_agent} {agent}" if user_agent else agent
        self._plain_headers = {"User-Agent": self.user_agent}
        self._form_headers = {
            "User-Agent": self.user_agent,
            "Content-Type": "application/x-www-form-urlencoded",
        }
        self.on_request = on_request
        self.stats = ClientStats()
        self.closed = False
        # Calls under way, so that close() can end them at once instead of leaving them waiting.
        self.calls: set[asyncio.Task[Any]] = set()
        self.ended_by_close: set[asyncio.Task[Any]] = set()

    async def aclose(self) -> None:
        self.closed = True
        for task in list(self.calls):
            if not task.done():
                self.ended_by_close.add(task)
                task.cancel()
        await self.transport.aclose()

    def _record(
        self,
        op: Operation[Any],
        attempt: int,
        status: int | None,
        error: str | None,
        waited: float,
        elapsed: float,
        body: bytes | None,
        raw: RawResponse | None,
        retried: bool,
    ) -> None:
        hook = self.on_request
        debug = _debug_enabled(_DEBUG)
        if hook is None and not debug:
            return
        sent = len(body) if body else 0
        received = len(raw.body) if raw is not None else 0
        if debug:
            logger.debug(
                "%s [%s] attempt %d: %s in %.1f ms, sent %d B, received %d B, "
                "budget wait %.1f ms%s",
                op.name, op.scope, attempt,
                f"HTTP {status}" if status is not None else "no answer",
                elapsed * 1000, sent, received, waited * 1000,
                f", {error}" + ("; retrying" if retried else "") if error else "",
            )
        if hook is not None:
            record = RequestRecord(
                op.name, op.scope, attempt, status, error, waited, elapsed, sent, received,
                retried,
            )
            try:
                hook(record)
            except Exception:
                # A metrics hook must never break the call it observes.
                logger.exception("on_request hook failed (ignored)")

    async def call(
        self,
        op: Operation[R],
        params: Mapping[str, Any],
        timeout: float,
        retry: RetryPolicy,
    ) -> R:
        """Run ``op`` to its result or its error, retrying as ``retry`` allows.

        The send stays here, in the one coroutine that runs every attempt: each level of
        ``await`` between the caller and the transport is resumed on every wake-up of the
        exchange. What comes before and after it is in the helpers below.
        """
        signed = op.auth is _SIGNED
        if self.closed or (signed and self.signer is None):
            raise self._refusal(op)
        task = _current_task()
        if task is None:  # pragma: no cover - a coroutine always runs in a task under asyncio
            raise RuntimeError("txc_async calls must run in an asyncio task")
        # Calls under way, so that close() can end them at once instead of leaving them waiting.
        self.calls.add(task)
        slots = self.slots
        state = _CallState()
        try:
            while True:
                state.attempt += 1
                admission, nonce, waited = await self._admit(op, timeout, signed, state)
                if slots is not None and not slots.try_take():
                    leaves, nonce = await self._wait_for_connection(slots, admission, nonce)
                    if not leaves:
                        state.attempt -= 1
                        continue
                try:
                    url, state.headers, body = self._request(op, params, nonce)
                except BaseException:
                    self._unsent(admission, slots)
                    raise
                clock_sent = self.server_clock.local.monotonic()
                sent = _monotonic()
                # The request must not arrive after the deadline its budget counts it until;
                # whole milliseconds, rounded down, so that equal timeouts repeat exactly.
                remaining = (admission.local_deadline - sent) // 0.001 * 0.001
                try:
                    try:
                        if remaining < 0.001:
                            raise _too_late(timeout)
                        stats = self.stats
                        stats.requests += 1
                        stats.by_scope[op.scope] += 1
                        state.in_flight = True
                        raw = await self.transport.send(
                            op.method, url, headers=state.headers, body=body, timeout=remaining
                        )
                    finally:
                        if slots is not None:
                            slots.release()
                except TransportError as exc:
                    elapsed = _monotonic() - sent
                    tried = _Attempt(op, state.attempt, admission, waited, elapsed, body)
                    await asyncio.sleep(self._after_no_answer(exc, tried, retry, state))
                    continue
                except BaseException:
                    # Cancelled in flight: it may still arrive until its deadline, unless it
                    # never had a connection.
                    self.limiter.conclude(
                        admission, _NOT_SENT if self._sent_nothing() else _NO_ANSWER
                    )
                    raise
                elapsed = _monotonic() - sent
                self._answered(state, clock_sent, raw)
                try:
                    result = decode_answer(raw, op.decode, signed, op.auth is _FORM)
                except BaseException as exc:
                    tried = _Attempt(op, state.attempt, admission, waited, elapsed, body)
                    delay = self._after_error_answer(exc, raw, tried, retry, state)
                    if delay is not None:
                        await asyncio.sleep(delay)
                    continue
                self.limiter.conclude(admission, _ANSWERED)
                if self.on_request is not None or _debug_enabled(_DEBUG):
                    self._record(
                        op, state.attempt, raw.status, None, waited, elapsed, body, raw, False
                    )
                return result
        except TxcError as exc:
            self._name_and_mask(exc, op, params, signed, state.headers)
            raise
        except asyncio.CancelledError:
            if self._ended_by_close_alone(task):
                raise _closed_during_call(op, state.maybe_sent(self._sent_nothing)) from None
            raise
        finally:
            self.calls.discard(task)
            if state.first:
                self.server_clock.first_answer.leave(answered=False)

    async def _admit(
        self, op: Operation[Any], timeout: float, signed: bool, state: _CallState
    ) -> tuple[Admission, int | None, float]:
        """Wait for an attempt's turn: behind the first signed request to the server while it
        has no answer, for its budget, then for its nonce when it is signed. Returns the
        admission, the nonce and the seconds it waited for the budget."""
        if signed and not state.first:
            first_answer = self.server_clock.first_answer
            if not first_answer.done:
                state.first = await first_answer.enter(
                    self.server_clock, timeout, self._nonce_clock.learn
                )
        limiter = self.limiter
        limit = self.rate_limits[op.scope]
        groups = self._groups.get(op.name, ())
        waited = 0.0
        admission = (
            limiter.try_acquire(self.key_id, op.scope, limit, timeout, groups=groups)
            if groups else limiter.try_acquire(self.key_id, op.scope, limit, timeout)
        )
        if admission is None:
            began = _monotonic()
            # A limiter shared by processes draws signed requests' nonces from one counter per
            # key, on the server's clock as this process estimates it.
            nonce_clock = self._nonce_clock if signed else None
            if self._takes_groups:
                admission = await limiter.acquire(
                    self.key_id, op.scope, limit, timeout, nonce_clock, groups=groups,
                    nonce_key=self.nonce_key,
                )
            else:
                admission = await limiter.acquire(
                    self.key_id, op.scope, limit, timeout, nonce_clock
                )
            waited = _monotonic() - began
        if self.closed:
            limiter.conclude(admission, _NOT_SENT)
            raise client_closed()  # named by call(), with the others
        signer = self.signer
        if not signed or signer is None:
            return admission, None, waited
        # Drawn after the budget admits the request, so it is fresh when it leaves; a wait for
        # the clock holds no connection.
        nonce = admission.nonce
        if nonce is None:
            nonce = signer.nonces.try_next()
            if nonce is None:
                nonce = await self._wait_for_nonce(signer, admission)
        return admission, nonce, waited

    def _answered(self, state: _CallState, clock_sent: float, raw: RawResponse) -> None:
        """An attempt was answered: it reached the server, and its answer tells of the
        server's clock."""
        state.in_flight = False
        state.reached = True
        # Every answer's Date, bracketed by the send and answer times, refines the estimate of
        # the server's clock; a refusal (429) that disagrees replaces it.
        clock = self.server_clock
        clock.observe(
            clock_sent, clock.local.monotonic(), raw.headers.get("Date"),
            refused=raw.status == 429,
        )
        if state.first:
            clock.first_answer.leave(answered=True)
            state.first = False

    def _ended_by_close_alone(self, task: asyncio.Task[Any]) -> bool:
        """The call's cancellation came from close() alone: the caller gets the closed client's
        error. Cancelled by its caller too (a shutdown that cancels its workers, then closes
        the client), the cancellation goes on, as asked."""
        if task not in self.ended_by_close:
            return False
        self.ended_by_close.discard(task)
        return task.uncancel() == 0

    async def _wait_for_nonce(self, signer: Signer, admission: Admission) -> int:
        """A nonce from the process's own counter, once its clock allows one."""
        try:
            return await signer.nonces.next()
        except BaseException:
            self.limiter.conclude(admission, _NOT_SENT)
            raise

    async def _wait_for_connection(
        self, slots: ConnectionSlots, admission: Admission, nonce: int | None
    ) -> tuple[bool, int | None]:
        """Wait for a connection slot, then check the request again: whether it leaves now, and
        the nonce to sign it with (drawn again if the wait made it too old).

        Every connection was busy: the request waits for one here, not queued inside aiohttp,
        where a refusal meanwhile could not hold it back. One that does not leave is concluded
        as not sent and waits for its budget (the pause), or for a nonce, like any other.
        """
        try:
            await slots.take()
        except BaseException:
            self.limiter.conclude(admission, _NOT_SENT)
            raise
        # A refusal paused the budget while it waited.
        leaves = self._holds(admission)
        if leaves and nonce is not None:
            try:
                fresh = await self._fresh_nonce(admission, nonce)
            except BaseException:
                self._unsent(admission, slots)
                raise
            # None to draw now, and the one drawn before is too old to send.
            leaves = fresh is not None
            nonce = fresh
        if not leaves:
            self._unsent(admission, slots)
        return leaves, nonce

    async def _fresh_nonce(self, admission: Admission, nonce: int) -> int | None:
        """The nonce to sign with after a wait for a connection, or None when it has grown too
        old to send and none can be drawn now."""
        oldest = self.server_clock.oldest_nonce_ms()
        fresh = None
        if admission.nonce is None:
            # Drawn again now that it leaves (the one drawn before is never used).
            assert self.signer is not None  # only signed requests carry a nonce
            fresh = self.signer.nonces.try_next()
        elif nonce < oldest:
            # The shared store drew it at admission, and the wait made it too old to send:
            # drawn again from the store (one look at it, no wait).
            fresh = await self._redraw_nonce(admission, self._nonce_clock)
        if fresh is not None:
            return fresh
        return None if nonce < oldest else nonce

    def _unsent(self, admission: Admission, slots: ConnectionSlots | None) -> None:
        """A request that holds its connection slot ends before it is sent: its slot and its
        place in the budget are free at once."""
        if slots is not None:
            slots.release()
        self.limiter.conclude(admission, _NOT_SENT)

    def _after_no_answer(
        self, exc: TransportError, tried: _Attempt, retry: RetryPolicy, state: _CallState
    ) -> float:
        """Settle and record an attempt that got no answer; the seconds to wait before the next
        attempt, or ``exc`` raised again when none follows."""
        state.in_flight = False
        state.reached = state.reached or exc.may_have_reached_server
        if state.first:
            self.server_clock.first_answer.leave(answered=False)
            state.first = False
        self.limiter.conclude(
            tried.admission, _NO_ANSWER if exc.may_have_reached_server else _NOT_SENT
        )
        again = _retry_unanswered(tried.op, exc, retry, state.failures, self.closed)
        self._record(
            tried.op, tried.number, exc.status, _error_kind(exc), tried.waited, tried.elapsed,
            tried.body, None, again,
        )
        if not again:
            raise exc
        return self._backoff(retry, state, None)

    def _after_error_answer(
        self, exc: BaseException, raw: RawResponse, tried: _Attempt, retry: RetryPolicy,
        state: _CallState,
    ) -> float | None:
        """Settle and record an attempt whose answer is an error or a refusal: the seconds to
        wait before the next attempt (None: at once, its budget holds any pause), or the
        call's error raised when none follows."""
        op, admission = tried.op, tried.admission
        if isinstance(exc, RateLimited):
            again = _retry_rate_limited(op, exc, retry, state.rate_limited)
            pause = self.limiter.conclude(admission, _RATE_LIMITED, exc.error.retry_after)
            self._record_answer(tried, raw, "rate_limited", again)
            if not again:
                raise exc.error from None
            state.rate_limited += 1
            self.stats.rate_limit_refusals += 1
            logger.debug("%s: scope %r pauses %.2f s", op.name, op.scope, pause)
            # The budget holds the pause: the next attempt waits for it in acquire.
            return None
        # Whatever else ends the call here, the request was answered: its place in the budget
        # is concluded, never left counted in flight.
        self.limiter.conclude(admission, _ANSWERED)
        if isinstance(exc, NonceRefused):
            again = state.nonce_refused < retry.max_nonce_retries
            self._record_answer(tried, raw, "nonce_refused", again)
            if not again:
                # Says what the clocks show (the refusal's Date was learnt from its answer).
                raise nonce_refusal_error(
                    exc.error, self.server_clock, state.nonce_refused + 1
                ) from None
            state.nonce_refused += 1
            self.stats.nonce_refusals += 1
            if admission.nonce is None and self.signer is not None:
                # Drawn from this process's own counter: another process of the key (one that
                # ran just before this one) may hold the values after it.
                self.signer.nonces.pass_earlier_values()
            return None
        if isinstance(exc, TxcError):
            again = isinstance(exc, TransportError) and _retry_error_answer(
                op, retry, state.failures
            )
            self._record_answer(tried, raw, _error_kind(exc), again)
            if again:
                return self._backoff(retry, state, parse_retry_after(raw.headers))
        raise exc

    def _backoff(
        self, retry: RetryPolicy, state: _CallState, retry_after: float | None
    ) -> float:
        """The wait before the next attempt after a failure, counted as one more."""
        delay = retry.backoff(state.failures, retry_after)
        state.failures += 1
        self.stats.retries += 1
        return delay

    def _record_answer(
        self, tried: _Attempt, raw: RawResponse, error: str, retried: bool
    ) -> None:
        """Record an attempt whose answer is an error or a refusal."""
        self._record(
            tried.op, tried.number, raw.status, error, tried.waited, tried.elapsed, tried.body,
            raw, retried,
        )

    def _name_and_mask(
        self, exc: TxcError, op: Operation[Any], params: Mapping[str, Any], signed: bool,
        headers: Mapping[str, str] | None,
    ) -> None:
        """Name the call's operation in its error, and mask what its requests carried that no
        error may show (a server may quote what it was sent in its error text)."""
        exc._attach_operation(op.name)
        if signed or op.secret_params:
            mask_secrets(exc, self._secrets(op, params, headers if signed else None))

    async def _ask_server_time(self, timeout: float) -> None:
        """One ping, whose answer's Date bounds the server's clock (a shared limiter asks for it
        before it draws a nonce on a clock no answer has bounded).

        The clock runs it as a task of its own (see ``NonceClock.learn``): the call that asks
        is registered for ``close()`` under its own task, and must stay so."""
        await self.call(PING, {}, timeout, _ASK_ONCE)

    def _secrets(
        self, op: Operation[Any], params: Mapping[str, Any], headers: Mapping[str, str] | None
    ) -> list[str]:
        """What a request of ``op`` carried that no error may show: the API key, the signature
        and payload of its last signed attempt, and its secret parameters."""
        secrets = [str(params[name]) for name in op.secret_params if name in params]
        if headers is not None:
            secrets += [headers.get(name, "") for name in _SIGNING_HEADERS]
        return secrets

    def _refusal(self, op: Operation[Any]) -> TxcError:
        """The error of a call refused before it starts: the client is closed, or the operation
        needs a key the client does not have."""
        if self.closed:
            return client_closed(op.name)
        error = InvalidParameterError(
            "api_key", f"{op.name} is a private operation: give api_key and api_secret"
        )
        error._attach_operation(op.name)
        return error

    def _request(
        self, op: Operation[Any], params: Mapping[str, Any], nonce: int | None
    ) -> tuple[URL, Mapping[str, str], bytes | None]:
        """The URL, headers and body of a request: signed with ``nonce`` (a new one for every
        attempt), or unsigned when there is none."""
        url = self.urls[op.name]
        if nonce is not None and self.signer is not None:
            body, headers = self.signer.sign(op.path, params, nonce)
            headers["User-Agent"] = self.user_agent
            return url, headers, body
        if op.auth is _FORM:
            return url, self._form_headers, urllib.parse.urlencode(params).encode()
        if params:
            url = url.with_query({k: str(v) for k, v in params.items()})
        return url, self._plain_headers, None
