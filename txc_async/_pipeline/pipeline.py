"""The request pipeline: one coroutine runs every attempt of a call, admission -> request ->
transport -> answer, and decides on the attempt's outcome with the call's retry policy."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, TypeVar

from yarl import URL

from .._answers.errors import NonceRefused, RateLimited, decode_answer, parse_retry_after
from .._errors import InvalidParameterError, RequestTimeout, TransportError, TxcError, client_closed
from .._limiters.base import Admission, Limiter, Outcome, RateLimit
from .._nonces.clock import ServerClock
from .._nonces.sources import NonceClock, nonce_refusal_error
from .._operations import PING, Auth, Operation
from .._operations.lost_writes import what_to_check
from .._retry import RetryPolicy
from .._signing import Signer
from .._stats import ClientStats
from .._transports.base import BaseTransport, RawResponse, Transport
from .admission import Admitter
from .calls import CallsInFlight, CallState, closed_during_call
from .recording import EndedAttempt, Recorder, RequestRecord, error_kind
from .requests import Requests, mask_carried_secrets

__all__ = ["Pipeline"]

logger = logging.getLogger("txc_async")
# Whether someone listens to the records of the exchanges (else none is built): the hook, or
# this logger at DEBUG level, whose level may change at any time. Asked inline, with no method
# of its own: it is asked after every exchange.
_debug_enabled = logger.isEnabledFor
_DEBUG = logging.DEBUG

R = TypeVar("R")

_monotonic = time.monotonic
_current_task = asyncio.current_task
_SIGNED = Auth.SIGNED
_FORM = Auth.FORM
_ANSWERED = Outcome.ANSWERED
_RATE_LIMITED = Outcome.RATE_LIMITED
_NOT_SENT = Outcome.NOT_SENT
_NO_ANSWER = Outcome.NO_ANSWER

#: The server's time is asked once: any answer, a refusal too, bounds the server's clock by its
#: Date, and a failure leaves the draw to wait.
_ASK_ONCE = RetryPolicy(max_retries=0, max_rate_limit_retries=0, max_nonce_retries=0)

#: The abilities of a transport that declares none: the defaults.
_NO_TRANSPORT_ABILITIES = BaseTransport()


class _Attempt(NamedTuple):
    """One attempt that has ended, as its outcome's handler and its record need it."""

    op: Operation[Any]
    number: int
    admission: Admission
    waited: float
    elapsed: float
    body: bytes | None


def _too_late(timeout: float) -> RequestTimeout:
    """A request whose deadline passed while it waited for a connection or a nonce: sent now, it
    could arrive after the moment its budget counts it until. Not sent: a timeout, as a wait
    for a connection inside the exchange would be."""
    return RequestTimeout(f"no connection within {timeout:g} s", may_have_reached_server=False)


def _refusal(op: Operation[Any], closed: bool) -> TxcError:
    """The error of a call refused before it starts: the client is ``closed``, or the operation
    needs a key the client does not have."""
    if closed:
        return client_closed(op.name)
    error = InvalidParameterError(
        "api_key",
        f"{op.name} is a private operation and this client has no key: give "
        "Client(api_key=..., api_secret=...), or set TXC_API_KEY and TXC_API_SECRET for "
        "Client.from_env()",
    )
    error._attach_operation(op.name)
    return error


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
        self.requests = Requests(base_url, signer, user_agent)
        self.calls = CallsInFlight()
        self.server_clock = server_clock
        #: Names the budgets: the server's (every API key used with it shares them).
        self.key_id = key_id
        self.rate_limits = rate_limits
        # The abilities the transport declares; any other has the defaults.
        declared = transport if isinstance(transport, BaseTransport) else _NO_TRANSPORT_ABILITIES
        self.admitter = Admitter(
            limiter=limiter, key_id=key_id, nonce_key=nonce_key, rate_limits=rate_limits,
            server_clock=server_clock, nonce_clock=NonceClock(server_clock, self._ask_server_time),
            nonces=signer.nonces if signer is not None else None, slots=declared.slots,
            calls=self.calls,
        )
        #: The limiter the client was given (the admitter calls it with groups, adapted if it
        #: takes none; how a request ended is told to it the same way either way).
        self.limiter = limiter
        self.transport = transport
        # Whether the request a task was sending when it ended certainly never left, when the
        # transport can tell (else it may have reached the server).
        self._sent_nothing = declared.sent_nothing
        self.recorder = Recorder(on_request)
        self.stats = ClientStats()

    @property
    def signer(self) -> Signer | None:
        """Signs private requests; None when the client serves public operations only."""
        return self.requests.signer

    @signer.setter
    def signer(self, signer: Signer | None) -> None:
        # The key's nonces are drawn at admission, its requests signed when built.
        self.requests.signer = signer
        self.admitter.nonces = signer.nonces if signer is not None else None

    @property
    def base_url(self) -> URL:
        """The server's address."""
        return self.requests.base_url

    @property
    def user_agent(self) -> str:
        """The User-Agent header of every request."""
        return self.requests.user_agent

    @property
    def closed(self) -> bool:
        """`aclose` was called: no call starts any more."""
        return self.calls.closed

    async def aclose(self) -> None:
        """End the calls under way, then close the transport."""
        self.calls.close()
        await self.transport.aclose()

    async def call(
        self, op: Operation[R], params: Mapping[str, Any], timeout: float, retry: RetryPolicy
    ) -> R:
        """Run ``op`` to its result or its error, retrying as ``retry`` allows. The send stays
        in this one coroutine that runs every attempt (each level of ``await`` is resumed on
        every wake-up of the exchange); what comes before and after it is in the methods below."""
        signed = op.auth is _SIGNED
        requests, calls, admitter = self.requests, self.calls, self.admitter
        if calls.closed or (signed and requests.signer is None):
            raise _refusal(op, calls.closed)
        # Registered for close() here, not by a method of the calls: a call of one costs
        # measurably on every call.
        task = _current_task()
        if task is None:  # pragma: no cover - a coroutine always runs in a task under asyncio
            raise RuntimeError("txc_async calls must run in an asyncio task")
        calls.tasks.add(task)
        slots = admitter.slots
        state = CallState()
        try:
            while True:
                state.attempt += 1
                admission, nonce, waited = await admitter.admit(op, timeout, signed, state)
                try:
                    url, state.headers, body = requests.build(op, params, nonce)
                except BaseException:
                    admitter.unsent(admission)
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
                    tried = _Attempt(op, state.attempt, admission, waited, _monotonic() - sent,
                                     body)
                    await asyncio.sleep(self._after_no_answer(exc, tried, retry, state))
                    continue
                except BaseException:
                    self._cancelled_in_flight(admission)
                    raise
                elapsed = _monotonic() - sent
                admitter.answered(state, clock_sent, raw)
                try:
                    result = decode_answer(raw, op.decode, signed, op.auth is _FORM)
                except BaseException as exc:
                    tried = _Attempt(op, state.attempt, admission, waited, elapsed, body)
                    delay = self._after_error_answer(exc, raw, tried, retry, state)
                    if delay is not None:
                        await asyncio.sleep(delay)
                    continue
                self.limiter.conclude(admission, _ANSWERED)
                if self.recorder.hook is not None or _debug_enabled(_DEBUG):
                    tried = _Attempt(op, state.attempt, admission, waited, elapsed, body)
                    self._record(tried, raw.status, None, raw, False)
                return result
        except TxcError as exc:
            exc._attach_operation(op.name)
            if (
                isinstance(exc, TransportError) and exc.may_have_reached_server
                and not op.retry_safe and exc.check_first is None
            ):
                exc.check_first = what_to_check(op, params)
            mask_carried_secrets(exc, op, params, state.headers if signed else None)
            raise
        except asyncio.CancelledError:
            if calls.ended_by_close_alone(task):
                raise closed_during_call(op, state.maybe_sent(self._sent_nothing)) from None
            raise
        finally:
            calls.leave(task)
            if state.first:
                admitter.unanswered(state)

    def _cancelled_in_flight(self, admission: Admission) -> None:
        """The call was cancelled while its request was with the transport: the request may
        still arrive until its deadline, unless it never had a connection."""
        self.limiter.conclude(admission, _NOT_SENT if self._sent_nothing() else _NO_ANSWER)

    def _after_no_answer(
        self, exc: TransportError, tried: _Attempt, retry: RetryPolicy, state: CallState
    ) -> float:
        """Settle and record an attempt that got no answer; the seconds to wait before the next
        attempt, or ``exc`` raised again when none follows (nor once the client is closed)."""
        self.admitter.unanswered(state)
        state.reached = state.reached or exc.may_have_reached_server
        self.limiter.conclude(
            tried.admission, _NO_ANSWER if exc.may_have_reached_server else _NOT_SENT
        )
        delay = None if self.calls.closed else retry.after_no_answer(
            tried.op.retry_safe, exc.may_have_reached_server, state.failures
        )
        self._record(tried, exc.status, error_kind(exc), None, delay is not None)
        if delay is None:
            raise exc
        self._count_failure(state)
        return delay

    def _after_error_answer(
        self, exc: BaseException, raw: RawResponse, tried: _Attempt, retry: RetryPolicy,
        state: CallState,
    ) -> float | None:
        """Settle and record an attempt whose answer is an error or a refusal: the seconds to
        wait before the next attempt (None: at once, its budget holds any pause), or the
        call's error raised when none follows."""
        op, admission = tried.op, tried.admission
        if isinstance(exc, RateLimited):
            again = retry.after_rate_limit(op.retry_safe, exc.refused, state.rate_limited)
            pause = self.limiter.conclude(admission, _RATE_LIMITED, exc.error.retry_after)
            self._record(tried, raw.status, "rate_limited", raw, again)
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
            again = retry.after_nonce_refusal(state.nonce_refused)
            self._record(tried, raw.status, "nonce_refused", raw, again)
            if not again:
                # Says what the clocks show (the refusal's Date was learnt from its answer).
                raise nonce_refusal_error(
                    exc.error, self.server_clock, state.nonce_refused + 1
                ) from None
            state.nonce_refused += 1
            self.stats.nonce_refusals += 1
            self.admitter.pass_refused_nonces(admission)
            return None
        if isinstance(exc, TxcError):
            delay = retry.after_error_answer(
                op.retry_safe, state.failures, parse_retry_after(raw.headers)
            ) if isinstance(exc, TransportError) else None
            self._record(tried, raw.status, error_kind(exc), raw, delay is not None)
            if delay is not None:
                self._count_failure(state)
                return delay
        raise exc

    def _count_failure(self, state: CallState) -> None:
        """A failed attempt is followed by another: one more against ``max_retries``."""
        state.failures += 1
        self.stats.retries += 1

    def _record(
        self, tried: _Attempt, status: int | None, error: str | None, raw: RawResponse | None,
        retried: bool,
    ) -> None:
        """Record an ended attempt (nothing is built when no one listens)."""
        recorder = self.recorder
        if recorder.hook is not None or _debug_enabled(_DEBUG):
            recorder.record(EndedAttempt(
                tried.op, tried.number, status, error, tried.waited, tried.elapsed,
                len(tried.body) if tried.body else 0, len(raw.body) if raw is not None else 0,
                retried,
            ))

    async def _ask_server_time(self, timeout: float) -> None:
        """One ping, whose answer's Date bounds the server's clock (a shared limiter asks for it
        before it draws a nonce on a clock no answer has bounded).

        The clock runs it as a task of its own (see ``NonceClock.learn``): the call that asks
        is registered for ``close()`` under its own task, and must stay so."""
        await self.call(PING, {}, timeout, _ASK_ONCE)
