"""Rewards as the service books them: their status changes, walks and checks return each reward
once whatever it says, and file outputs settle (reruns read the pending days again and replace
those rows atomically), against the sandbox's pending rewards."""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

import txc_async
from txc_async import RateLimit
from txc_async._backfill.walk import WireReward, fixed_fields
from txc_async._export.parquet import read_part_rows
from txc_async._export.rowfile import LEGACY_CSV_COLUMNS, read_rows
from txc_async._export.run import backfill_to_file, backfill_to_stream
from txc_async._export.state import read_state
from txc_async.sandbox import Sandbox

START = 1704067200  # 2024-01-01
DAY = 86400
UNLIMITED = {scope: RateLimit(10**6, 1.0) for scope in txc_async.DEFAULT_RATE_LIMITS}
FORMATS = ["jsonl", "csv", "parquet"]
_SETTLING = ("status", "reward_currency", "payout_destination", "payout_transaction_hash",
             "payout_address", "payout_time")


def _client(box: Sandbox) -> txc_async.Client:
    return txc_async.Client(api_key=box.api_key, api_secret=box.api_secret, base_url=box.url,
                            rate_limits=UNLIMITED, limiter=txc_async.InProcessLimiter())


def _out(tmp_path: Path, fmt: str) -> Path:
    return tmp_path / ("rewards" if fmt == "parquet" else f"rewards.{fmt}")


def _state_path(out: Path, fmt: str) -> Path:
    return out / "_progress" if fmt == "parquet" else out.with_name(out.name + ".progress")


def _rows(out: Path, fmt: str) -> list[WireReward]:
    if fmt == "parquet":
        return list(read_part_rows(out))
    return list(read_rows(out, fmt))  # type: ignore[arg-type]


def _server(box: Sandbox, start: int, end: int) -> dict[tuple[str, int, str], WireReward]:
    """What the server holds now, by identity."""
    records = box.rewards.page(None, start, end, 0, 10**9)
    return {fixed_fields(r): r for r in (msgspec.convert(x, WireReward) for x in records)}


def _settling(row: WireReward) -> tuple[Any, ...]:
    return tuple(getattr(row, name) for name in _SETTLING)


def _assert_holds_the_server(rows: list[WireReward], server: dict[Any, WireReward]) -> None:
    """Each reward once, and in the state the server holds now."""
    keys = [fixed_fields(r) for r in rows]
    assert len(keys) == len(set(keys)), "a reward is in the output twice"
    assert set(keys) == set(server)
    for row in rows:
        assert _settling(row) == _settling(server[fixed_fields(row)]), row


# -- walks during which statuses change -------------------------------------------------------


@pytest.mark.parametrize("how", ["iter_mining_rewards", "backfill_mining_rewards", "stream",
                                 "jsonl"])
async def test_a_walk_during_which_statuses_change_returns_each_reward_once(
    how: str, tmp_path: Path
) -> None:
    # Every reward is pending when the walk begins; they all settle part-way through it, and
    # rewards are booked behind the walk (at the newest day) while it runs: pending ones.
    async with Sandbox(mining_accounts=25, rewards_days=60, pending_days=60,
                       enforce_limits=False, max_page=30) as box:
        end = START + 60 * DAY - 1
        book = box.rewards
        answer = book.page
        calls = [0]

        def page(*args: Any) -> list[dict[str, Any]]:
            calls[0] += 1
            if calls[0] == 12:
                box.settle_rewards()
            if calls[0] in (5, 15, 25):
                book.book(book.names[calls[0] % 25], START + 59 * DAY)
            return answer(*args)

        book.page = page  # type: ignore[method-assign]
        async with _client(box) as client:
            if how == "iter_mining_rewards":
                got = [msgspec.convert(msgspec.to_builtins(r), WireReward)
                       async for r in client.iter_mining_rewards(start=START, end=end)]
            elif how == "backfill_mining_rewards":
                got = [msgspec.convert(msgspec.to_builtins(r), WireReward)
                       async for r in txc_async.backfill_mining_rewards(
                           client, start=START, end=end, concurrency=4)]
            elif how == "stream":
                sink = io.BytesIO()
                await backfill_to_stream(client, start=START, end=end, stream=sink)
                got = [msgspec.json.decode(line, type=WireReward)
                       for line in sink.getvalue().splitlines()]
            else:
                out = tmp_path / "rewards.jsonl"
                await backfill_to_file(client, start=START, end=end, path=out)
                got = _rows(out, "jsonl")
        server = _server(box, START, end)
    keys = [fixed_fields(r) for r in got]
    assert calls[0] > 12 and len(book.booked) == 3
    assert len(keys) == len(set(keys)) == 25 * 60 + 3 and set(keys) == set(server)
    statuses = {r.status for r in got}
    # The walk read rewards before and after they settled: it saw both, and kept each once.
    assert "pending" in statuses and statuses & {"successful", "canceled"}


# -- reruns that settle -----------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("rerun", ["unchanged", "later end"])
async def test_a_rerun_reads_the_pending_days_again_and_settles_their_rows(
    fmt: str, rerun: str, tmp_path: Path
) -> None:
    out = _out(tmp_path, fmt)
    # The last 3 of 30 days are pending; the first run stops at day 28 or 30.
    async with Sandbox(mining_accounts=10, rewards_days=30, pending_days=3,
                       enforce_limits=False) as box:
        end = START + 30 * DAY - 1
        first_end = end - (2 * DAY if rerun == "later end" else 0)
        async with _client(box) as client:
            first = await backfill_to_file(client, start=START, end=first_end, path=out,
                                           fmt=fmt)  # type: ignore[arg-type]
            pending_at_first = 10 * (1 if rerun == "later end" else 3)
            assert first.still_pending == pending_at_first and not first.settled
            state = read_state(_state_path(out, fmt))
            assert state is not None
            assert set().union(*state.pending.values()) == {
                d // DAY for d in range(START + (30 - 3) * DAY, first_end, DAY)}
            # The service settles them, and books a reward at a pending day meanwhile.
            box.rewards.book(box.mining_account_names[4], START + 27 * DAY)
            box.settle_rewards()
            seen: list[tuple[str, float, bool, int]] = []
            second = await backfill_to_file(
                client, start=START, end=end, path=out, fmt=fmt,  # type: ignore[arg-type]
                on_progress=lambda p: seen.append(
                    (p.phase, p.fraction, p.finished, p.records)),
            )
            # The reading again has a progress of its own, after the backfill's (the new days
            # of a later end, and the check over the whole range, which finds the reward booked
            # since), to 100 %.
            settling = [s for s in seen if s[0] == "settle"]
            assert settling and all(s[0] == "settle" for s in seen[seen.index(settling[0]):])
            assert seen[0][0] == "backfill"
            assert settling[-1][1:3] == (1.0, True) and settling[-1][3] >= pending_at_first
            assert sum(second.settled.values()) == pending_at_first
            assert second.still_pending == 0
            assert "settled: " in (second.settling() or "")
            # Only the pending days were read again (one page of them, and the check's probe),
            # besides the two new days of a later end.
            assert second.read_again == pending_at_first + 1
            third = await backfill_to_file(client, start=START, end=end, path=out,
                                           fmt=fmt)  # type: ignore[arg-type]
            assert third.complete_already and third.requests == 1  # the check's one probe
        server = _server(box, START, end)
    rows = _rows(out, fmt)
    assert len(rows) == 301
    _assert_holds_the_server(rows, server)
    canceled = sum(r.status == "canceled" for r in rows)
    assert second.settled.get("canceled", 0) <= canceled and "pending" not in {
        r.status for r in rows}
    state = read_state(_state_path(out, fmt))
    assert state is not None and state.pending == {}
    assert sum(n or 0 for n in state.done.values()) == 301


@pytest.mark.parametrize("fmt", FORMATS)
async def test_rewards_the_check_reads_settled_are_settled_in_the_same_run(
    fmt: str, tmp_path: Path
) -> None:
    """The walk writes the last days' rewards pending; they settle before the check, which
    reads their segment again (a reward was booked behind the walk there): the output ends
    the run with their settled rows, each reward once."""
    out = _out(tmp_path, fmt)
    async with Sandbox(mining_accounts=10, rewards_days=30, pending_days=3,
                       enforce_limits=False) as box:
        end = START + 30 * DAY - 1
        book = box.rewards
        answer = book.page
        probes = [0]

        def page(account: Any, start: Any, stop: Any, offset: int, limit: int) -> Any:
            if limit == 1:  # the check's first probe: the walk is over
                probes[0] += 1
                if probes[0] == 1:
                    box.settle_rewards()
                    book.book(box.mining_account_names[4], START + 28 * DAY)
            return answer(account, start, stop, offset, limit)

        book.page = page  # type: ignore[method-assign]
        async with _client(box) as client:
            summary = await backfill_to_file(client, start=START, end=end, path=out,
                                             fmt=fmt)  # type: ignore[arg-type]
        server = _server(box, START, end)
    assert probes[0] >= 1
    rows = _rows(out, fmt)
    assert len(rows) == 301
    # The segment read again held every reward the walk wrote pending.
    _assert_holds_the_server(rows, server)
    # Pending now: only the reward booked behind the walk, which the check found.
    assert [r.mining_account_name for r in rows if r.status == "pending"] == [
        box.mining_account_names[4]]
    assert sum(summary.settled.values()) == 30 and summary.still_pending == 1
    assert summary.records_written == 301


async def test_rows_still_pending_when_read_again_stay_named_in_the_state(
    tmp_path: Path,
) -> None:
    out = tmp_path / "rewards.jsonl"
    async with Sandbox(mining_accounts=4, rewards_days=20, pending_days=2,
                       enforce_limits=False) as box:
        end = START + 20 * DAY - 1
        async with _client(box) as client:
            await backfill_to_file(client, start=START, end=end, path=out)
            again = await backfill_to_file(client, start=START, end=end, path=out)
            assert again.read_again == 8 and again.still_pending == 8 and not again.settled
            assert again.settling() == "0 settled; 8 still pending"
            state = read_state(out.with_name("rewards.jsonl.progress"))
            assert state is not None and len(set().union(*state.pending.values())) == 2
            box.settle_rewards()
            last = await backfill_to_file(client, start=START, end=end, path=out)
            assert sum(last.settled.values()) == 8
        server = _server(box, START, end)
    _assert_holds_the_server(_rows(out, "jsonl"), server)


def _strays(folder: Path) -> list[Path]:
    """Temporary files left in ``folder`` (a half-written replacement)."""
    return list(folder.rglob("*.tmp"))


# -- a crash while settling -------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_crash_while_settling_leaves_each_reward_once(
    fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _out(tmp_path, fmt)
    # Three named accounts: three pieces, so a Parquet dataset holds three part files to replace.
    accounts = ["pool_acc_000", "pool_acc_001", "pool_acc_002"]
    async with Sandbox(mining_accounts=5, rewards_days=30, pending_days=4,
                       enforce_limits=False) as box:
        end = START + 30 * DAY - 1
        async with _client(box) as client:
            await backfill_to_file(client, start=START, end=end, path=out, accounts=accounts,
                                   fmt=fmt)  # type: ignore[arg-type]
            box.settle_rewards()
            replace = os.replace
            replaced: list[str] = []

            def crashing(src: Any, dst: Any) -> None:
                name = Path(dst).name
                if name == out.name or name.startswith("part-"):
                    replaced.append(name)
                    # The second part file of a dataset, the only file of JSONL or CSV.
                    if len(replaced) == (2 if fmt == "parquet" else 1):
                        raise OSError("the machine stopped")
                replace(src, dst)

            monkeypatch.setattr(os, "replace", crashing)
            with pytest.raises(OSError, match="the machine stopped"):
                await backfill_to_file(client, start=START, end=end, path=out,
                                       accounts=accounts, fmt=fmt)  # type: ignore[arg-type]
            monkeypatch.setattr(os, "replace", replace)
            # Whatever the crash left: each reward once, in its old state or its new one.
            middle = _rows(out, fmt)
            keys = [fixed_fields(r) for r in middle]
            assert len(keys) == len(set(keys)) == 90
            if fmt == "parquet":
                # One part file was replaced before the crash, the others were not.
                assert 0 < sum(r.status == "pending" for r in middle) < 12
            else:
                assert sum(r.status == "pending" for r in middle) == 12
            after = await backfill_to_file(client, start=START, end=end, path=out,
                                           accounts=accounts, fmt=fmt)  # type: ignore[arg-type]
            assert after.still_pending == 0
        server = {k: v for k, v in _server(box, START, end).items() if k[0] in accounts}
    _assert_holds_the_server(_rows(out, fmt), server)
    # What the crash left half written is gone.
    assert _strays(tmp_path) == []


# -- outputs of the earlier format ------------------------------------------------------------


def _legacy(out: Path, fmt: str) -> None:
    """Make ``out`` and its state what the earlier version wrote: seven fields a row, a state
    of version 3 naming no pending day."""
    if fmt == "jsonl":
        lines = [json.loads(line) for line in out.read_text().splitlines()]
        out.write_text("".join(
            json.dumps({k: row[k] for k in (
                "miningAccountName", "totalReward", "reward", "fee", "fppsRate", "hashRate",
                "date")}, separators=(",", ":")) + "\n"
            for row in lines))
    elif fmt == "csv":
        lines = out.read_text().splitlines()
        out.write_text("".join(",".join(line.split(",")[:7]) + "\n" for line in lines))
        assert out.read_text().startswith(",".join(LEGACY_CSV_COLUMNS) + "\n")
    else:
        import pyarrow.parquet as pq

        for part in out.glob("part-*.parquet"):
            table = pq.read_table(part)
            pq.write_table(table.select(table.schema.names[:7]), part)
    state = _state_path(out, fmt)
    head, *rest = state.read_bytes().splitlines()
    header = json.loads(head) | {"version": 3}
    kept = [line for line in rest if not line.startswith(b"pending")]
    state.write_bytes(b"\n".join([json.dumps(header).encode(), *kept]) + b"\n")


@pytest.mark.parametrize("fmt", FORMATS)
async def test_an_output_of_the_earlier_format_is_upgraded_and_extended(
    fmt: str, tmp_path: Path
) -> None:
    out = _out(tmp_path, fmt)
    async with Sandbox(mining_accounts=6, rewards_days=30, pending_days=2,
                       enforce_limits=False) as box:
        end = START + 30 * DAY - 1
        async with _client(box) as client:
            await backfill_to_file(client, start=START, end=end - 5 * DAY, path=out,
                                   fmt=fmt)  # type: ignore[arg-type]
            _legacy(out, fmt)
            assert all(r.status is None and r.reward_currency is None for r in _rows(out, fmt))
            box.settle_rewards()
            summary = await backfill_to_file(client, start=START, end=end, path=out,
                                             fmt=fmt)  # type: ignore[arg-type]
            assert summary.upgraded and summary.extended_from == end - 5 * DAY
            assert summary.read_again == 6 * 25
            again = await backfill_to_file(client, start=START, end=end, path=out,
                                           fmt=fmt)  # type: ignore[arg-type]
            assert again.complete_already
        server = _server(box, START, end)
    rows = _rows(out, fmt)
    assert len(rows) == 180
    _assert_holds_the_server(rows, server)
    if fmt == "csv":
        assert out.read_text().splitlines()[0].endswith(",status,rewardCurrency,"
                                                        "payoutDestination,payoutTransactionHash,"
                                                        "payoutAddress,payoutTime")


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
async def test_an_interrupted_output_of_the_earlier_format_resumes_once_upgraded(
    fmt: str, tmp_path: Path
) -> None:
    out = _out(tmp_path, fmt)
    async with Sandbox(mining_accounts=6, rewards_days=30, enforce_limits=False) as box:
        end = START + 30 * DAY - 1
        async with _client(box) as client:
            await backfill_to_file(client, start=START, end=end, path=out,
                                   fmt=fmt)  # type: ignore[arg-type]
            _legacy(out, fmt)
            # As if the earlier version had stopped part-way: its last piece not finished, and
            # its last line cut.
            state = _state_path(out, fmt)
            lines = state.read_bytes().splitlines(keepends=True)
            state.write_bytes(b"".join(line for line in lines
                                       if not line.startswith((b"4 ", b"checked"))))
            data = out.read_bytes()
            out.write_bytes(data[: len(data) - 30])
            summary = await backfill_to_file(client, start=START, end=end, path=out,
                                             fmt=fmt)  # type: ignore[arg-type]
            assert summary.upgraded
        server = _server(box, START, end)
    _assert_holds_the_server(_rows(out, fmt), server)


# -- the command line --------------------------------------------------------------------------


async def _cli(box: Sandbox, *args: str) -> tuple[int, str]:
    environment = os.environ | {"TXC_BASE_URL": box.url, "TXC_API_KEY": box.api_key,
                                "TXC_API_SECRET": box.api_secret}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "txc_async", *args, env=environment,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode is not None
    return process.returncode, err.decode()


async def test_the_command_line_says_how_rewards_settled(tmp_path: Path) -> None:
    import re

    out = tmp_path / "rewards.csv"
    args = ("backfill-rewards", "--start", "2024-01-01", "--end", "2024-01-30", "--out",
            str(out))
    async with Sandbox(mining_accounts=10, rewards_days=30, pending_days=3,
                       enforce_limits=False) as box:
        code, err = await _cli(box, *args)
        assert code == 0, err
        assert err.splitlines()[-1].endswith("; 0 settled; 30 still pending")
        box.settle_rewards()
        code, err = await _cli(box, *args)
        assert code == 0, err
        server = _server(box, START, START + 30 * DAY - 1)
    found = re.search(r"; 30 settled: (.*); 0 still pending$", err.splitlines()[-1])
    assert found is not None, err
    said = {status: int(count) for count, status in
            (part.split(" ") for part in found.group(1).split(", "))}
    last_days = [r for r in server.values() if r.date >= START + 27 * DAY]
    assert said == {status: sum(r.status == status for r in last_days)
                    for status in {r.status for r in last_days}}
    assert "pending" not in {row.status for row in read_rows(out, "csv")}


# -- the sandbox --------------------------------------------------------------------------------


def _records(box: Sandbox, start: int, end: int) -> Iterator[dict[str, Any]]:
    yield from box.rewards.page(None, start, end, 0, 10**9)


async def test_the_sandbox_books_pending_rewards_that_settle_as_its_clock_passes() -> None:
    now = [1_800_000_000.0]
    box = Sandbox(mining_accounts=20, rewards_days=10, pending_days=2, settle_after=60.0,
                  clock=lambda: now[0])
    last_days = START + 8 * DAY
    old = list(_records(box, START, last_days - 1))
    assert {r["status"] for r in old} <= {"successful", "canceled"}
    assert all(r["rewardCurrency"] == "BTC" for r in old)
    pending = list(_records(box, last_days, START + 10 * DAY - 1))
    assert len(pending) == 40 and {r["status"] for r in pending} == {"pending"}
    assert all(r["payoutTransactionHash"] is None and r["payoutTime"] is None for r in pending)
    now[0] += 30
    booked = box.rewards.book(box.mining_account_names[1], START + 9 * DAY)
    # The account holds a reward at that date already: the booked one is a second later.
    assert booked["date"] == START + 9 * DAY + 1 and booked["status"] == "pending"
    now[0] += 31
    settled = list(_records(box, last_days, START + 10 * DAY - 1))
    assert [(r["miningAccountName"], r["date"], r["totalReward"]) for r in settled if
            r["date"] != booked["date"]] == [
        (r["miningAccountName"], r["date"], r["totalReward"]) for r in pending]
    statuses = [r["status"] for r in settled]
    # Rewards booked later settle later.
    assert statuses.count("pending") == 1
    assert statuses.count("canceled") >= 1 and statuses.count("successful") >= 30
    paid = [r for r in settled if r["status"] == "successful"
            and r["payoutDestination"] == "external_address"]
    assert paid and all(r["payoutTransactionHash"] and r["payoutAddress"] and r["payoutTime"]
                        for r in paid)
    now[0] += 30
    assert "pending" not in {r["status"] for r in _records(box, START, START + 10 * DAY)}
    box.rewards.book(box.mining_account_names[2], START + 9 * DAY)
    assert "pending" in {r["status"] for r in _records(box, START, START + 10 * DAY)}
    box.settle_rewards()
    assert "pending" not in {r["status"] for r in _records(box, START, START + 10 * DAY)}


def test_the_spec_dialect_keeps_its_seven_fields() -> None:
    box = Sandbox(mining_accounts=3, rewards_days=5, pending_days=2, dialect="spec")
    for record in _records(box, START, START + 5 * DAY):
        assert set(record) == {"miningAccountName", "totalReward", "reward", "fee", "fppsRate",
                               "hashRate", "date"}


async def test_the_command_line_sandbox_serves_pending_rewards_with_live() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "txc_async", "sandbox", "--port", "0", "--days", "5",
        "--accounts", "3", "--live", "--settle-after", "3600",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        first = await asyncio.wait_for(process.stdout.readline(), timeout=60)
        assert b"the last 2 days pending until 3600 s have passed" in first
    finally:
        process.terminate()
        await process.wait()


# -- the backfills guide's DuckDB queries ------------------------------------------------------


def _guide_queries() -> list[str]:
    """The statements of the backfills guide's block summing final rewards by month and
    currency (docs/guides/backfills.md)."""
    import re

    guide = (Path(__file__).resolve().parents[2] / "docs/guides/backfills.md").read_text()
    blocks = [b for b in re.findall(r"```sql\n(.*?)```", guide, re.S)
              if "status = 'successful'" in b]
    assert len(blocks) == 1
    return [s.strip() for s in blocks[0].split(";") if s.strip()]


async def test_the_guide_sums_final_rewards_by_month_and_currency_in_every_format(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from decimal import Decimal

    duckdb = pytest.importorskip("duckdb")
    # Two months, the last days pending, some rewards canceled.
    async with Sandbox(mining_accounts=8, rewards_days=45, pending_days=3,
                       enforce_limits=False) as box:
        end = START + 45 * DAY - 1
        async with _client(box) as client:
            for fmt in FORMATS:
                await backfill_to_file(client, start=START, end=end, path=_out(tmp_path, fmt),
                                       fmt=fmt)  # type: ignore[arg-type]
        server = _server(box, START, end)
    expected: dict[tuple[str, str], Decimal] = {}
    for r in server.values():
        if r.status == "successful":
            month = "2024-01" if r.date < START + 31 * DAY else "2024-02"
            key = (month, str(r.reward_currency))
            expected[key] = expected.get(key, Decimal(0)) + Decimal(r.reward)
    assert {r.status for r in server.values()} == {"successful", "canceled", "pending"}
    monkeypatch.chdir(tmp_path)
    queries = _guide_queries()
    assert len(queries) == 3
    for query in queries:
        got = {(month, currency): amount
               for month, currency, amount, _count in duckdb.sql(query).fetchall()}
        assert got == expected, query
