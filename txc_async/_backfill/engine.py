"""The one backfill engine: jobs walked by a few workers, every page added to the ledger and handed
to a sink, then the check that ends every walk, whose finds go to the same sink. The public
iterator, the file and Parquet exports and the stream to a pipe are sinks of this one loop."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncGenerator, Hashable, Iterable, Mapping, Sequence
from contextlib import aclosing
from typing import Any, Generic

from .._operations import Operation
from .ledger import RewardLedger, check_rewards
from .plan import RewardJob
from .walk import FetchPage, Page, R, RewardsCursor, walk_rewards

__all__ = ["BackfillSink", "job_ledger", "run_backfill", "run_reward_jobs"]


class BackfillSink(Generic[R]):
    """Where a backfill's records go, and what it is told as the run goes on.

    The engine calls, in this order for each job: `write` for every page of its walk, then
    `finish` once; once every job is finished, `found` for what the check finds in a
    job's range and `seen_again` for what it reads again, then `checked` once. A record
    reaches the sink once, by ``write`` or by ``found``. The methods are synchronous: a sink
    that blocks slows the workers, as a slow reader of the queue does.

    This base class takes nothing and is told nothing: it serves a caller that reads the
    batches `run_backfill` yields (the public iterator).
    """

    def write(self, job: RewardJob, records: list[R]) -> None:
        """A page of ``job``'s walk (never empty), newest first."""

    def finish(self, job: RewardJob) -> None:
        """``job``'s walk is over: every record of it was given to `write` before."""

    def found(self, job: RewardJob, records: list[R]) -> None:
        """Records the check found in ``job``'s range (a job finished before), never empty."""

    def seen_again(self, job: RewardJob, records: list[R]) -> None:
        """Records the check read again in ``job``'s range that reached the sink before (by
        `write` or `found`, in this run or, for a resumed export, an earlier one), as the
        server holds them now: a reward that settled since shows its new state. Never empty;
        they are not yielded again."""

    def checked(self) -> None:
        """The check is over: nothing more comes."""


def job_ledger(jobs: Iterable[RewardJob]) -> RewardLedger[Any]:
    """A ledger of the ranges of ``jobs``, keyed by job, for the check."""
    ledger: RewardLedger[Any] = RewardLedger()
    for job in jobs:
        ledger.add_range(job, job.params())
    return ledger


_DONE = object()


async def run_reward_jobs(
    fetch: FetchPage,
    jobs: Iterable[RewardJob],
    *,
    concurrency: int,
    records: Operation[Page[R]],
    cursors: Mapping[int, RewardsCursor[R]] | None = None,
) -> AsyncGenerator[tuple[RewardJob, list[R], bool], None]:
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
                async for page in walk_rewards(fetch, cursor, records):
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


async def run_backfill(
    fetch: FetchPage,
    jobs: Sequence[RewardJob],
    sink: BackfillSink[R],
    *,
    records: Operation[Page[R]],
    concurrency: int,
    ledger: RewardLedger[R] | None = None,
    cursors: Mapping[int, RewardsCursor[R]] | None = None,
) -> AsyncGenerator[list[R], None]:
    """Walk ``jobs`` and check them, handing every record to ``sink`` once; yield each batch
    right after the sink took it (a caller that only wants the sink's work drains it).

    ``ledger`` (see `job_ledger`) holds the ranges the check covers and what earlier runs
    returned there, for a resumed export; by default the ranges of ``jobs``, empty. ``cursors``
    resumes jobs part-way. The check begins once every job is finished: a run that fails or is
    left early ends without it (and without `BackfillSink.checked`). Leaving early cancels
    the workers at once.
    """
    if ledger is None:
        ledger = job_ledger(jobs)
    async with aclosing(run_reward_jobs(
        fetch, jobs, concurrency=concurrency, records=records, cursors=cursors
    )) as pages:
        async for job, page, finished in pages:
            if page:
                ledger.add(job, page)
                sink.write(job, page)
                yield page
            if finished:
                sink.finish(job)
    # Left at a yield, the check holds no task of its own: nothing to close at once.
    def seen_again(key: Hashable, again: list[Any]) -> None:
        assert isinstance(key, RewardJob)
        sink.seen_again(key, again)

    async for key, fresh in check_rewards(fetch, ledger, records, seen_again):
        assert isinstance(key, RewardJob)
        sink.found(key, fresh)
        yield fresh
    sink.checked()
