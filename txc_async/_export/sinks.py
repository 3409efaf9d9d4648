"""The export's sinks of the backfill engine: a file output with its state (JSONL, CSV or a
Parquet dataset) and JSON lines to a stream. Each counts what it delivers for the progress
display and the summary."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import BinaryIO, Protocol

from .._backfill.engine import BackfillSink
from .._backfill.plan import RewardJob
from .._backfill.walk import WireReward, fixed_fields
from .report import BackfillProgress
from .rowfile import encode_jsonl
from .state import mark_checked, mark_done

__all__ = [
    "DAY", "PENDING", "ExportSink", "FileSink", "OnProgress", "PieceWriter", "StreamSink",
]

_ACCOUNT_OF = attrgetter("mining_account_name")

OnProgress = Callable[[BackfillProgress], None]
DAY = 86_400
#: The status of a reward that is not final yet: its row is read again by a later run.
PENDING = "pending"


class ExportSink(BackfillSink[WireReward]):
    """A sink that keeps ``progress`` and the accounts it delivered, and reports after each
    page, each finished job and each find of the check. Subclasses deliver the rows."""

    def __init__(self, progress: BackfillProgress, on_progress: OnProgress | None,
                 accounts: set[str] | None = None) -> None:
        self.progress = progress
        self.accounts: set[str] = set() if accounts is None else accounts
        self._on_progress = on_progress
        #: The share walked of each job under way.
        self._coverage: dict[int, float] = {}

    def write(self, job: RewardJob, records: list[WireReward]) -> None:
        self._deliver(job.index, records)
        self._count(records)
        self._coverage[job.index] = job.covered(records[-1].date)
        self._report()

    def finish(self, job: RewardJob) -> None:
        self._settle(job.index)
        self.progress.jobs_done += 1
        self._coverage.pop(job.index, None)
        self._report()

    def found(self, job: RewardJob, records: list[WireReward]) -> None:
        self._deliver(job.index, records)
        self._settle_found(job.index, len(records))
        self._count(records)
        self._report()

    def close(self) -> None:
        """The run is over: the progress says so, one last time."""
        self.progress.fraction = 1.0
        self.progress.finished = True
        if self._on_progress is not None:
            self._on_progress(self.progress)

    def _count(self, records: Sequence[WireReward]) -> None:
        self.progress.records += len(records)
        self.accounts.update(map(_ACCOUNT_OF, records))

    def _report(self) -> None:
        if self._on_progress is not None:
            self.progress.measure(self._coverage)
            self._on_progress(self.progress)

    def _deliver(self, job: int, records: Sequence[WireReward]) -> None:
        raise NotImplementedError

    def _settle(self, job: int) -> None:
        """``job``'s walk is over and every row of it delivered."""

    def _settle_found(self, job: int, rows: int) -> None:
        """``rows`` rows found by the check in ``job``'s range were delivered."""


class StreamSink(ExportSink):
    """JSON lines to a stream, flushed page by page: no state, no resume."""

    def __init__(self, stream: BinaryIO, progress: BackfillProgress,
                 on_progress: OnProgress | None) -> None:
        super().__init__(progress, on_progress)
        self._stream = stream

    def _deliver(self, job: int, records: Sequence[WireReward]) -> None:
        self._stream.write(encode_jsonl(records))
        self._stream.flush()


class PieceWriter(Protocol):
    """Where a file output's rows go: ``RowFile`` (JSONL, CSV) or ``PartWriter`` (Parquet)."""

    def write(self, job: int, rows: Sequence[WireReward]) -> None:
        """Rows of ``job``, in its walk's order."""

    def finish(self, job: int) -> object:
        """Every row of ``job`` written so far reaches the disk."""

    def close(self) -> None: ...


class FileSink(ExportSink):
    """Rows to a file output through ``writer``, and each finished job to its state (see
    ``state.open_to_append``), counted: a job's rows reach the disk before its record does, so
    a job the state calls done is in the output whatever interrupts the run. The check's finds
    are added to their job's count the same way, and the state says when the check is over.
    A job's record names, in the same line, the days its rows hold pending rewards on (those
    earlier runs wrote for it included: ``pending``), for a later run to read again: the rows,
    the count and the pending days of a step are in the state together or not at all."""

    def __init__(
        self, writer: PieceWriter, state: BinaryIO, done: dict[int, int | None],
        job_rows: dict[int, int], progress: BackfillProgress, on_progress: OnProgress | None,
        accounts: set[str], pending: dict[int, frozenset[int]] | None = None,
        checked_before: bool = False,
    ) -> None:
        super().__init__(progress, on_progress, accounts)
        self._writer = writer
        self._state = state
        #: Whether the state says the check ran already, and nothing was recorded since: a
        #: check of a finished output that finds nothing changes nothing.
        self._checked = checked_before
        self._done = done
        #: Rows of each job under way, with those earlier runs wrote for a job resumed part-way.
        self._job_rows = dict(job_rows)
        #: Per job, the days holding pending rewards: earlier runs' and this run's.
        self.pending: dict[int, set[int]] = {
            job: set(days) for job, days in (pending or {}).items()
        }
        #: The rewards this run wrote pending, per job (one row each: a walk and its check
        #: return a reward once), while no newer state of them was read.
        self._pending_rewards: dict[int, set[tuple[str, int, str]]] = {}
        #: Rewards this run wrote pending that the check read again settled, per job: their
        #: rows are replaced once the run is over (see ``_export.settle``).
        self.settled_in_run: dict[int, list[WireReward]] = {}

    def write(self, job: RewardJob, records: list[WireReward]) -> None:
        self._job_rows[job.index] = self._job_rows.get(job.index, 0) + len(records)
        super().write(job, records)

    def _deliver(self, job: int, records: Sequence[WireReward]) -> None:
        self._writer.write(job, records)
        pending = [r for r in records if r.status == PENDING]
        if pending:
            self.pending.setdefault(job, set()).update(r.date // DAY for r in pending)
            self._pending_rewards.setdefault(job, set()).update(map(fixed_fields, pending))

    @property
    def pending_rows(self) -> dict[tuple[int, int], int]:
        """The rows this run wrote pending that are still so, per ``(job, day)``."""
        return dict(Counter(
            (job, date // DAY) for job, rewards in self._pending_rewards.items()
            for _, date, _ in rewards
        ))

    def seen_again(self, job: RewardJob, records: list[WireReward]) -> None:
        """A reward this run wrote pending that the check read again final is kept for its row
        to be replaced: the output ends with the latest state read."""
        written = self._pending_rewards.get(job.index)
        if not written:
            return
        for r in records:
            key = fixed_fields(r)
            if r.status != PENDING and key in written:
                written.discard(key)
                self.settled_in_run.setdefault(job.index, []).append(r)

    def _settle(self, job: int) -> None:
        self._writer.finish(job)
        rows = self._done[job] = self._job_rows.pop(job, 0)
        self._checked = False
        mark_done(self._state, job, rows, self.pending.get(job, ()))

    def _settle_found(self, job: int, rows: int) -> None:
        self._writer.finish(job)
        count = self._done.get(job)
        # None: an older version marked the job done without counting its rows; it stays so.
        if count is not None:
            count = self._done[job] = count + rows
        self._checked = False
        mark_done(self._state, job, count, self.pending.get(job, ()))

    def checked(self) -> None:
        if not self._checked:
            mark_checked(self._state)
            self._checked = True
