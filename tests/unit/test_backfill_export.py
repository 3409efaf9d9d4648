"""The concurrent backfill and the resumable file export, against a mocked reward service."""

from __future__ import annotations

import asyncio
import csv
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from aioresponses import aioresponses

import txc_async
from txc_async import InvalidParameterError
from txc_async._backfill.plan import plan_reward_jobs
from txc_async._export.run import OutputFileError, backfill_to_file

from ..support.common import make_rewards, requests_to, serve_rewards

REWARDS_PATH = "/api/v4/mining/rewards"

START = 1704067200  # 2024-01-01
DAY = 86400


def keys(rows: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return [(r["miningAccountName"], r["date"]) for r in rows]


def test_jobs_are_disjoint_and_cover_the_range() -> None:
    for accounts in (None, ["a", "b", "c"]):
        jobs = plan_reward_jobs(START, START + 100 * DAY - 1, accounts, 7 * DAY)
        assert [j.index for j in jobs] == list(range(len(jobs)))
        for target in accounts or [None]:
            spans = sorted((j.start, j.end) for j in jobs if j.account == target)
            assert spans[0][0] == START and spans[-1][1] == START + 100 * DAY - 1
            assert all(a[1] + 1 == b[0] for a, b in itertools.pairwise(spans))


async def test_backfill_returns_every_record_exactly_once(
    mocked: aioresponses, client: txc_async.Client
) -> None:
    rows = make_rewards(accounts=30, days=120)
    serve_rewards(mocked, rows)
    got = [
        (r.mining_account_name, r.date)
        async for r in txc_async.backfill_mining_rewards(
            client, start=START, end=START + 120 * DAY - 1, concurrency=4
        )
    ]
    assert sorted(got) == sorted(keys(rows))
    assert len(got) == len(set(got))


async def test_backfill_per_account_and_across_the_offset_bound(
    mocked: aioresponses, client: txc_async.Client
) -> None:
    # One slice of 7 days holding 2 * 7 * 800 = 11,200 records: past the 10,100 an offset reaches.
    many = [
        {
            "miningAccountName": account, "totalReward": "0.1", "reward": "0.1", "fee": "0",
            "fppsRate": "0.1", "hashRate": "1 TH/s", "date": START + d * DAY + k,
        }
        for account in ("acc_000", "acc_001")
        for d in range(7)
        for k in range(800)
    ]
    serve_rewards(mocked, many)
    got = [
        (r.mining_account_name, r.date)
        async for r in txc_async.backfill_mining_rewards(
            client, start=START, end=START + 7 * DAY - 1, concurrency=3
        )
    ]
    assert len(got) == len(set(got)) == len(many) == 11_200
    named = [
        r.mining_account_name
        async for r in txc_async.backfill_mining_rewards(
            client, start=START, end=START + 7 * DAY - 1, accounts=["acc_000"], concurrency=2
        )
    ]
    assert named == ["acc_000"] * 5600


async def test_backfill_streams_with_bounded_buffering(
    mocked: aioresponses, client: txc_async.Client
) -> None:
    serve_rewards(mocked, make_rewards(accounts=50, days=200))
    stream = txc_async.backfill_mining_rewards(
        client, start=START, end=START + 200 * DAY - 1, concurrency=2
    )
    first = await anext(stream)
    assert first.date >= START
    await asyncio.sleep(0.2)  # workers run ahead only until the queue is full
    sent = len(requests_to(mocked, REWARDS_PATH))
    assert sent <= 2 * 2 + 2 + 1, sent  # queue of 2*concurrency pages + one in hand per worker
    await stream.aclose()


async def test_backfill_checks_its_arguments(client: txc_async.Client) -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"start": 10, "end": 5}, "start"),
        ({"start": None, "end": 5}, "start"),
        ({"start": 1, "end": 5, "concurrency": 0}, "concurrency"),
        ({"start": 1, "end": 5, "accounts": "acc"}, "accounts"),
        ({"start": 1, "end": 5, "accounts": ["bad\nname"]}, "accounts"),
    ]
    for kwargs, parameter in cases:
        with pytest.raises(InvalidParameterError) as caught:
            async for _ in txc_async.backfill_mining_rewards(client, **kwargs):
                pass
        assert caught.value.parameter == parameter
        # Named like every operation: the attribute, and the message's first word.
        assert caught.value.operation == "backfill_mining_rewards"
        assert str(caught.value).startswith(f"backfill_mining_rewards: {parameter}:")


async def test_backfill_error_stops_the_workers(
    mocked: aioresponses, client: txc_async.Client
) -> None:
    mocked.post(
        "https://api.example.test" + REWARDS_PATH, status=403, repeat=True,
        payload={"code": 0, "message": "No access", "errors": {}},
    )
    with pytest.raises(txc_async.AuthenticationError) as caught:
        async for _ in txc_async.backfill_mining_rewards(
            client, start=START, end=START + 100 * DAY, concurrency=4
        ):
            pass
    # An error of a request names the backfill, as the page iterators name themselves.
    assert caught.value.operation == "backfill_mining_rewards"


# -- the resumable file ---------------------------------------------------------------------------


class Interrupt(Exception):
    pass


def _stop_after(pages: int) -> Any:
    seen = {"n": 0}

    def on_progress(progress: Any) -> None:
        seen["n"] += 1
        if seen["n"] >= pages:
            raise Interrupt

    return on_progress


def _read(path: Path, fmt: str) -> list[tuple[str, int]]:
    if fmt == "jsonl":
        return [
            (row["miningAccountName"], row["date"])
            for row in map(json.loads, path.read_text().splitlines())
        ]
    with path.open(newline="") as handle:
        return [(row["miningAccountName"], int(row["date"])) for row in csv.DictReader(handle)]


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
@pytest.mark.parametrize("accounts", [None, ["acc_001", "acc_003"]])
async def test_interrupted_file_backfill_resumes_exactly_once(
    mocked: aioresponses, client: txc_async.Client, tmp_path: Path, fmt: str,
    accounts: list[str] | None,
) -> None:
    rows = make_rewards(accounts=5, days=400)
    serve_rewards(mocked, rows)
    expected = sorted(k for k in keys(rows) if accounts is None or k[0] in accounts)
    path = tmp_path / f"out.{fmt}"
    args: dict[str, Any] = {
        "start": START, "end": START + 400 * DAY - 1, "path": path, "fmt": fmt,
        "accounts": accounts, "concurrency": 3,
    }
    with pytest.raises(Interrupt):
        await backfill_to_file(client, **args, on_progress=_stop_after(4))
    partial = _read(path, fmt)
    assert 0 < len(partial) < len(expected)
    # A kill in the middle of a write leaves a torn line.
    with path.open("ab") as handle:
        handle.write(b'{"miningAccountName":"acc_0' if fmt == "jsonl" else b"acc_004,0.1")
    with pytest.raises(Interrupt):
        await backfill_to_file(client, **args, on_progress=_stop_after(3))
    requests_before = len(requests_to(mocked, REWARDS_PATH))
    summary = await backfill_to_file(client, **args)
    got = _read(path, fmt)
    assert sorted(got) == expected
    assert len(got) == len(set(got))
    assert got[: len(partial)] == partial, "rows already written are kept as they are"
    assert summary.records_before + summary.records_written == len(expected)
    assert len(requests_to(mocked, REWARDS_PATH)) > requests_before

    # A finished file: only checked against the server (one request per account filter: at
    # most 10,000 rows each), and nothing changes when the server holds nothing new.
    before = path.read_bytes()
    state = path.with_name(path.name + ".progress").read_bytes()
    requests_done = len(requests_to(mocked, REWARDS_PATH))
    again = await backfill_to_file(client, **args)
    assert again.complete_already and again.records_written == 0
    assert again.requests == (1 if accounts is None else len(accounts))
    assert again.records_before == len(expected)
    assert path.read_bytes() == before
    assert path.with_name(path.name + ".progress").read_bytes() == state
    assert len(requests_to(mocked, REWARDS_PATH)) == requests_done + again.requests


async def test_a_named_account_given_twice_is_fetched_once(
    mocked: aioresponses, client: txc_async.Client, tmp_path: Path
) -> None:
    serve_rewards(mocked, make_rewards(accounts=3, days=20))
    path = tmp_path / "out.jsonl"
    await backfill_to_file(client, start=START, end=START + 20 * DAY - 1, path=path,
                           accounts=["acc_001", "acc_001"])
    got = _read(path, "jsonl")
    assert len(got) == len(set(got)) == 20


async def test_resume_without_progress_file_uses_the_rows(
    mocked: aioresponses, client: txc_async.Client, tmp_path: Path
) -> None:
    rows = make_rewards(accounts=4, days=60)
    serve_rewards(mocked, rows)
    path = tmp_path / "out.jsonl"
    args: dict[str, Any] = {"start": START, "end": START + 60 * DAY - 1, "path": path}
    with pytest.raises(Interrupt):
        await backfill_to_file(client, **args, concurrency=2, on_progress=_stop_after(2))
    path.with_name("out.jsonl.progress").unlink()
    await backfill_to_file(client, **args, concurrency=2)
    got = _read(path, "jsonl")
    assert sorted(got) == sorted(keys(rows)) and len(got) == len(set(got))


async def test_a_file_of_another_backfill_is_refused(
    mocked: aioresponses, client: txc_async.Client, tmp_path: Path
) -> None:
    serve_rewards(mocked, make_rewards(accounts=2, days=10))
    path = tmp_path / "out.jsonl"
    await backfill_to_file(client, start=START, end=START + 10 * DAY - 1, path=path)
    before = path.read_bytes()
    with pytest.raises(OutputFileError, match=r"already reaches --end 2024-01-10; rerun with "
                       r"--end 2024-01-10 or later"):
        await backfill_to_file(client, start=START, end=START + 5 * DAY - 1, path=path)
    with pytest.raises(OutputFileError, match=r"holds rewards from --start 2024-01-01; rerun "
                       r"with --start 2024-01-01, or choose another --out"):
        await backfill_to_file(client, start=START + DAY, end=START + 10 * DAY - 1, path=path)
    with pytest.raises(OutputFileError, match=r"holds every account; rerun with no --account"):
        await backfill_to_file(
            client, start=START, end=START + 10 * DAY - 1, path=path, accounts=["acc_1"]
        )
    with pytest.raises(OutputFileError, match=r"holds --format jsonl; rerun with --format jsonl"):
        await backfill_to_file(client, start=START, end=START + 10 * DAY - 1, path=path,
                               fmt="csv")
    assert path.read_bytes() == before


def test_every_record_maps_to_the_job_whose_range_holds_it() -> None:
    from txc_async._backfill.plan import RewardPlan
    from txc_async._backfill.walk import WireReward

    for accounts in ((), ("a", "b", "c")):
        plan = RewardPlan(START, START + 100 * DAY - 1, accounts, 7 * DAY,
                          extended_from=(START + 30 * DAY - 1, START + 31 * DAY - 1),
                          shard=(2, 3))
        jobs = plan.jobs()
        assert [j.index for j in jobs] == list(range(len(jobs)))
        for job in jobs:
            for date in (job.start, job.end, (job.start + job.end) // 2):
                record = WireReward(job.account or "x", "1", "1", "0", "1", "1 TH/s", date)
                assert plan.job_of(record) == job.index
        mine = [j.index for j in jobs if plan.mine(j)]
        assert mine == list(range(1, len(jobs), 3))
        assert plan.job_of(WireReward("x", "1", "1", "0", "1", "", START - 1)) is None


@pytest.mark.parametrize(("name", "content", "fmt"), [
    ("sales.csv", b"region,amount\nnorth,100\nsouth,250", "csv"),
    ("report.jsonl", b'{"miningAccountName":"a","totalReward":"1","reward":"1","fee":"0",'
                     b'"fppsRate":"1","hashRate":"h","date":1704067200}\n{"event":"login"}\n'
                     b'{"event":"lo', "jsonl"),
    ("notes.txt", b"remember to renew the certificate soon", "jsonl"),
    ("notes.csv", b"remember to renew the certificate soon", "csv"),
    ("binary.csv", b"miningAccountName,totalReward\n\xff\xfe\x00", "csv"),
])
async def test_a_file_that_is_not_a_reward_output_is_refused_and_left_as_it_is(
    mocked: aioresponses, client: txc_async.Client, tmp_path: Path,
    name: str, content: bytes, fmt: Any,
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(OutputFileError, match="not"):
        await backfill_to_file(client, start=START, end=START + 10 * DAY - 1, path=path,
                               fmt=fmt)
    assert path.read_bytes() == content
    assert not path.with_name(name + ".progress").exists()
    assert not requests_to(mocked, REWARDS_PATH)


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
async def test_an_output_cut_mid_line_without_its_progress_file_is_repaired(
    mocked: aioresponses, client: txc_async.Client, tmp_path: Path, fmt: Any
) -> None:
    rows = make_rewards(accounts=3, days=30)
    serve_rewards(mocked, rows)
    path = tmp_path / f"out.{fmt}"
    args: dict[str, Any] = {"start": START, "end": START + 30 * DAY - 1, "path": path,
                            "fmt": fmt}
    with pytest.raises(Interrupt):
        await backfill_to_file(client, **args, concurrency=2, on_progress=_stop_after(2))
    path.with_name(path.name + ".progress").unlink()
    with path.open("ab") as handle:
        handle.write(b'{"miningAccountName":"acc_0' if fmt == "jsonl" else b"acc_001,0.1")
    await backfill_to_file(client, **args, concurrency=2)
    got = _read(path, fmt)
    assert sorted(got) == sorted(keys(rows)) and len(got) == len(set(got))


@pytest.mark.parametrize("link", ["symbolic", "hard"])
async def test_a_run_through_another_name_of_the_same_output_is_refused(
    mocked: aioresponses, client: txc_async.Client, tmp_path: Path, link: str
) -> None:
    import os

    from txc_async._export.lock import OutputLock
    from txc_async._export.run import OutputLockedError
    from txc_async._export.state import output_paths

    serve_rewards(mocked, make_rewards(accounts=2, days=10))
    real = tmp_path / "out.jsonl"
    args: dict[str, Any] = {"start": START, "end": START + 10 * DAY - 1}
    await backfill_to_file(client, **args, path=real)
    other = tmp_path / "other.jsonl"
    if link == "symbolic":
        other.symlink_to(real)
    else:
        os.link(real, other)
    before = real.read_bytes()
    # A run writing it under its own name holds its lock meanwhile.
    with OutputLock(output_paths(real, "jsonl")[1], real), pytest.raises(
        OutputLockedError, match="is being written by"
    ):
        await backfill_to_file(client, **args, path=other)
    assert real.read_bytes() == before
    again = await backfill_to_file(client, **args, path=other)  # once it is free, it is done
    assert again.records_written == 0 and real.read_bytes() == before


@pytest.mark.parametrize(("call", "parameter"), [
    ({"accounts": []}, "accounts"),
    ({"client": "not a client"}, "client"),
])
async def test_backfill_arguments_are_refused_before_anything_is_sent(
    mocked: aioresponses, client: txc_async.Client, call: dict[str, Any], parameter: str
) -> None:
    args: dict[str, Any] = {"start": START, "end": START + 10 * DAY - 1, **call}
    target = args.pop("client", client)
    with pytest.raises(InvalidParameterError) as caught:
        async for _ in txc_async.backfill_mining_rewards(target, **args):
            pass
    assert caught.value.parameter == parameter
    assert not requests_to(mocked, REWARDS_PATH)


def test_a_new_output_is_locked_from_the_start_so_a_link_made_meanwhile_is_refused(
    tmp_path: Path,
) -> None:
    import os

    from txc_async._export.lock import OutputLock
    from txc_async._export.run import OutputLockedError

    new = tmp_path / "a.jsonl"
    with OutputLock(tmp_path / "a.jsonl.lock", new):
        assert new.exists()  # made empty, and locked, before the run writes it
        os.link(new, tmp_path / "b.jsonl")  # linked while the run writes
        with pytest.raises(OutputLockedError, match="through another name"):
            OutputLock(tmp_path / "b.jsonl.lock", tmp_path / "b.jsonl").acquire()


def test_the_lock_of_an_output_that_is_a_pipe_never_blocks(tmp_path: Path) -> None:
    import os
    import threading

    from txc_async._export.lock import OutputLock

    fifo = tmp_path / "rows.jsonl"
    os.mkfifo(fifo)
    took: list[bool] = []

    def lock() -> None:
        with OutputLock(tmp_path / "rows.jsonl.lock", fifo):
            took.append(True)

    # A reader waits on the pipe: opening it to read as well would block until a writer came.
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        worker = threading.Thread(target=lock, daemon=True)
        worker.start()
        worker.join(5.0)
        if worker.is_alive():  # unblock it before failing
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        assert took == [True]
    finally:
        os.close(reader)
