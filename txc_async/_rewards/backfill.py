"""Concurrent backfill of mining rewards: a range cut into disjoint jobs, walked by a few workers,
streamed through a bounded queue so memory stays flat however many records come back."""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from .._errors import InvalidParameterError
from .._models import MiningReward
from .._naming import named_iterator
from .._operations import Operation
from .._validate import check_account_filter, check_int_range, check_time_range
from .ledger import RewardLedger, check_rewards
from .walk import (
    REWARD_RECORDS,
    Page,
    RewardsClient,
    RewardsCursor,
    WireReward,
    walk_rewards,
)

__all__ = [
    "RewardJob",
    "RewardPlan",
    "backfill_mining_rewards",
    "plan_reward_jobs",
    "run_reward_jobs",
]

_DAY = 86_400
#: Slice length without named accounts: a week of every account's rewards is a few pages.
ALL_ACCOUNTS_SLICE = 7 * _DAY
#: Slice length per named account: a year of daily rewards is four pages.
PER_ACCOUNT_SLICE = 365 * _DAY

R = TypeVar("R", MiningReward, WireReward)


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

    def __post_init__(self) -> None:
        if not self.slice_seconds:
            object.__setattr__(
                self, "slice_seconds", PER_ACCOUNT_SLICE if self.accounts else ALL_ACCOUNTS_SLICE
            )

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
        """The number of the job whose range holds ``record``, or ``None``."""
        date = record.date
        if not self.start <= date <= self.end:
            return None
        first = 0
        per_slice = max(1, len(self.accounts))
        for lo, hi in self.segments():
            slices = (hi - lo) // self.slice_seconds + 1
            if lo <= date <= hi:
                position = first + (hi - date) // self.slice_seconds * per_slice
                if not self.accounts:
                    return position
                try:
                    return position + self.accounts.index(record.mining_account_name)
                except ValueError:
                    return None
            first += slices * per_slice
        return None


def plan_reward_jobs(
    start: int, end: int, accounts: Sequence[str] | None, slice_seconds: int | None = None
) -> list[RewardJob]:
    """Cut ``start..end`` (and the accounts) into disjoint jobs, newest slice first.

    The plan depends only on its arguments, so a resumed run finds the same jobs.
    """
    return RewardPlan(start, end, tuple(accounts or ()), slice_seconds or 0).jobs()


_DONE = object()


async def run_reward_jobs(
    client: RewardsClient,
    jobs: Iterable[RewardJob],
    *,
    concurrency: int,
    records: Operation[Page[R]],
    cursors: Mapping[int, RewardsCursor[R]] | None = None,
) -> AsyncIterator[tuple[RewardJob, list[R], bool]]:
    """Walk ``jobs`` with ``concurrency`` workers; yield ``(job, new records, job finished)``.

    A job's records come in its own newest-first order (``records`` says how they decode, typed
    or as wire strings). ``cursors`` resumes jobs part-way.
    Pages wait in a queue of ``2 * concurrency``, so a slow consumer slows the workers instead of
    filling memory. Leaving the iterator early cancels the workers.
    """
    pending = deque(jobs)
    resume = dict(cursors or {})
    queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=2 * concurrency)

    async def worker() -> None:
        try:
            while pending:
                job = pending.popleft()
                cursor = resume.pop(job.index, None) or RewardsCursor(job.params())
                async for page in walk_rewards(client._rewards_page, cursor, records):
                    await queue.put((job, page, False))
                await queue.put((job, [], True))
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # handed to the consumer, which re-raises it
            await queue.put(exc)
            return
        await queue.put(_DONE)

    workers = [
        asyncio.create_task(worker()) for _ in range(max(1, min(concurrency, len(pending))))
    ]
    running = len(workers)
    try:
        while running:
            item = await queue.get()
            if item is _DONE:
                running -= 1
            elif isinstance(item, BaseException):
                raise item
            else:
                yield item
    finally:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)


def check_backfill_args(
    client: object, start: object, end: object, accounts: object, concurrency: object
) -> tuple[int, int, list[str] | None, int]:
    """The backfill's arguments checked and normalised."""
    if not callable(getattr(client, "_rewards_page", None)):
        raise InvalidParameterError(
            "client", f"must be a txc_async.Client, not {type(client).__name__}"
        )
    if start is None:
        raise InvalidParameterError("start", "is required")
    if end is None:
        raise InvalidParameterError("end", "is required")
    lo, hi = check_time_range(start, end)
    assert lo is not None and hi is not None
    names: list[str] | None = None
    if accounts is not None:
        if isinstance(accounts, str) or not isinstance(accounts, Iterable):
            raise InvalidParameterError("accounts", "must be a list of account names")
        names = []
        for name in accounts:
            check_account_filter(name, "accounts")
            if name not in names:
                names.append(name)
        if not names:
            # An empty list (from an empty configuration, say) is no request for every account.
            raise InvalidParameterError(
                "accounts", "must name at least one account (None: every account)"
            )
    return lo, hi, names, check_int_range("concurrency", concurrency, 1, 256)


@named_iterator
async def backfill_mining_rewards(
    client: RewardsClient,
    *,
    start: int | datetime,
    end: int | datetime,
    accounts: Sequence[str] | None = None,
    concurrency: int = 8,
) -> AsyncGenerator[MiningReward, None]:
    """Every mining reward dated ``start..end`` (inclusive) exactly once, fetched concurrently.

    Without ``accounts`` (None) the rewards of every account of the key come back, each naming
    its account; an empty list is refused. Records arrive as pages complete, not in date order.
    Each piece is walked as ``txc_async._walk.walk_rewards`` explains, so rewards booked while
    the backfill runs never come back twice; once every piece is done, a check (see
    ``txc_async._ledger``) returns what the server booked behind the walks meanwhile: every
    reward the server holds in the range when the check begins comes back, once. Memory: at most
    ``3 * concurrency`` pages are held at once, plus per worker the records of one date (see the
    walk), plus for the check 24 bytes per record, its date and digest (2.4 MB per 100,000
    records).
    """
    lo, hi, names, workers = check_backfill_args(client, start, end, accounts, concurrency)
    jobs = plan_reward_jobs(lo, hi, names)
    ledger: RewardLedger[MiningReward] = RewardLedger()
    for job in jobs:
        ledger.add_range(job.index, job.params())
    async for job, page, _finished in run_reward_jobs(
        client, jobs, concurrency=workers, records=REWARD_RECORDS
    ):
        ledger.add(job.index, page)
        for record in page:
            yield record
    async for _key, fresh in check_rewards(client._rewards_page, ledger, REWARD_RECORDS):
        for record in fresh:
            yield record
