"""Backfills into JSONL, CSV or a Parquet dataset, or streamed to a pipe.

A file output is resumable and extendable: a rerun keeps every row, repairs what an interruption
cut, fetches only what is missing, never writes a row twice, and a later ``end`` appends only the
new days. One run at a time holds an output (an OS lock). Rows are written from the wire's
strings: no ``Decimal`` is built and no amount goes through a float.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, Literal, TypeVar

import msgspec

from .._errors import InvalidParameterError
from .._rewards.backfill import check_backfill_args
from .._rewards.engine import run_reward_jobs
from .._rewards.ledger import RewardLedger, check_rewards
from .._rewards.plan import RewardJob, RewardPlan
from .._rewards.walk import WIRE_RECORDS, RewardsClient, RewardsCursor, WireReward
from .lock import OutputLock, OutputLockedError
from .parquet import PartWriter, load_pyarrow, part_files, read_part_rows
from .rowfile import (
    CSV_COLUMNS,
    OutputFileError,
    RowFile,
    count_lines,
    cut_torn_tail,
    encode_jsonl,
    ends_whole,
    read_rows,
)

__all__ = [
    "BackfillProgress",
    "BackfillSummary",
    "OutputFileError",
    "OutputLockedError",
    "backfill_to_file",
    "backfill_to_stream",
]

_T = TypeVar("_T")

Format = Literal["jsonl", "csv", "parquet"]
FORMATS: tuple[Format, ...] = ("jsonl", "csv", "parquet")
STATE_VERSION = 3
#: The state's line saying the run that finished every piece also checked them.
_CHECKED = b"checked"

_encode = msgspec.json.Encoder().encode
_decode_header = msgspec.json.Decoder(dict[str, Any]).decode


@dataclass(slots=True)
class BackfillProgress:
    """Where a backfill stands, for a progress display."""

    records: int = 0
    records_before: int = 0
    jobs_total: int = 0
    jobs_done: int = 0
    fraction: float = 0.0
    finished: bool = False
    started: float = field(default_factory=time.monotonic)

    def measure(self, coverage: Mapping[int, float]) -> None:
        """Set ``fraction`` from the jobs done and ``coverage``: the share walked of each job
        under way."""
        self.fraction = (
            (self.jobs_done + sum(coverage.values())) / self.jobs_total if self.jobs_total else 1.0
        )


@dataclass(frozen=True, slots=True)
class BackfillSummary:
    """What a backfill did. ``repaired`` says what a rerun found damaged and fixed."""

    path: Path | None
    records_written: int
    records_before: int
    jobs_total: int
    jobs_resumed: int
    requests: int
    elapsed: float
    accounts: int
    repaired: str | None = None
    extended_from: int | None = None

    @property
    def complete_already(self) -> bool:
        return self.requests == 0 and self.records_written == 0 and self.jobs_total > 0 and (
            self.jobs_resumed == 0 and self.repaired is None and self.extended_from is None
        )


def format_moment(seconds: int, *, end: bool = False) -> str:
    """A date (``2024-12-31``) when ``seconds`` is the day's first second (or last, for an end),
    else an ISO datetime in UTC."""
    moment = datetime.fromtimestamp(seconds + (1 if end else 0), UTC)
    if moment.hour == moment.minute == moment.second == 0:
        day = datetime.fromtimestamp(seconds, UTC) if end else moment
        return day.date().isoformat()
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


# -- the state beside an output: the plan on the first line, then one line per finished job ------


@dataclass(slots=True)
class _State:
    plan: RewardPlan
    fmt: Format
    #: Finished jobs and their rows (``None``: written by a version that did not count).
    done: dict[int, int | None]
    #: Whether the run that finished every job then checked them (see ``_ledger``); a state
    #: from a version without the check counts as checked.
    checked: bool = False
    #: The state's format version.
    version: int = STATE_VERSION


def _header(plan: RewardPlan, fmt: Format) -> bytes:
    return _encode({
        "version": STATE_VERSION, "format": fmt, "start": plan.start, "end": plan.end,
        "extended_from": list(plan.extended_from), "accounts": list(plan.accounts),
        "slice_seconds": plan.slice_seconds, "shard": list(plan.shard),
    }) + b"\n"


def _read_state(state_path: Path) -> _State | None:
    if not state_path.exists():
        return None
    # Only whole lines count: a line torn by an interruption is ignored.
    lines = state_path.read_bytes().split(b"\n")[:-1]
    if not lines:
        return None
    try:
        head = _decode_header(lines[0])
        plan = RewardPlan(
            start=int(head["start"]), end=int(head["end"]),
            accounts=tuple(str(a) for a in head.get("accounts", ())),
            slice_seconds=int(head["slice_seconds"]),
            extended_from=tuple(int(e) for e in head.get("extended_from", ())),
            shard=(int(head.get("shard", (1, 1))[0]), int(head.get("shard", (1, 1))[1])),
        )
        fmt = head["format"]
        if fmt not in FORMATS:
            raise ValueError(fmt)
        version = int(head.get("version", 1))
        done: dict[int, int | None] = {}
        checked = version < 3
        for line in lines[1:]:
            if line == _CHECKED:
                checked = True
                continue
            parts = line.split()
            done[int(parts[0])] = int(parts[1]) if len(parts) > 1 else None
    except (msgspec.MsgspecError, ValueError, KeyError, TypeError, IndexError):
        raise OutputFileError(f"{state_path} is damaged; remove it to rescan the output") from None
    return _State(plan, fmt, done, checked, version)


def _write_state(state_path: Path, state: _State) -> None:
    """Replace the state file atomically."""
    temporary = state_path.with_name(f".{state_path.name}.tmp")
    with temporary.open("wb") as handle:
        handle.write(_header(state.plan, state.fmt))
        handle.writelines(
            (f"{job} {rows}\n" if rows is not None else f"{job}\n").encode()
            for job, rows in sorted(state.done.items())
        )
        if state.checked:
            handle.write(_CHECKED + b"\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, state_path)


def _accounts_flag(accounts: Sequence[str]) -> str:
    return " ".join(f"--account {shlex.quote(a)}" for a in accounts) if accounts else (
        "every account"
    )


def _reconcile(saved: _State, wanted: RewardPlan, fmt: Format, out: Path) -> RewardPlan:
    """The plan to run on an output holding ``saved``: the same one, or extended to a later end.
    Any other difference is refused in one line naming the flag, the output's value and the way
    out."""
    old = saved.plan
    other = "or choose another --out"
    if saved.fmt != fmt:
        raise OutputFileError(
            f"{out} holds --format {saved.fmt}; rerun with --format {saved.fmt}, {other}"
        )
    if old.start != wanted.start:
        value = format_moment(old.start)
        raise OutputFileError(
            f"{out} holds rewards from --start {value}; rerun with --start {value}, {other}"
        )
    if old.accounts != wanted.accounts:
        raise OutputFileError(
            f"{out} holds {_accounts_flag(old.accounts)}; rerun with "
            f"{_accounts_flag(old.accounts) if old.accounts else 'no --account'}, {other}"
        )
    if old.shard != wanted.shard:
        value = f"{old.shard[0]}/{old.shard[1]}"
        raise OutputFileError(f"{out} holds --shard {value}; rerun with --shard {value}, {other}")
    if wanted.end < old.end:
        value = format_moment(old.end, end=True)
        raise OutputFileError(
            f"{out} already reaches --end {value}; rerun with --end {value} or later, {other}"
        )
    if wanted.end == old.end:
        return old
    return RewardPlan(
        old.start, wanted.end, old.accounts, old.slice_seconds,
        (*old.extended_from, old.end), old.shard,
    )


# -- what an earlier run left ----------------------------------------------------------------------


@dataclass(slots=True)
class _Prepared:
    plan: RewardPlan
    done: dict[int, int | None]
    cursors: dict[int, RewardsCursor[WireReward]]
    rows_before: int
    accounts: set[str]
    repaired: str | None
    extended_from: int | None
    complete: bool = False
    #: Rows the output holds for each job resumed part-way.
    job_rows: dict[int, int] = field(default_factory=dict)


def _cursors_from_rows(
    plan: RewardPlan, jobs: Sequence[RewardJob], rows: Iterable[WireReward],
    done: dict[int, int | None],
) -> tuple[dict[int, RewardsCursor[WireReward]], dict[int, int], int, set[str]]:
    """Per job, the rows the output holds, and for each unfinished job a cursor after them.

    A job's rows are written in its walk's order, newest first, so all its rows newer than its
    oldest written date are complete: it continues from that date, skipping the rows written at
    it (see ``RewardsCursor``). Only the rows at each job's oldest date are kept in memory.
    """
    oldest: dict[int, tuple[int, list[WireReward]]] = {}
    counts: dict[int, int] = {}
    total = 0
    names: set[str] = set()
    for row in rows:
        total += 1
        names.add(row.mining_account_name)
        index = plan.job_of(row)
        if index is None or not plan.mine(jobs[index]):
            raise OutputFileError(
                f"a row ({row.mining_account_name}, {format_moment(row.date)}) lies outside "
                "this backfill"
            )
        counts[index] = counts.get(index, 0) + 1
        if index in done:
            continue
        found = oldest.get(index)
        if found is None or row.date < found[0]:
            oldest[index] = (row.date, [row])
        elif row.date == found[0]:
            found[1].append(row)
    cursors: dict[int, RewardsCursor[WireReward]] = {}
    for index, (date, at_date) in oldest.items():
        seen = set(at_date)
        cursors[index] = RewardsCursor(jobs[index].params() | {"to": date}, len(seen), seen)
    return cursors, counts, total, names


def _prepare(
    out: Path, state_path: Path, fmt: Format, wanted: RewardPlan
) -> _Prepared:
    """Check, extend and repair what an earlier run left (the lock is held)."""
    saved = _read_state(state_path)
    if fmt == "parquet":
        has_rows = bool(part_files(out))
    else:
        has_rows = out.exists() and out.stat().st_size > 0
    plan = wanted
    done: dict[int, int | None] = {}
    extended_from: int | None = None
    # An output without rows (never written, or removed) starts afresh whatever the state says.
    if saved is not None and has_rows:
        plan = _reconcile(saved, wanted, fmt, out)
        done = dict(saved.done)
        if plan.end != saved.plan.end:
            extended_from = saved.plan.end
    state = _State(plan, fmt, done)
    jobs = plan.jobs()
    mine = [job for job in jobs if plan.mine(job)]
    if fmt == "parquet":
        return _prepare_parquet(out, state_path, state, jobs, mine, extended_from, saved)
    repaired: str | None = None
    torn = has_rows and not ends_whole(out)
    if has_rows and all(job.index in done for job in mine):
        counts_known = all(done[job.index] is not None for job in mine)
        expected = sum(done[job.index] or 0 for job in mine)
        lines = count_lines(out) - (1 if fmt == "csv" else 0)
        if not torn and (not counts_known or lines == expected):
            if saved is None or saved.plan != plan:
                _write_state(state_path, state)
            # Every piece is written; unless the check ran, the run only checks.
            checked = saved is not None and saved.checked and saved.plan == plan
            return _Prepared(plan, done, {}, lines, set(), None, None, complete=checked)
        repaired = (
            "its last line was cut" if torn
            else f"it held {lines:,} rows where {expected:,} were written"
        )
    # Read before a cut last line is cut, so that a file that is not a reward output (or holds
    # rows of another backfill) is refused as it is.
    rows: Iterable[WireReward] = read_rows(out, fmt, torn=torn) if has_rows else ()
    cursors, counts, total, names = _cursors_from_rows(plan, jobs, rows, done)
    if torn:
        cut_torn_tail(out)
        repaired = repaired or "its last line was cut"
    # A finished job whose rows the output no longer holds in full is walked again.
    lost = [
        index for index, rows_done in done.items()
        if rows_done is not None and counts.get(index, 0) != rows_done
    ]
    if lost:
        for index in lost:
            del done[index]
        # Its remaining rows are a prefix of its walk: rebuild its cursor from them.
        again, _, _, _ = _cursors_from_rows(plan, jobs, read_rows(out, fmt), done)
        cursors.update({i: c for i, c in again.items() if i in lost})
    if saved is None or saved.plan != plan or lost or not has_rows or saved.version < STATE_VERSION:
        if not has_rows:
            state.done = done = {}
        _write_state(state_path, state)
    return _Prepared(
        plan, done, cursors, total, names, repaired, extended_from,
        job_rows={index: counts.get(index, 0) for index in cursors},
    )


def _prepare_parquet(
    out: Path, state_path: Path, state: _State, jobs: Sequence[RewardJob],
    mine: Sequence[RewardJob], extended_from: int | None, saved: _State | None,
) -> _Prepared:
    """Parquet resumes by piece: finished pieces are checked against their part files' row
    counts; a piece that did not finish is removed and walked again."""
    writer = PartWriter(out)
    for stray in out.glob(".part-*.tmp"):
        stray.unlink()
    done = state.done
    repaired: list[str] = []
    for job in jobs:
        if job.index in done:
            rows = writer.rows_of(job.index)
            if done[job.index] is not None and rows != done[job.index]:
                repaired.append(f"piece {job.index} held {rows:,} of {done[job.index]:,} rows")
                writer.remove(job.index)
                del done[job.index]
        elif part_files(out, job.index):
            writer.remove(job.index)
    kept = sum(n or 0 for n in done.values())
    complete = all(job.index in done for job in mine)
    checked = saved is not None and saved.checked and saved.plan == state.plan and not repaired
    state.checked = checked and complete
    if (
        saved is None or saved.plan != state.plan or repaired
        or saved.version < STATE_VERSION
    ):
        _write_state(state_path, state)
    return _Prepared(
        state.plan, done, {}, kept, set(), "; ".join(repaired) or None, extended_from,
        complete=complete and checked and extended_from is None,
    )


# -- the run -----------------------------------------------------------------------------------


def _paths(out: Path, fmt: Format) -> tuple[Path, Path]:
    """The state file and the lock file of an output, named after the file ``out`` leads to:
    runs that reach one output through a symbolic link and its target share them."""
    out = out.resolve()
    if fmt == "parquet":
        return out / "_progress", out / ".lock"
    return out.with_name(out.name + ".progress"), out.with_name(out.name + ".lock")


def _make_directory(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)


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
    start, end, names, concurrency = check_backfill_args(
        client, start, end, accounts, concurrency
    )
    fmt, shard = _check(fmt, shard)
    wanted = RewardPlan(start, end, tuple(names or ()), shard=shard)
    if fmt == "parquet":
        load_pyarrow()
        _make_directory(path)
    state_path, lock_path = _paths(path, fmt)
    with OutputLock(lock_path, path):
        # Reading what an earlier run left may take a while for a large output: off the loop.
        prepared = await _in_thread_to_its_end(_prepare, path, state_path, fmt, wanted)
        plan = prepared.plan
        mine = [job for job in plan.jobs() if plan.mine(job)]
        if prepared.complete:
            return BackfillSummary(
                path, 0, prepared.rows_before, len(mine), 0, 0, 0.0, 0, None, None
            )
        return await _run(client, path, fmt, state_path, prepared, mine, concurrency, on_progress)


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


async def _run(
    client: RewardsClient, path: Path, fmt: Format, state_path: Path, prepared: _Prepared,
    mine: Sequence[RewardJob], concurrency: int,
    on_progress: Callable[[BackfillProgress], None] | None,
) -> BackfillSummary:
    done = prepared.done
    pending = [job for job in mine if job.index not in done]
    progress = BackfillProgress(
        records_before=prepared.rows_before, jobs_total=len(mine),
        jobs_done=len(mine) - len(pending),
    )
    accounts_seen = prepared.accounts
    coverage: dict[int, float] = {}
    job_rows: dict[int, int] = {}
    # What the output holds for the check: the rows of earlier runs, read back, then every page
    # of this one as it is written.
    ledger = await _in_thread_to_its_end(
        _output_ledger, path, fmt, prepared.plan, mine, _has_rows(path, fmt)
    )
    requests_before = client.stats.requests
    began = time.monotonic()
    parts = PartWriter(path) if fmt == "parquet" else None
    rows_file = RowFile(path, fmt) if fmt != "parquet" else None
    # Rows already in the output for jobs resumed part-way.
    job_rows.update(prepared.job_rows)
    try:
        with state_path.open("ab") as state:
            async for job, page, finished in run_reward_jobs(
                client._rewards_page, pending, concurrency=concurrency, records=WIRE_RECORDS,
                cursors=prepared.cursors,
            ):
                if page:
                    ledger.add(job.index, page)
                    if parts is not None:
                        parts.write(job.index, page)
                    else:
                        assert rows_file is not None
                        rows_file.write(page)
                    job_rows[job.index] = job_rows.get(job.index, 0) + len(page)
                    progress.records += len(page)
                    accounts_seen.update(r.mining_account_name for r in page)
                    coverage[job.index] = job.covered(page[-1].date)
                if finished:
                    # The rows reach the disk before the job is marked done.
                    if parts is not None:
                        parts.finish(job.index)
                    else:
                        assert rows_file is not None
                        rows_file.sync()
                    rows_done = done[job.index] = job_rows.pop(job.index, 0)
                    _append_state(state, b"%d %d\n" % (job.index, rows_done))
                    progress.jobs_done += 1
                    coverage.pop(job.index, None)
                if on_progress is not None:
                    progress.measure(coverage)
                    on_progress(progress)
            if all(job.index in done for job in mine):
                await _check_output(client, ledger, done, state, rows_file, parts, progress,
                                    accounts_seen, on_progress)
    finally:
        if rows_file is not None:
            rows_file.close()
    progress.fraction = 1.0
    progress.finished = True
    if on_progress is not None:
        on_progress(progress)
    return BackfillSummary(
        path=path,
        records_written=progress.records,
        records_before=prepared.rows_before,
        jobs_total=len(mine),
        jobs_resumed=len(prepared.cursors),
        requests=client.stats.requests - requests_before,
        elapsed=time.monotonic() - began,
        accounts=len(accounts_seen),
        repaired=prepared.repaired,
        extended_from=prepared.extended_from,
    )


def _append_state(state: BinaryIO, line: bytes) -> None:
    state.write(line)
    state.flush()
    os.fsync(state.fileno())


def _has_rows(out: Path, fmt: Format) -> bool:
    """Whether the output holds rows (whatever its state file says of them)."""
    if fmt == "parquet":
        return bool(part_files(out))
    header = len(",".join(CSV_COLUMNS)) + 1 if fmt == "csv" else 0
    return out.exists() and out.stat().st_size > header


def _output_ledger(
    out: Path, fmt: Format, plan: RewardPlan, jobs: Sequence[RewardJob], read: bool
) -> RewardLedger[WireReward]:
    """A ledger of ``jobs`` for the check, holding what the output holds already when ``read``."""
    # JSONL and CSV hold the wire's strings; Parquet spells amounts its own way, so a ledger that
    # holds rows read back from it compares amounts however spelled.
    ledger: RewardLedger[WireReward] = RewardLedger(canonical=read and fmt == "parquet")
    for job in jobs:
        ledger.add_range(job.index, job.params())
    if not read:
        return ledger
    rows = read_part_rows(out) if fmt == "parquet" else read_rows(out, fmt)
    for row in rows:
        index = plan.job_of(row)
        if index is not None and index in ledger:
            ledger.add(index, (row,))
    return ledger


async def _check_output(
    client: RewardsClient, ledger: RewardLedger[WireReward], done: dict[int, int | None],
    state: BinaryIO, rows_file: RowFile | None, parts: PartWriter | None,
    progress: BackfillProgress, accounts: set[str],
    on_progress: Callable[[BackfillProgress], None] | None,
) -> None:
    """The check (see ``_ledger``) over every piece the output holds, once every piece is
    written: rewards booked behind the walks while they ran are appended, and the state says the
    check ran. The ledger holds 24 bytes per row (its date and digest)."""
    async for key, fresh in check_rewards(client._rewards_page, ledger, WIRE_RECORDS):
        assert isinstance(key, int)
        index = key
        if parts is not None:
            parts.write(index, fresh)
            parts.finish(index)
        else:
            assert rows_file is not None
            rows_file.write(fresh)
            rows_file.sync()
        count = done.get(index)
        if count is not None:
            done[index] = count + len(fresh)
            _append_state(state, b"%d %d\n" % (index, count + len(fresh)))
        progress.records += len(fresh)
        accounts.update(r.mining_account_name for r in fresh)
        if on_progress is not None:
            on_progress(progress)
    _append_state(state, _CHECKED + b"\n")


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
    start, end, names, concurrency = check_backfill_args(
        client, start, end, accounts, concurrency
    )
    _, shard = _check("jsonl", shard)
    plan = RewardPlan(start, end, tuple(names or ()), shard=shard)
    mine = [job for job in plan.jobs() if plan.mine(job)]
    progress = BackfillProgress(jobs_total=len(mine))
    coverage: dict[int, float] = {}
    accounts_seen: set[str] = set()
    requests_before = client.stats.requests
    began = time.monotonic()
    ledger: RewardLedger[WireReward] = RewardLedger()
    for job in mine:
        ledger.add_range(job.index, job.params())
    async for job, page, finished in run_reward_jobs(
        client._rewards_page, mine, concurrency=concurrency, records=WIRE_RECORDS
    ):
        if page:
            ledger.add(job.index, page)
            stream.write(encode_jsonl(page))
            stream.flush()
            progress.records += len(page)
            accounts_seen.update(r.mining_account_name for r in page)
            coverage[job.index] = job.covered(page[-1].date)
        if finished:
            progress.jobs_done += 1
            coverage.pop(job.index, None)
        if on_progress is not None:
            progress.measure(coverage)
            on_progress(progress)
    # Rewards booked behind the walks while they ran (see ``_ledger``).
    async for _key, fresh in check_rewards(client._rewards_page, ledger, WIRE_RECORDS):
        stream.write(encode_jsonl(fresh))
        stream.flush()
        progress.records += len(fresh)
        accounts_seen.update(r.mining_account_name for r in fresh)
    progress.fraction = 1.0
    progress.finished = True
    if on_progress is not None:
        on_progress(progress)
    return BackfillSummary(
        None, progress.records, 0, len(mine), 0, client.stats.requests - requests_before,
        time.monotonic() - began, len(accounts_seen),
    )
