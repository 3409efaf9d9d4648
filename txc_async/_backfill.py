"""Concurrent backfill of mining rewards: a range cut into disjoint jobs, walked by a few workers,
streamed through a bounded queue so memory stays flat however many records come back."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ._client import Client, RewardsCursor, walk_rewards
from ._errors import InvalidParameterError
from ._models import MiningReward
from ._validate import (
    ACCOUNT_NAME,
    ACCOUNT_NAME_RULE,
    check_int_range,
    check_pattern,
    check_time_range,
)

__all__ = [
    "RewardJob",
    "backfill_mining_rewards",
    "plan_reward_jobs",
    "run_reward_jobs",
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

    def params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"from": self.start, "to": self.end}
        if self.account is not None:
            params["account"] = self.account
        return params

    def contains(self, record: MiningReward) -> bool:
        return self.start <= record.date <= self.end and (
            self.account is None or record.mining_account_name == self.account
        )


def plan_reward_jobs(
    start: int, end: int, accounts: Sequence[str] | None, slice_seconds: int | None = None
) -> list[RewardJob]:
    """Cut ``start..end`` (and the accounts) into disjoint jobs, newest slice first.

    The plan depends only on its arguments, so a resumed run finds the same jobs.
    """
    if slice_seconds is None:
        slice_seconds = ALL_ACCOUNTS_SLICE if not accounts else PER_ACCOUNT_SLICE
    slices: list[tuple[int, int]] = []
    hi = end
    while hi >= start:
        lo = max(start, hi - slice_seconds + 1)
        slices.append((lo, hi))
        hi = lo - 1
    targets: list[str | None] = list(accounts) if accounts else [None]
    jobs: list[RewardJob] = []
    for lo, hi in slices:
        for account in targets:
            jobs.append(RewardJob(len(jobs), account, lo, hi))
    return jobs


_DONE = object()


async def run_reward_jobs(
    client: Client,
    jobs: Iterable[RewardJob],
    *,
    concurrency: int,
    cursors: Mapping[int, RewardsCursor] | None = None,
) -> AsyncIterator[tuple[RewardJob, list[MiningReward], bool]]:
    """Walk ``jobs`` with ``concurrency`` workers; yield ``(job, new records, job finished)``.

    A job's records come in its own newest-first order. ``cursors`` resumes jobs part-way.
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
                async for page in walk_rewards(client, cursor):
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
    start: object, end: object, accounts: object, concurrency: object
) -> tuple[int, int, list[str] | None, int]:
    """The backfill's arguments checked and normalised."""
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
            check_pattern(
                "accounts", name, ACCOUNT_NAME, f"each {ACCOUNT_NAME_RULE}"
            )
            if name not in names:
                names.append(name)
        if not names:
            names = None
    return lo, hi, names, check_int_range("concurrency", concurrency, 1, 256)


async def backfill_mining_rewards(
    client: Client,
    *,
    start: int | datetime,
    end: int | datetime,
    accounts: Sequence[str] | None = None,
    concurrency: int = 8,
) -> AsyncIterator[MiningReward]:
    """Every mining reward dated ``start..end`` (inclusive) exactly once, fetched concurrently.

    Without ``accounts`` the rewards of every account of the key come back, each naming its
    account. Records arrive as pages complete, not in date order. Memory stays flat: at most
    ``3 * concurrency`` pages are held at once.
    """
    lo, hi, names, workers = check_backfill_args(start, end, accounts, concurrency)
    async for _job, page, _finished in run_reward_jobs(
        client, plan_reward_jobs(lo, hi, names), concurrency=workers
    ):
        for record in page:
            yield record
