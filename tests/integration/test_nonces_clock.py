"""Nonces on the server's clock: the offset learnt from answers' Date headers, outliers and steps,
the nonce counter re-based after a correction without busy waiting, clear errors, the shared
Redis counter, and every case end to end against the sandbox with its clock offset."""

from __future__ import annotations

import asyncio
import email.utils
import math
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from aioresponses import aioresponses

import txc_async
from txc_async import AuthenticationError, RedisLimiter, RetryPolicy, SQLiteLimiter
from txc_async._httpdate import parse_http_date
from txc_async._nonces.clock import MAX_DRIFT, NONCE_WINDOW_MS, ServerClock
from txc_async._nonces.sources import MAX_NONCE_LEAD_MS, NonceSource, nonce_refusal_error
from txc_async.sandbox import Sandbox
from txc_async.transports import AiohttpTransport

from ..support.clocks import ManualClock
from ..support.common import KEY, SECRET, decode_signed, fast_retry, requests_to
from ..support.redis_server import RedisServer, require_redis_server

BALANCE_PATH = "/api/v4/main-account/balance"
PING_PATH = "/api/v4/public/ping"


def http_date(seconds: float) -> str:
    return email.utils.formatdate(seconds, usegmt=True)


def answer(clock: ManualClock, server: ServerClock, offset: float, rtt: float = 0.02,
           *, refused: bool = False) -> None:
    """One exchange with a server whose clock is ``offset`` seconds ahead of ``clock``'s wall
    clock: it stamps the answer halfway through the round trip."""
    sent = clock.monotonic()
    clock.advance(rtt / 2)
    date = http_date(clock.time() + offset)
    clock.advance(rtt / 2)
    server.observe(sent, clock.monotonic(), date, refused=refused)


def true_server_ms(clock: ManualClock, offset: float) -> int:
    return round((clock.time() + offset) * 1000)


# -- reading Date headers ----------------------------------------------------------------------


def test_http_dates_in_every_form() -> None:
    assert parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT") == 784111777
    assert parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT") == 784111777
    assert parse_http_date("Sun Nov  6 08:49:37 1994") == 784111777
    assert parse_http_date(http_date(1_700_000_000)) == 1_700_000_000
    for bad in ("", "yesterday", "Sun, 06 Xyz 1994 08:49:37 GMT", "Sun, 99 Nov 1994 08:49:37 GMT"):
        assert parse_http_date(bad) is None


# -- the estimate ------------------------------------------------------------------------------


def test_before_any_answer_the_wall_clock_stands_for_the_servers() -> None:
    clock = ManualClock(wall=1_700_000_000.0)
    server = ServerClock(clock)
    assert server.offset == 0.0 and server.uncertainty is None
    assert server.now_ms() == 1_700_000_000_000
    server.observe(clock.monotonic(), clock.monotonic(), None)  # no Date: nothing learnt
    server.observe(clock.monotonic(), clock.monotonic(), "not a date")
    assert server.samples == 0 and server.offset == 0.0


@pytest.mark.parametrize("offset", [7.0, -7.0, 30.0, -30.0, 0.3, -1234.567])
def test_one_answer_gives_the_offset_within_half_a_second_and_a_few_within_a_fifth(
    offset: float,
) -> None:
    clock = ManualClock(wall=1_700_000_000.25)
    server = ServerClock(clock)
    answer(clock, server, offset)
    assert abs(server.offset - offset) <= 0.5 + 0.01
    # Answers at different fractions of a second narrow the bounds.
    for _ in range(6):
        clock.advance(0.37)
        answer(clock, server, offset)
    assert abs(server.offset - offset) < 0.2
    assert server.uncertainty is not None and server.uncertainty < 0.2
    assert abs(server.now_ms() - true_server_ms(clock, offset)) < 200


def test_the_true_offset_always_lies_within_the_bounds() -> None:
    import random

    rng = random.Random(7)
    for _ in range(200):
        offset = rng.uniform(-60, 60)
        clock = ManualClock(wall=1_700_000_000 + rng.random())
        server = ServerClock(clock)
        for _ in range(rng.randint(1, 12)):
            clock.advance(rng.uniform(0.001, 3))
            answer(clock, server, offset, rtt=rng.uniform(0.0005, 0.8))
            assert server.uncertainty is not None
            # The server's true time lies within the estimate's bounds (half-width around it).
            assert abs(server.now() - (clock.time() + offset)) <= server.uncertainty + 1e-6
        assert server.ceiling_ms() >= true_server_ms(clock, offset) + NONCE_WINDOW_MS


def test_a_step_of_this_machines_wall_clock_leaves_the_estimate_alone() -> None:
    clock = ManualClock()
    server = ServerClock(clock)
    answer(clock, server, 7.0)
    before, generation = server.now_ms(), server.generation
    clock.step(-30.0)  # NTP steps this machine's clock back
    assert abs(server.now_ms() - before) <= 1
    assert server.generation == generation
    assert abs(server.offset - 37.0) < 0.6  # the server now looks 37 s ahead of the wall clock
    clock.step(+60.0)
    assert abs(server.now_ms() - before) <= 1
    assert abs(server.offset - -23.0) < 0.6


def test_an_outlier_is_rejected_and_a_confirmed_step_is_followed() -> None:
    clock = ManualClock()
    server = ServerClock(clock)
    for _ in range(4):
        answer(clock, server, 2.0)
        clock.advance(0.3)
    generation = server.generation
    answer(clock, server, -40.0)  # one stale answer (a cache, say)
    assert abs(server.offset - 2.0) < 0.6 and server.rejected == 1
    answer(clock, server, 2.0)  # the next agrees with the estimate: the outlier is forgotten
    answer(clock, server, -40.0)
    assert abs(server.offset - 2.0) < 0.6 and server.generation == generation
    clock.advance(0.4)
    answer(clock, server, -40.0)  # a second answer agreeing with the outlier: the server stepped
    assert abs(server.offset - -40.0) < 0.6
    assert server.generation == generation + 1


def test_a_refusal_that_disagrees_replaces_the_estimate_at_once() -> None:
    clock = ManualClock()
    server = ServerClock(clock)
    answer(clock, server, 0.0)
    generation = server.generation
    answer(clock, server, 30.0, refused=True)
    assert abs(server.offset - 30.0) < 0.6 and server.generation == generation + 1
    answer(clock, server, 30.0, refused=True)  # an agreeing refusal only narrows it
    assert server.generation == generation + 1


def test_answers_to_requests_sent_before_a_step_cannot_undo_it() -> None:
    clock = ManualClock()
    server = ServerClock(clock)
    answer(clock, server, 0.0)
    # Three requests leave; the server's clock steps 30 s ahead while they travel. The first
    # answer is a refusal on the new clock; the other two were stamped before the step.
    sent = clock.monotonic()
    clock.advance(0.05)
    old_dates = [http_date(clock.time()), http_date(clock.time())]
    clock.advance(0.05)
    server.observe(sent, clock.monotonic(), http_date(clock.time() + 30.0), refused=True)
    generation = server.generation
    for date in old_dates:
        clock.advance(0.01)
        server.observe(sent, clock.monotonic(), date)
    assert abs(server.offset - 30.0) < 0.6 and server.generation == generation
    answer(clock, server, 0.0)  # a request sent after the step, yet on the old clock: noted
    answer(clock, server, 0.0)  # and confirmed: the server stepped back again
    assert abs(server.offset) < 0.6 and server.generation == generation + 1


def test_a_drifting_server_clock_is_followed_without_rejection() -> None:
    clock = ManualClock()
    server = ServerClock(clock)
    offset = 3.0
    for _ in range(400):  # 400 answers over 4 hours, the server gaining 300 ppm
        clock.advance(36.0 + 0.137)
        offset += 36.137 * 300e-6
        answer(clock, server, offset)
        assert abs(server.offset - offset) < 0.6
    assert server.rejected == 0
    assert MAX_DRIFT > 300e-6


def test_a_slightly_inconsistent_answer_wins_over_older_bounds() -> None:
    clock = ManualClock()
    server = ServerClock(clock)
    for _ in range(5):
        answer(clock, server, 1.0)
        clock.advance(0.29)
    answer(clock, server, 1.3)  # another server behind the balancer, 0.3 s apart
    assert abs(server.offset - 1.3) < 0.6 and server.rejected == 0


# -- nonces on the estimate --------------------------------------------------------------------


@pytest.mark.parametrize("offset", [7.0, -7.0, 30.0, -30.0])
async def test_nonces_follow_the_server_after_one_answer(offset: float) -> None:
    clock = ManualClock()
    server = ServerClock(clock)
    source = NonceSource(server, sleep=clock.sleep)
    first = await source.next()
    assert first == true_server_ms(clock, 0.0)  # the wall clock, before any answer
    answer(clock, server, offset, refused=True)  # its refusal carries the server's Date
    ceiling = server.ceiling_ms()
    start = clock.monotonic()
    nonce = await source.next()
    waited = clock.monotonic() - start
    # Within the window at the server when it leaves (the true offset, not the estimate).
    assert abs(nonce - true_server_ms(clock, offset)) < NONCE_WINDOW_MS - 400
    assert waited * 1000 <= MAX_NONCE_LEAD_MS
    if offset > 0:
        assert waited == 0 and nonce > first
    else:
        # The counter came back from far ahead, but stays above every nonce the server can
        # have accepted (its clock's latest reading plus the window), after one sleep.
        assert ceiling < first and nonce == ceiling + 1
        assert len(clock.slept) == 1, "one sleep, no polling"
    later = [await source.next() for _ in range(20)]
    assert later == sorted(set(later)) and later[0] > nonce


async def test_a_burst_waits_in_one_sleep_per_caller_and_is_never_re_based() -> None:
    clock = ManualClock()
    server = ServerClock(clock)
    answer(clock, server, 0.0)
    source = NonceSource(server, sleep=clock.sleep)
    nonces = [source.try_next() for _ in range(MAX_NONCE_LEAD_MS + 1)]
    assert None not in nonces
    assert source.try_next() is None  # the counter is at the lead
    waiters = [asyncio.create_task(source.next()) for _ in range(300)]
    drawn = await asyncio.gather(*waiters)
    assert len(clock.slept) == 300, "each waiter sleeps exactly once"
    every = [n for n in nonces if n is not None] + drawn
    assert len(set(every)) == len(every)
    # The sleeps were exactly what each value needed: 1 ms for the first, 300 ms for the last.
    assert max(clock.slept) <= 0.301 and min(clock.slept) >= 0.0


@pytest.mark.parametrize("rtt", [0.05, 2.0, 4.0, 9.0])
async def test_on_a_slow_link_the_lead_shrinks_so_a_burst_stays_inside_the_window(
    rtt: float,
) -> None:
    # The worst case for the estimate: the server stamps its answer just before it arrives,
    # at the very end of a second, so the middle of the bounds is rtt/2 - 0.5 s ahead of it.
    clock = ManualClock(wall=1_700_000_000.0)
    server = ServerClock(clock)
    sent = clock.monotonic()
    clock.advance(rtt)
    clock.wall = float(int(clock.wall)) + 0.999  # the server's clock is this machine's
    server.observe(sent, clock.monotonic(), http_date(clock.time()))
    assert server.now() >= clock.time() or rtt < 1  # the estimate runs ahead of the server
    source = NonceSource(server, sleep=clock.sleep)
    for _ in range(6000):
        nonce = await source.next()
        # Taken at once, it must be inside the window of the server's true clock.
        assert nonce <= true_server_ms(clock, 0.0) + NONCE_WINDOW_MS
    half_ms = math.ceil((rtt + 1) / 2 * 1000)  # half the bounds' width
    expected = max(0, min(MAX_NONCE_LEAD_MS, NONCE_WINDOW_MS - 100 - half_ms))
    assert expected - 5 <= server.lead_ms() <= expected  # (less a little drift allowance)
    if rtt > 2:
        assert server.lead_ms() < MAX_NONCE_LEAD_MS


async def test_a_sleeping_caller_draws_again_when_the_estimate_jumps() -> None:
    clock = ManualClock()
    server = ServerClock(clock)
    answer(clock, server, 0.0)

    async def slow_sleep(seconds: float) -> None:
        # While the caller sleeps, the estimate learns that the server is 30 s behind.
        clock.slept.append(seconds)
        clock.advance(seconds)
        if len(clock.slept) == 1:
            answer(clock, server, -30.0, refused=True)

    source = NonceSource(server, sleep=slow_sleep)
    for _ in range(MAX_NONCE_LEAD_MS + 1):
        assert source.try_next() is not None
    nonce = await source.next()
    assert abs(nonce - true_server_ms(clock, -30.0)) < NONCE_WINDOW_MS
    # The first sleep (1 ms, on the old estimate), then one more for the re-based value.
    assert len(clock.slept) == 2 and clock.slept[1] * 1000 <= MAX_NONCE_LEAD_MS


@pytest.mark.parametrize("step", [-30.0, -3600.0, 30.0, 3600.0])
async def test_a_wall_clock_step_before_any_answer_costs_no_long_wait(step: float) -> None:
    clock = ManualClock()
    server = ServerClock(clock)
    source = NonceSource(server, sleep=clock.sleep)
    issued = [await source.next() for _ in range(50)]
    clock.step(step)
    start = clock.monotonic()
    nonce = await source.next()
    assert (clock.monotonic() - start) * 1000 <= MAX_NONCE_LEAD_MS
    # On the stepped wall clock (the best guess before any answer), within the lead of it.
    assert 0 <= nonce - server.now_ms() <= MAX_NONCE_LEAD_MS
    assert nonce not in issued
    more = [await source.next() for _ in range(10)]
    assert more == sorted(set(more)) and more[0] > nonce


async def test_nonces_stay_unique_across_corrections() -> None:
    clock = ManualClock()
    server = ServerClock(clock)
    source = NonceSource(server, sleep=clock.sleep)
    seen: set[int] = set()
    for offset in (0.0, 12.0, -20.0, 5.0, -45.0, 0.0):
        answer(clock, server, offset, refused=True)
        for _ in range(200):
            nonce = await source.next()
            # A value the server may have accepted is never handed out again, and none is
            # handed out beyond the window of the server's true clock.
            assert nonce not in seen
            assert nonce - true_server_ms(clock, offset) <= MAX_NONCE_LEAD_MS + 600
            seen.add(nonce)
            clock.advance(0.003)


async def test_the_client_learns_from_answers_on_its_own_clock() -> None:
    clock = ManualClock(wall=1_800_000_000.0)
    base = "https://clock-hook.example.test"
    server_date = http_date(clock.time() + 30.0)
    with aioresponses() as mocked:
        mocked.post(base + BALANCE_PATH, status=429, headers={"Date": server_date},
                    payload={"code": 0, "message": "Too many requests.", "errors": {}})
        mocked.post(base + BALANCE_PATH, headers={"Date": server_date},
                    payload={"BTC": {"main_balance": "1"}})
        async with txc_async.Client(api_key=KEY, api_secret=SECRET, base_url=base,
                                    retry=fast_retry(), clock=clock,
                                    transport=AiohttpTransport(direct=False)) as client:
            assert client.clock_offset == 0.0
            await client.main_balance()
            assert 29.0 <= client.clock_offset <= 31.0
        bodies = [decode_signed(kw) for kw in requests_to(mocked, BALANCE_PATH)]
    first, second = (int(body["nonce"]) for body in bodies)
    assert first == 1_800_000_000_000  # the wall clock, before any answer
    assert 1_800_000_029_000 <= second <= 1_800_000_031_000  # the server's, after its refusal


# -- clear errors ------------------------------------------------------------------------------


def test_the_refusal_error_names_the_measured_offset() -> None:
    clock = ManualClock()
    server = ServerClock(clock)
    refusal = AuthenticationError(
        "nonce refused: Your nonce is more than 5 seconds lesser than the current nonce",
        status=429, code=0,
    )
    text = str(nonce_refusal_error(refusal, server, 6))
    assert "no Date header" in text and "more than the 5 s" in text
    answer(clock, server, -7.25)
    error = nonce_refusal_error(refusal, server, 6)
    assert isinstance(error, AuthenticationError) and error.status == 429 and error.code == 0
    text = str(error)
    assert "6 attempts" in text and "Your nonce is more than 5 seconds" in text
    assert "7." in text and "behind this machine's" in text
    assert "the machine's clock or the server's differs by more than the 5 s" in text


async def test_persistent_refusals_end_in_an_error_that_says_what_the_clocks_show() -> None:
    base = "https://clock-refusals.example.test"
    with aioresponses() as mocked:
        mocked.post(base + BALANCE_PATH, status=429, repeat=True,
                    headers={"Date": http_date(time.time() + 9.6)},
                    payload={"code": 0, "errors": {},
                             "message": "Your nonce is more than 5 seconds lesser than the "
                                        "current nonce"})
        async with txc_async.Client(api_key=KEY, api_secret=SECRET, base_url=base,
                                    retry=fast_retry(),
                                    transport=AiohttpTransport(direct=False)) as client:
            with pytest.raises(AuthenticationError) as caught:
                await client.main_balance()
            assert 9 < client.clock_offset < 11
    text = str(caught.value)
    assert "nonce refused on 6 attempts" in text
    assert "ahead of this machine's" in text and "more than the 5 s the service allows" in text
    assert SECRET not in text


# -- the sandbox's clock -----------------------------------------------------------------------


class SteppingClock:
    """This machine's clocks with a wall clock the test can step."""

    def __init__(self, step: float = 0.0) -> None:
        self.step = step

    def time(self) -> float:
        return time.time() + self.step

    def monotonic(self) -> float:
        return time.monotonic()


async def test_the_sandbox_dates_its_answers_and_judges_nonces_on_its_own_clock() -> None:
    import aiohttp

    async with Sandbox(clock_offset=-42.0) as box, aiohttp.ClientSession() as http:
        async with http.get(box.url + "/api/v4/public/ping") as response:
            date = parse_http_date(response.headers["Date"])
        assert date is not None and abs(date - (time.time() - 42)) < 2
        box.clock_offset = 3600
        async with http.get(box.url + "/nowhere") as response:
            date = parse_http_date(response.headers["Date"])
        assert response.status == 404
        assert date is not None and abs(date - (time.time() + 3600)) < 2
        assert abs(box.server_time() - (time.time() + 3600)) < 1


def one_retry_client(box: Sandbox) -> txc_async.Client:
    """A client of ``box`` that sends a request refused for its nonce once more, no more."""
    return txc_async.Client(api_key=box.api_key, api_secret=box.api_secret, base_url=box.url,
                            retry=RetryPolicy(max_nonce_retries=1))


@pytest.mark.parametrize("offset", [7.0, -7.0, 30.0, -30.0])
async def test_server_clock_off_first_call_succeeds_and_no_later_call_is_refused(
    offset: float,
) -> None:
    async with Sandbox(clock_offset=offset) as box, one_retry_client(box) as client:
        assert client.clock_offset == 0.0
        started = time.monotonic()
        await client.main_balance()  # the first call: one refusal at most, inside it
        first_call = time.monotonic() - started
        assert box.stats.nonce_refused <= 1
        assert first_call < MAX_NONCE_LEAD_MS / 1000
        refused = box.stats.nonce_refused
        for _ in range(3):
            await client.main_balance()
        assert abs(client.clock_offset - offset) < 1.0
        await asyncio.gather(*(client.main_balance() for _ in range(300)))
        await client.collateral_stop_limit_order(
            market="BTC_USDT", side="buy", amount="0.01", price="40000",
            activation_price="39000")
        assert box.stats.nonce_refused == refused, "no later call is refused"
        assert abs(client.clock_offset - offset) < 1.0


@pytest.mark.parametrize("offset", [0.0, 7.0, -7.0, 30.0, -30.0])
async def test_a_first_burst_against_an_offset_server_costs_one_refused_attempt_in_all(
    offset: float,
) -> None:
    # The first signed request goes alone; the others wait for its answer, or for the server's
    # time asked meanwhile (one ping): either corrects the estimate for all of them (the first
    # request is refused once), or finds it right (no refusal).
    async with Sandbox(clock_offset=offset) as box, one_retry_client(box) as client:
        await asyncio.gather(*(client.main_balance() for _ in range(100)))
        assert box.stats.nonce_refused == (1 if offset else 0)
        assert box.stats.received[BALANCE_PATH] == 100 + box.stats.nonce_refused
        assert box.stats.received[PING_PATH] <= 1
        assert abs(client.clock_offset - offset) < 1.0


async def test_a_first_request_left_unanswered_hands_its_turn_to_the_next() -> None:
    async with Sandbox(clock_offset=30.0) as box, txc_async.Client(
        api_key=box.api_key, api_secret=box.api_secret, base_url=box.url,
        retry=fast_retry(max_nonce_retries=1),
    ) as client:
        box.faults.add(BALANCE_PATH, "reset")  # the first request: no answer at all
        box.faults.add(PING_PATH, "slow", delay=3.0)  # nor, for now, the server's time
        started = time.monotonic()
        await asyncio.gather(*(client.main_balance() for _ in range(20)))
        # The next request went first: its refusal taught the clock to the rest, and the first
        # one, sent again, drew on the corrected clock.
        assert box.stats.nonce_refused == 1
        assert time.monotonic() - started < 2.0


async def test_a_slow_first_answer_holds_no_one_up_a_ping_tells_the_time() -> None:
    async with Sandbox(clock_offset=30.0) as box, txc_async.Client(
        api_key=box.api_key, api_secret=box.api_secret, base_url=box.url,
        retry=RetryPolicy(max_nonce_retries=1),
    ) as client:
        box.faults.add(BALANCE_PATH, "slow", delay=3.0)  # the first request's answer is late
        first = asyncio.ensure_future(client.main_balance())
        await asyncio.sleep(0.1)
        started = time.monotonic()
        await asyncio.gather(*(client.main_balance() for _ in range(20)))
        # The others asked the server's time meanwhile (one ping), and drew on it.
        assert time.monotonic() - started < 1.0
        assert box.stats.received[PING_PATH] == 1
        assert box.stats.nonce_refused == 0
        await first  # drawn on this machine's clock: refused once, then signed again
        assert box.stats.nonce_refused == 1


async def test_when_the_servers_answer_has_no_date_no_one_waits_for_a_slow_first_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    observe = ServerClock.observe

    def no_date(self: ServerClock, sent: float, answered: float, date: str | None,
                *, refused: bool = False) -> None:
        observe(self, sent, answered, None, refused=refused)

    # No answer carries a usable Date: the ping's answer cannot bound the clock, nor would the
    # first request's.
    monkeypatch.setattr(ServerClock, "observe", no_date)
    async with Sandbox() as box, txc_async.Client(
        api_key=box.api_key, api_secret=box.api_secret, base_url=box.url,
    ) as client:
        box.faults.add(BALANCE_PATH, "slow", delay=2.0)
        first = asyncio.ensure_future(client.main_balance())
        await asyncio.sleep(0.1)
        started = time.monotonic()
        await asyncio.gather(*(client.main_balance() for _ in range(10)))
        assert time.monotonic() - started < 1.0  # not the 2 s of the first answer
        await first
        assert box.stats.received[PING_PATH] == 1


async def test_when_the_ping_gets_no_answer_the_first_requests_answer_is_waited_for() -> None:
    async with Sandbox(clock_offset=8.0) as box, txc_async.Client(
        api_key=box.api_key, api_secret=box.api_secret, base_url=box.url,
        retry=RetryPolicy(max_nonce_retries=1),
    ) as client:
        box.faults.add(BALANCE_PATH, "slow", delay=1.0)
        box.faults.add(PING_PATH, "reset", times=5)
        first = asyncio.ensure_future(client.main_balance())
        await asyncio.sleep(0.1)
        await asyncio.gather(*(client.main_balance() for _ in range(20)))
        await first
        # The first request's refusal taught the clock to all of them.
        assert box.stats.nonce_refused == 1
        assert box.stats.received[PING_PATH] == 1


async def test_a_request_waits_for_the_first_answer_no_longer_than_its_own_timeout() -> None:
    async with Sandbox() as box, txc_async.Client(
        api_key=box.api_key, api_secret=box.api_secret, base_url=box.url,
    ) as client:
        box.faults.add(BALANCE_PATH, "slow", delay=3.0)
        box.faults.add(PING_PATH, "slow", delay=3.0)
        first = asyncio.ensure_future(client.main_balance())
        await asyncio.sleep(0.1)
        started = time.monotonic()
        await client.with_options(timeout=0.5).main_balance()
        assert 0.4 < time.monotonic() - started < 1.5
        assert not first.done()
        await first
        assert box.stats.nonce_refused == 0


async def test_the_first_answer_is_waited_for_only_in_the_loop_that_asked() -> None:
    clock = ServerClock()
    gate = clock.first_answer
    asked: list[float] = []

    async def ask(timeout: float) -> None:
        asked.append(timeout)
        await asyncio.sleep(3600)  # the server's time never comes

    assert await gate.enter(clock, 1.0, ask)  # this loop's request goes first

    def other_loop() -> tuple[bool, float]:
        async def enter() -> tuple[bool, float]:
            started = time.monotonic()
            return await gate.enter(clock, 5.0, ask), time.monotonic() - started
        return asyncio.run(enter())

    went_first, waited = await asyncio.to_thread(other_loop)
    assert not went_first and waited < 0.5  # another loop's request does not wait for it
    assert not asked
    waiter = asyncio.ensure_future(gate.enter(clock, 5.0, ask))
    await asyncio.sleep(0.05)
    assert not waiter.done() and len(asked) == 1
    gate.leave(answered=False)  # no answer: the next request goes first
    assert await waiter
    gate.leave(answered=True)
    assert gate.done and not await gate.enter(clock, 5.0, ask)


async def test_a_server_clock_stepping_while_running_costs_one_refusal() -> None:
    async with Sandbox() as box, txc_async.Client(
        api_key=box.api_key, api_secret=box.api_secret, base_url=box.url,
        retry=RetryPolicy(max_nonce_retries=1),
    ) as client:
        for _ in range(3):
            await client.main_balance()
        assert box.stats.nonce_refused == 0
        for step in (-25.0, 40.0):
            box.clock_offset = step
            started = time.monotonic()
            await client.main_balance()
            assert time.monotonic() - started < MAX_NONCE_LEAD_MS / 1000
            refused = box.stats.nonce_refused
            await asyncio.gather(*(client.main_balance() for _ in range(50)))
            assert box.stats.nonce_refused == refused
            assert abs(client.clock_offset - step) < 1.0


@pytest.mark.parametrize("step", [-30.0, 30.0, -3600.0])
async def test_this_machines_clock_stepping_while_running(step: float) -> None:
    # The machine starts 30 s fast (the server is right), then its clock is stepped by ``step``
    # while the client runs: neither the step nor the correction costs a refusal or a long wait.
    local = SteppingClock(step=30.0)
    async with Sandbox() as box, txc_async.Client(
        api_key=box.api_key, api_secret=box.api_secret, base_url=box.url,
        retry=RetryPolicy(max_nonce_retries=1), clock=local,
    ) as client:
        await client.main_balance()
        assert box.stats.nonce_refused <= 1
        assert abs(client.clock_offset - -30.0) < 1.0
        refused = box.stats.nonce_refused
        local.step += step
        for _ in range(5):
            started = time.monotonic()
            await client.main_balance()
            assert time.monotonic() - started < MAX_NONCE_LEAD_MS / 1000
        assert box.stats.nonce_refused == refused
        assert abs(client.clock_offset - (-30.0 - step)) < 1.0


async def test_clients_of_one_server_share_one_estimate() -> None:
    async with (
        Sandbox(clock_offset=12.0) as box, txc_async.Client(base_url=box.url) as reader,
        txc_async.Client(api_key=box.api_key, api_secret=box.api_secret,
                         base_url=box.url) as signer,
    ):
        await reader.ping()  # a public answer teaches the clock to every client of the server
        assert abs(signer.clock_offset - 12.0) < 1.0
        await signer.main_balance()
        assert box.stats.nonce_refused == 0


# -- the shared Redis counter ------------------------------------------------------------------


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with RedisServer(require_redis_server()) as server:
        yield server.url


@pytest.mark.parametrize("store", ["sqlite", pytest.param("redis", marks=pytest.mark.redis)])
async def test_processes_sharing_a_nonce_counter_follow_an_offset_server(
    store: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from txc_async._signing import Signer

    def shared() -> txc_async.Limiter:
        if store == "sqlite":
            return SQLiteLimiter(tmp_path / "budgets.sqlite3")
        return RedisLimiter(request.getfixturevalue("redis_url"),
                            namespace=f"clockp{os.getpid()}")

    async with Sandbox(clock_offset=-30.0) as box:
        limiters = [shared() for _ in range(2)]
        clients = []
        for limiter in limiters:
            client = txc_async.Client(api_key=box.api_key, api_secret=box.api_secret,
                                      base_url=box.url, limiter=limiter,
                                      retry=RetryPolicy(max_nonce_retries=1))
            # Separate nonce sources stand for separate processes.
            client._pipeline.signer = Signer(box.api_key, box.api_secret, NonceSource())
            clients.append(client)
        try:
            await clients[0].main_balance()
            assert box.stats.nonce_refused <= 1
            refused = box.stats.nonce_refused
            await asyncio.gather(*(clients[i % 2].main_balance() for i in range(200)))
            assert box.stats.nonce_refused == refused
        finally:
            for client in clients:
                await client.close()
            for limiter in limiters:
                await limiter.aclose()


async def test_estimates_of_servers_no_client_uses_are_let_go_and_live_ones_stay_shared() -> None:
    """Clients of ever new servers (a fresh port per test, per job) do not grow the process:
    only the latest 64 estimates no client holds are kept. One a client holds is the one
    every other client of that server gets, however many servers came in between."""
    import gc

    from txc_async._nonces.registry import KEPT_ESTIMATES

    kept = txc_async.Client(base_url="http://127.0.0.1:1")
    for port in range(2, 502):
        client = txc_async.Client(base_url=f"http://127.0.0.1:{port}")
        await client.close()
    del client
    gc.collect()
    estimates = txc_async.current_runtime()._server_clocks
    assert len(estimates._recent) == KEPT_ESTIMATES
    assert len(estimates._held) <= KEPT_ESTIMATES + 1
    again = txc_async.Client(base_url="http://127.0.0.1:1")
    assert again._pipeline.server_clock is kept._pipeline.server_clock
    await again.close()
    await kept.close()
