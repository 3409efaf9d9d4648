"""A backfill's plan: which job holds a row, exact and cheap however often the range was
extended (a daily run extends it once a day)."""

from __future__ import annotations

import time

from txc_async._backfill.plan import RewardPlan
from txc_async._backfill.walk import WireReward

START = 1704067200  # 2024-01-01
DAY = 86400


def _daily(days: int, accounts: tuple[str, ...] = ()) -> RewardPlan:
    """The plan of an output extended by one day, ``days`` times."""
    return RewardPlan(
        START, START + (days + 1) * DAY - 1, accounts,
        extended_from=tuple(START + (d + 1) * DAY - 1 for d in range(days)),
    )


def _row(account: str, date: int) -> WireReward:
    return WireReward(account, "1", "1", "0", "1", "1", date)


def test_a_row_of_a_plan_extended_daily_maps_to_the_job_holding_it() -> None:
    for accounts in ((), ("a", "b", "c", "b")):
        plan = _daily(730, accounts)
        jobs = plan.jobs()
        assert len(plan.segments()) == 731
        for job in jobs[:: max(1, len(jobs) // 400)] + jobs[-3:]:
            for date in (job.start, job.end, (job.start + job.end) // 2):
                # A name listed twice maps to its first place, as the plan's jobs do.
                account = job.account or "x"
                expected = next(j.index for j in jobs
                                if j.account in (None, account) and j.start <= date <= j.end)
                assert plan.job_of(_row(account, date)) == expected
        assert plan.job_of(_row("a", START - 1)) is None
        assert plan.job_of(_row("a", plan.end + 1)) is None
        if accounts:
            assert plan.job_of(_row("not-named", START + DAY)) is None


def _seconds_per_row(plan: RewardPlan, rows: list[WireReward]) -> float:
    best = float("inf")
    for _ in range(3):
        began = time.perf_counter()
        for row in rows:
            plan.job_of(row)
        best = min(best, time.perf_counter() - began)
    return best / len(rows)


def test_placing_a_row_costs_about_the_same_after_730_daily_extensions() -> None:
    """A linear search among the segments makes every row of a daily-extended output cost
    hundreds of times more after two years (16 s per 100,000 rows); a binary search, a few
    steps more."""
    once = RewardPlan(START, START + 731 * DAY - 1)
    daily = _daily(730)
    rows = [_row("a", START + (i * 7919 % 731) * DAY + i % DAY) for i in range(20_000)]
    ratio = _seconds_per_row(daily, rows) / _seconds_per_row(once, rows)
    assert ratio < 5, f"a row costs {ratio:.1f} times more after 730 extensions"
