"""Backfills as data teams run them, against the sandbox: rewards booked during the walk, one
writer per output, incremental runs, Parquet, pipes, verified resume and shards."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import txc_async
from txc_async import RateLimit
from txc_async._export.lock import OutputLock
from txc_async._export.run import backfill_to_file
from txc_async._limiters.url import check_limiter_url
from txc_async.sandbox import Sandbox

START = 1704067200  # 2024-01-01
DAY = 86400
UNLIMITED = {scope: RateLimit(10**6, 1.0) for scope in txc_async.DEFAULT_RATE_LIMITS}


def _client(box: Sandbox) -> txc_async.Client:
    return txc_async.Client(api_key=box.api_key, api_secret=box.api_secret, base_url=box.url,
                            rate_limits=UNLIMITED, limiter=txc_async.InProcessLimiter())


def _key(r: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(r[k] for k in ("miningAccountName", "date", "totalReward", "reward", "fee"))


class _Bookings:
    """Before the server answers query number n, book the rewards ``bookings(n)`` names; note
    which rewards were booked before the first check probe (a one-record query) arrived."""

    def __init__(self, box: Sandbox, bookings: Callable[[int], list[tuple[str, int]]]) -> None:
        book = box.rewards
        answer = book.page
        self.calls = 0
        self.before_check: set[tuple[Any, ...]] | None = None

        def page(*args: Any) -> list[dict[str, Any]]:
            self.calls += 1
            if args[4] == 1 and self.before_check is None:
                self.before_check = {_key(b.record) for b in book.booked}
            for account, date in bookings(self.calls):
                book.book(account, date)
            return answer(*args)

        book.page = page  # type: ignore[method-assign]


def _everything(box: Sandbox, start: int, end: int) -> list[dict[str, Any]]:
    return box.rewards.page(None, start, end, 0, 10**9)


async def _fetch(box: Sandbox, how: str, start: int, end: int) -> list[tuple[Any, ...]]:
    async with _client(box) as client:
        if how == "iter_mining_rewards":
            got = [r async for r in client.iter_mining_rewards(start=start, end=end)]
        else:
            got = [r async for r in txc_async.backfill_mining_rewards(
                client, start=start, end=end, concurrency=4)]
    return [(r.mining_account_name, r.date, f"{r.total_reward}", f"{r.reward}", f"{r.fee}")
            for r in got]


def _during_the_walk(names: list[str]) -> Callable[[int], list[tuple[str, int]]]:
    """The first 12 queries (all within the walk) each book rewards: at the range's newest day
    (behind every walk), at its oldest (ahead of every walk), and two at dates spread over the
    middle (corrections of settled days, behind or ahead of the walk)."""
    return lambda n: [
        (names[n % 25], START + 59 * DAY), (names[(n * 7) % 25], START),
        (names[(n * 3) % 25], START + (n * 17 % 60) * DAY),
        (names[(n * 11) % 25], START + (n * 29 % 60) * DAY + 3600),
    ] if n <= 12 else []


def _during_the_check_too(names: list[str]) -> Callable[[int], list[tuple[str, int]]]:
    """Every query books one reward somewhere in the range, the check's own queries too."""
    return lambda n: [
        (names[(n * 7) % 25], START + (n * 13 % 60) * DAY + (n % 3) * 60),
    ] if n <= 400 else []


@pytest.mark.parametrize("when", [_during_the_walk, _during_the_check_too])
@pytest.mark.parametrize("how", ["iter_mining_rewards", "backfill_mining_rewards"])
async def test_rewards_booked_anywhere_while_the_walk_runs_come_back_once(
    how: str, when: Callable[[list[str]], Callable[[int], list[tuple[str, int]]]]
) -> None:
    async with Sandbox(mining_accounts=25, rewards_days=60, enforce_limits=False) as box:
        end = START + 60 * DAY - 1
        before = {_key(r) for r in _everything(box, START, end)}
        bookings = _Bookings(box, when(box.mining_account_names))
        keys = await _fetch(box, how, START, end)
        booked = {_key(b.record) for b in box.rewards.booked}
        after = {_key(r) for r in _everything(box, START, end)}
    assert bookings.before_check is not None
    assert len(keys) == len(set(keys)), "a record came back twice"
    assert before <= set(keys), "a record of the range was missed"
    assert bookings.before_check <= set(keys), "a reward held when the check began was missed"
    assert set(keys) <= after
    if when is _during_the_walk:
        assert len(booked) == 48 and set(keys) == after
    else:
        assert len(booked) > len(bookings.before_check) > 10


async def test_a_boundary_date_larger_than_a_page_is_walked_exactly_with_bookings() -> None:
    # 250 accounts: every date holds 250 records, more than a page of 100.
    async with Sandbox(mining_accounts=250, rewards_days=4, enforce_limits=False) as box:
        end = START + 4 * DAY - 1
        before = {_key(r) for r in _everything(box, START, end)}
        names = box.mining_account_names
        # Book at the date being walked, in front of the walk's position within that date.
        _Bookings(box, lambda n: [(names[0], START + (3 - min(n, 12) // 3) * DAY)])
        async with _client(box) as client:
            got = [r async for r in client.iter_mining_rewards(start=START, end=end)]
    keys = [(r.mining_account_name, r.date, f"{r.total_reward}", f"{r.reward}", f"{r.fee}")
            for r in got]
    assert len(keys) == len(set(keys)) and before <= set(keys)


async def _cli(box: Sandbox, *args: str, stdin: int | None = None,
               env: dict[str, str] | None = None) -> tuple[int, bytes, str]:
    environment = os.environ | {"TXC_BASE_URL": box.url, "TXC_API_KEY": box.api_key,
                                "TXC_API_SECRET": box.api_secret} | (env or {})
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "txc_async", *args, env=environment,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode is not None
    return process.returncode, out, err.decode()


async def test_a_second_run_on_the_same_output_exits_at_once_naming_the_first(
    tmp_path: Path,
) -> None:
    out = tmp_path / "rewards.jsonl"
    async with Sandbox(mining_accounts=5, rewards_days=30, enforce_limits=False) as box:
        code, _, err = await _cli(box, "backfill-rewards", "--start", "2024-01-01",
                                  "--end", "2024-01-10", "--out", str(out))
        assert code == 0, err
        before = out.read_bytes(), (tmp_path / "rewards.jsonl.progress").read_bytes()
        with OutputLock(tmp_path / "rewards.jsonl.lock", out):
            code, stdout, err = await _cli(box, "backfill-rewards", "--start", "2024-01-01",
                                           "--end", "2024-01-20", "--out", str(out))
        assert code == 1 and stdout == b""
        assert err.startswith("txc-async: error: ") and err.count("\n") == 1
        assert f"being written by process {os.getpid()} " in err
        assert (out.read_bytes(), (tmp_path / "rewards.jsonl.progress").read_bytes()) == before
        # Released by the holder: the next run goes ahead.
        code, _, err = await _cli(box, "backfill-rewards", "--start", "2024-01-01",
                                  "--end", "2024-01-20", "--out", str(out))
        assert code == 0, err


async def test_a_run_cancelled_while_it_reads_its_output_keeps_the_lock_until_it_is_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading (and repairing) what an earlier run left happens in a worker thread, which a
    cancellation cannot stop: the run holds the output's lock until that thread is done, so no
    other writer takes the output while it still reads or writes it."""
    from txc_async._export import run as _export

    finished: list[float] = []
    prepare = _export.prepare

    def slow_prepare(*args: Any) -> Any:
        time.sleep(0.4)
        result = prepare(*args)
        finished.append(time.monotonic())
        return result

    monkeypatch.setattr(_export, "prepare", slow_prepare)
    out = tmp_path / "rewards.jsonl"
    async with Sandbox(mining_accounts=2, rewards_days=5, enforce_limits=False) as box, \
            _client(box) as client:
        run = asyncio.create_task(backfill_to_file(client, start=START, end=START + 5 * DAY - 1,
                                                   path=out, fmt="jsonl"))
        await asyncio.sleep(0.1)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        returned = time.monotonic()
        assert finished and finished[0] <= returned
        with OutputLock(tmp_path / "rewards.jsonl.lock", out):  # free again
            pass


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
async def test_a_later_end_fetches_only_the_new_days_and_an_unchanged_rerun_only_checks(
    tmp_path: Path, fmt: str
) -> None:
    out = tmp_path / ("rewards" if fmt == "parquet" else f"rewards.{fmt}")
    async with (
        Sandbox(mining_accounts=30, rewards_days=60, enforce_limits=False) as box,
        _client(box) as client,
    ):
        first = await backfill_to_file(client, start=START, end=START + 40 * DAY - 1,
                                       path=out, fmt=fmt)  # type: ignore[arg-type]
        assert first.records_written == 30 * 40
        second = await backfill_to_file(client, start=START, end=START + 45 * DAY - 1,
                                        path=out, fmt=fmt)  # type: ignore[arg-type]
        # 5 new days of 30 accounts: 150 rows, two pages, and one request for the check of
        # the 1,350 rows (one request per 10,000 rows).
        assert second.records_written == 150 and second.requests == 3
        assert second.records_before == 1200 and second.extended_from == START + 40 * DAY - 1
        third = await backfill_to_file(client, start=START, end=START + 45 * DAY - 1,
                                       path=out, fmt=fmt)  # type: ignore[arg-type]
        # Only checked: one request for the 1,350 rows.
        assert third.complete_already and third.requests == 1
    keys = _rows(out, fmt)
    assert len(keys) == len(set(keys)) == 30 * 45
    assert {d for _, d in keys} == {START + i * DAY for i in range(45)}


def _rows(out: Path, fmt: str) -> list[tuple[str, int]]:
    if fmt == "parquet":
        import pyarrow.dataset as ds

        table = ds.dataset(out, format="parquet").to_table()
        return [(a, int(d.timestamp())) for a, d in zip(
            table["mining_account_name"].to_pylist(), table["date"].to_pylist(), strict=True)]
    if fmt == "csv":
        import csv

        with out.open() as handle:
            return [(r["miningAccountName"], int(r["date"])) for r in csv.DictReader(handle)]
    return [(r["miningAccountName"], r["date"]) for r in map(json.loads, out.open())]


async def test_parquet_round_trip_is_exact_in_pyarrow_duckdb_and_polars(tmp_path: Path) -> None:
    import duckdb
    import polars as pl
    import pyarrow.dataset as ds

    out = tmp_path / "rewards"
    jsonl = tmp_path / "rewards.jsonl"
    async with (
        Sandbox(mining_accounts=12, rewards_days=40, enforce_limits=False) as box,
        _client(box) as client,
    ):
        await backfill_to_file(client, start=START, end=START + 40 * DAY - 1, path=out,
                               fmt="parquet")
        await backfill_to_file(client, start=START, end=START + 40 * DAY - 1, path=jsonl)
    wire = {(r["miningAccountName"], r["date"]): r for r in map(json.loads, jsonl.open())}
    parts = sorted(p.name for p in out.glob("*.parquet"))
    assert parts and all(p.startswith("part-") for p in parts)
    assert not list(out.glob(".*.tmp"))
    table = ds.dataset(out, format="parquet").to_table()
    assert str(table.schema.field("reward").type) == "decimal128(38, 18)"
    assert str(table.schema.field("date").type).startswith("timestamp[")
    assert table.num_rows == len(wire) == 12 * 40
    for row in table.to_pylist():
        source = wire[(row["mining_account_name"], int(row["date"].timestamp()))]
        for column, name in (("total_reward", "totalReward"), ("reward", "reward"),
                             ("fee", "fee"), ("fpps_rate", "fppsRate")):
            assert row[column] == Decimal(source[name])
    total = sum(Decimal(r["reward"]) for r in wire.values())
    (duck_total, duck_rows), = duckdb.sql(
        f"SELECT sum(reward), count(*) FROM read_parquet('{out}/*.parquet')"
    ).fetchall()
    assert Decimal(duck_total) == total and duck_rows == len(wire)
    frame = pl.read_parquet(str(out / "*.parquet"))
    assert frame.height == len(wire)
    assert Decimal(str(frame["reward"].sum())) == total
    # Dictionaries for the columns of few values only; no statistics for the transaction hash,
    # which a reader cannot filter on; the others keep theirs (a date filter skips row groups).
    import pyarrow.parquet as pq

    group = pq.ParquetFile(out / parts[0]).metadata.row_group(0)
    columns = {group.column(i).path_in_schema: group.column(i) for i in range(group.num_columns)}
    dictionary = {name for name, column in columns.items()
                  if any("DICTIONARY" in encoding for encoding in column.encodings)}
    assert dictionary == {"mining_account_name", "status", "reward_currency",
                          "payout_destination", "payout_address"}
    assert not columns["payout_transaction_hash"].is_stats_set
    assert columns["date"].is_stats_set and columns["reward"].is_stats_set


async def test_parquet_resumes_an_unfinished_piece_and_repairs_a_lost_part(
    tmp_path: Path,
) -> None:
    out = tmp_path / "rewards"
    async with (
        Sandbox(mining_accounts=10, rewards_days=50, enforce_limits=False) as box,
        _client(box) as client,
    ):
        await backfill_to_file(client, start=START, end=START + 50 * DAY - 1, path=out,
                               fmt="parquet")
        complete = sorted(_rows(out, "parquet"))
        state = out / "_progress"
        lines = state.read_bytes().splitlines(keepends=True)
        # An interrupted run: the last finished piece not yet recorded, and a finished
        # piece's part file lost.
        state.write_bytes(b"".join(lines[:-1]))
        next(iter(sorted(out.glob("part-000000-*.parquet")))).unlink()
        summary = await backfill_to_file(client, start=START, end=START + 50 * DAY - 1,
                                         path=out, fmt="parquet")
        assert summary.repaired is not None and summary.requests == 2
    assert sorted(_rows(out, "parquet")) == complete


async def test_a_finished_file_cut_short_is_repaired_on_rerun(tmp_path: Path) -> None:
    out = tmp_path / "rewards.jsonl"
    async with (
        Sandbox(mining_accounts=20, rewards_days=60, enforce_limits=False) as box,
        _client(box) as client,
    ):
        await backfill_to_file(client, start=START, end=START + 60 * DAY - 1, path=out)
        complete = out.read_bytes()
        with out.open("rb+") as handle:
            handle.truncate(len(complete) - 50)
        summary = await backfill_to_file(client, start=START, end=START + 60 * DAY - 1,
                                         path=out)
        assert summary.repaired == "its last line was cut"
        assert summary.requests >= 1 and summary.records_written >= 1
        again = await backfill_to_file(client, start=START, end=START + 60 * DAY - 1,
                                       path=out)
        assert again.complete_already
    assert sorted(complete.splitlines()) == sorted(out.read_bytes().splitlines())
    # Whole lines cut (no torn line): the row count disagrees with the record, also repaired.
    lines = complete.splitlines(keepends=True)
    out.write_bytes(b"".join(lines[:-3]))
    async with (
        Sandbox(mining_accounts=20, rewards_days=60, enforce_limits=False) as box,
        _client(box) as client,
    ):
        summary = await backfill_to_file(client, start=START, end=START + 60 * DAY - 1,
                                         path=out)
    assert summary.repaired is not None and "rows where" in summary.repaired
    assert sorted(complete.splitlines()) == sorted(out.read_bytes().splitlines())


async def test_out_dash_streams_json_lines_to_stdout_with_progress_on_stderr(
    tmp_path: Path,
) -> None:
    async with Sandbox(mining_accounts=15, rewards_days=30, enforce_limits=False) as box:
        process = await asyncio.create_subprocess_shell(
            f"{sys.executable} -m txc_async backfill-rewards --start 2024-01-01 "
            "--end 2024-01-30 --out - | "
            f"{sys.executable} -c 'import sys, json; rows = [json.loads(l) for l in sys.stdin]; "
            "print(len(rows), len({(r[\"miningAccountName\"], r[\"date\"]) for r in rows}))'",
            env=os.environ | {"TXC_BASE_URL": box.url, "TXC_API_KEY": box.api_key,
                              "TXC_API_SECRET": box.api_secret},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=tmp_path,
        )
        out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode == 0, err
    assert out.decode().split() == ["450", "450"]
    assert "stdout: 450 records written" in err.decode()
    assert os.listdir(tmp_path) == []  # no file named -, no state, no lock


@pytest.mark.redis
async def test_shards_on_several_processes_sharing_redis_add_up_to_one_run(
    tmp_path: Path,
) -> None:
    from tests.support.redis_server import RedisServer, require_redis_server

    binary = require_redis_server()
    with RedisServer(binary) as redis:
        async with Sandbox(mining_accounts=20, rewards_days=120) as box:
            args = ["backfill-rewards", "--start", "2024-01-01", "--end", "2024-04-29",
                    "--limiter", redis.url]
            runs = [
                _cli(box, *args, "--out", str(tmp_path / f"shard{i}.jsonl"), "--shard", f"{i}/3")
                for i in (1, 2, 3)
            ]
            results = await asyncio.gather(*runs)
            for code, _, err in results:
                assert code == 0, err
            code, _, err = await _cli(box, *args, "--out", str(tmp_path / "single.jsonl"))
            assert code == 0, err
            assert box.stats.rate_limited == 0
    shards = [(tmp_path / f"shard{i}.jsonl").read_bytes().splitlines() for i in (1, 2, 3)]
    single = (tmp_path / "single.jsonl").read_bytes().splitlines()
    union = [line for shard in shards for line in shard]
    assert all(shards) and len(union) == len(set(union))
    assert sorted(union) == sorted(single) and len(single) == 20 * 120


async def test_limiter_from_url(tmp_path: Path) -> None:
    from txc_async._limiters.url import default_limiter_url

    assert isinstance(txc_async.limiter_from_url("memory://"), txc_async.InProcessLimiter)
    redis = txc_async.limiter_from_url("redis://127.0.0.1:6390/0")
    assert isinstance(redis, txc_async.RedisLimiter)
    assert isinstance(txc_async.limiter_from_url("rediss://:pw@127.0.0.1:6390/0"),
                      txc_async.RedisLimiter)
    budgets = tmp_path / "made" / "budgets.db"
    sqlite = txc_async.limiter_from_url(f"sqlite:///{budgets}")
    assert isinstance(sqlite, txc_async.SQLiteLimiter) and budgets.parent.is_dir()
    await sqlite.aclose()
    with pytest.raises(ValueError, match="sqlite:// needs a file"):
        txc_async.limiter_from_url("sqlite://")
    assert default_limiter_url().startswith("sqlite:///")
    assert default_limiter_url().endswith("txc_async/budgets.sqlite3")
    with pytest.raises(ValueError, match="unknown limiter URL") as caught:
        txc_async.limiter_from_url("http://user:secret@host")
    assert "secret" not in str(caught.value)


def test_a_redis_limiter_url_sets_the_namespaces_and_leaves_redis_options_to_redis_py() -> None:
    plain = txc_async.limiter_from_url("redis://127.0.0.1:6390/0")
    assert isinstance(plain, txc_async.RedisLimiter)
    assert (plain.namespace, plain.nonce_namespace, plain.cluster) == ("txc", "txc", False)
    named = txc_async.limiter_from_url(
        "redis://:pw@127.0.0.1:6390/2?namespace=eu-egress&nonce_namespace=keys"
        "&health_check_interval=5"
    )
    assert isinstance(named, txc_async.RedisLimiter)
    assert (named.namespace, named.nonce_namespace) == ("eu-egress", "keys")
    # redis-py read its own parameter, and never saw the limiter's.
    pool = named._redis.connection_pool  # type: ignore[union-attr]
    assert pool.connection_kwargs["health_check_interval"] == 5
    assert pool.connection_kwargs["db"] == 2
    assert not {"namespace", "nonce_namespace"} & set(pool.connection_kwargs)
    only = txc_async.limiter_from_url("redis://127.0.0.1:6390/0?namespace=b")
    assert isinstance(only, txc_async.RedisLimiter)
    assert (only.namespace, only.nonce_namespace) == ("b", "b")
    cluster = txc_async.limiter_from_url("redis://127.0.0.1:6390?cluster=true")
    assert isinstance(cluster, txc_async.RedisLimiter) and cluster.cluster
    for url, message in [
        ("redis://127.0.0.1:6390/0?namespace=", "namespace: must be a non-empty string"),
        ("redis://127.0.0.1:6390/0?nonce_namespace=a:b", "nonce_namespace: must be"),
        ("redis://127.0.0.1:6390/0?namespace=a&namespace=b", "namespace: given twice"),
        ("redis://:secret@127.0.0.1:6390/0?cluster=maybe", "cluster: must be one of"),
    ]:
        with pytest.raises(ValueError, match=message) as caught:
            txc_async.limiter_from_url(url)
        assert "secret" not in str(caught.value)
        # The command line checks a URL the same way before anything is made.
        with pytest.raises(ValueError, match=message):
            check_limiter_url(url)


@pytest.mark.parametrize("target", ["/dev/stdout", "| head -n 3"])
async def test_dev_stdout_streams_and_a_reader_that_leaves_early_is_no_failure(
    tmp_path: Path, target: str
) -> None:
    # Through head: 100 accounts x 30 days, far more than a pipe buffers, so writes fail once
    # head has left.
    accounts = 15 if target == "/dev/stdout" else 100
    async with Sandbox(mining_accounts=accounts, rewards_days=30, enforce_limits=False) as box:
        out = "/dev/stdout" if target == "/dev/stdout" else "-"
        pipe = target if target.startswith("|") else "| cat"
        process = await asyncio.create_subprocess_shell(
            f"{sys.executable} -m txc_async backfill-rewards --start 2024-01-01 "
            f"--end 2024-01-30 --out {out} {pipe}; echo \"status ${{PIPESTATUS[0]}}\" >&2",
            executable="/bin/bash",
            env=os.environ | {"TXC_BASE_URL": box.url, "TXC_API_KEY": box.api_key,
                              "TXC_API_SECRET": box.api_secret},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=tmp_path,
        )
        stdout, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode == 0, err
    lines = stdout.decode().splitlines()
    assert len(lines) == (3 if "head" in target else 450)
    assert all(json.loads(line)["miningAccountName"] for line in lines)
    assert "Traceback" not in err.decode() and "Exception" not in err.decode()
    assert "status 0" in err.decode()
    assert os.listdir(tmp_path) == []
    assert "stdout.progress" not in os.listdir("/dev")


async def test_a_file_from_the_earlier_state_format_is_resumed_and_extended(
    tmp_path: Path,
) -> None:
    out = tmp_path / "rewards.jsonl"
    state = tmp_path / "rewards.jsonl.progress"
    async with (
        Sandbox(mining_accounts=10, rewards_days=60, enforce_limits=False) as box,
        _client(box) as client,
    ):
        await backfill_to_file(client, start=START, end=START + 30 * DAY - 1, path=out)
        complete = out.read_bytes()
        # The earlier format: no version, shard or extensions; finished jobs without counts.
        jobs = [line.split()[0] for line in state.read_bytes().splitlines()[1:]]
        header = {"start": START, "end": START + 30 * DAY - 1, "accounts": [],
                  "slice_seconds": 7 * DAY, "format": "jsonl"}
        state.write_bytes(json.dumps(header).encode() + b"\n" + b"\n".join(jobs) + b"\n")
        again = await backfill_to_file(client, start=START, end=START + 30 * DAY - 1,
                                       path=out)
        assert again.complete_already and out.read_bytes() == complete
        longer = await backfill_to_file(client, start=START, end=START + 40 * DAY - 1,
                                        path=out)
        assert longer.records_written == 100 and longer.records_before == 300
    assert out.read_bytes().startswith(complete)
    assert sorted(_rows(out, "jsonl")) == sorted(
        (name, START + d * DAY) for name in box.mining_account_names for d in range(40))


@pytest.mark.parametrize("how", ["iter_mining_rewards", "backfill_mining_rewards"])
async def test_todays_bookings_behind_the_walk_come_back_too(how: str) -> None:
    # A range ending now: the server keeps booking today's rewards (dated 00:00 today) while the
    # walk has already passed today; the walk reads the newest dates again at its end.
    today = int(time.time()) // DAY * DAY
    first = today - 59 * DAY
    async with Sandbox(mining_accounts=25, rewards_start=first, rewards_days=60,
                       enforce_limits=False) as box:
        end = int(time.time())
        before = {_key(r) for r in _everything(box, first, end)}
        names = box.mining_account_names
        _Bookings(box, lambda n: [(f"{names[n % 25]}", today)] if n <= 40 else [])
        async with _client(box) as client:
            if how == "iter_mining_rewards":
                got = [r async for r in client.iter_mining_rewards(start=first)]
            else:
                got = [r async for r in txc_async.backfill_mining_rewards(
                    client, start=first, end=end, concurrency=4)]
        # What was booked while the walk ran (reading everything below books one more).
        booked_today = {_key(b.record) for b in box.rewards.booked}
        after = {_key(r) for r in _everything(box, first, end)}
    keys = [(r.mining_account_name, r.date, f"{r.total_reward}", f"{r.reward}", f"{r.fee}")
            for r in got]
    assert len(booked_today) >= 10
    assert len(keys) == len(set(keys)), "a record came back twice"
    assert before <= set(keys), "a record of the range was missed"
    assert booked_today <= set(keys), "a reward booked today during the walk was missed"
    assert set(keys) <= after


def _content(record: Any) -> tuple[Any, ...]:
    """A reward's identity and every field it holds, amounts compared by value (Parquet spells
    them its own way): a row written wrong, not only a row missing, differs."""
    from txc_async._backfill.walk import fixed_fields

    def amount(text: str) -> str:
        return str(Decimal(text).normalize()) if text else ""

    return (fixed_fields(record), amount(record.total_reward), amount(record.reward),
            amount(record.fee), amount(record.fpps_rate), record.hash_rate, record.status,
            record.payout_destination, record.payout_transaction_hash, record.payout_address,
            record.payout_time)


def _digests_of_output(out: Path, fmt: str) -> list[tuple[Any, ...]]:
    from txc_async._export.parquet import read_part_rows
    from txc_async._export.rowfile import read_rows

    rows = read_part_rows(out) if fmt == "parquet" else read_rows(out, fmt)  # type: ignore[arg-type]
    return [_content(r) for r in rows]


def _digests_of(records: list[dict[str, Any]]) -> set[tuple[Any, ...]]:
    import msgspec

    from txc_async._backfill.walk import WireReward

    return {_content(msgspec.convert(r, WireReward)) for r in records}


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet", "stream"])
async def test_outputs_hold_rewards_booked_behind_the_walk_once(tmp_path: Path, fmt: str) -> None:
    from txc_async._export.run import backfill_to_stream

    out = tmp_path / ("rewards" if fmt in ("parquet", "stream") else f"rewards.{fmt}")
    async with Sandbox(mining_accounts=20, rewards_days=50, enforce_limits=False) as box:
        end = START + 50 * DAY - 1
        names = box.mining_account_names
        # Corrections of days the walks may already have passed, while they run.
        _Bookings(box, lambda n: [
            (names[n % 20], START + (n * 7 % 50) * DAY), (names[(n * 3) % 20], START + 49 * DAY),
        ] if n <= 10 else [])
        async with _client(box) as client:
            if fmt == "stream":
                with out.open("wb") as stream:
                    summary = await backfill_to_stream(client, start=START, end=end,
                                                       stream=stream, concurrency=4)
                got = [record_digest_of_line(line) for line in out.read_bytes().splitlines()]
            else:
                summary = await backfill_to_file(client, start=START, end=end, path=out,
                                                 fmt=fmt, concurrency=4)  # type: ignore[arg-type]
                got = _digests_of_output(out, fmt)
                again = await backfill_to_file(client, start=START, end=end, path=out,
                                               fmt=fmt)  # type: ignore[arg-type]
                assert again.complete_already and again.requests == 1
        everything = _digests_of(_everything(box, START, end))
    assert len(box.rewards.booked) == 20
    assert len(got) == len(set(got)) == summary.records_written, "a row was written twice"
    assert set(got) == everything, "a reward of the range is missing"


def record_digest_of_line(line: bytes) -> tuple[Any, ...]:
    import msgspec

    from txc_async._backfill.walk import WireReward

    return _content(msgspec.json.decode(line, type=WireReward))


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
async def test_a_run_stopped_before_its_check_checks_on_the_rerun(tmp_path: Path, fmt: str) -> None:
    out = tmp_path / ("rewards" if fmt == "parquet" else "rewards.jsonl")
    state = out / "_progress" if fmt == "parquet" else out.with_name("rewards.jsonl.progress")
    async with Sandbox(mining_accounts=10, rewards_days=30, enforce_limits=False) as box:
        end = START + 30 * DAY - 1
        async with _client(box) as client:
            first = await backfill_to_file(client, start=START, end=end, path=out,
                                           fmt=fmt)  # type: ignore[arg-type]
            assert first.records_written == 300
            # As if the run had stopped after its last piece, before its check finished.
            lines = state.read_bytes().splitlines(keepends=True)
            assert lines[-1] == b"checked\n"
            state.write_bytes(b"".join(lines[:-1]))
            box.rewards.book(box.mining_account_names[3], START + 12 * DAY)
            second = await backfill_to_file(client, start=START, end=end, path=out,
                                            fmt=fmt)  # type: ignore[arg-type]
            assert second.records_written == 1 and not second.complete_already
            assert second.accounts == 10  # the accounts the output holds
            third = await backfill_to_file(client, start=START, end=end, path=out,
                                           fmt=fmt)  # type: ignore[arg-type]
            assert third.complete_already and third.requests == 1
        everything = _digests_of(_everything(box, START, end))
    got = _digests_of_output(out, fmt)
    assert len(got) == len(set(got)) == 301 and set(got) == everything


async def test_the_command_line_returns_rewards_booked_behind_its_walk(tmp_path: Path) -> None:
    out = tmp_path / "rewards.jsonl"
    async with Sandbox(mining_accounts=20, rewards_days=40, enforce_limits=False) as box:
        names = box.mining_account_names
        _Bookings(box, lambda n: [(names[n % 20], START + (n * 11 % 40) * DAY)] if n <= 8 else [])
        code, _, err = await _cli(box, "backfill-rewards", "--start", "2024-01-01",
                                  "--end", "2024-02-09", "--out", str(out))
        assert code == 0, err
        everything = _digests_of(_everything(box, START, START + 40 * DAY - 1))
    got = _digests_of_output(out, "jsonl")
    assert len(box.rewards.booked) == 8
    assert len(got) == len(set(got)) == 808 and set(got) == everything


async def test_a_parquet_state_without_row_counts_is_resumed_without_duplicates(
    tmp_path: Path,
) -> None:
    out = tmp_path / "rewards"
    state = out / "_progress"
    async with Sandbox(mining_accounts=10, rewards_days=30, enforce_limits=False) as box:
        end = START + 30 * DAY - 1
        async with _client(box) as client:
            await backfill_to_file(client, start=START, end=end, path=out, fmt="parquet")
            # Pieces listed as finished without their row counts, one piece not finished, no
            # record of the check.
            head, *pieces = state.read_bytes().splitlines()
            counted = [line for line in pieces if line != b"checked"]
            state.write_bytes(b"\n".join([head, *(p.split()[0] for p in counted[1:])]) + b"\n")
            box.rewards.book(box.mining_account_names[2], START + 20 * DAY)
            await backfill_to_file(client, start=START, end=end, path=out, fmt="parquet")
        everything = _digests_of(_everything(box, START, end))
    got = _digests_of_output(out, "parquet")
    assert len(got) == len(set(got)) == 301 and set(got) == everything


@pytest.mark.parametrize("how", ["iter_mining_rewards", "backfill_mining_rewards", "jsonl"])
async def test_a_server_that_caps_its_pages_is_walked_to_the_end(how: str, tmp_path: Path) -> None:
    # The server gives at most 30 records a page whatever the limit asks (and says so in the
    # limit it echoes); 25 accounts over 60 days are 1,500 records, 50 capped pages, with
    # rewards booked while the walk runs.
    async with Sandbox(mining_accounts=25, rewards_days=60, enforce_limits=False,
                       max_page=30) as box:
        end = START + 60 * DAY - 1
        before = {_key(r) for r in _everything(box, START, end)}
        _Bookings(box, _during_the_walk(box.mining_account_names))
        if how == "jsonl":
            async with _client(box) as client:
                await backfill_to_file(client, start=START, end=end, path=tmp_path / "r.jsonl")
            rows = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
            keys = [(r["miningAccountName"], r["date"], r["totalReward"], r["reward"], r["fee"])
                    for r in rows]
        else:
            keys = await _fetch(box, how, START, end)
        after = {_key(r) for r in _everything(box, START, end)}
    assert len(before) == 1500
    assert len(keys) == len(set(keys)), "a record came back twice"
    assert set(keys) == after, f"{len(after - set(keys))} of {len(after)} records missed"


async def test_a_server_that_caps_its_pages_gives_every_investment() -> None:
    async with Sandbox(enforce_limits=False) as box:
        async with _client(box) as client:
            whole = [i async for i in client.iter_investments_history()]
        box.max_page = 7
        async with _client(box) as client:
            capped = [i async for i in client.iter_investments_history()]
    assert len(whole) > 7 and capped == whole


@pytest.mark.parametrize(("accounts", "ends"), [(10_029, "whole"), (10_031, "refused")])
async def test_one_date_over_capped_pages_is_read_to_the_deepest_offset(
    accounts: int, ends: str
) -> None:
    # Every reward on one date: the walk pages through the date itself, 30 a page, down to the
    # API's deepest offset (10,000), where the last 29 are one page; 31 are one too many.
    box = Sandbox(mining_accounts=accounts, rewards_days=1, enforce_limits=False, max_page=30)
    async with box, _client(box) as client:
        walk = client.iter_mining_rewards(start=START, end=START + DAY - 1)
        if ends == "refused":
            with pytest.raises(txc_async.TxcError, match="more than 10030 rewards share"):
                async for _ in walk:
                    pass
            return
        got = [r async for r in walk]
    keys = {(r.mining_account_name, r.date) for r in got}
    assert len(got) == len(keys) == accounts
