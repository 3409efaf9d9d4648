"""SQLiteLimiter: budgets shared through one SQLite file by several limiters and by real
processes (checked at an arrival-recording server with a strict window), a sender killed and
another started at once, nonces, pauses, a wall clock stepping back, cancellation."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import txc_async
from txc_async import Outcome, RateLimit, SQLiteLimiter, TransportError

from ._arrival_server import ArrivalServer, max_in_window, strict_refusals
from ._limit_worker import drain, read_until, start_worker


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "budgets" / "limits.sqlite"


@pytest.fixture
async def limiter(path: Path) -> AsyncIterator[SQLiteLimiter]:
    box = SQLiteLimiter(path)
    yield box
    await box.aclose()


def clock_ms() -> int:
    return time.time_ns() // 1_000_000


# -- the rule ----------------------------------------------------------------------------------


async def test_a_second_limiter_on_the_file_sees_the_first_ones_requests(
    limiter: SQLiteLimiter, path: Path
) -> None:
    limit = RateLimit(3, 0.5)
    admissions = [await limiter.acquire("k", "s", limit, 5.0) for _ in range(3)]
    began = time.monotonic()
    for admission in admissions:
        limiter.settle(admission, Outcome.ANSWERED)
    other = SQLiteLimiter(path)
    await other.acquire("k", "s", limit, 5.0)
    # The answers came at ``began``: the next request waits one window from them.
    assert 0.45 <= time.monotonic() - began < 1.2
    await other.aclose()


async def test_a_request_in_flight_counts_until_its_answer(limiter: SQLiteLimiter) -> None:
    limit = RateLimit(1, 0.2)
    first = await limiter.acquire("k", "s", limit, 5.0)
    second = asyncio.create_task(limiter.acquire("k", "s", limit, 5.0))
    await asyncio.sleep(0.5)  # more than a window: the deadline, not the admission, holds it
    assert not second.done()
    answered = time.monotonic()
    limiter.settle(first, Outcome.ANSWERED)
    await second
    assert 0.15 <= time.monotonic() - answered < 1.0


async def test_a_request_not_sent_frees_its_place_and_one_without_answer_keeps_it(
    limiter: SQLiteLimiter,
) -> None:
    limit = RateLimit(1, 10)
    first = await limiter.acquire("k", "s", limit, 5.0)
    limiter.settle(first, Outcome.NOT_SENT)
    second = await asyncio.wait_for(limiter.acquire("k", "s", limit, 5.0), 1)
    limiter.settle(second, Outcome.NO_ANSWER)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(limiter.acquire("k", "s", limit, 5.0), 0.3)


async def test_anchors_from_a_wall_clock_stepped_back_are_dropped(
    limiter: SQLiteLimiter, path: Path
) -> None:
    limit = RateLimit(1, 1)
    admission = await limiter.acquire("k", "s", limit, 2.0)
    # As if the clock had stepped back an hour since: the anchor lies an hour ahead.
    with sqlite3.connect(path) as db:
        db.execute("UPDATE anchors SET at = at + 3600")
    began = time.monotonic()
    await asyncio.wait_for(limiter.acquire("k", "s", limit, 2.0), 1)
    assert time.monotonic() - began < 0.9
    limiter.settle(admission, Outcome.ANSWERED)


async def test_anchors_of_budgets_no_longer_used_are_swept(
    limiter: SQLiteLimiter, path: Path
) -> None:
    await limiter.acquire("gone", "s", RateLimit(10, 1), 2.0)
    with sqlite3.connect(path) as db:  # as if that budget had last been used two days ago
        db.execute("UPDATE anchors SET at = at - 172800 WHERE key_id = 'gone'")
    for _ in range(1024):
        await limiter.acquire("k", "s", RateLimit(10**6, 1), 2.0)
    with sqlite3.connect(path) as db:
        (left,) = db.execute("SELECT count(*) FROM anchors WHERE key_id = 'gone'").fetchone()
    assert left == 0


async def test_budgets_of_other_scopes_and_keys_are_apart(limiter: SQLiteLimiter) -> None:
    limit = RateLimit(1, 10)
    for key_id, scope in (("a", "s"), ("a", "t"), ("b", "s")):
        await asyncio.wait_for(limiter.acquire(key_id, scope, limit, 5.0), 1)


async def test_waiters_are_first_in_first_out_and_a_cancelled_one_takes_nothing(
    limiter: SQLiteLimiter, path: Path
) -> None:
    limit = RateLimit(2, 0.2)
    order: list[int] = []

    async def one(i: int) -> None:
        admission = await limiter.acquire("k", "s", limit, 5.0)
        limiter.settle(admission, Outcome.ANSWERED)
        order.append(i)

    tasks = []
    for i in range(6):
        tasks.append(asyncio.create_task(one(i)))
        await asyncio.sleep(0)
    cancelled = asyncio.create_task(limiter.acquire("k", "s", limit, 5.0))
    await asyncio.sleep(0.05)
    cancelled.cancel()
    await asyncio.gather(*tasks)
    assert order == list(range(6))
    with sqlite3.connect(path) as db:
        (count,) = db.execute("SELECT count(*) FROM anchors WHERE key_id = 'k'").fetchone()
    assert count <= 6


# -- pauses ------------------------------------------------------------------------------------


async def test_a_refusal_pauses_every_limiter_on_the_file(
    limiter: SQLiteLimiter, path: Path
) -> None:
    limit = RateLimit(100, 1)
    admission = await limiter.acquire("k", "s", limit, 5.0)
    pause = limiter.settle(admission, Outcome.RATE_LIMITED, retry_after=1.0)
    assert pause == 1.0
    other = SQLiteLimiter(path)
    began = time.monotonic()
    await other.acquire("k", "s", limit, 5.0)
    assert 0.9 <= time.monotonic() - began < 1.5
    await other.aclose()


async def test_concurrent_refusals_are_one_backoff_event(limiter: SQLiteLimiter) -> None:
    limit = RateLimit(100, 1)
    admissions = [await limiter.acquire("k", "s", limit, 5.0) for _ in range(5)]
    pauses = [limiter.settle(a, Outcome.RATE_LIMITED) for a in admissions]
    assert 1.0 <= pauses[0] <= 1.25
    assert all(p <= pauses[0] for p in pauses[1:])  # the same pause, not doubled


async def test_a_server_refusing_below_the_limit_lowers_it_here(
    limiter: SQLiteLimiter,
) -> None:
    limit = RateLimit(10, 60)
    admissions = [await limiter.acquire("k", "s", limit, 5.0) for _ in range(6)]
    for admission in admissions[:4]:
        limiter.settle(admission, Outcome.ANSWERED)
    for admission in admissions[4:]:
        limiter.settle(admission, Outcome.RATE_LIMITED, retry_after=0)
    assert limiter.effective_limit("k", "s", limit) == RateLimit(4, 60)


# -- nonces ------------------------------------------------------------------------------------


async def test_limiters_on_the_file_draw_distinct_increasing_nonces(path: Path) -> None:
    limiters = [SQLiteLimiter(path) for _ in range(3)]
    limit = RateLimit(10_000, 1)
    admissions = [
        await limiters[i % 3].acquire("k", f"s{i % 2}", limit, 5.0, clock_ms) for i in range(300)
    ]
    nonces = [a.nonce for a in admissions]
    assert all(isinstance(n, int) for n in nonces)
    assert nonces == sorted(nonces) and len(set(nonces)) == 300
    assert abs(nonces[0] - clock_ms()) < 5000
    no_nonce = await limiters[0].acquire("k", "s", limit, 5.0)
    assert no_nonce.nonce is None
    for box in limiters:
        await box.aclose()


async def test_the_nonce_follows_the_given_clock_and_a_counter_far_ahead_comes_back(
    limiter: SQLiteLimiter,
) -> None:
    limit = RateLimit(10_000, 1)
    offset = 30_000  # the server's clock, 30 s ahead of this machine's
    ahead = await limiter.acquire("k", "s", limit, 5.0, lambda: clock_ms() + offset)
    assert ahead.nonce is not None and abs(ahead.nonce - (clock_ms() + offset)) < 1000
    # The estimate is corrected: the counter lies 30 s past the clock now given.
    began = time.monotonic()
    back = await limiter.acquire("k", "s", limit, 5.0, clock_ms)
    waited = time.monotonic() - began
    assert back.nonce is not None and back.nonce > ahead.nonce - offset
    assert back.nonce - clock_ms() <= 4000  # within the lead the service allows
    assert waited < 1.5  # brought back to the window's edge, not 30 s of waiting


async def test_a_burst_waits_rather_than_run_the_nonce_past_the_lead(
    limiter: SQLiteLimiter, path: Path
) -> None:
    frozen = clock_ms()
    limit = RateLimit(100_000, 1)
    first = await limiter.acquire("k", "s", limit, 5.0, lambda: frozen)
    assert first.nonce == frozen
    with sqlite3.connect(path) as db:  # as after a burst of 3,999 more on a clock standing still
        db.execute("UPDATE nonces SET last = ?", (frozen + 3999,))
    last = await limiter.acquire("k", "s", limit, 5.0, lambda: frozen)
    assert last.nonce == frozen + 4000
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(limiter.acquire("k", "s", limit, 5.0, lambda: frozen), 0.2)
    # Once the clock moves on, it goes.
    moved = await limiter.acquire("k", "s", limit, 5.0, lambda: frozen + 2)
    assert moved.nonce == frozen + 4001


# -- real processes ----------------------------------------------------------------------------


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGKILL])
async def test_a_sender_stopped_and_rerun_at_once_keeps_to_the_window(
    path: Path, stop: signal.Signals
) -> None:
    limit = RateLimit(20, 1.0)
    async with ArrivalServer() as server:
        first = await start_worker(f"sqlite:{path}", server.hit_url("b"), 200, limit, 1)
        try:
            await read_until(first, b"sent 30")  # into its second window
            first.send_signal(stop)
            rerun = await start_worker(f"sqlite:{path}", server.hit_url("b"), 30, limit, 2)
            await first.wait()
            assert await drain(rerun) == 0
        finally:
            for process in (first, rerun):
                if process.returncode is None:
                    process.kill()
                    await process.wait()
    arrivals = server.arrivals["b"]
    assert len(arrivals) >= 60
    assert max_in_window(arrivals, 1.0) <= 20
    assert strict_refusals(arrivals, 20, 1.0) == 0


async def test_two_senders_at_once_share_the_window(path: Path) -> None:
    limit = RateLimit(20, 1.0)
    async with ArrivalServer() as server:
        senders = [
            await start_worker(f"sqlite:{path}", server.hit_url("b"), 40, limit, seed, "--wait-go")
            for seed in (1, 2)
        ]
        try:
            for sender in senders:
                await read_until(sender, b"ready")
            for sender in senders:
                assert sender.stdin is not None
                sender.stdin.write(b"go\n")
                await sender.stdin.drain()
            codes = await asyncio.gather(*(drain(s) for s in senders))
        finally:
            for sender in senders:
                if sender.returncode is None:
                    sender.kill()
                    await sender.wait()
    assert codes == [0, 0]
    arrivals = server.arrivals["b"]
    assert len(arrivals) == 80
    assert max_in_window(arrivals, 1.0) <= 20
    assert strict_refusals(arrivals, 20, 1.0) == 0
    # Close to the least the limit allows (three windows): nothing is wasted either.
    assert max(arrivals) - min(arrivals) <= 4.0


# -- the file and the public surface -----------------------------------------------------------


async def test_a_closed_limiter_or_a_locked_file_fails_the_request(path: Path) -> None:
    box = SQLiteLimiter(path, busy_timeout=0.1)
    await box.aclose()
    with pytest.raises(TransportError, match="rate-limit store closed"):
        await box.acquire("k", "s", RateLimit(1, 1), 5.0)
    box = SQLiteLimiter(path, busy_timeout=0.1)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(TransportError, match="rate-limit store failed"):
            await box.acquire("k", "s", RateLimit(1, 1), 5.0)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    await box.aclose()


async def test_a_client_uses_the_file_and_keys_budgets_by_a_hash(path: Path) -> None:
    from txc_async.sandbox import Sandbox

    limiter = SQLiteLimiter(path)
    async with Sandbox() as box, txc_async.Client(
        api_key=box.api_key, api_secret=box.api_secret, base_url=box.url, limiter=limiter
    ) as client:
        await client.main_balance()
        assert await client.ping()
    await limiter.aclose()
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT key_id, scope, at FROM anchors").fetchall()
    assert sorted(scope for _, scope, _ in rows) == ["main_balance", "public"]
    assert all(box.api_key not in key_id for key_id, _, _ in rows)
    assert all(at <= time.time() for _, _, at in rows)  # answered: anchored at the answer


def test_the_limiter_is_public_and_checks_its_arguments(tmp_path: Path) -> None:
    assert "SQLiteLimiter" in txc_async.__all__
    assert txc_async.SQLiteLimiter.__doc__
    with pytest.raises(ValueError, match="busy_timeout"):
        SQLiteLimiter(tmp_path / "x.sqlite", busy_timeout=0)
    (tmp_path / "dir.sqlite").mkdir()
    with pytest.raises(ValueError, match="path"):
        SQLiteLimiter(tmp_path / "dir.sqlite")
    limiter = SQLiteLimiter(tmp_path / "y.sqlite")
    assert isinstance(limiter, txc_async.Limiter)
    assert repr(limiter) == f"SQLiteLimiter({str(tmp_path / 'y.sqlite')!r})"
    asyncio.run(limiter.aclose())
    assert os.path.exists(tmp_path / "y.sqlite")
