"""What an earlier run left in a file output: checked against its state, extended, repaired (a
cut last line, a piece whose rows went missing), turned into where each job resumes, and read
back into the ledger of the check. Runs in a worker thread, under the output's lock."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .._backfill.engine import job_ledger
from .._backfill.ledger import RewardLedger
from .._backfill.plan import RewardJob, RewardPlan
from .._backfill.walk import RewardsCursor, WireReward, fixed_fields
from .parquet import PartWriter, check_dataset, part_files, read_part_rows
from .report import format_moment
from .rowfile import OutputFileError, count_lines, cut_torn_tail, ends_whole, read_rows
from .settle import rewrite_legacy, upgrade_output
from .sinks import DAY, PENDING
from .state import STATE_VERSION, Format, OutputState, read_state, reconcile, write_state

__all__ = ["OutputRead", "Prepared", "output_ledger", "output_written", "prepare"]


def output_written(out: Path, fmt: Format) -> bool:
    """Whether a run wrote to the output, whatever its state file says: a file that is not
    empty (a CSV header alone counts), or a Parquet part file."""
    if fmt == "parquet":
        return bool(part_files(out))
    return out.exists() and out.stat().st_size > 0


@dataclass(slots=True)
class Prepared:
    plan: RewardPlan
    done: dict[int, int | None]
    cursors: dict[int, RewardsCursor[WireReward]]
    rows_before: int
    accounts: set[str]
    repaired: str | None
    extended_from: int | None
    #: Rows the output holds for each job resumed part-way.
    job_rows: dict[int, int] = field(default_factory=dict)
    #: Per job, the days whose rows held pending rewards when an earlier run read them (or were
    #: written before the status was read): read again once the job is done.
    pending: dict[int, frozenset[int]] = field(default_factory=dict)
    #: Rows of the earlier format rewritten in today's (their days are in ``pending``).
    upgraded: bool = False


def _cursors_from_rows(
    plan: RewardPlan, jobs: Sequence[RewardJob], rows: Iterable[WireReward],
    done: dict[int, int | None], pending: dict[int, set[int]] | None = None,
) -> tuple[dict[int, RewardsCursor[WireReward]], dict[int, int], int, set[str]]:
    """Per job, the rows the output holds, and for each unfinished job a cursor after them
    (and in ``pending`` the days its rows hold pending rewards on).

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
        if pending is not None and row.status == PENDING:
            pending.setdefault(index, set()).add(row.date // DAY)
        found = oldest.get(index)
        if found is None or row.date < found[0]:
            oldest[index] = (row.date, [row])
        elif row.date == found[0]:
            found[1].append(row)
    cursors: dict[int, RewardsCursor[WireReward]] = {}
    for index, (date, at_date) in oldest.items():
        # The walk's ``seen`` holds identities: a row read back matches its reward read again.
        seen = {fixed_fields(row) for row in at_date}
        cursors[index] = RewardsCursor(jobs[index].params() | {"to": date}, len(at_date), seen)
    return cursors, counts, total, names


def prepare(out: Path, state_path: Path, fmt: Format, wanted: RewardPlan) -> Prepared:
    """Check, extend and repair what an earlier run left (the lock is held)."""
    if fmt == "parquet":
        check_dataset(out)
    saved = read_state(state_path)
    written = output_written(out, fmt)
    plan = wanted
    done: dict[int, int | None] = {}
    extended_from: int | None = None
    # An output without rows (never written, or removed) starts afresh whatever the state says.
    pending: dict[int, frozenset[int]] = {}
    if saved is not None and written:
        plan = reconcile(saved, wanted, fmt, out)
        done = dict(saved.done)
        pending = dict(saved.pending)
        if plan.end != saved.plan.end:
            extended_from = saved.plan.end
    state = OutputState(plan, fmt, done, pending=pending)
    upgraded = written and _upgrade(out, state_path, state)
    if fmt == "parquet":
        prepared = _prepare_parts(out, state_path, state, extended_from, saved)
    else:
        prepared = _prepare_rows(out, state_path, state, extended_from, saved, written)
    prepared.upgraded = upgraded
    return prepared


def _upgrade(
    out: Path, state_path: Path, state: OutputState
) -> bool:
    """Rewrite an output of the earlier format (no status, no payouts) in today's, its days
    named pending first, so that a crash between the two leaves them to be read again: the next
    run reads them again, and their rows take the status, currency and payouts read."""
    days = upgrade_output(out, state.fmt, state.plan)
    if days is None:
        return False
    for job, found in days.items():
        state.pending[job] = state.pending.get(job, frozenset()) | found
    write_state(state_path, state)
    rewrite_legacy(out, state.fmt)
    return True


def _prepare_rows(
    out: Path, state_path: Path, state: OutputState, extended_from: int | None,
    saved: OutputState | None, written: bool,
) -> Prepared:
    """A JSONL or CSV output resumes by row: each unfinished job after its last written row; a
    finished job whose rows the output no longer holds in full is walked again."""
    plan, fmt, done = state.plan, state.fmt, state.done
    assert fmt != "parquet"
    jobs = plan.jobs()
    mine = [job for job in jobs if plan.mine(job)]
    repaired: str | None = None
    torn = written and not ends_whole(out)
    if written and all(job.index in done for job in mine):
        counts_known = all(done[job.index] is not None for job in mine)
        expected = sum(done[job.index] or 0 for job in mine)
        lines = count_lines(out) - (1 if fmt == "csv" else 0)
        if not torn and (not counts_known or lines == expected):
            if saved is None or saved.plan != plan:
                write_state(state_path, state)
            # Every piece is written: the run only checks.
            return Prepared(plan, done, {}, lines, set(), None, None,
                            pending=dict(state.pending))
        repaired = (
            "its last line was cut" if torn
            else f"it held {lines:,} rows where {expected:,} were written"
        )
    # Read before a cut last line is cut, so that a file that is not a reward output (or holds
    # rows of another backfill) is refused as it is.
    rows: Iterable[WireReward] = read_rows(out, fmt, torn=torn) if written else ()
    unfinished: dict[int, set[int]] = {}
    cursors, counts, total, names = _cursors_from_rows(plan, jobs, rows, done, unfinished)
    if torn:
        cut_torn_tail(out)
        repaired = repaired or "its last line was cut"
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
    if saved is None or saved.plan != plan or lost or not written or (
        saved.version < STATE_VERSION
    ):
        if not written:
            state.done = done = {}
            state.pending = {}
        write_state(state_path, state)
    pending = dict(state.pending)
    for index, days in unfinished.items():
        pending[index] = pending.get(index, frozenset()) | days
    return Prepared(
        plan, done, cursors, total, names, repaired, extended_from,
        job_rows={index: counts.get(index, 0) for index in cursors}, pending=pending,
    )


def _prepare_parts(
    out: Path, state_path: Path, state: OutputState, extended_from: int | None,
    saved: OutputState | None,
) -> Prepared:
    """Parquet resumes by piece: finished pieces are checked against their part files' row
    counts; a piece that did not finish is removed and walked again."""
    writer = PartWriter(out)
    for stray in out.glob(".part-*.tmp"):
        stray.unlink()
    done = state.done
    repaired: list[str] = []
    jobs = state.plan.jobs()
    for job in jobs:
        if job.index in done:
            rows = writer.rows_of(job.index)
            if done[job.index] is not None and rows != done[job.index]:
                repaired.append(f"piece {job.index} held {rows:,} of {done[job.index]:,} rows")
                writer.remove(job.index)
                del done[job.index]
                # Walked again: what it holds is read afresh, nothing is left to settle.
                state.pending.pop(job.index, None)
        elif part_files(out, job.index):
            writer.remove(job.index)
            state.pending.pop(job.index, None)
    kept = sum(n or 0 for n in done.values())
    complete = all(job.index in done for job in jobs if state.plan.mine(job))
    checked = saved is not None and saved.checked and saved.plan == state.plan and not repaired
    state.checked = checked and complete
    if (
        saved is None or saved.plan != state.plan or repaired
        or saved.version < STATE_VERSION
    ):
        write_state(state_path, state)
    return Prepared(
        state.plan, done, {}, kept, set(), "; ".join(repaired) or None, extended_from,
        pending=dict(state.pending),
    )


@dataclass(slots=True)
class OutputRead:
    """What the output holds, read back for a run: its rows in the ledger of the check, the days
    its rows hold pending rewards on (by job), and the accounts they name."""

    ledger: RewardLedger[WireReward]
    pending: dict[int, frozenset[int]]
    accounts: set[str]


def output_ledger(
    out: Path, fmt: Format, plan: RewardPlan, jobs: Sequence[RewardJob]
) -> OutputRead:
    """A ledger of ``jobs`` for the check, holding the rows the output holds already; with
    the days where those rows hold pending rewards: the rows say it whatever the state says
    (a state written by a version that a kill could stop between a piece's line and its
    pending days lost them)."""
    read = output_written(out, fmt)
    ledger: RewardLedger[WireReward] = job_ledger(jobs)
    pending: dict[int, set[int]] = {}
    accounts: set[str] = set()
    if read:
        by_index = {job.index: job for job in jobs}
        rows = read_part_rows(out) if fmt == "parquet" else read_rows(out, fmt)
        for row in rows:
            index = plan.job_of(row)
            job = by_index.get(index) if index is not None else None
            if job is not None:
                ledger.add(job, (row,))
                accounts.add(row.mining_account_name)
                if row.status == PENDING:
                    pending.setdefault(job.index, set()).add(row.date // DAY)
    return OutputRead(ledger, {job: frozenset(days) for job, days in pending.items()}, accounts)
