"""A backfill killed (SIGKILL, or SIGTERM as ``docker stop`` and ``timeout`` send it) at every
step it records in its state, then rerun: nothing lost, nothing stalled. Every reward is in the
output once, the days holding pending rewards stay named until they settle, and once the server
settles them a rerun leaves no row pending.

The killed run is a real process running the command line against a sandbox this test serves
(the reruns run in this process). The kill comes from inside that process, right after the state
file's n-th record is made durable (``fsync``), for n = 1, 2, ... until a run ends by itself:
every moment between two records of a run is reached, whatever order its pieces finish in. A
torn record (what a power loss leaves) is cut before anything is appended after it."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from collections import Counter
from pathlib import Path

import msgspec
import pytest

from txc_async import InProcessLimiter, RateLimit
from txc_async._backfill.walk import WireReward, fixed_fields
from txc_async._client import Client
from txc_async._export.parquet import read_part_rows
from txc_async._export.report import BackfillSummary
from txc_async._export.rowfile import read_rows
from txc_async._export.run import backfill_to_file
from txc_async._export.state import read_state
from txc_async.sandbox import Sandbox

# The backfill runs in a subprocess, on asyncio's loop whatever loop this process runs: the
# uvloop pass leaves it out (see tests/conftest.py).
pytestmark = pytest.mark.asyncio_only

START = 1704067200  # 2024-01-01
DAY = 86400
DAYS = 21  # three pieces of a week; the last 10 days pending: two pieces hold pending rewards
ARGS = ("backfill-rewards", "--start", "2024-01-01", "--end", "2024-01-21")

#: Runs the command line, killing its own process with SIGNAL right after the AFTER-th ``fsync``
#: of the state file STATE (its records; a replaced state's temporary file is another file).
KILLER = """\
import os, sys

state, after, signum = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
fsync, made = os.fsync, [0]


def fsync_then_kill(fd):
    fsync(fd)
    try:
        record = os.path.samestat(os.fstat(fd), os.stat(state))
    except OSError:
        record = False
    if record:
        made[0] += 1
        if made[0] == after:
            os.kill(os.getpid(), signum)


os.fsync = fsync_then_kill
from txc_async.cli import main

sys.exit(main(sys.argv[4:]))
"""


def _env(box: Sandbox, home: Path) -> dict[str, str]:
    return os.environ | {
        "TXC_BASE_URL": box.url, "TXC_API_KEY": box.api_key, "TXC_API_SECRET": box.api_secret,
        "TXC_LIMITER": "memory://", "XDG_CONFIG_HOME": str(home / "config"),
    }


async def _run(box: Sandbox, home: Path, *argv: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, *argv, env=_env(box, home),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode is not None
    return process.returncode, err.decode()


async def _backfill(box: Sandbox, out: Path, fmt: str) -> BackfillSummary:
    """The rerun: the same backfill, in this process (the killed run was a process of its
    own, and this one sees the state it left)."""
    async with Client(api_key=box.api_key, api_secret=box.api_secret, base_url=box.url,
                      rate_limits={"mining_rewards": RateLimit(10**6, 1.0)},
                      limiter=InProcessLimiter()) as client:
        return await backfill_to_file(client, start=START, end=START + DAYS * DAY - 1,
                                      path=out, fmt=fmt)  # type: ignore[arg-type]


def _state_path(out: Path, fmt: str) -> Path:
    return out / "_progress" if fmt == "parquet" else out.with_name(out.name + ".progress")


def _rows(out: Path, fmt: str) -> list[WireReward]:
    return list(read_part_rows(out) if fmt == "parquet" else read_rows(out, fmt))  # type: ignore[arg-type]


def _server(box: Sandbox) -> dict[tuple[str, int, str], WireReward]:
    records = box.rewards.page(None, START, START + DAYS * DAY - 1, 0, 10**9)
    return {fixed_fields(r): r for r in (msgspec.convert(x, WireReward) for x in records)}


def _settling(row: WireReward) -> tuple[object, ...]:
    """What changes as a reward settles (a Parquet part spells amounts its own way)."""
    return (row.status, row.reward_currency, row.payout_destination,
            row.payout_transaction_hash, row.payout_address, row.payout_time)


#: A state's lines: its header, then whole records, none run into another.
_RECORD = re.compile(rb"[0-9]+ (?:[0-9]+|-)(?: [0-9]+(?:,[0-9]+)*)?|checked"
                     rb"|pending [0-9]+ [0-9]*(?:,[0-9]+)*")


def _assert_state_holds_the_output(
    out: Path, fmt: str, summary: BackfillSummary, pending: bool
) -> None:
    """The state says every piece is done with the rows the output holds for it; every row
    holding a pending reward lies on a day it names pending, and the summary counts every such
    row as still pending; every line of it is one record."""
    state_path = _state_path(out, fmt)
    lines = state_path.read_bytes().split(b"\n")
    assert lines[-1] == b"", "the state ends with a torn line"
    assert all(_RECORD.fullmatch(line) for line in lines[1:-1]), lines
    state = read_state(state_path)
    assert state is not None
    rows = _rows(out, fmt)
    assert state.done == Counter(state.plan.job_of(r) for r in rows)
    named = {day for days in state.pending.values() for day in days}
    still = [r for r in rows if r.status == "pending"]
    assert bool(still) == pending
    assert {r.date // DAY for r in still} <= named, "a pending day is no longer named"
    assert summary.still_pending == len(still), summary


def _assert_killed_state_holds_its_steps(out: Path, fmt: str) -> None:
    """The state as the kill left it: every piece it calls done has its pending days named,
    whatever moment the kill came at."""
    state = read_state(_state_path(out, fmt))
    if state is None:
        return
    pending: dict[int | None, set[int]] = {}
    for row in _rows(out, fmt):
        if row.status == "pending":
            pending.setdefault(state.plan.job_of(row), set()).add(row.date // DAY)
    for job in state.done:
        assert pending.get(job, set()) <= state.pending.get(job, frozenset()), (
            f"piece {job} is done but its pending days are not named")


async def _killed_then_rerun(
    tmp_path: Path, fmt: str, signum: int, after: int, torn: bytes = b"", pending_days: int = 10
) -> bool:
    """Kill a backfill after its state's ``after``-th record (whether it was killed), append
    ``torn`` to its state as a torn record, rerun it, check it, let the server settle every
    reward and rerun again: the output holds the server's rewards once, each as it is now."""
    home = tmp_path / f"run-{signum}-{after}-{len(torn)}"
    home.mkdir()
    out = home / ("rewards" if fmt == "parquet" else f"rewards.{fmt}")
    killer = tmp_path / "killer.py"
    killer.write_text(KILLER)
    async with Sandbox(mining_accounts=4, rewards_days=DAYS, pending_days=pending_days,
                       enforce_limits=False) as box:
        code, err = await _run(box, home, str(killer), str(_state_path(out, fmt)), str(after),
                               str(signum), *ARGS, "--out", str(out), "--format", fmt)
        killed = code == -signum
        assert killed or code == 0, err
        _assert_killed_state_holds_its_steps(out, fmt)
        if torn:
            with _state_path(out, fmt).open("ab") as state:
                state.write(torn)
        _assert_state_holds_the_output(out, fmt, await _backfill(box, out, fmt),
                                       pending=pending_days > 0)
        box.settle_rewards()
        last = await _backfill(box, out, fmt)
        server = _server(box)
    rows = _rows(out, fmt)
    keys = [fixed_fields(r) for r in rows]
    assert len(keys) == len(set(keys)) and set(keys) == set(server)
    assert [r for r in rows if r.status == "pending"] == [], last
    assert all(_settling(r) == _settling(server[fixed_fields(r)]) for r in rows)
    assert last.still_pending == 0, last
    return killed


@pytest.mark.parametrize(("fmt", "signum"), [
    ("jsonl", signal.SIGKILL), ("parquet", signal.SIGKILL), ("csv", signal.SIGTERM),
])
async def test_a_backfill_killed_after_any_record_of_its_state_loses_no_pending_day(
    tmp_path: Path, fmt: str, signum: int
) -> None:
    after = 1
    while await _killed_then_rerun(tmp_path, fmt, signum, after):
        after += 1
    # Three pieces and the check: at least four records, each one a moment the run was killed.
    assert after > 4


@pytest.mark.parametrize("torn", [b"pend", b"pending 2 1973", b"2 1"])
async def test_a_torn_last_record_is_cut_before_the_next_is_appended(
    tmp_path: Path, torn: bytes
) -> None:
    """Killed after its first record, then a record torn after it: the rerun's records are
    whole, and the state holds the output. (No pending rewards here: the kill comes after
    whichever piece finishes first, and the moment after a record is the test above's.)"""
    assert await _killed_then_rerun(tmp_path, "jsonl", signal.SIGKILL, 1, torn, pending_days=0)


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
async def test_an_output_whose_state_lost_its_pending_days_heals_on_the_next_run(
    tmp_path: Path, fmt: str
) -> None:
    """A state written by a version that a kill could stop between a piece's line and its
    pending days: the rows say which days hold pending rewards, and the next run reads them
    again."""
    from txc_async._export.state import write_state

    out = tmp_path / ("rewards" if fmt == "parquet" else f"rewards.{fmt}")
    async with Sandbox(mining_accounts=4, rewards_days=DAYS, pending_days=10,
                       enforce_limits=False) as box:
        first = await _backfill(box, out, fmt)
        assert first.still_pending == 40
        state = read_state(_state_path(out, fmt))
        assert state is not None and state.pending
        state.pending = {}
        write_state(_state_path(out, fmt), state)
        box.settle_rewards()
        second = await _backfill(box, out, fmt)
        assert sum(second.settled.values()) == 40 and second.still_pending == 0
        server = _server(box)
    rows = _rows(out, fmt)
    assert len(rows) == len(server) and not [r for r in rows if r.status == "pending"]
    assert all(_settling(r) == _settling(server[fixed_fields(r)]) for r in rows)
