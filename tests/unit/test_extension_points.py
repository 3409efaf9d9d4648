"""The public mock transport, and the optional abilities of transports and limiters: declared by
deriving from BaseTransport and BaseLimiter, used by the pipeline when declared, and the defaults
for a transport or limiter that declares none."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from decimal import Decimal

from yarl import URL

import txc_async
from txc_async import Admission, Outcome, RateLimit, TransportError
from txc_async.limiters import BaseLimiter
from txc_async.transports import ConnectionSlots, MockRequest, RawResponse

from ..support.common import KEY, SECRET, fast_retry

BASE = "https://api.example.test"
PONG = RawResponse(200, {}, b'["pong"]')
BALANCE = RawResponse(200, {}, b'{"BTC": {"main_balance": "0.5"}}')


def _nonce(request: MockRequest) -> int:
    assert request.body is not None
    return int(json.loads(request.body)["nonce"])


async def test_the_mock_transport_gives_the_handler_each_request_and_returns_its_answer() -> None:
    seen: list[MockRequest] = []

    def handler(request: MockRequest) -> RawResponse:
        seen.append(request)
        return BALANCE

    client = txc_async.Client(api_key=KEY, api_secret=SECRET, base_url=BASE,
                              transport=txc_async.MockTransport(handler))
    assert await client.main_balance() == {"BTC": Decimal("0.5")}
    (request,) = seen
    assert request.method == "POST"
    assert request.url == URL(BASE + "/api/v4/main-account/balance")
    assert request.headers is not None and request.headers["X-TXC-APIKEY"] == KEY
    assert json.loads(request.body or b"")["request"] == "/api/v4/main-account/balance"
    assert 0 < request.timeout <= 30
    await client.close()


async def test_an_async_handler_may_wait_and_a_raising_one_is_a_network_failure() -> None:
    answers: list[RawResponse | TransportError] = [TransportError("reset"), PONG]

    async def handler(request: MockRequest) -> RawResponse:
        await asyncio.sleep(0)
        answer = answers.pop(0)
        if isinstance(answer, TransportError):
            raise answer
        return answer

    client = txc_async.Client(base_url=BASE, transport=txc_async.MockTransport(handler),
                              retry=fast_retry())
    assert await client.ping() is True  # a read: sent again after the failure
    assert answers == []
    await client.close()


async def test_a_transport_with_only_send_and_aclose_serves() -> None:
    class Plain:
        async def send(self, method: str, url: URL, *, headers: Mapping[str, str] | None,
                       body: bytes | None, timeout: float) -> RawResponse:
            return PONG

        async def aclose(self) -> None:
            pass

    client = txc_async.Client(base_url=BASE, transport=Plain())
    assert client._pipeline.admitter.slots is None
    assert client._pipeline._sent_nothing() is False
    assert await client.ping() is True
    await client.close()


class _Held(txc_async.MockTransport):
    """A mock transport with one connection: a request sent while ``gate`` is shut holds it."""

    def __init__(self, handler: Callable[[MockRequest], RawResponse]) -> None:
        super().__init__(self._answer)
        self.slots = ConnectionSlots(1)
        self.gate = asyncio.Event()
        self.arrived = asyncio.Event()
        self.answer = handler
        self.requests: list[MockRequest] = []

    async def _answer(self, request: MockRequest) -> RawResponse:
        self.requests.append(request)
        self.arrived.set()
        await self.gate.wait()
        return self.answer(request)


class _Admitting:
    """Admits at once; its admissions carry ``nonces`` in turn (None: the client draws them).
    It has holds and redraw_nonce, answering from ``held`` and ``redrawn``, but does not
    declare them (it does not derive from BaseLimiter)."""

    def __init__(self, nonces: list[int | None], held: list[bool], redrawn: list[int]) -> None:
        self.nonces = nonces
        self.held = held
        self.redrawn = redrawn
        self.outcomes: list[Outcome] = []
        self.admitted = 0

    def try_acquire(self, key_id: str, scope: str, limit: RateLimit,
                    timeout: float) -> Admission | None:
        self.admitted += 1
        now = time.monotonic()
        nonce = self.nonces.pop(0) if self.nonces else None
        return Admission(key_id, scope, limit, now, now + timeout, nonce=nonce)

    async def acquire(self, key_id: str, scope: str, limit: RateLimit, timeout: float,
                      nonce_clock: Callable[[], int] | None = None) -> Admission:
        raise AssertionError("try_acquire always admits")

    def conclude(self, admission: Admission, outcome: Outcome,
                 retry_after: float | None = None) -> float:
        self.outcomes.append(outcome)
        return 0.0

    def effective_limit(self, key_id: str, scope: str, limit: RateLimit) -> RateLimit:
        return limit

    async def aclose(self) -> None:
        pass

    def holds(self, admission: Admission) -> bool:
        return self.held.pop(0) if self.held else True

    async def redraw_nonce(self, admission: Admission,
                           nonce_clock: Callable[[], int]) -> int | None:
        return self.redrawn.pop(0) if self.redrawn else None


class _DeclaringLimiter(_Admitting, BaseLimiter):
    """The same, its abilities declared."""


async def _second_waits_for_the_connection(
    client: txc_async.Client, transport: _Held, call: Callable[[], object]
) -> None:
    """One call holds the only connection while a second waits for it; then both end."""
    sent_before = len(transport.requests)
    transport.arrived.clear()
    first = asyncio.ensure_future(call())  # type: ignore[arg-type]
    await transport.arrived.wait()
    second = asyncio.ensure_future(call())  # type: ignore[arg-type]
    for _ in range(5):
        await asyncio.sleep(0)
    assert len(transport.requests) == sent_before + 1, "the second waits for the connection"
    transport.gate.set()
    await asyncio.gather(first, second)
    await client.close()


async def test_a_request_whose_budget_a_refusal_paused_while_it_waited_goes_back() -> None:
    # The second call's admission is no longer held once it has the connection: it is concluded
    # as not sent and admitted again, then sent.
    limiter = _DeclaringLimiter([], held=[False], redrawn=[])
    transport = _Held(lambda request: PONG)
    client = txc_async.Client(base_url=BASE, transport=transport, limiter=limiter)
    await _second_waits_for_the_connection(client, transport, client.ping)
    assert limiter.admitted == 3
    assert limiter.outcomes.count(Outcome.NOT_SENT) == 1
    assert limiter.outcomes.count(Outcome.ANSWERED) == 2
    assert len(transport.requests) == 2


async def test_a_nonce_the_wait_made_too_old_is_drawn_again_by_the_limiter() -> None:
    now_ms = int(time.time() * 1000)
    fresh = now_ms + 7
    # The first call's answer lets the others go (see FirstAnswer); the second holds the
    # connection; the third's nonce, drawn by the limiter at admission, is too old to send.
    limiter = _DeclaringLimiter([now_ms, now_ms + 3, 1], held=[], redrawn=[fresh])
    transport = _Held(lambda request: BALANCE)
    transport.gate.set()
    client = txc_async.Client(api_key=KEY, api_secret=SECRET, base_url=BASE,
                              transport=transport, limiter=limiter, retry=fast_retry())
    await client.main_balance()
    transport.gate.clear()
    await _second_waits_for_the_connection(client, transport, client.main_balance)
    assert [_nonce(request) for request in transport.requests] == [now_ms, now_ms + 3, fresh]
    assert limiter.admitted == 3 and limiter.redrawn == []


async def test_abilities_a_limiter_does_not_declare_are_not_used() -> None:
    # Its holds would say the budget was paused: undeclared, the request leaves at once.
    limiter = _Admitting([], held=[False], redrawn=[])
    transport = _Held(lambda request: PONG)
    client = txc_async.Client(base_url=BASE, transport=transport, limiter=limiter)
    await _second_waits_for_the_connection(client, transport, client.ping)
    assert limiter.admitted == 2 and limiter.held == [False]
    assert limiter.outcomes == [Outcome.ANSWERED, Outcome.ANSWERED]
