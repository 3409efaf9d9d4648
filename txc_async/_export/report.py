"""What an export tells its caller: where it stands while it runs (``BackfillProgress``), what it
did when it ends (``BackfillSummary``), and how a moment of its range is written in messages."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["BackfillProgress", "BackfillSummary", "format_moment"]


@dataclass(slots=True)
class BackfillProgress:
    """Where a backfill stands, for a progress display. ``phase`` is ``"backfill"`` while the
    range is walked and checked, then ``"settle"`` while the days that held pending rewards are
    read again (a new progress: its records, jobs and fraction count that reading alone)."""

    records: int = 0
    records_before: int = 0
    jobs_total: int = 0
    jobs_done: int = 0
    fraction: float = 0.0
    finished: bool = False
    started: float = field(default_factory=time.monotonic)
    phase: str = "backfill"

    def measure(self, coverage: Mapping[int, float]) -> None:
        """Set ``fraction`` from the jobs done and ``coverage``: the share walked of each job
        under way."""
        self.fraction = (
            (self.jobs_done + sum(coverage.values())) / self.jobs_total if self.jobs_total else 1.0
        )


@dataclass(frozen=True, slots=True)
class BackfillSummary:
    """What a backfill did. ``repaired`` says what a rerun found damaged and fixed.

    Settling (a file output): ``settled`` counts the rewards that were pending and are final
    now, by their status (``{"successful": 2, "canceled": 1}``); ``still_pending`` the rows of
    the output holding a reward still pending (read again by the next run); ``read_again`` the
    rewards read again; ``upgraded``: the output was of the earlier format, without status and
    payouts, and was rewritten in today's (its days are read again).

    What the run checked: every run (a rerun of a finished output too) ends with the check over
    every day of its range (its shard's pieces), against the rows the output holds, so a reward
    booked on any day since an earlier run read it is found and written. ``checked_as_of`` is
    the Unix time the run began (``None``: it did not check): every reward the server held in
    the range then is in the output; one booked later is not checked, and the next run finds
    it. ``jobs_walked`` counts the pieces the run walked (none: it only checked).
    """

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
    settled: Mapping[str, int] = field(default_factory=dict)
    still_pending: int = 0
    read_again: int = 0
    upgraded: bool = False
    checked_as_of: float | None = None
    jobs_walked: int = 0

    @property
    def complete_already(self) -> bool:
        """Whether the output held the whole range already: the run walked nothing, the check
        found nothing new, and nothing was repaired, extended or upgraded."""
        return self.jobs_walked == 0 and self.records_written == 0 and self.jobs_total > 0 and (
            self.jobs_resumed == 0 and self.repaired is None and self.extended_from is None
            and not self.upgraded
        )

    def checked(self) -> str:
        """What the run checked, in words: ``"checked as of 2025-01-02 06:00:03 UTC"`` (a
        reward booked later is not), or ``"not checked"``."""
        if self.checked_as_of is None:
            return "not checked"
        moment = datetime.fromtimestamp(self.checked_as_of, UTC)
        return f"checked as of {moment:%Y-%m-%d %H:%M:%S} UTC"

    def settling(self) -> str | None:
        """How rewards settled, in words (``"3 settled: 2 successful, 1 canceled; 1 still
        pending"``), or ``None`` when nothing was pending."""
        total = sum(self.settled.values())
        if not total and not self.still_pending and not self.read_again:
            return None
        text = f"{total:,} settled"
        if total:
            text += ": " + ", ".join(
                f"{count:,} {status}" for status, count in sorted(
                    self.settled.items(), key=lambda item: (-item[1], item[0]))
            )
        return text + f"; {self.still_pending:,} still pending"


def format_moment(seconds: int, *, end: bool = False) -> str:
    """A date (``2024-12-31``) when ``seconds`` is the day's first second (or last, for an end),
    else an ISO datetime in UTC."""
    moment = datetime.fromtimestamp(seconds + (1 if end else 0), UTC)
    if moment.hour == moment.minute == moment.second == 0:
        day = datetime.fromtimestamp(seconds, UTC) if end else moment
        return day.date().isoformat()
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")
