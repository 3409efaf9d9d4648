"""The public concurrent backfill of mining rewards: its arguments checked, then the backfill
engine with no sink of its own, its batches streamed to the caller record by record."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterable, Sequence
from contextlib import aclosing
from datetime import datetime

from .._errors import InvalidParameterError
from .._models import MiningReward
from .._naming import named_iterator
from .._validate import check_account_filter, check_int_range, check_time_range
from .engine import BackfillSink, run_backfill
from .plan import plan_reward_jobs
from .walk import REWARD_RECORDS, RewardsClient

__all__ = ["backfill_mining_rewards", "check_backfill_args"]


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
    Each piece is walked as ``txc_async._backfill.walk.walk_rewards`` explains, so rewards booked
    while the backfill runs never come back twice; once every piece is done, a check (see
    ``txc_async._backfill.ledger``) returns what the server booked behind the walks meanwhile:
    every reward the server holds in the range when the check begins comes back, once. Memory:
    at most ``3 * concurrency`` pages are held at once, plus per worker the records of one date
    (see the walk), plus for the check 24 bytes per record, its date and digest (2.4 MB per
    100,000 records).
    """
    lo, hi, names, workers = check_backfill_args(client, start, end, accounts, concurrency)
    sink: BackfillSink[MiningReward] = BackfillSink()
    async with aclosing(run_backfill(
        client._rewards_page, plan_reward_jobs(lo, hi, names), sink,
        records=REWARD_RECORDS, concurrency=workers,
    )) as batches:
        async for batch in batches:
            for record in batch:
                yield record
