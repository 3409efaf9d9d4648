"""A backfill's plan: a range (and its accounts) cut into disjoint jobs whose numbers stay fixed as
the range is extended, and the fixed shares of them that several machines can take."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .._models import MiningReward
from .walk import WireReward

__all__ = [
    "ALL_ACCOUNTS_SLICE",
    "PER_ACCOUNT_SLICE",
    "RewardJob",
    "RewardPlan",
    "plan_reward_jobs",
]

_DAY = 86_400
#: Slice length without named accounts: a week of every account's rewards is a few pages.
ALL_ACCOUNTS_SLICE = 7 * _DAY
#: Slice length per named account: a year of daily rewards is four pages.
PER_ACCOUNT_SLICE = 365 * _DAY

@dataclass(frozen=True, slots=True)
class RewardJob:
    """One disjoint piece of a backfill: one account (or all) over ``start..end`` inclusive."""

    index: int
    account: str | None
    start: int
    end: int

    def covered(self, date: int) -> float:
        """The share of the job's range a newest-first walk has covered on reaching ``date``."""
        return (self.end - date) / max(1, self.end - self.start)

    def params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"from": self.start, "to": self.end}
        if self.account is not None:
            params["account"] = self.account
        return params


@dataclass(frozen=True, slots=True)
class RewardPlan:
    """A backfill's pieces: ``start..end`` cut at the ends of earlier runs (``extended_from``,
    ascending) into segments, each segment cut into slices, each slice into one job per account
    (or one for all accounts). Job numbers only grow as the range is extended, so the jobs of an
    earlier run keep their numbers, and ``shard`` (``(i, n)``: the jobs whose number is ``i - 1``
    modulo ``n``) is a fixed share whatever the range's end.
    """

    start: int
    end: int
    accounts: tuple[str, ...] = ()
    slice_seconds: int = 0
    extended_from: tuple[int, ...] = ()
    shard: tuple[int, int] = (1, 1)
    #: For `job_of`: each segment's first and last moment (ascending) and its first job number,
    #: and each named account's place; made once, so that placing a row costs a binary search
    #: among the segments and one look-up, however often the range was extended.
    _lows: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _highs: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _firsts: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _places: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.slice_seconds:
            object.__setattr__(
                self, "slice_seconds", PER_ACCOUNT_SLICE if self.accounts else ALL_ACCOUNTS_SLICE
            )
        segments = self.segments()
        per_slice = max(1, len(self.accounts))
        firsts: list[int] = []
        first = 0
        for lo, hi in segments:
            firsts.append(first)
            first += ((hi - lo) // self.slice_seconds + 1) * per_slice
        object.__setattr__(self, "_lows", tuple(lo for lo, _ in segments))
        object.__setattr__(self, "_highs", tuple(hi for _, hi in segments))
        object.__setattr__(self, "_firsts", tuple(firsts))
        # The first place of a name listed twice, as ``tuple.index`` gives it.
        places: dict[str, int] = {}
        for place, name in enumerate(self.accounts):
            places.setdefault(name, place)
        object.__setattr__(self, "_places", places)

    def segments(self) -> list[tuple[int, int]]:
        bounds = [self.start, *(e + 1 for e in self.extended_from), self.end + 1]
        return [(lo, hi - 1) for lo, hi in itertools.pairwise(bounds) if lo < hi]

    def jobs(self) -> list[RewardJob]:
        """Every job of the plan, all shards included."""
        targets: list[str | None] = list(self.accounts) or [None]
        jobs: list[RewardJob] = []
        for lo, hi in self.segments():
            top = hi
            while top >= lo:
                bottom = max(lo, top - self.slice_seconds + 1)
                for account in targets:
                    jobs.append(RewardJob(len(jobs), account, bottom, top))
                top = bottom - 1
        return jobs

    def mine(self, job: RewardJob) -> bool:
        """Whether ``job`` belongs to this plan's shard."""
        index, count = self.shard
        return job.index % count == index - 1

    def job_of(self, record: MiningReward | WireReward) -> int | None:
        """The number of the job whose range holds ``record``, or ``None``: a binary search among
        the segments, then arithmetic (the jobs of a segment are its slices, newest first, each
        one per account)."""
        date = record.date
        if not self.start <= date <= self.end:
            return None
        segment = bisect.bisect_right(self._lows, date) - 1
        if segment < 0 or date > self._highs[segment]:
            return None
        per_slice = max(1, len(self.accounts))
        position = (
            self._firsts[segment]
            + (self._highs[segment] - date) // self.slice_seconds * per_slice
        )
        if not self.accounts:
            return position
        place = self._places.get(record.mining_account_name)
        return None if place is None else position + place


def plan_reward_jobs(
    start: int, end: int, accounts: Sequence[str] | None, slice_seconds: int | None = None
) -> list[RewardJob]:
    """Cut ``start..end`` (and the accounts) into disjoint jobs, newest slice first.

    The plan depends only on its arguments, so a resumed run finds the same jobs.
    """
    return RewardPlan(start, end, tuple(accounts or ()), slice_seconds or 0).jobs()
