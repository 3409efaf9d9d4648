"""The one backfill engine (``txc_async._backfill.engine``) against an in-memory reward service,
with sinks that record what they are handed and when."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from txc_async._backfill.engine import BackfillSink, run_backfill
from txc_async._backfill.plan import RewardJob, RewardPlan
from txc_async._backfill.walk import WIRE_RECORDS, Page, R, WireReward
from txc_async._export.report import BackfillProgress
from txc_async._export.sinks import FileSink
from txc_async._export.state import OutputState, read_state, write_state
from txc_async._operations import Operation

START = 1704067200  # 2024-01-01
DAY = 86400
DAYS = 10
PLAN = RewardPlan(START, START + DAYS * DAY - 1, slice_seconds=2 * DAY)


def _reward(account: str, date: int, amount: str = "0.1") -> WireReward:
    return WireReward(account, amount, amount, "0", "0.1", "1 TH/s", date)


class Service:
    """Answers rewards of a range newest first (by date, then account), as the API does, from a
    book that a test may add to while a backfill runs."""

    def __init__(self, rewards: Sequence[WireReward]) -> None:
        self.book = list(rewards)
        self.first = frozenset(rewards)
        self.requests = 0

    async def fetch(self, records: Operation[Page[R]], params: Mapping[str, Any]) -> Page[R]:
        self.requests += 1
        await asyncio.sleep(0)  # let the other workers run, as a request would
        lo, hi = params.get("from", 0), params.get("to", 1 << 62)
        held = sorted(
            (r for r in self.book if lo <= r.date <= hi
             and params.get("account") in (None, r.mining_account_name)),
            key=lambda r: (-r.date, r.mining_account_name),
        )
        offset, limit = params["offset"], params["limit"]
        return Page(held[offset:offset + limit], limit)  # type: ignore[arg-type]

    def held_first(self, job: RewardJob) -> set[WireReward]:
        """What the book held in ``job``'s range before the backfill began."""
        return {r for r in self.first if job.start <= r.date <= job.end}


def _service() -> Service:
    # 10 days, 3 accounts, 40 rewards a day each: several pages to every two-day job.
    return Service([
        _reward(account, START + day * DAY + second * 60)
        for account in ("acc_a", "acc_b", "acc_c")
        for day in range(DAYS)
        for second in range(40)
    ])


class RecordingSink(BackfillSink[WireReward]):
    """Holds the engine to its contract: a page only for a job under way, a job finished once
    and only after every record it held was written, finds only once every job is finished,
    the check's end told once. When the first job finishes it books a reward behind that walk,
    which only the check can find."""

    def __init__(self, service: Service, jobs: Sequence[RewardJob]) -> None:
        self.service = service
        self.jobs = {job.index for job in jobs}
        self.delivered: list[WireReward] = []
        self.per_job: dict[int, set[WireReward]] = {}
        self.finished: set[int] = set()
        self.booked: list[WireReward] = []
        self.checks = 0

    def write(self, job: RewardJob, records: list[WireReward]) -> None:
        assert records, "an empty page"
        assert job.index not in self.finished, f"a page of job {job.index} after it finished"
        self.delivered.extend(records)
        self.per_job.setdefault(job.index, set()).update(records)

    def finish(self, job: RewardJob) -> None:
        assert job.index not in self.finished, f"job {job.index} finished twice"
        missing = self.service.held_first(job) - self.per_job.get(job.index, set())
        assert not missing, f"job {job.index} finished before {len(missing)} of its rows came"
        self.finished.add(job.index)
        if not self.booked:
            behind = _reward("acc_b", job.end, "7.7")  # newer than any page the walk read
            self.booked.append(behind)
            self.service.book.append(behind)

    def found(self, job: RewardJob, records: list[WireReward]) -> None:
        assert self.finished == self.jobs, "the check began before every job was finished"
        assert self.checks == 0, "a find after the check's end"
        assert all(job.start <= r.date <= job.end for r in records)
        self.delivered.extend(records)

    def checked(self) -> None:
        assert self.finished == self.jobs
        self.checks += 1


async def test_the_engine_hands_every_reward_to_its_sink_once_and_checks_at_the_end() -> None:
    service = _service()
    jobs = PLAN.jobs()
    sink = RecordingSink(service, jobs)
    yielded: list[WireReward] = []
    async for batch in run_backfill(
        service.fetch, jobs, sink, records=WIRE_RECORDS, concurrency=3
    ):
        yielded.extend(batch)
    twice = [r for r, n in Counter(sink.delivered).items() if n > 1]
    assert twice == [], "a reward was handed to the sink twice"
    assert sink.booked and set(sink.booked) <= set(sink.delivered), "the check was left out"
    assert set(sink.delivered) == set(service.book)
    assert sink.finished == {job.index for job in jobs}
    assert sink.checks == 1
    # The caller reads what the sink was handed, in the same order.
    assert yielded == sink.delivered


async def test_leaving_the_engine_early_stops_its_workers_at_once() -> None:
    service = _service()
    batches = run_backfill(
        service.fetch, PLAN.jobs(), BackfillSink(), records=WIRE_RECORDS, concurrency=3
    )
    await anext(batches)
    await batches.aclose()
    others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    assert others == []
    sent = service.requests
    await asyncio.sleep(0.05)
    assert service.requests == sent


class RecordingWriter:
    """A file output's writer that, at every call, holds the state file to what is durable: a
    job's count in the state never exceeds the rows of it made durable before."""

    def __init__(self, state_path: Path) -> None:
        self.state_path = state_path
        self.written: Counter[int] = Counter()
        self.durable: Counter[int] = Counter()

    def _state_is_behind_the_disk(self) -> None:
        state = read_state(self.state_path)
        assert state is not None
        for job, rows in state.done.items():
            assert rows is not None and rows <= self.durable[job], (
                f"job {job} marked done with {rows} rows, {self.durable[job]} on the disk"
            )

    def write(self, job: int, rows: Sequence[WireReward]) -> None:
        self._state_is_behind_the_disk()
        self.written[job] += len(rows)

    def finish(self, job: int) -> None:
        self._state_is_behind_the_disk()
        self.durable[job] = self.written[job]

    def close(self) -> None:
        self._state_is_behind_the_disk()


async def test_a_file_sink_marks_a_job_done_only_once_its_rows_are_on_the_disk(
    tmp_path: Path,
) -> None:
    service = _service()
    jobs = PLAN.jobs()
    state_path = tmp_path / "out.jsonl.progress"
    write_state(state_path, OutputState(PLAN, "jsonl", {}))
    writer = RecordingWriter(state_path)
    done: dict[int, int | None] = {}
    progress = BackfillProgress(jobs_total=len(jobs))
    reports: list[tuple[int, int]] = []
    with state_path.open("ab") as state:
        sink = FileSink(writer, state, done, {}, progress,
                        lambda p: reports.append((p.records, p.jobs_done)), set())
        async for _batch in run_backfill(
            service.fetch, jobs, sink, records=WIRE_RECORDS, concurrency=3
        ):
            if len(service.book) == len(service.first):
                # After the first page of the newest job, at its last second: behind its walk,
                # for the check to find.
                service.book.append(_reward("acc_c", jobs[0].end, "7.7"))
    writer.close()
    saved = read_state(state_path)
    assert saved is not None and saved.checked
    # Every job's count is what it wrote, the check's find included, and all of it is durable.
    assert saved.done == dict(writer.durable) == dict(writer.written) == done
    assert sum(writer.written.values()) == len(service.book) == progress.records
    assert reports[-1] == (len(service.book), len(jobs))
