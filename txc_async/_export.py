"""Backfill into a JSONL or CSV file that survives interruption: a rerun with the same file keeps
every row, repairs a torn last line, fetches only what is missing, and never writes a row twice."""

from __future__ import annotations

import asyncio
import csv
import io
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

import msgspec

from ._backfill import (
    ALL_ACCOUNTS_SLICE,
    PER_ACCOUNT_SLICE,
    RewardJob,
    check_backfill_args,
    plan_reward_jobs,
    run_reward_jobs,
)
from ._client import Client, RewardsCursor
from ._errors import InvalidParameterError, TxcError
from ._models import MiningReward

__all__ = ["BackfillProgress", "BackfillSummary", "OutputFileError", "backfill_to_file"]

Format = Literal["jsonl", "csv"]

CSV_COLUMNS = (
    "miningAccountName", "totalReward", "reward", "fee", "fppsRate", "hashRate", "date",
)
_encode = msgspec.json.Encoder().encode
_decode_record = msgspec.json.Decoder(MiningReward).decode
_decode_plan = msgspec.json.Decoder(dict[str, Any]).decode


class OutputFileError(TxcError):
    """The output file cannot be resumed (another range, another format, or unreadable rows)."""


@dataclass(slots=True)
class BackfillProgress:
    """Where a file backfill stands, for a progress display."""

    records: int = 0
    records_before: int = 0
    jobs_total: int = 0
    jobs_done: int = 0
    fraction: float = 0.0
    started: float = field(default_factory=time.monotonic)


@dataclass(frozen=True, slots=True)
class BackfillSummary:
    """What a file backfill did."""

    path: Path
    records_written: int
    records_before: int
    jobs_total: int
    jobs_resumed: int
    requests: int
    elapsed: float
    accounts: int


def _record_to_csv(record: MiningReward) -> list[str]:
    return [
        record.mining_account_name, str(record.total_reward), str(record.reward),
        str(record.fee), str(record.fpps_rate), record.hash_rate, str(record.date),
    ]


def _csv_to_record(row: list[str]) -> MiningReward:
    account, total, reward, fee, rate, hashrate, date = row
    return MiningReward(
        mining_account_name=account, total_reward=Decimal(total), reward=Decimal(reward),
        fee=Decimal(fee), fpps_rate=Decimal(rate), hash_rate=hashrate, date=int(date),
    )


def _encode_rows(records: Sequence[MiningReward], fmt: Format) -> bytes:
    if fmt == "jsonl":
        return b"".join(_encode(r) + b"\n" for r in records)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerows(_record_to_csv(r) for r in records)
    return buffer.getvalue().encode()


def _csv_header() -> bytes:
    return (",".join(CSV_COLUMNS) + "\n").encode()


def _repair_torn_tail(path: Path) -> None:
    """Cut a last line that an interruption left without its newline."""
    with path.open("rb+") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            return
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return
        # Walk back to the previous newline in blocks.
        pos = size
        while pos > 0:
            step = min(65536, pos)
            handle.seek(pos - step)
            block = handle.read(step)
            cut = block.rfind(b"\n")
            if cut >= 0:
                handle.truncate(pos - step + cut + 1)
                break
            pos -= step
        else:
            handle.truncate(0)
        handle.flush()
        os.fsync(handle.fileno())


def _read_rows(path: Path, fmt: Format) -> Iterator[MiningReward]:
    """The rows of the file, one at a time (the file may hold millions)."""
    with path.open("rb") as handle:
        if fmt == "jsonl":
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    yield _decode_record(line)
                except msgspec.MsgspecError:
                    raise OutputFileError(f"{path}: line {number} is not a reward row") from None
        else:
            text = io.TextIOWrapper(handle, encoding="utf-8", newline="")
            reader = csv.reader(text)
            header = next(reader, None)
            if header is not None and tuple(header) != CSV_COLUMNS:
                raise OutputFileError(f"{path}: the first line is not the reward CSV header")
            for number, row in enumerate(reader, 2):
                try:
                    record = _csv_to_record(row)
                except (ValueError, ArithmeticError):
                    raise OutputFileError(f"{path}: line {number} is not a reward row") from None
                yield record


def _count_rows(path: Path, fmt: Format) -> int:
    lines = 0
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            lines += chunk.count(b"\n")
    return lines - 1 if fmt == "csv" and lines else lines


def _job_of(
    record: MiningReward, start: int, end: int, slice_seconds: int, accounts: Sequence[str] | None
) -> int | None:
    if not start <= record.date <= end:
        return None
    slice_index = (end - record.date) // slice_seconds
    if not accounts:
        return slice_index
    try:
        return slice_index * len(accounts) + list(accounts).index(record.mining_account_name)
    except ValueError:
        return None


@dataclass(slots=True)
class _Resume:
    cursors: dict[int, RewardsCursor]
    rows: int
    accounts: set[str]


def _resume_cursors(
    jobs: Sequence[RewardJob], rows: Iterable[MiningReward], start: int, end: int,
    slice_seconds: int, accounts: Sequence[str] | None,
) -> _Resume:
    """For every job that has rows in the file, a cursor that continues after them.

    A job's rows are written in its newest-first order, so they are a prefix of its walk: it
    continues from its oldest date, skipping the rows already written at that date.
    """
    oldest: dict[int, list[MiningReward]] = {}
    count = 0
    names: set[str] = set()
    for record in rows:
        count += 1
        names.add(record.mining_account_name)
        index = _job_of(record, start, end, slice_seconds, accounts)
        if index is None:
            raise OutputFileError(
                f"a row ({record.mining_account_name}, {record.date}) lies outside this backfill"
            )
        found = oldest.get(index)
        if found is None or record.date < found[0].date:
            oldest[index] = [record]
        elif record.date == found[0].date:
            found.append(record)
    cursors: dict[int, RewardsCursor] = {}
    for index, at_date in oldest.items():
        date = at_date[0].date
        cursors[index] = RewardsCursor(
            params=jobs[index].params() | {"to": date},
            last_date=date,
            at_last_date=list(at_date),
            skip=set(at_date),
        )
    return _Resume(cursors, count, names)


def _prepare(
    path: Path, state_path: Path, fmt: Format, plan: dict[str, Any], jobs: Sequence[RewardJob],
    start: int, end: int, slice_seconds: int, accounts: Sequence[str] | None,
) -> BackfillSummary | tuple[set[int], _Resume]:
    """Check and repair what an earlier run left; the finished jobs and where the others stand.

    A summary instead when the file is already complete (then nothing is touched).
    """
    done: set[int] = set()
    rows: Iterable[MiningReward] = ()
    if path.exists() and path.stat().st_size > 0:
        if state_path.exists():
            # Only whole lines count: a line torn by an interruption is ignored.
            lines = state_path.read_bytes().split(b"\n")[:-1]
            try:
                saved = _decode_plan(lines[0]) if lines else None
                done = {int(line) for line in lines[1:]}
            except (msgspec.MsgspecError, ValueError):
                raise OutputFileError(f"{state_path} is damaged; remove it to rescan") from None
            if saved is not None and saved != plan:
                raise OutputFileError(
                    f"{path} holds a different backfill ({saved}); choose another --out"
                )
        if len(done) == len(jobs):
            return BackfillSummary(path, 0, _count_rows(path, fmt), len(jobs), 0, 0, 0.0, 0)
        _repair_torn_tail(path)
        rows = _read_rows(path, fmt)
    else:
        path.write_bytes(_csv_header() if fmt == "csv" else b"")
    if not done:
        state_path.write_bytes(_encode(plan) + b"\n")
    else:
        _repair_torn_tail(state_path)
    return done, _resume_cursors(jobs, rows, start, end, slice_seconds, accounts)


async def backfill_to_file(
    client: Client,
    *,
    start: int,
    end: int,
    path: Path,
    fmt: Format = "jsonl",
    accounts: Sequence[str] | None = None,
    concurrency: int = 8,
    on_progress: Callable[[BackfillProgress], None] | None = None,
) -> BackfillSummary:
    """Backfill rewards of ``start..end`` into ``path``, resuming what an earlier run left."""
    start, end, accounts, concurrency = check_backfill_args(start, end, accounts, concurrency)
    if fmt not in ("jsonl", "csv"):
        raise InvalidParameterError("fmt", "must be 'jsonl' or 'csv'")
    slice_seconds = PER_ACCOUNT_SLICE if accounts else ALL_ACCOUNTS_SLICE
    jobs = plan_reward_jobs(start, end, accounts, slice_seconds)
    plan = {
        "start": start, "end": end, "accounts": list(accounts or []),
        "slice_seconds": slice_seconds, "format": fmt,
    }
    state_path = path.with_name(path.name + ".progress")
    # Reading what an earlier run left may take a while for a large file: off the event loop.
    prepared = await asyncio.to_thread(
        _prepare, path, state_path, fmt, plan, jobs, start, end, slice_seconds, accounts
    )
    if isinstance(prepared, BackfillSummary):
        return prepared
    done, resume = prepared
    cursors = resume.cursors
    pending = [job for job in jobs if job.index not in done]
    progress = BackfillProgress(
        records_before=resume.rows, jobs_total=len(jobs), jobs_done=len(done)
    )
    accounts_seen = resume.accounts
    coverage: dict[int, float] = {}
    requests_before = client.stats.requests
    began = time.monotonic()
    with path.open("ab") as out, state_path.open("ab") as state:
        async for job, page, finished in run_reward_jobs(
            client, pending, concurrency=concurrency, cursors=cursors
        ):
            if page:
                out.write(_encode_rows(page, fmt))
                progress.records += len(page)
                accounts_seen.update(r.mining_account_name for r in page)
                span = max(1, job.end - job.start)
                coverage[job.index] = (job.end - page[-1].date) / span
            if finished:
                # The rows reach the disk before the job is marked done.
                out.flush()
                os.fsync(out.fileno())
                state.write(b"%d\n" % job.index)
                state.flush()
                os.fsync(state.fileno())
                progress.jobs_done += 1
                coverage.pop(job.index, None)
            if on_progress is not None:
                progress.fraction = (progress.jobs_done + sum(coverage.values())) / len(jobs)
                on_progress(progress)
        out.flush()
        os.fsync(out.fileno())
    return BackfillSummary(
        path=path,
        records_written=progress.records,
        records_before=resume.rows,
        jobs_total=len(jobs),
        jobs_resumed=len(cursors),
        requests=client.stats.requests - requests_before,
        elapsed=time.monotonic() - began,
        accounts=len(accounts_seen),
    )
