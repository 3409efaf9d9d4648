"""Outputs that settle: the days whose rows held pending rewards are read again, and those rows
replaced by what was read, atomically; rows written before rewards' status was read are upgraded
the same way.

What it guarantees. Rows are matched by a reward's identity (``walk.fixed_fields``: account,
date, currency), so each reward is in the output once, in the latest state read: the old row's
place takes the new row. A JSONL or CSV output is rewritten into a temporary file, made durable
and renamed over the output; a Parquet part file the same way, each reward's new row going to
the part that held its old row. A crash leaves every reward in its old state or its new one,
never both and never neither. A reward the server no longer answers keeps its row; one it
answers that the output lacked (booked behind an earlier run) is added. Nothing but the days
named as pending is read again. The rewards a run wrote pending that its own check read again
settled (the check reads a segment again when something was booked in it) have their rows
replaced the same way at the run's end: each reward ends the run in the latest state read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .._backfill.engine import BackfillSink, run_backfill
from .._backfill.plan import RewardJob, RewardPlan
from .._backfill.walk import WIRE_RECORDS, FetchPage, WireReward, fixed_fields
from .parquet import PartWriter, legacy_parts, part_files, read_part_file, replace_part
from .report import BackfillProgress
from .rowfile import (
    CSV_HEADER,
    encode_csv,
    encode_jsonl,
    ends_whole,
    legacy_rows,
    read_lines,
    read_rows,
    replace_file,
)
from .sinks import DAY, PENDING, OnProgress
from .state import Format

__all__ = [
    "Replacement",
    "SettleReport",
    "day_runs",
    "read_again",
    "replace_output_rows",
    "upgrade_output",
]

_Key = tuple[str, int, str]


@dataclass(slots=True)
class SettleReport:
    """What settling did: rewards that were pending and are final now, by their new status;
    how many of those read again are still pending; how many were read again in all; and how
    many the output lacked."""

    settled: Counter[str] = field(default_factory=Counter)
    still_pending: int = 0
    read_again: int = 0
    added: dict[int, int] = field(default_factory=dict)


def day_runs(job: RewardJob, days: Iterable[int]) -> list[RewardJob]:
    """``job``'s range cut down to its runs of consecutive ``days`` (UTC day numbers), newest
    first: one walk per run, so that nothing between two pending days is read again."""
    runs: list[RewardJob] = []
    ordered = sorted(days, reverse=True)
    while ordered:
        top = bottom = ordered.pop(0)
        while ordered and ordered[0] == bottom - 1:
            bottom = ordered.pop(0)
        lo, hi = max(job.start, bottom * DAY), min(job.end, top * DAY + DAY - 1)
        if lo <= hi:
            runs.append(RewardJob(job.index, job.account, lo, hi))
    return runs


class _Collect(BackfillSink[WireReward]):
    """Every record of a walk and its check, by job number; ``on_progress`` told of each page
    and each run walked (a run is a job here)."""

    def __init__(self, runs: int, on_progress: OnProgress | None) -> None:
        self.rows: dict[int, list[WireReward]] = {}
        self.progress = BackfillProgress(jobs_total=runs, phase="settle")
        self._on_progress = on_progress

    def write(self, job: RewardJob, records: list[WireReward]) -> None:
        self.rows.setdefault(job.index, []).extend(records)
        self.progress.records += len(records)
        self._report()

    def finish(self, job: RewardJob) -> None:
        self.progress.jobs_done += 1
        self._report()

    def found(self, job: RewardJob, records: list[WireReward]) -> None:
        self.write(job, records)

    def checked(self) -> None:
        self.progress.finished = True
        self._report()

    def _report(self) -> None:
        progress = self.progress
        progress.fraction = progress.jobs_done / progress.jobs_total if progress.jobs_total else 1
        if self._on_progress is not None:
            self._on_progress(progress)


async def read_again(
    fetch: FetchPage, jobs: Sequence[RewardJob], concurrency: int,
    on_progress: OnProgress | None = None,
) -> dict[int, list[WireReward]]:
    """The records of ``jobs`` (runs of pending days) as the server holds them now, each reward
    once: walked and checked by the backfill engine as any range is. ``on_progress`` is told
    how the reading goes (phase ``"settle"``)."""
    sink = _Collect(len(jobs), on_progress)
    async for _batch in run_backfill(
        fetch, jobs, sink, records=WIRE_RECORDS, concurrency=concurrency
    ):
        pass
    return sink.rows


class Replacement:
    """The rows read again (``fresh``, by job) and the days they cover (``days``, by job): what
    takes the place of each old row of those days, and what is left to add."""

    def __init__(
        self, fresh: Mapping[int, Sequence[WireReward]], days: Mapping[int, frozenset[int]]
    ) -> None:
        self.days = days
        self._by_key: dict[int, dict[_Key, WireReward]] = {
            job: {fixed_fields(r): r for r in rows} for job, rows in fresh.items()
        }
        # A row written before the currency was read names none: it is matched by its account
        # and date alone, to every reward of the account read again at that date.
        self._by_moment: dict[int, dict[tuple[str, int], list[_Key]]] = {}
        for job, rows in fresh.items():
            moments = self._by_moment[job] = {}
            for r in rows:
                moments.setdefault((r.mining_account_name, r.date), []).append(fixed_fields(r))
        self.report = SettleReport(
            read_again=sum(map(len, fresh.values())),
            still_pending=sum(r.status == PENDING for rows in fresh.values() for r in rows),
        )

    def affects(self, job: int | None, row: WireReward) -> bool:
        days = self.days.get(job) if job is not None else None
        return days is not None and row.date // DAY in days

    def swap(self, job: int, row: WireReward) -> list[WireReward]:
        """What takes ``row``'s place: its reward as read again, or ``row`` itself when the
        server no longer answered it (a row is never dropped for want of an answer)."""
        by_key = self._by_key.get(job, {})
        new = by_key.pop(fixed_fields(row), None)
        if new is not None:
            self._count(row, new)
            return [new]
        keys = (
            self._by_moment.get(job, {}).get((row.mining_account_name, row.date))
            if row.reward_currency is None else None
        )
        if keys is None:
            return [row]
        # A second old row of one moment finds its rewards taken: it was the same reward.
        taken = [by_key.pop(key) for key in keys if key in by_key]
        for new in taken:
            self._count(row, new)
        return taken

    def rest(self, job: int) -> list[WireReward]:
        """The rewards of ``job`` read again that no old row held: added to the output."""
        left = list(self._by_key.pop(job, {}).values())
        if left:
            self.report.added[job] = self.report.added.get(job, 0) + len(left)
        return left

    def jobs(self) -> list[int]:
        return list(self._by_key)

    def _count(self, old: WireReward, new: WireReward) -> None:
        if old.status == PENDING and new.status != PENDING:
            self.report.settled[new.status or "without a status"] += 1


def replace_output_rows(
    out: Path, fmt: Format, plan: RewardPlan, replacement: Replacement
) -> SettleReport:
    """Replace the rows of ``replacement``'s days in the output, atomically (see the module's
    description)."""
    if fmt == "parquet":
        _replace_in_parts(out, replacement)
    else:
        replace_file(out, _rewritten(out, fmt, plan, replacement))
    return replacement.report


def _rewritten(
    out: Path, fmt: Literal["jsonl", "csv"], plan: RewardPlan, replacement: Replacement
) -> Iterator[bytes]:
    """The output's lines with each affected row swapped in place; the rows to add last."""
    encode = encode_jsonl if fmt == "jsonl" else encode_csv
    if fmt == "csv":
        yield CSV_HEADER
    for line, row in read_lines(out, fmt):
        job = plan.job_of(row)
        if job is not None and replacement.affects(job, row):
            yield encode(replacement.swap(job, row))
        else:
            yield line
    for job in replacement.jobs():
        yield encode(replacement.rest(job))


def _replace_in_parts(out: Path, replacement: Replacement) -> None:
    """Each part file holding an affected row replaced by its rows swapped; the rows to add go
    to the job's last part replaced (or a new part when none was)."""
    writer = PartWriter(out)
    for job in replacement.jobs():
        affected = [
            path for path in part_files(out, job)
            if any(replacement.affects(job, row) for row in read_part_file(path))
        ]
        for number, path in enumerate(affected, 1):
            rows = [
                new for row in read_part_file(path)
                for new in (replacement.swap(job, row) if replacement.affects(job, row) else [row])
            ]
            if number == len(affected):
                rows += replacement.rest(job)
            replace_part(writer, path, rows)
        left = replacement.rest(job)
        if left:
            writer.write(job, left)
            writer.finish(job)


def upgrade_output(out: Path, fmt: Format, plan: RewardPlan) -> dict[int, set[int]] | None:
    """If the output was written before rewards' status and payouts were read: the days of its
    rows, by job (all of them are read again, to learn what the rows lack), else ``None``.
    `rewrite_legacy` then rewrites it in today's format."""
    if fmt == "parquet":
        paths = legacy_parts(out)
        if not paths:
            return None
        rows: Iterable[WireReward] = (row for path in paths for row in read_part_file(path))
    else:
        if not legacy_rows(out, fmt):
            return None
        rows = read_rows(out, fmt, torn=not ends_whole(out))
    days: dict[int, set[int]] = {}
    for row in rows:
        job = plan.job_of(row)
        if job is not None:
            days.setdefault(job, set()).add(row.date // DAY)
    return days


def rewrite_legacy(out: Path, fmt: Format) -> None:
    """Rewrite an output of the earlier format in today's, atomically (each part file, for
    Parquet): every row as it was, the new fields null, a cut last line left out."""
    if fmt == "parquet":
        writer = PartWriter(out)
        for path in legacy_parts(out):
            replace_part(writer, path, list(read_part_file(path)))
        return
    encode = encode_jsonl if fmt == "jsonl" else encode_csv
    rows = read_rows(out, fmt, torn=not ends_whole(out))

    def chunks() -> Iterator[bytes]:
        if fmt == "csv":
            yield CSV_HEADER
        for row in rows:
            yield encode((row,))

    replace_file(out, chunks())
