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
from typing import Any, TypeVar

import aiohttp
from yarl import URL

from ._answers import NonceRefused, RateLimited, decode_answer, parse_retry_after
from ._errors import (
    ApiError,
    InvalidParameterError,
    RequestTimeout,
    TransportError,
    TxcError,
    client_closed,
    mask_secrets,
)
from ._limiters.base import BaseLimiter, Limiter, Outcome, RateLimit
from ._operations import OPERATIONS, PING, Auth, Operation
from ._retry import RetryPolicy
from ._stats import ClientStats
from ._time.clock import NonceClock, ServerClock, nonce_refusal_error
from ._time.nonces import Signer
from ._transports.base import BaseTransport, RawResponse, Transport
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
    """What every client derived from one :class:`txc_async.Client` shares: the HTTP session,
    the signer (so the nonce source), the limiter and its budgets, the counters, the hooks."""

    def __init__(
        self,
        *,
        base_url: URL,
        signer: Signer | None,
        server_clock: ServerClock,
        limiter: Limiter,
        key_id: str,
        rate_limits: dict[str, RateLimit],
        transport: Transport,
        user_agent: str | None,
        on_request: Callable[[RequestRecord], object] | None,
    ) -> None:
        self.base_url = base_url
        self.urls = {
            op.name: base_url.with_path(base_url.path.rstrip("/") + op.path) for op in OPERATIONS
        }
        self.signer = signer
        self.server_clock = server_clock
        self._nonce_clock = NonceClock(server_clock, self._ask_server_time)
        self.limiter = limiter
        self.key_id = key_id
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

        One coroutine runs every attempt: each level of ``await`` between the caller and the
        transport is resumed on every wake-up of the exchange, so the loop is not split in two.
        """
        signer = self.signer
        signed = op.auth is _SIGNED
        if self.closed or (signed and signer is None):
            raise self._refusal(op)
        task = _current_task()
        if task is None:  # pragma: no cover - a coroutine always runs in a task under asyncio
            raise RuntimeError("txc_async calls must run in an asyncio task")
        # Calls under way, so that close() can end them at once instead of leaving them waiting.
        calls = self.calls
        calls.add(task)
        limiter = self.limiter
        key_id = self.key_id
        scope = op.scope
        limit = self.rate_limits[scope]
        url = self.urls[op.name]
        stats = self.stats
        transport = self.transport
        slots = self.slots
        attempt = failures = rate_limited = nonce_refused = 0
        # Whether an attempt of the call is with the transport now, and whether one may have
        # reached the server: what close() says of a call it ends.
        in_flight = reached = False
        clock = self.server_clock
        first_answer = clock.first_answer
        # This call's request is the first signed one to the server, the others waiting for
        # its answer (see FirstAnswer).
        first = False
        headers: Mapping[str, str] | None = None
        body: bytes | None
        try:
            while True:
                attempt += 1
                waited = 0.0
                if signed and not first and not first_answer.done:
                    first = await first_answer.enter(clock, timeout, self._nonce_clock.learn)
                admission = limiter.try_acquire(key_id, scope, limit, timeout)
                if admission is None:
                    began = _monotonic()
                    admission = await limiter.acquire(
                        key_id, scope, limit, timeout,
                        # A limiter shared by processes draws signed requests' nonces from one
                        # counter per key, on the server's clock as this process estimates it.
                        self._nonce_clock if signed else None,
                    )
                    waited = _monotonic() - began
                if self.closed:
                    limiter.settle(admission, _NOT_SENT)
                    raise client_closed()  # named with the others, below
                nonce = None
                if signed and signer is not None:
                    nonce = admission.nonce
                    if nonce is None:
                        # Drawn after the budget admits the request, so it is fresh when it
                        # leaves; a wait for the clock holds no connection.
                        nonces = signer.nonces
                        nonce = nonces.try_next()
                        if nonce is None:
                            try:
                                nonce = await nonces.next()
                            except BaseException:
                                limiter.settle(admission, _NOT_SENT)
                                raise
                if slots is not None and not slots.try_take():
                    # Every connection is busy: the request waits for one here, not queued
                    # inside aiohttp, where a refusal meanwhile could not hold it back.
                    try:
                        await slots.take()
                    except BaseException:
                        limiter.settle(admission, _NOT_SENT)
                        raise
                    # A refusal paused the budget while it waited.
                    back = not self._holds(admission)
                    if not back and signed and signer is not None and nonce is not None:
                        fresh = None
                        oldest = clock.oldest_nonce_ms()
                        if admission.nonce is None:
                            # Drawn again now that it leaves (the one drawn before is never
                            # used).
                            fresh = signer.nonces.try_next()
                        elif nonce < oldest:
                            # The shared store drew it at admission, and the wait made it too
                            # old to send: drawn again from the store (one look at it, no wait).
                            try:
                                fresh = await self._redraw_nonce(admission, self._nonce_clock)
                            except BaseException:
                                slots.release()
                                limiter.settle(admission, _NOT_SENT)
                                raise
                        if fresh is not None:
                            nonce = fresh
                        else:
                            # None to draw now, and the one drawn before is too old to send.
                            back = nonce < oldest
                    if back:
                        # Not sent: it waits for the pause, or for a nonce, like any other
                        # request.
                        slots.release()
                        limiter.settle(admission, _NOT_SENT)
                        attempt -= 1
                        continue
                try:
                    if signed and signer is not None and nonce is not None:
                        body, signed_headers = signer.sign(op.path, params, nonce)
                        signed_headers["User-Agent"] = self.user_agent
                        request_url, headers = url, signed_headers
                    else:
                        request_url, headers, body = self._request(op, params, url)
                except BaseException:
                    # Never sent: its place in the budget is free at once.
                    if slots is not None:
                        slots.release()
                    limiter.settle(admission, _NOT_SENT)
                    raise
                local = clock.local
                clock_sent = local.monotonic()
                sent = _monotonic()
                # The request must not arrive after the deadline its budget counts it until;
                # whole milliseconds, rounded down, so that equal timeouts repeat exactly.
                remaining = (admission.local_deadline - sent) // 0.001 * 0.001
                try:
                    try:
                        if remaining < 0.001:
                            # Its deadline passed while it waited for a connection or a nonce:
                            # sent now, it could arrive after the moment its budget counts it
                            # until. Not sent: a timeout, as a wait for a connection inside the
                            # exchange would be.
                            raise RequestTimeout(
                                f"no connection within {timeout:g} s",
                                may_have_reached_server=False,
                            )
                        stats.requests += 1
                        stats.by_scope[scope] += 1
                        in_flight = True
                        raw = await transport.send(
                            op.method, request_url, headers=headers, body=body,
                            timeout=remaining,
                        )
                    finally:
                        if slots is not None:
                            slots.release()
                except TransportError as exc:
                    in_flight = False
                    reached = reached or exc.may_have_reached_server
                    if first:
                        first_answer.leave(answered=False)
                        first = False
                    elapsed = _monotonic() - sent
                    limiter.settle(
                        admission,
                        _NO_ANSWER if exc.may_have_reached_server else _NOT_SENT,
                    )
                    again = (
                        not self.closed
                        and failures < retry.max_retries
                        and (op.retry_safe or not exc.may_have_reached_server)
                    )
                    self._record(
                        op, attempt, exc.status, _error_kind(exc), waited, elapsed, body, None,
                        again,
                    )
                    if not again:
                        raise
                    delay = retry.backoff(failures)
                    failures += 1
                    stats.retries += 1
                    await asyncio.sleep(delay)
                    continue
                except BaseException:
                    # Cancelled in flight: it may still arrive until its deadline, unless it
                    # never had a connection.
                    limiter.settle(admission, _NOT_SENT if self._sent_nothing() else _NO_ANSWER)
                    raise
                in_flight = False
                reached = True
                elapsed = _monotonic() - sent
                # Every answer's Date, bracketed by the send and answer times, refines the
                # estimate of the server's clock; a refusal (429) that disagrees replaces it.
                clock.observe(
                    clock_sent, local.monotonic(), raw.headers.get("Date"),
                    refused=raw.status == 429,
                )
                if first:
                    first_answer.leave(answered=True)
                    first = False
                try:
                    result = decode_answer(raw, op.decode, signed, op.auth is _FORM)
                except RateLimited as signal:
                    # Sent again once the pause is over, unless it is a write the answer does
                    # not show was refused (a throttling message in a success answer).
                    again = rate_limited < retry.max_rate_limit_retries and (
                        signal.refused or op.retry_safe
                    )
                    pause = limiter.settle(admission, _RATE_LIMITED, signal.error.retry_after)
                    self._record(
                        op, attempt, raw.status, "rate_limited", waited, elapsed, body, raw,
                        again,
                    )
                    if not again:
                        raise signal.error from None
                    rate_limited += 1
                    stats.rate_limit_refusals += 1
                    logger.debug("%s: scope %r pauses %.2f s", op.name, scope, pause)
                    # The budget holds the pause: the next attempt waits for it in acquire.
                    continue
                except NonceRefused as signal:
                    limiter.settle(admission, _ANSWERED)
                    again = nonce_refused < retry.max_nonce_retries
                    self._record(
                        op, attempt, raw.status, "nonce_refused", waited, elapsed, body, raw,
                        again,
                    )
                    if not again:
                        # Says what the clocks show (the refusal's Date was learnt above).
                        raise nonce_refusal_error(
                            signal.error, clock, nonce_refused + 1
                        ) from None
                    nonce_refused += 1
                    stats.nonce_refusals += 1
                    if admission.nonce is None and signer is not None:
                        # Drawn from this process's own counter: another process of the key
                        # (one that ran just before this one) may hold the values after it.
                        signer.nonces.pass_earlier_values()
                    continue
                except TransportError as exc:
                    limiter.settle(admission, _ANSWERED)
                    # The server answered, so the request reached it: only reads go again.
                    again = op.retry_safe and failures < retry.max_retries
                    self._record(
                        op, attempt, raw.status, _error_kind(exc), waited, elapsed, body, raw,
                        again,
                    )
                    if not again:
                        raise
                    delay = retry.backoff(failures, parse_retry_after(raw.headers))
                    failures += 1
                    stats.retries += 1
                    await asyncio.sleep(delay)
                    continue
                except TxcError as exc:
                    limiter.settle(admission, _ANSWERED)
                    self._record(
                        op, attempt, raw.status, _error_kind(exc), waited, elapsed, body, raw,
                        False,
                    )
                    raise
                except BaseException:
                    # Whatever else ends the call here, the request was answered: its place in
                    # the budget is settled, never left counted in flight.
                    limiter.settle(admission, _ANSWERED)
                    raise
                limiter.settle(admission, _ANSWERED)
                if self.on_request is not None or _debug_enabled(_DEBUG):
                    self._record(
                        op, attempt, raw.status, None, waited, elapsed, body, raw, False
                    )
                return result
        except TxcError as exc:
            exc._attach_operation(op.name)
            if signed or op.secret_params:
                # A server may quote what it was sent in its error text.
                mask_secrets(exc, self._secrets(op, params, headers if signed else None))
            raise
        except asyncio.CancelledError:
            if task in self.ended_by_close:
                self.ended_by_close.discard(task)
                # Ended by close() alone: the caller gets the closed client's error. Cancelled
                # by its caller too (a shutdown that cancels its workers, then closes the
                # client): the cancellation goes on, as asked.
                if task.uncancel() > 0:
                    raise
                # Its request may have reached the server if one was answered, or may have
                # been sent; not when every attempt ended unsent and none was on its way.
                maybe = reached or (in_flight and not self._sent_nothing())
                closed = TransportError(
                    "the client was closed while the call was under way"
                    + ("" if maybe else "; its request was not sent"),
                    may_have_reached_server=maybe,
                )
                closed._attach_operation(op.name)
                raise closed from None
            raise
        finally:
            calls.discard(task)
            if first:
                first_answer.leave(answered=False)

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
        self, op: Operation[Any], params: Mapping[str, Any], url: URL
    ) -> tuple[URL, Mapping[str, str], bytes | None]:
        """The URL, headers and body of an unsigned request (signed ones are built in
        :meth:`call`, with a new nonce for every attempt)."""
        if op.auth is _FORM:
            return url, self._form_headers, urllib.parse.urlencode(params).encode()
        if params:
            url = url.with_query({k: str(v) for k, v in params.items()})
        return url, self._plain_headers, None
