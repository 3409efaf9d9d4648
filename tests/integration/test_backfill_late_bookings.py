"""Rewards the service books on a day after a backfill read it (a day holding no pending
reward): every rerun of a file output checks its whole range against the rows it holds, so a
finished output takes them, and its summary says as of when it checked."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import msgspec
import pytest

import txc_async
from txc_async import RateLimit
from txc_async._backfill.walk import WireReward, fixed_fields
from txc_async._export.parquet import read_part_rows
from txc_async._export.rowfile import read_rows
from txc_async._export.run import backfill_to_file
from txc_async._export.state import read_state
from txc_async.sandbox import Sandbox

# The backfill runs in a subprocess, on asyncio's loop whatever loop this process runs: the
# uvloop pass leaves it out (see tests/conftest.py).
pytestmark = pytest.mark.asyncio_only

START = 1704067200  # 2024-01-01
DAY = 86400
UNLIMITED = {scope: RateLimit(10**6, 1.0) for scope in txc_async.DEFAULT_RATE_LIMITS}


def _client(url: str, key: str, secret: str) -> txc_async.Client:
    return txc_async.Client(api_key=key, api_secret=secret, base_url=url,
                            rate_limits=UNLIMITED, limiter=txc_async.InProcessLimiter())


def _rows(out: Path, fmt: str) -> list[WireReward]:
    return list(read_part_rows(out) if fmt == "parquet" else read_rows(out, fmt))  # type: ignore[arg-type]


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
async def test_a_finished_output_takes_rewards_booked_since_on_days_not_pending(
    tmp_path: Path, fmt: str
) -> None:
    out = tmp_path / ("rewards" if fmt == "parquet" else f"rewards.{fmt}")
    end = START + 40 * DAY - 1
    async with Sandbox(mining_accounts=30, rewards_days=40, pending_days=2,
                       enforce_limits=False) as box, \
            _client(box.url, box.api_key, box.api_secret) as client:
        first = await backfill_to_file(client, start=START, end=end, path=out,
                                       fmt=fmt)  # type: ignore[arg-type]
        assert first.records_written == 1200
        state = read_state(out / "_progress" if fmt == "parquet"
                           else out.with_name(out.name + ".progress"))
        assert state is not None
        named = set().union(*state.pending.values())
        # Booked since, on days the output holds no pending reward on: the 4th, the 21st.
        late = [(box.mining_account_names[7], START + 3 * DAY + 3600),
                (box.mining_account_names[12], START + 20 * DAY)]
        assert not {date // DAY for _, date in late} & named
        began = time.time()
        for account, date in late:
            box.rewards.book(account, date)
        second = await backfill_to_file(client, start=START, end=end, path=out,
                                        fmt=fmt)  # type: ignore[arg-type]
        assert second.records_written == 2 and not second.complete_already
        assert second.checked_as_of is not None and second.checked_as_of >= began
        assert second.checked().startswith("checked as of ")
        third = await backfill_to_file(client, start=START, end=end, path=out,
                                       fmt=fmt)  # type: ignore[arg-type]
        assert third.complete_already and third.records_written == 0
        server = box.rewards.page(None, START, end, 0, 10**9)
    rows = _rows(out, fmt)
    keys = [fixed_fields(r) for r in rows]
    assert len(keys) == len(set(keys)) == 1202
    assert set(keys) == {fixed_fields(msgspec.convert(r, WireReward)) for r in server}


async def _sandbox_live(*args: str) -> tuple[asyncio.subprocess.Process, dict[str, str]]:
    """``txc-async sandbox --live`` in its own process, and the settings it prints."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "txc_async", "sandbox", "--port", "0", "--live", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )
    assert process.stdout is not None
    settings: dict[str, str] = {}
    while True:
        line = (await asyncio.wait_for(process.stdout.readline(), timeout=60)).decode()
        assert line, "the sandbox ended"
        if line.startswith("export "):
            name, _, value = line.removeprefix("export ").strip().partition("=")
            settings[name] = value
        if line.startswith("press Ctrl-C"):
            return process, settings


async def _backfill(settings: dict[str, str], home: Path, out: Path) -> str:
    env = os.environ | settings | {"TXC_LIMITER": "memory://",
                                   "XDG_CONFIG_HOME": str(home / "config")}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "txc_async", "backfill-rewards", "--start", "2024-01-01",
        "--end", "2024-01-20", "--out", str(out), env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode == 0, err.decode()
    return err.decode().splitlines()[-1]


async def test_a_rerun_against_the_live_sandbox_takes_what_it_booked_since(
    tmp_path: Path,
) -> None:
    """``sandbox --live`` books a reward at a random day of its range each second: a rerun of
    a finished output takes every one booked before it began."""
    process, settings = await _sandbox_live("--days", "20", "--accounts", "5",
                                            "--settle-after", "3600")
    out = tmp_path / "rewards.jsonl"
    try:
        first = await _backfill(settings, tmp_path, out)
        assert "checked as of" in first
        held = len(_rows(out, "jsonl"))
        async with _client(settings["TXC_BASE_URL"], settings["TXC_API_KEY"],
                           settings["TXC_API_SECRET"]) as client:
            for _ in range(300):
                server = [r async for r in client.iter_mining_rewards(
                    start=START, end=START + 20 * DAY - 1)]
                if len(server) >= held + 3:
                    break
                await asyncio.sleep(0.1)
        second = await _backfill(settings, tmp_path, out)
    finally:
        process.terminate()
        await process.wait()
    assert "already complete" not in second and "checked as of" in second, second
    rows = _rows(out, "jsonl")
    keys = [fixed_fields(r) for r in rows]
    assert len(keys) == len(set(keys))
    assert {(r.mining_account_name, r.date, r.reward_currency or "") for r in server} <= set(keys)
    assert len(rows) >= held + 3
