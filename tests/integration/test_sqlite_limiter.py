"""SQLiteLimiter, in what only the file has (the contract every shared store keeps is in
``test_shared_limiters``): a wall clock stepping back, anchors of unused budgets swept, budgets
of other scopes and keys apart, a sender killed and another started at once on the file (checked
at an arrival-recording server with a strict window), a closed limiter or a locked file, what
the file holds for a client, a file locked by another process (the event loop stays free) and a
file deleted in use (joined again, with the budget spent)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import txc_async
from txc_async import Outcome, RateLimit, SQLiteLimiter, TransportError

from ..support.arrival_server import ArrivalServer, excess
from ..support.limit_worker import drain, read_until, reaping, start_worker


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "budgets" / "limits.sqlite"


@pytest.fixture
async def limiter(path: Path) -> AsyncIterator[SQLiteLimiter]:
    box = SQLiteLimiter(path)
    yield box
    await box.aclose()


# -- anchors in the file -----------------------------------------------------------------------


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
    limiter.conclude(admission, Outcome.ANSWERED)


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


# -- real processes ----------------------------------------------------------------------------


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGKILL])
async def test_a_sender_stopped_and_rerun_at_once_keeps_to_the_window(
    path: Path, stop: signal.Signals
) -> None:
    limit = RateLimit(20, 1.0)
    async with ArrivalServer() as server, reaping() as senders:
        first = await start_worker(f"sqlite:{path}", server.hit_url("b"), 200, limit, 1)
        senders.append(first)
        await read_until(first, b"sent 30")  # into its second window
        first.send_signal(stop)
        rerun = await start_worker(f"sqlite:{path}", server.hit_url("b"), 30, limit, 2)
        senders.append(rerun)
        await first.wait()
        assert await drain(rerun) == 0
    arrivals = server.arrivals["b"]
    assert len(arrivals) >= 60
    assert excess(arrivals, limit) == (0, 0)


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
    # The balance and the ping draw on their groups' budgets too; every budget is the server's.
    assert sorted(scope for _, scope, _ in rows) == [
        "main_account", "main_balance", "public", "public_group"]
    assert len({key_id for key_id, _, _ in rows}) == 1
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


OPEN_AT = """
import sys, time
from txc_async import SQLiteLimiter
at = float(sys.argv[2])
while time.time() < at:
    pass
SQLiteLimiter(sys.argv[1])
print("opened")
"""


def test_processes_opening_a_new_file_at_the_same_moment_all_open_it(tmp_path: Path) -> None:
    """Backfills started together on one machine: each opens the new file (switching it to WAL
    may find it locked by the other; the limiter waits its busy timeout, as for any statement)."""
    import subprocess
    import sys

    for attempt in range(8):
        path = tmp_path / f"limits-{attempt}.sqlite"
        at = time.time() + 0.5
        runs = [
            subprocess.Popen([sys.executable, "-c", OPEN_AT, str(path), str(at)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(3)
        ]
        outputs = [run.communicate(timeout=30) for run in runs]
        assert [out for out, _ in outputs] == ["opened\n"] * 3, [err for _, err in outputs]


# -- another process holding the file ----------------------------------------------------------

LOCK_HOLDER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.readline()
db.execute("COMMIT")
print("released", flush=True)
"""


async def ticking(lags: list[float], every: float = 0.005) -> None:
    """Sleep ``every`` seconds again and again, noting how late each wake-up came: the event
    loop's lag."""
    loop = asyncio.get_running_loop()
    while True:
        began = loop.time()
        await asyncio.sleep(every)
        lags.append(loop.time() - began - every)


async def test_a_file_locked_by_another_process_holds_up_admission_never_the_event_loop(
    path: Path,
) -> None:
    """Another process holds the file's write lock for a second: the request asking for budget
    waits for it; the loop goes on (a ticker stays on time) and conclude() returns at once."""
    import sys

    limiter = SQLiteLimiter(path, busy_timeout=5.0)
    limit = RateLimit(100, 10)
    admitted = await limiter.acquire("k", "s", limit, 5.0)
    lags: list[float] = []
    async with reaping() as processes:
        holder = await asyncio.create_subprocess_exec(
            sys.executable, "-c", LOCK_HOLDER, str(path),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        )
        processes.append(holder)
        assert holder.stdout is not None and holder.stdin is not None
        assert await asyncio.wait_for(holder.stdout.readline(), 30) == b"locked\n"
        ticker = asyncio.create_task(ticking(lags))
        waiting = asyncio.create_task(limiter.acquire("k", "s", limit, 5.0))
        await asyncio.sleep(0.2)
        began = time.perf_counter()
        limiter.conclude(admitted, Outcome.ANSWERED)
        concluding = time.perf_counter() - began
        await asyncio.sleep(0.8)
        assert not waiting.done()  # the admission waits for the lock
        holder.stdin.write(b"\n")
        await holder.stdin.drain()
        assert await asyncio.wait_for(holder.stdout.readline(), 30) == b"released\n"
        second = await asyncio.wait_for(waiting, 5)
        ticker.cancel()
    limiter.conclude(second, Outcome.ANSWERED)
    await limiter.aclose()
    assert concluding < 0.05, concluding  # against the whole second before
    assert len(lags) > 50  # it ticked all along
    assert max(lags) < 0.5, max(lags)  # against the whole second while the lock was held
    with sqlite3.connect(path) as db:
        (answered,) = db.execute(
            "SELECT count(*) FROM anchors WHERE at <= ?", (time.time(),)
        ).fetchone()
    assert answered == 2  # the answer given while the file was locked was written after


# -- a file deleted in use -----------------------------------------------------------------------


@pytest.mark.parametrize("deleted", [("",), ("", "-wal", "-shm")], ids=["file", "with-wal"])
async def test_a_file_deleted_in_use_is_made_again_with_the_budget_spent_and_joined(
    path: Path, deleted: tuple[str, ...]
) -> None:
    """A process sends at its limit; its file is deleted (alone, or with its WAL) mid-run; a
    second process starts on the same path and sends too. The first notices and writes its
    spent budget into the new file: the server never sees more than the limit in a window."""
    limit = RateLimit(20, 2.0)
    async with ArrivalServer() as server, reaping() as senders:
        first = await start_worker(f"sqlite:{path}", server.hit_url("b"), 120, limit, 1)
        senders.append(first)
        await read_until(first, b"sent 30")  # into its second window
        for suffix in deleted:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{path}{suffix}")
        second = await start_worker(f"sqlite:{path}", server.hit_url("b"), 40, limit, 2)
        senders.append(second)
        assert await drain(second) == 0
        assert await drain(first) == 0
    arrivals = server.arrivals["b"]
    assert len(arrivals) == 160
    assert excess(arrivals, limit) == (0, 0)


def anchors_in(path: Path) -> list[tuple[str, str]]:
    """The budgets of the anchors in the file at ``path`` (none while it is missing or new)."""
    if not path.exists():
        return []
    with contextlib.closing(sqlite3.connect(path, timeout=5)) as db:
        try:
            return db.execute("SELECT key_id, scope FROM anchors").fetchall()
        except sqlite3.OperationalError:  # its tables not made yet
            return []


async def test_a_file_deleted_while_the_limiter_waits_is_made_again_at_once(path: Path) -> None:
    limiter = SQLiteLimiter(path)
    limit = RateLimit(5, 10)
    admissions = [await limiter.acquire("k", "s", limit, 5.0) for _ in range(3)]
    for admission in admissions:
        limiter.conclude(admission, Outcome.ANSWERED)
    await asyncio.sleep(0.05)
    os.unlink(path)
    deadline = time.monotonic() + 5
    rows: list[tuple[str, str]] = []
    while len(rows) < 3:  # made again by the limiter's thread, with no request asked
        assert time.monotonic() < deadline, rows
        await asyncio.sleep(0.02)
        rows = await asyncio.to_thread(anchors_in, path)
    assert rows == [("k", "s")] * 3
    other = SQLiteLimiter(path)  # a new process on the new file sees the budget spent
    for _ in range(2):
        other.conclude(await other.acquire("k", "s", limit, 5.0), Outcome.ANSWERED)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(other.acquire("k", "s", limit, 5.0), 0.3)
    await other.aclose()
    await limiter.aclose()
