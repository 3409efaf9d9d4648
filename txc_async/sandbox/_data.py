"""Deterministic synthetic data of the sandbox: rewards computed from their index, never stored."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

__all__ = ["InvestmentBook", "RewardBook", "mix", "money"]

_MASK = (1 << 64) - 1


def mix(*values: int) -> int:
    """A 64-bit hash of integers (splitmix64 rounds): cheap, stable across runs and platforms."""
    h = 0x9E3779B97F4A7C15
    for value in values:
        h = (h ^ (value & _MASK)) & _MASK
        h = (h + 0x9E3779B97F4A7C15) & _MASK
        h = ((h ^ (h >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        h = ((h ^ (h >> 27)) * 0x94D049BB133111EB) & _MASK
        h ^= h >> 31
    return h


def money(units: int) -> str:
    """An amount in 1e-8 units as an 8-decimal string."""
    return f"{units // 100_000_000}.{units % 100_000_000:08d}"


@dataclass(order=True, frozen=True, slots=True)
class _Booked:
    """A reward booked while the sandbox runs, ordered like the answers: newest first, then by
    account, after a synthetic record of the same account and date, then in booking order."""

    key: tuple[int, int, int, int]
    record: dict[str, Any] = field(compare=False)


class RewardBook:
    """Mining rewards of synthetic accounts: ``per_day`` records per account per day, plus the
    rewards booked while the sandbox runs (``book``).

    Record ``t`` of an account is dated ``start + (t // per_day) * 86400 + (t % per_day) *
    (86400 // per_day)``. Queries are answered newest first (date descending, then account name)
    by index arithmetic, merged with the booked rewards, so any page costs O(limit + log n) plus
    a scan of the booked rewards, however many records the book holds.
    """

    def __init__(self, seed: int, accounts: int, start: int, days: int, per_day: int) -> None:
        self.seed = seed
        self.names = [f"pool_acc_{i:03d}" for i in range(accounts)]
        self.index = {name: i for i, name in enumerate(self.names)}
        self.start = start
        self.per_day = per_day
        self.step = 86400 // per_day
        self.count = days * per_day  # records per account
        self.booked: list[_Booked] = []

    def book(self, account: str, date: int) -> dict[str, Any]:
        """Book a new reward of ``account`` dated ``date`` (any date, inside the synthetic days
        or not), as the live service does each day; later queries return it in its place."""
        index = self.index[account]
        sequence = len(self.booked)
        h = mix(self.seed, index, date, 1 << 40, sequence)
        record = self._record(index, date, h)
        bisect.insort(self.booked, _Booked((-date, index, 1, sequence), record))
        return record

    def date(self, t: int) -> int:
        day, k = divmod(t, self.per_day)
        return self.start + day * 86400 + k * self.step

    def _first_at_or_after(self, moment: int) -> int:
        lo, hi = 0, self.count
        while lo < hi:
            mid = (lo + hi) // 2
            if self.date(mid) < moment:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def span(self, start: int | None, end: int | None) -> tuple[int, int]:
        """The record indices ``lo..hi`` (``hi`` exclusive) dated within ``start..end``."""
        lo = 0 if start is None else self._first_at_or_after(start)
        hi = self.count if end is None else self._first_at_or_after(end + 1)
        return lo, max(lo, hi)

    def record(self, account: int, t: int) -> dict[str, Any]:
        return self._record(account, self.date(t), mix(self.seed, account, t))

    def _record(self, account: int, date: int, h: int) -> dict[str, Any]:
        reward = 20_000 + h % 180_000
        fee = reward * 2 // 100
        rate = 1_000 + (h >> 20) % 9_000
        return {
            "miningAccountName": self.names[account],
            "totalReward": money(reward + fee),
            "reward": money(reward),
            "fee": money(fee),
            "fppsRate": money(rate),
            "hashRate": f"{100 + (h >> 32) % 900}.{(h >> 44) % 100:02d} TH/s",
            "date": date,
        }

    def page(
        self, account: str | None, start: int | None, end: int | None, offset: int, limit: int
    ) -> list[dict[str, Any]]:
        lo, hi = self.span(start, end)
        accounts = len(self.names)
        if account is not None:
            index = self.index.get(account)
            if index is None:
                return []
            total = hi - lo

            def position(p: int) -> tuple[int, int]:
                return index, hi - 1 - p
        else:
            total = (hi - lo) * accounts

            def position(p: int) -> tuple[int, int]:
                return p % accounts, hi - 1 - p // accounts

        booked = [
            b for b in self.booked
            if (account is None or b.record["miningAccountName"] == account)
            and (start is None or b.record["date"] >= start)
            and (end is None or b.record["date"] <= end)
        ]
        if not booked:
            return [self.record(*position(p)) for p in range(offset, min(total, offset + limit))]
        keys = [b.key for b in booked]

        def before(p: int) -> int:
            """Booked rewards that come before synthetic record ``p``."""
            if p >= total:
                return len(keys)
            a, t = position(p)
            return bisect.bisect_left(keys, (-self.date(t), a, 0, 0))

        # The first synthetic record at or after merged position ``offset``.
        low, high = 0, total
        while low < high:
            mid = (low + high) // 2
            if mid + before(mid) >= offset:
                high = mid
            else:
                low = mid + 1
        p, j = low, offset - low
        out: list[dict[str, Any]] = []
        while len(out) < limit and (p < total or j < len(booked)):
            if p < total:
                a, t = position(p)
                key = (-self.date(t), a, 0, 0)
                if j >= len(booked) or key < keys[j]:
                    out.append(self.record(a, t))
                    p += 1
                    continue
            out.append(booked[j].record)
            j += 1
        return out


_PLANS = [
    ("plan-usdt-30", "USDT", 1, "5.5", 43200, "USDT", "1", "10", "100000"),
    ("plan-usdt-90", "USDT", 2, "8.25", 129600, "USDT", "1", "100", "500000"),
    ("plan-btc-30", "BTC", 1, "2.1", 43200, "BTC", "1", "0.001", "5"),
    ("plan-eth-60", "ETH", 4, "3.75", 86400, "USDT", "2150.5", "0.01", "50"),
]


class InvestmentBook:
    """A fixed set of fixed-lending investments of the sandbox's B2B key, newest first."""

    def __init__(self, seed: int, count: int = 250) -> None:
        plans: list[dict[str, Any]] = []
        for i, (pid, ticker, status, pct, dur, iticker, ratio, low, high) in enumerate(_PLANS):
            plans.append({
                "id": pid, "ticker": ticker, "status": status, "percent": pct, "duration": dur,
                "interestTicker": iticker, "interestRatio": ratio, "minInvestment": low,
                "maxInvestment": high,
                "maxPossibleInvestment": money(mix(seed, 77, i) % 10**13),
            })
        self.records: list[dict[str, Any]] = []
        base = 1_700_000_000
        for i in range(count):
            h = mix(seed, 11, i)
            plan = plans[h % len(plans)]
            duration: int = plan["duration"]
            created = base + (count - i) * 3600 * 7
            self.records.append({
                "id": f"inv-{seed}-{i:05d}",
                "plan": plan,
                "status": 1 + (h >> 8) % 2,
                "created": created,
                "updated": created + 600,
                "paymentTime": created + duration * 60,
                "amount": money(10**8 + (h >> 16) % 10**12),
                "interestPaid": money((h >> 24) % 10**9),
            })

    def query(self, id: str | None, ticker: str | None, status: int | None) -> list[dict[str, Any]]:
        return [
            r for r in self.records
            if (id is None or r["id"] == id)
            and (ticker is None or r["plan"]["ticker"] == ticker)
            and (status is None or r["status"] == status)
        ]
