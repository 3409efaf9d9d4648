"""The command line keeps its budgets in a SQLite file by default, so runs on one machine share
the windows: a rerun right after Ctrl-C, and two backfills at once, get no refusal at a strict
server (the sandbox refuses past its documented limit, 1000 per 10 s, in any sliding window)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from txc_async import RateLimit
from txc_async.sandbox import Sandbox

from ..support.waiting import until

# The runs are command-line processes on asyncio's loop, whatever this one runs.
pytestmark = pytest.mark.asyncio_only

LIMIT = RateLimit(1000, 10.0)  # the documented limit of the rewards scope, on both sides
REWARDS = "/api/v4/mining/rewards"


async def _start(
    box: Sandbox, cache: Path, out: Path, limiter: str | None = None
) -> asyncio.subprocess.Process:
    """A backfill in its own process; without ``limiter``, the command line's default."""
    env = os.environ | {
        "TXC_BASE_URL": box.url, "TXC_API_KEY": box.api_key, "TXC_API_SECRET": box.api_secret,
        "XDG_CACHE_HOME": str(cache),
    }
    env.pop("TXC_LIMITER", None)
    if limiter is not None:
        env["TXC_LIMITER"] = limiter
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "txc_async", "backfill-rewards", "--start", "2024-01-01",
        "--end", "2024-12-31", "--out", str(out), "--concurrency", "4",
        env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )


def _sandbox(**options: Any) -> Sandbox:
    # 400 accounts: a year is about 1,500 requests, more than one window's budget, and more
    # than 250 are left after a first run stopped at about 800.
    return Sandbox(mining_accounts=400, **options)


async def _until_sent(box: Sandbox, count: int) -> None:
    """Wait until the server has received ``count`` reward queries."""
    await until(lambda: box.stats.received[REWARDS] >= count,
                f"{count} reward queries reach the server")


async def test_a_rerun_right_after_ctrl_c_gets_no_refusal(tmp_path: Path) -> None:
    out = tmp_path / "rewards.jsonl"
    async with _sandbox() as box:
        first = await _start(box, tmp_path / "cache", out)
        await _until_sent(box, 800)  # most of the window's budget is spent
        first.send_signal(signal.SIGINT)
        _, err = await asyncio.wait_for(first.communicate(), timeout=30)
        assert first.returncode == 130, err.decode()
        sent = box.stats.received[REWARDS]
        second = await _start(box, tmp_path / "cache", out)  # at once
        # Until it has sent more than the at most 200 the first left of the window: it drew on
        # the same budget, whenever it started, and waited for the window to move on.
        await _until_sent(box, sent + 250)
        second.send_signal(signal.SIGINT)
        await asyncio.wait_for(second.communicate(), timeout=30)
        assert box.stats.rate_limited == 0
        assert box.stats.max_in_window("mining_rewards", LIMIT.per_seconds) <= LIMIT.max_requests
    assert (tmp_path / "cache" / "txc_async" / "budgets.sqlite3").exists()


async def test_two_backfills_at_once_get_no_refusal(tmp_path: Path) -> None:
    async with _sandbox() as box:
        runs = [await _start(box, tmp_path / "cache", tmp_path / f"out{i}.jsonl")
                for i in range(2)]
        await _until_sent(box, 1000)  # the window's budget is spent between them
        await asyncio.sleep(1.0)
        for run in runs:
            run.send_signal(signal.SIGINT)
        for run in runs:
            await asyncio.wait_for(run.communicate(), timeout=30)
        assert box.stats.rate_limited == 0
        assert box.stats.max_in_window("mining_rewards", LIMIT.per_seconds) <= LIMIT.max_requests
        # Both really ran: together they sent about the budget of the windows that passed.
        assert box.stats.received[REWARDS] >= LIMIT.max_requests


async def test_without_a_shared_file_the_same_rerun_is_refused(tmp_path: Path) -> None:
    # The same rerun with memory:// (each process its own budget): the strict server refuses.
    # This is what the SQLite default prevents, and what shows this test can fail. The server
    # counts the documented 1000 requests in an hour rather than 10 s, so that the first run's
    # requests are still in its window however long the second takes to start; the first,
    # stopped after about 800, stays within it alone (checked).
    out = tmp_path / "rewards.jsonl"
    async with _sandbox(rate_limits={"mining_rewards": RateLimit(LIMIT.max_requests, 3600.0)}
                        ) as box:
        first = await _start(box, tmp_path / "cache", out, "memory://")
        await _until_sent(box, 800)
        first.send_signal(signal.SIGINT)
        await asyncio.wait_for(first.communicate(), timeout=30)
        assert box.stats.rate_limited == 0  # the first run alone kept within the window
        second = await _start(box, tmp_path / "cache", out, "memory://")
        await until(lambda: box.stats.rate_limited > 0, "the second run is refused")
        second.send_signal(signal.SIGINT)
        await asyncio.wait_for(second.communicate(), timeout=30)
