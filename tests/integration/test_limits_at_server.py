"""The rate-limit guarantees measured at a real server: a strict sliding-window server, behind a
proxy that holds every new connection 300 ms (a TLS handshake far away), or the sandbox."""

from __future__ import annotations

import asyncio
import email.utils
import itertools
import json
import logging
import time

import pytest

import txc_async
from txc_async import InProcessLimiter, RateLimit, RetryPolicy
from txc_async.sandbox import Sandbox

from ..support.arrival_server import max_in_window
from ..support.strict_server import BALANCE, PING, DelayingProxy, Scripted, StrictServer

KEY, SECRET = "strict-key", "strict-secret"


def client_of(url: str, limits: dict[str, RateLimit], **kwargs: object) -> txc_async.Client:
    limiter = kwargs.pop("limiter", None) or InProcessLimiter()
    return txc_async.Client(
        api_key=KEY, api_secret=SECRET, base_url=url, limiter=limiter,  # type: ignore[arg-type]
        rate_limits=limits, **kwargs,  # type: ignore[arg-type]
    )


async def test_slow_new_connections_never_put_more_than_the_limit_in_a_window() -> None:
    """Scaled from 200 calls at 100 per 10 s: the first window's requests open new connections
    (held 300 ms), the next window's reuse them and arrive at once. Counting each request from
    its answer keeps the two apart at the server."""
    limit = RateLimit(20, 1)
    async with (
        StrictServer({PING: limit}) as server,
        DelayingProxy(server.port, 0.3) as proxy,
        client_of(proxy.url, {"public": limit}) as client,
    ):
        began = time.monotonic()
        results = await asyncio.gather(*(client.ping() for _ in range(45)))
        took = time.monotonic() - began
        assert client.stats.rate_limit_refusals == 0
    assert all(results)
    assert server.refused(PING) == 0
    accepted = server.accepted(PING)
    assert len(accepted) == 45
    assert max_in_window(accepted, limit.per_seconds) <= limit.max_requests
    assert proxy.connections >= limit.max_requests  # the first window did pay the 300 ms
    # Two windows plus a round trip each (300 ms for new connections): not a 30 s stall.
    assert took < 4.0


async def test_scopes_wait_for_their_own_budget_only() -> None:
    """300 pings at 100/s and 150 investment pages at 50/s side by side take the time of one of
    them alone (2 s), not of both in turn (4 s)."""
    limits = {"public": RateLimit(100, 1), "investments": RateLimit(50, 1)}
    async with Sandbox(rate_limits=limits) as box, txc_async.Client(
        api_key=box.api_key, api_secret=box.api_secret, base_url=box.url,
        limiter=InProcessLimiter(), rate_limits=limits,
    ) as client:
        began = time.monotonic()
        pings = [asyncio.create_task(client.ping()) for _ in range(300)]
        pages = [asyncio.create_task(client.investments_history(limit=10)) for _ in range(150)]
        await asyncio.gather(*pings, *pages)
        took = time.monotonic() - began
    assert box.stats.rate_limited == 0
    assert box.stats.max_in_window("public", 1) <= 100
    assert box.stats.max_in_window("investments", 1) <= 50
    assert 2.0 <= took < 3.6  # one after the other: 4 s or more


async def test_a_call_with_budget_goes_out_at_once_while_many_wait_on_another_scope() -> None:
    """Waiting for budget holds no connection: with 5 connections and 250 pings waiting for
    theirs, a balance check is answered at once."""
    limits = {"public": RateLimit(50, 1), "main_balance": RateLimit(50, 1)}
    async with Sandbox(rate_limits=limits) as box, txc_async.Client(
        api_key=box.api_key, api_secret=box.api_secret, base_url=box.url,
        limiter=InProcessLimiter(), rate_limits=limits, max_connections=5,
    ) as client:
        pings = [asyncio.create_task(client.ping()) for _ in range(300)]
        await asyncio.sleep(0.3)  # the first window's pings are done; the rest wait
        began = time.monotonic()
        balance = await client.main_balance()
        took = time.monotonic() - began
        pings_done = sum(task.done() for task in pings)
        for task in pings:
            task.cancel()
        await asyncio.gather(*pings, return_exceptions=True)
    assert balance
    assert pings_done <= 100
    assert took < 0.5


# -- refusals, classified by meaning -----------------------------------------------------------


def gaps(server: StrictServer, path: str) -> list[float]:
    moments = [a.moment for a in server.arrivals[path]]
    return [later - earlier for earlier, later in itertools.pairwise(moments)]


async def test_too_many_attempts_pauses_the_scope_instead_of_resending_at_once() -> None:
    async with StrictServer({}) as server:
        server.script(PING, Scripted(
            429, json.dumps({"code": 0, "message": "Too Many Attempts.", "errors": {}}).encode()
        ))
        async with client_of(server.url, {}) as client:
            assert await client.ping()
            assert client.stats.rate_limit_refusals == 1
            assert client.stats.nonce_refusals == 0
    [gap] = gaps(server, PING)
    assert 1.0 <= gap < 2.0


async def test_a_refused_nonce_is_signed_again_and_resent_at_once() -> None:
    async with StrictServer({}) as server:
        server.script(BALANCE, Scripted(
            429, json.dumps({"code": 0, "message": "Too many requests.", "errors": {}}).encode()
        ), Scripted(429, json.dumps({
            "code": 0, "errors": {},
            "message": "Your nonce is more than 5 seconds lesser than the current nonce",
        }).encode()))
        async with client_of(server.url, {}) as client:
            assert await client.main_balance()
            assert client.stats.nonce_refusals == 2
            assert client.stats.rate_limit_refusals == 0
    assert all(gap < 0.3 for gap in gaps(server, BALANCE))
    nonces = [json.loads(a.body)["nonce"] for a in server.arrivals[BALANCE]]
    assert len(nonces) == 3 and len(set(nonces)) == 3


async def test_a_process_started_after_a_burst_of_another_passes_its_nonces_at_once() -> None:
    """One key, the in-process limiter, a process started right after another whose burst ran
    its nonce counter ahead of the clock: the new process's first call is refused once at most,
    signed again past every value the earlier one can have drawn, and no later call is refused
    (before, each retry met the earlier values a millisecond at a time, and calls failed)."""
    from txc_async._nonces.sources import NonceSource
    from txc_async._signing import Signer

    async with Sandbox(enforce_limits=False) as box:
        def client() -> txc_async.Client:
            return txc_async.Client(api_key=box.api_key, api_secret=box.api_secret,
                                    base_url=box.url, limiter=InProcessLimiter())

        earlier = client()
        assert await earlier.main_balance()
        # Where a long burst leaves the counter: ahead of the clock (here 0.5 s), and the
        # server has accepted the values from there on (400 more calls, at once).
        source = earlier._pipeline.signer.nonces  # type: ignore[union-attr]
        first = source._last = earlier._pipeline.server_clock.now_ms() + 500
        await asyncio.gather(*(earlier.main_balance() for _ in range(400)))
        await earlier.close()
        later = client()
        # A process of its own: a fresh counter, as after a restart, whose clock still reads
        # below the values the burst used.
        fresh = NonceSource(later._pipeline.server_clock)
        fresh._last = first
        later._pipeline.signer = Signer(box.api_key, box.api_secret, fresh)
        refused_before = box.stats.nonce_refused
        for _ in range(30):
            assert await later.main_balance()
        assert box.stats.nonce_refused - refused_before <= 1
        await later.close()


async def test_retry_after_zero_still_pauses_one_second() -> None:
    async with StrictServer({}) as server:
        server.script(PING, Scripted(429, b"Too Many Requests", {"Retry-After": "0"},
                                     content_type="text/plain"))
        async with client_of(server.url, {}) as client:
            assert await client.ping()
    [gap] = gaps(server, PING)
    assert 1.0 <= gap < 1.5


async def test_an_http_date_retry_after_is_honoured() -> None:
    def headers() -> dict[str, str]:
        now = int(time.time())
        return {"Date": email.utils.formatdate(now, usegmt=True),
                "Retry-After": email.utils.formatdate(now + 2, usegmt=True)}

    async with StrictServer({}) as server:
        server.script(PING, Scripted(429, b"slow down", headers, content_type="text/plain"))
        async with client_of(server.url, {}) as client:
            assert await client.ping()
    [gap] = gaps(server, PING)
    assert 2.0 <= gap < 2.6


async def test_a_burst_of_refusals_is_one_event_and_the_scope_resumes_after_a_second() -> None:
    async with StrictServer({}) as server:
        server.script(PING, *[Scripted(429, b"<html>429</html>", content_type="text/html")] * 8)
        async with client_of(server.url, {}, limiter=InProcessLimiter(random=lambda: 0.0)
                             ) as client:
            async with asyncio.timeout(10):  # eight backoff steps would pause 30 s
                results = await asyncio.gather(*(client.ping() for _ in range(8)))
            assert client.stats.rate_limit_refusals == 8
    assert all(results)
    arrivals = server.arrivals[PING]
    refusals = [a.moment for a in arrivals if a.outcome == "scripted"]
    resent = [a.moment for a in arrivals if a.outcome == "accepted"]
    assert len(refusals) == 8 and len(resent) == 8
    # One step: 1 s (no jitter here) from the first refusal, all together.
    assert min(resent) - min(refusals) >= 1.0 and max(resent) - min(refusals) < 1.5


async def test_a_server_tighter_than_the_client_is_learned_after_one_burst(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Scaled from 120 calls at a server limit of 40 per 10 s, client configured 100 per 10 s:
    every call succeeds; beyond the first burst's refusals, at most 3 more."""
    caplog.set_level(logging.WARNING, logger="txc_async")
    server_limit, configured = RateLimit(4, 1), RateLimit(10, 1)
    async with (
        StrictServer({PING: server_limit}) as server,
        client_of(server.url, {"public": configured}) as client,
    ):
        async with asyncio.timeout(15):
            results = await asyncio.gather(*(client.ping() for _ in range(12)))
        learned = client.rate_limits["public"]
    assert all(results)
    first_burst = configured.max_requests - server_limit.max_requests
    assert server.refused(PING) <= first_burst + 3
    assert learned == server_limit
    assert max_in_window(server.accepted(PING), 1) <= server_limit.max_requests
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert sum("refuses below the configured 10 per 1 s" in m for m in messages) == 1
    assert sum("rate limit refusal" in m for m in messages) == 1  # one burst, one event


async def test_requests_waiting_for_a_connection_when_a_refusal_comes_wait_for_the_pause() -> None:
    """A server tighter than configured (40 per 10 s against 1000), 200 concurrent calls over 2
    connections: the budget admits far more than the connections carry at once. Those still
    waiting for a connection when the first refusal comes back are not sent into the pause:
    before, every one of them went out, and was refused, right after it."""
    async with StrictServer({PING: RateLimit(40, 10)}) as server:
        client = client_of(server.url, {"public": RateLimit(1000, 10)}, max_connections=2,
                           retry=RetryPolicy(max_rate_limit_retries=0))
        calls = [asyncio.create_task(client.ping()) for _ in range(200)]
        await asyncio.sleep(2.0)
        for call in calls:
            call.cancel()
        await asyncio.gather(*calls, return_exceptions=True)
        await client.close()
    # Refused: at most those on the connections when the first refusal came (2), and one the
    # other connection sent after the server refused but before that answer reached the client
    # (a loaded machine reads it later), not the 160 that went out after it before.
    assert server.refused(PING) <= 3
    assert len(server.accepted(PING)) == 40


async def test_calls_waiting_for_the_clock_hold_no_connection() -> None:
    """Signed calls that wait for the server's clock (here 30 s behind: the re-signed calls wait
    once) hold no connection meanwhile: a call of another scope goes out at once."""
    async with Sandbox(clock_offset=-30, enforce_limits=False) as box, txc_async.Client(
        api_key=box.api_key, api_secret=box.api_secret, base_url=box.url,
        limiter=InProcessLimiter(),
    ) as client:
        signed = [asyncio.create_task(client.main_balance()) for _ in range(120)]
        await asyncio.sleep(0.05)
        began = time.monotonic()
        assert await client.with_options(timeout=1.0).ping()
        assert time.monotonic() - began < 0.5
        await asyncio.gather(*signed)


async def test_a_request_that_waited_past_its_deadline_for_a_connection_is_not_sent() -> None:
    """One connection, held 1.2 s by a slow call; two calls with a 0.3 s timeout wait for it.
    Their deadlines pass while they wait: they end in RequestTimeout unsent (sent then, they
    could arrive after the moment their budget counts them until, and two more calls admitted
    once those moments left the window would put 3 in a window of 2 at the server)."""
    limit = RateLimit(2, 1.0)
    async with Sandbox(rate_limits={"public": limit}) as box, txc_async.Client(
        api_key=box.api_key, api_secret=box.api_secret, base_url=box.url, max_connections=1,
        rate_limits={"public": limit}, retry=RetryPolicy(max_retries=0),
        limiter=InProcessLimiter(),
    ) as client:
        box.faults.add("/api/v4/main-account/balance", "slow", delay=1.2)
        box.faults.add("/api/v4/public/ping", "slow", times=2, delay=0.05)
        slow = asyncio.create_task(client.main_balance())
        await asyncio.sleep(0.02)
        short = client.with_options(timeout=0.3)
        first = [asyncio.create_task(short.ping()) for _ in range(2)]
        await asyncio.sleep(0.35)
        later = [asyncio.create_task(client.ping()) for _ in range(2)]
        results = await asyncio.gather(*first, *later, return_exceptions=True)
        await slow
        assert [type(r).__name__ for r in results] == [
            "RequestTimeout", "RequestTimeout", "bool", "bool"
        ]
        assert all(not r.may_have_reached_server for r in results[:2])  # type: ignore[union-attr]
        assert box.stats.max_in_window("public", 1.0) <= 2
        assert box.stats.rate_limited == 0


async def test_rate_limit_refusals_past_the_retry_budget_raise_rate_limit_error() -> None:
    async with StrictServer({}) as server:
        server.script(PING, *[Scripted(429, b"no", {"Retry-After": "1"},
                                       content_type="text/plain")] * 2)
        async with client_of(server.url, {}, retry=RetryPolicy(max_rate_limit_retries=1)
                             ) as client:
            with pytest.raises(txc_async.RateLimitError) as caught:
                await client.ping()
    assert caught.value.retry_after == 1.0
    [gap] = gaps(server, PING)
    assert 1.0 <= gap < 1.5
