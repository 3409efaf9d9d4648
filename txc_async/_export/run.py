"""Backfills into JSONL, CSV or a Parquet dataset, or streamed to a pipe: the entry points, each
the backfill engine with one of the export's sinks.

A file output is resumable and extendable: a rerun keeps every row, repairs what an interruption
cut, fetches only what is missing, never writes a row twice, and a later ``end`` appends only the
new days (see ``resume``). Every run, a rerun of a finished output too, ends with the check over
the whole range against the rows the output holds, so a reward booked on any day since an
earlier run read it is found (one request per 10,000 rows, plus a read of where it was booked).
It settles: a rerun also reads again the days whose rows held pending rewards, and replaces
those rows atomically (see ``settle``). One run at a time holds an output
(an OS lock). Rows are written from the wire's strings: no ``Decimal`` is built and no amount
goes through a float.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from .._backfill.engine import run_backfill
from .._backfill.ledger import RewardLedger
from .._backfill.mining_rewards import check_backfill_args
from .._backfill.plan import RewardJob, RewardPlan
from .._backfill.walk import WIRE_RECORDS, RewardsClient, RewardsCursor, WireReward
from .._errors import InvalidParameterError
from .lock import OutputLock, OutputLockedError
from .parquet import PartWriter, load_pyarrow
from .report import BackfillProgress, BackfillSummary, format_moment
from .resume import Prepared, output_ledger, prepare
from .rowfile import OutputFileError, RowFile
from .settle import Replacement, day_runs, read_again, replace_output_rows
from .sinks import DAY, PENDING, ExportSink, FileSink, PieceWriter, StreamSink
from .state import (
    FORMATS,
    Format,
    OutputState,
    open_to_append,
    output_paths,
    read_state,
    write_state,
)

__all__ = [
    "FORMATS",
    "BackfillProgress",
    "BackfillSummary",
    "Format",
    "OutputFileError",
    "OutputLockedError",
    "backfill_to_file",
    "backfill_to_stream",
    "format_moment",
]

_T = TypeVar("_T")


def _check(fmt: object, shard: object) -> tuple[Format, tuple[int, int]]:
    if fmt not in FORMATS:
        raise InvalidParameterError("fmt", "must be 'jsonl', 'csv' or 'parquet'")
    if (
        not isinstance(shard, tuple) or len(shard) != 2
        or not all(isinstance(n, int) and not isinstance(n, bool) for n in shard)
        or not 1 <= shard[0] <= shard[1]
    ):
        raise InvalidParameterError("shard", "must be (i, n) with 1 <= i <= n")
    return fmt, (shard[0], shard[1])


def _wanted(
    client: object, start: object, end: object, accounts: object, concurrency: object,
    fmt: object, shard: object,
) -> tuple[RewardPlan, Format, int]:
    """An export's arguments checked: the plan they ask for, the format and the workers."""
    lo, hi, names, workers = check_backfill_args(client, start, end, accounts, concurrency)
    fmt, shard = _check(fmt, shard)
    return RewardPlan(lo, hi, tuple(names or ()), shard=shard), fmt, workers


async def backfill_to_file(
    client: RewardsClient,
    *,
    start: int,
    end: int,
    path: Path,
    fmt: Format = "jsonl",
    accounts: Sequence[str] | None = None,
    concurrency: int = 8,
    shard: tuple[int, int] = (1, 1),
    on_progress: Callable[[BackfillProgress], None] | None = None,
) -> BackfillSummary:
    """Backfill rewards of ``start..end`` into ``path`` (a directory for Parquet), resuming or
    extending what an earlier run left. ``shard=(i, n)`` takes the ``i``-th of ``n`` fixed shares
    of the pieces, for ``n`` machines sharing one range."""
    wanted, fmt, concurrency = _wanted(client, start, end, accounts, concurrency, fmt, shard)
    if fmt == "parquet":
        load_pyarrow()
        _make_directory(path)
    state_path, lock_path = output_paths(path, fmt)
    with OutputLock(lock_path, path):
        # Reading what an earlier run left may take a while for a large output: off the loop.
        prepared = await _in_thread_to_its_end(prepare, path, state_path, fmt, wanted)
        plan = prepared.plan
        mine = [job for job in plan.jobs() if plan.mine(job)]
        summary, written = await _to_file(
            client, path, fmt, state_path, prepared, mine, concurrency, on_progress
        )
        return await _settle(client, path, fmt, state_path, prepared, mine, concurrency,
                             summary, written, on_progress)


def _make_directory(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)


async def _in_thread_to_its_end(func: Callable[..., _T], *args: Any) -> _T:
    """``func(*args)`` in a worker thread. A thread cannot be stopped: a cancellation waits for
    it to end before it goes on, so that the output's lock is not let go while the thread still
    reads or writes the output."""
    work = asyncio.ensure_future(asyncio.to_thread(func, *args))
    try:
        return await asyncio.shield(work)
    except asyncio.CancelledError:
        # However often the caller is cancelled meanwhile: the thread ends first.
        while not work.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait((work,))
        if not work.cancelled():
            work.exception()  # the cancellation goes on; what the thread raised is dropped
        raise


async def _to_file(
    client: RewardsClient, path: Path, fmt: Format, state_path: Path, prepared: Prepared,
    mine: Sequence[RewardJob], concurrency: int,
    on_progress: Callable[[BackfillProgress], None] | None,
) -> tuple[BackfillSummary, RunPending]:
    """The backfill of the jobs not done yet into the output, then the check over every job
    (a finished output is only checked); its summary, and what it wrote pending. The days the
    output's rows hold pending rewards on join ``prepared.pending``, for the state and for
    `_settle`."""
    began = time.time()
    pending = [job for job in mine if job.index not in prepared.done]
    progress = BackfillProgress(
        records_before=prepared.rows_before, jobs_total=len(mine),
        jobs_done=len(mine) - len(pending),
    )
    # What the output holds for the check: the rows of earlier runs, read back, then every page
    # of this one as it is written.
    read = await _in_thread_to_its_end(output_ledger, path, fmt, prepared.plan, mine)
    for job, days in read.pending.items():
        prepared.pending[job] = prepared.pending.get(job, frozenset()) | days
    prepared.accounts |= read.accounts
    saved = read_state(state_path)
    writer: PieceWriter = PartWriter(path) if fmt == "parquet" else RowFile(path, fmt)
    try:
        with open_to_append(state_path) as state:
            sink = FileSink(writer, state, prepared.done, prepared.job_rows, progress,
                            on_progress, prepared.accounts, prepared.pending,
                            checked_before=saved is not None and saved.checked)
            requests, elapsed = await _export(
                client, pending, sink, concurrency, read.ledger, prepared.cursors
            )
    finally:
        writer.close()
    sink.close()
    return BackfillSummary(
        path=path,
        records_written=progress.records,
        records_before=prepared.rows_before,
        jobs_total=len(mine),
        jobs_resumed=len(prepared.cursors),
        requests=requests,
        elapsed=elapsed,
        accounts=len(sink.accounts),
        repaired=prepared.repaired,
        extended_from=prepared.extended_from,
        checked_as_of=began,
        jobs_walked=len(pending),
    ), RunPending(sink.pending_rows, sink.settled_in_run)


async def _settle(
    client: RewardsClient, path: Path, fmt: Format, state_path: Path, prepared: Prepared,
    mine: Sequence[RewardJob], concurrency: int, summary: BackfillSummary,
    written: RunPending, on_progress: Callable[[BackfillProgress], None] | None = None,
) -> BackfillSummary:
    """Read again the days that held pending rewards when the run began (this run's own pending
    rows are left for the next), replace their rows, and those of this run's rewards its check
    read again settled, then say in the state what is still pending. The output is replaced
    before the state: a crash between the two leaves the old days named, read again by the
    next run, and a row count the next run repairs."""
    done = read_state(state_path)
    days = {
        job.index: prepared.pending[job.index] for job in mine
        if job.index in prepared.pending and done is not None and job.index in done.done
    }
    runs = [run for job in mine if job.index in days for run in day_runs(job, days[job.index])]
    # A day read again whole is read later than the check read it: that reading wins.
    settled = {
        job: later for job, rows in written.settled.items()
        if (later := [r for r in rows if r.date // DAY not in days.get(job, ())])
    }
    if done is None or not (runs or settled):
        still = sum(written.rows.values())
        return dataclasses.replace(summary, still_pending=still, upgraded=prepared.upgraded)
    requests_before = client.stats.requests
    began = time.monotonic()
    fresh = (
        await read_again(client._rewards_page, runs, concurrency, on_progress) if runs else {}
    )
    jobs = days.keys() | settled.keys()
    replacement = Replacement(
        {job: [*fresh.get(job, []), *settled.get(job, [])] for job in jobs},
        {
            job: days.get(job, frozenset()) | {r.date // DAY for r in settled.get(job, [])}
            for job in jobs
        },
    )
    report = await _in_thread_to_its_end(
        replace_output_rows, path, fmt, prepared.plan, replacement
    )
    # Only the days read again whole leave the state's pending days (a day where the check
    # settled some rewards may hold others still pending).
    await _in_thread_to_its_end(_settled_state, state_path, done, days, fresh, report.added)
    kept = sum(n for (job, day), n in written.rows.items() if day not in days.get(job, ()))
    return dataclasses.replace(
        summary, settled=dict(report.settled), still_pending=kept + report.still_pending,
        read_again=report.read_again, upgraded=prepared.upgraded,
        requests=summary.requests + client.stats.requests - requests_before,
        elapsed=summary.elapsed + time.monotonic() - began,
        records_written=summary.records_written + sum(report.added.values()),
    )


@dataclass
class RunPending:
    """What a run wrote pending: its pending rows per ``(job, day)``, and the rewards among them
    that its check read again settled, per job (their rows are replaced at the run's end)."""

    rows: dict[tuple[int, int], int] = field(default_factory=dict)
    settled: dict[int, list[WireReward]] = field(default_factory=dict)


def _settled_state(
    state_path: Path, state: OutputState, days: dict[int, frozenset[int]],
    fresh: dict[int, list[WireReward]], added: dict[int, int],
) -> None:
    """The state once the days read again are replaced: each job's pending days less those read
    again, plus those whose rewards are still pending; its row count plus the rows added."""
    for job, read in days.items():
        still = {r.date // DAY for r in fresh.get(job, []) if r.status == PENDING}
        left = (set(state.pending.get(job, ())) - read) | still
        state.pending[job] = frozenset(left)
        rows = state.done.get(job)
        if rows is not None:
            state.done[job] = rows + added.get(job, 0)
    state.pending = {job: days for job, days in state.pending.items() if days}
    write_state(state_path, state)


async def _export(
    client: RewardsClient, jobs: Sequence[RewardJob], sink: ExportSink, concurrency: int,
    ledger: RewardLedger[WireReward] | None = None,
    cursors: Mapping[int, RewardsCursor[WireReward]] | None = None,
) -> tuple[int, float]:
    """The engine run into ``sink`` to its end; the requests it sent and the seconds it took."""
    requests_before = client.stats.requests
    began = time.monotonic()
    async for _batch in run_backfill(
        client._rewards_page, jobs, sink, records=WIRE_RECORDS, concurrency=concurrency,
        ledger=ledger, cursors=cursors,
    ):
        pass
    return client.stats.requests - requests_before, time.monotonic() - began


async def backfill_to_stream(
    client: RewardsClient,
    *,
    start: int,
    end: int,
    stream: BinaryIO,
    accounts: Sequence[str] | None = None,
    concurrency: int = 8,
    shard: tuple[int, int] = (1, 1),
    on_progress: Callable[[BackfillProgress], None] | None = None,
) -> BackfillSummary:
    """Stream the rewards of ``start..end`` to ``stream`` as JSON lines, page by page (no state,
    no resume): for pipelines such as ``| jq`` or ``| duckdb``."""
    plan, _, concurrency = _wanted(client, start, end, accounts, concurrency, "jsonl", shard)
    began = time.time()
    mine = [job for job in plan.jobs() if plan.mine(job)]
    progress = BackfillProgress(jobs_total=len(mine))
    sink = StreamSink(stream, progress, on_progress)
    requests, elapsed = await _export(client, mine, sink, concurrency)
    sink.close()
    return BackfillSummary(
        None, progress.records, 0, len(mine), 0, requests, elapsed, len(sink.accounts),
        checked_as_of=began, jobs_walked=len(mine),
    )
