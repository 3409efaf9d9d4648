"""Which columns a table of records shows first: per record type of the hand-written commands,
the few that identify a record and say what it is worth (the rest are in the record view and
with ``--json``); for any other record, the usual identifying and money fields first."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Columns", "columns_for"]


@dataclass(frozen=True, slots=True)
class Columns:
    """A table's columns in the order they matter: ``essential`` ones (the record view is shown
    when one of them cannot fit), then ``more`` while the width lasts; no other column (the
    rest are in the record view and ``--json``)."""

    essential: tuple[str, ...]
    more: tuple[str, ...] = ()


#: Fields that identify a record or say what it is worth, in the order a generic table shows
#: them (before the rest, in the order of the answer).
FIRST = (
    "id", "order_id", "name", "market", "ticker", "currency", "asset", "side", "type", "status",
    "amount", "price", "activation_price", "deal_stock", "deal_money", "left", "fee",
    "deal_fee", "total", "timestamp", "created_at", "created", "date", "time",
)


def _by_type() -> dict[type, Columns]:
    import txc_async

    return {
        txc_async.Investment: Columns(
            ("id", "plan.ticker", "status", "amount"),
            ("interest_paid", "payment_time", "created", "plan.percent", "plan.duration"),
        ),
        txc_async.MiningReward: Columns(
            ("mining_account_name", "date", "status", "total_reward"),
            ("reward", "fee", "reward_currency", "hash_rate", "payout_destination",
             "payout_time"),
        ),
    }


def columns_for(kind: type | None, names: Sequence[str]) -> tuple[list[str], list[str]]:
    """The candidate columns of a table of records of type ``kind`` whose non-empty fields are
    ``names``, in order, and the essential ones among them."""
    chosen = _by_type().get(kind) if kind is not None else None
    if chosen is not None:
        wanted = [*chosen.essential, *chosen.more]
        candidates = [name for name in wanted if name in names]
        return candidates, [name for name in chosen.essential if name in names]
    first = [name for name in FIRST if name in names]
    candidates = first + [name for name in names if name not in first]
    return candidates, candidates[:2]
