"""Deterministic synthetic data of the sandbox: rewards computed from their index, never stored."""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["InvestmentBook", "RewardBook", "mix", "mix_on", "money"]

_MASK = (1 << 64) - 1


def mix(*values: int) -> int:
    """A 64-bit hash of integers (splitmix64 rounds): cheap, stable across runs and platforms."""
    return mix_on(0x9E3779B97F4A7C15, *values)


def mix_on(h: int, *values: int) -> int:
    """`mix` of ``values`` continued from ``h``: ``mix(a, b) == mix_on(mix(a), b)``, so the
    rounds of a prefix shared by many hashes are done once."""
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
    account, then in booking order. ``since``: the book's clock when it was booked."""

    key: tuple[int, int, int, int]
    record: dict[str, Any] = field(compare=False)
    since: float = field(compare=False, default=0.0)


#: The currency every reward of the sandbox is paid in.
CURRENCY = "BTC"
#: One settled reward in this many is canceled (decided by the reward's hash).
CANCELED_ONE_IN = 5


class RewardBook:
    """Mining rewards of synthetic accounts: ``per_day`` records per account per day, plus the
    rewards booked while the sandbox runs (``book``).

    Record ``t`` of an account is dated ``start + (t // per_day) * 86400 + (t % per_day) *
    (86400 // per_day)``. Queries are answered newest first (date descending, then account name)
    by index arithmetic, merged with the booked rewards, so any page costs O(limit + log n) plus
    a scan of the booked rewards, however many records the book holds.

    ``live``: records carry what the live service writes besides the fields of the API's first
    specification (whitebit-exchange/docs, ``openapi/private/main_api_v4.yaml``, schema
    ``MiningReward``): ``status``, ``rewardCurrency`` (``BTC``), ``payoutDestination`` (an
    odd-numbered account is paid to an external address, the others to the main balance) and the
    payout's hash, address and time. With ``pending_days``, the rewards of the book's last
    ``pending_days`` days and every reward booked while it runs are ``pending`` at first; each
    settles (``successful``, or one in ``CANCELED_ONE_IN`` ``canceled``, by its hash) once ``clock``
    has passed ``settle_after`` seconds since the book was made (or since it was booked), or when
    `settle` is called. A reward changes nothing but its status and payout fields when it
    settles.
    """

    def __init__(
        self, seed: int, accounts: int, start: int, days: int, per_day: int, *,
        live: bool = False, pending_days: int = 0, settle_after: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.seed = seed
        self.names = [f"pool_acc_{i:03d}" for i in range(accounts)]
        self.index = {name: i for i, name in enumerate(self.names)}
        self.start = start
        self.per_day = per_day
        self.step = 86400 // per_day
        self.count = days * per_day  # records per account
        self.booked: list[_Booked] = []
        self._taken: set[tuple[int, int]] = set()
        self.live = live
        self.pending_days = pending_days
        self.settle_after = settle_after
        self.clock = clock
        #: Synthetic rewards dated from here on are pending at first.
        self.pending_from = start + (days - pending_days) * 86400 if pending_days else None
        self.made = clock()
        #: Every reward pending since this moment or before has settled (`settle`).
        self.settled_at = float("-inf")
        self._addresses = [f"bc1q{mix(seed, i, 0xAD):016x}{mix(seed, i, 0xAE):016x}"
                           for i in range(accounts)]
        # Each account's records hash (seed, account, t): the first two rounds done once.
        self._account_hashes = [mix(seed, i) for i in range(accounts)]

    def book(self, account: str, date: int) -> dict[str, Any]:
        """Book a new reward of ``account`` dated ``date`` (any date, inside the synthetic days
        or not), as the live service does each day; later queries return it in its place.

        The service books one reward per account, date and currency (their identity): a date
        the account already holds a reward at is moved on by a second until it holds none."""
        index = self.index[account]
        while self._holds(index, date):
            date += 1
        sequence = len(self.booked)
        h = mix(self.seed, index, date, 1 << 40, sequence)
        record = self._record(index, date, h)
        self._taken.add((index, date))
        booked = _Booked((-date, index, 1, sequence), record, self.clock())
        bisect.insort(self.booked, booked)
        return self._answer_booked(booked)

    def settle(self) -> None:
        """Settle every reward pending now (booked ones included), as if its time had come."""
        self.settled_at = self.clock()

    def _holds(self, index: int, date: int) -> bool:
        """Whether account ``index`` holds a reward dated ``date``."""
        offset = date - self.start
        within = offset % 86400
        synthetic = (
            0 <= offset < self.count // self.per_day * 86400
            and within % self.step == 0 and within // self.step < self.per_day
        )
        return synthetic or (index, date) in self._taken

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
        date = self.date(t)
        h = mix_on(self._account_hashes[account], t)
        record = self._record(account, date, h)
        if self.live:
            pending = self.pending_from is not None and date >= self.pending_from
            self._settling(record, account, h, self.made if pending else None)
        return record

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

    def _answer_booked(self, booked: _Booked) -> dict[str, Any]:
        if not self.live:
            return booked.record
        record = dict(booked.record)
        _, account, _, sequence = booked.key
        h = mix(self.seed, account, record["date"], 1 << 40, sequence)
        self._settling(record, account, h, booked.since if self.pending_days else None)
        return record

    def _settling(self, record: dict[str, Any], account: int, h: int,
                  since: float | None) -> None:
        """Add the live fields to ``record``: ``since`` is when it became pending (``None``: it
        never was), its hash ``h`` decides how it settles."""
        external = account % 2 == 1
        pending = since is not None and since > self.settled_at and (
            self.settle_after is None or self.clock() < since + self.settle_after
        )
        status = (
            "pending" if pending
            else "canceled" if (h >> 8) % CANCELED_ONE_IN == 0
            else "successful"
        )
        paid = external and status == "successful"
        record["status"] = status
        record["rewardCurrency"] = CURRENCY
        record["payoutDestination"] = "external_address" if external else "main_balance"
        record["payoutTransactionHash"] = f"{h:016x}" * 4 if paid else None
        record["payoutAddress"] = self._addresses[account] if external else None
        record["payoutTime"] = record["date"] + 3600 * (1 + h % 12) if paid else None

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
            out.append(self._answer_booked(booked[j]))
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
