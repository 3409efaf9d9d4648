"""Deterministic synthetic data of the sandbox: rewards computed from their index, never stored."""

from __future__ import annotations

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


class RewardBook:
    """Mining rewards of synthetic accounts: ``per_day`` records per account per day.

    Record ``t`` of an account is dated ``start + (t // per_day) * 86400 + (t % per_day) *
    (86400 // per_day)``. Queries are answered newest first (date descending, then account name)
    by index arithmetic, so any page costs O(limit) however many records the book holds.
    """

    def __init__(self, seed: int, accounts: int, start: int, days: int, per_day: int) -> None:
        self.seed = seed
        self.names = [f"pool_acc_{i:03d}" for i in range(accounts)]
        self.index = {name: i for i, name in enumerate(self.names)}
        self.start = start
        self.per_day = per_day
        self.step = 86400 // per_day
        self.count = days * per_day  # records per account

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
        h = mix(self.seed, account, t)
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
            "date": self.date(t),
        }

    def page(
        self, account: str | None, start: int | None, end: int | None, offset: int, limit: int
    ) -> list[dict[str, Any]]:
        lo, hi = self.span(start, end)
        if account is not None:
            index = self.index.get(account)
            if index is None:
                return []
            first = hi - 1 - offset
            last = max(lo, first - limit + 1)
            return [self.record(index, t) for t in range(first, last - 1, -1)]
        accounts = len(self.names)
        total = (hi - lo) * accounts
        out = []
        for p in range(offset, min(total, offset + limit)):
            t = hi - 1 - p // accounts
            out.append(self.record(p % accounts, t))
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
