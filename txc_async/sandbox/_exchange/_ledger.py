"""Balances: each account's trading balance (available and frozen per asset), its collateral
balance, and the one main balance the sandbox keeps (shared with its main-balance answer)."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from decimal import Decimal

from ._numbers import ZERO, plain

__all__ = ["Holding", "Ledger", "NotEnough"]


class NotEnough(Exception):
    """An account's available balance of an asset is short of what is asked."""


@dataclass(slots=True)
class Holding:
    """One asset of one account's trading balance."""

    available: Decimal = ZERO
    freeze: Decimal = ZERO


@dataclass(slots=True)
class _Account:
    trade: dict[str, Holding] = field(default_factory=dict)
    collateral: dict[str, Decimal] = field(default_factory=dict)


class Ledger:
    """Every balance of the exchange. ``main`` is the main balance as the sandbox answers it
    (``{ticker: {"main_balance": "..."}}``), changed in place by transfers."""

    def __init__(
        self, opening: Mapping[str, Decimal], main: MutableMapping[str, dict[str, str]]
    ) -> None:
        self.opening = dict(opening)
        self.main = main
        self._accounts: dict[str, _Account] = {}

    def _account(self, account: str) -> _Account:
        found = self._accounts.get(account)
        if found is None:
            found = self._accounts[account] = _Account(
                trade={ticker: Holding(amount) for ticker, amount in self.opening.items()}
            )
        return found

    def holding(self, account: str, asset: str) -> Holding:
        trade = self._account(account).trade
        found = trade.get(asset)
        if found is None:
            found = trade[asset] = Holding()
        return found

    def trade(self, account: str) -> dict[str, Holding]:
        return self._account(account).trade

    def freeze(self, account: str, asset: str, amount: Decimal) -> None:
        """Move ``amount`` of ``asset`` from available to frozen, or raise `NotEnough`."""
        holding = self.holding(account, asset)
        if holding.available < amount:
            raise NotEnough(asset)
        holding.available -= amount
        holding.freeze += amount

    def release(self, account: str, asset: str, amount: Decimal) -> None:
        """Move ``amount`` of ``asset`` from frozen back to available."""
        holding = self.holding(account, asset)
        holding.freeze -= amount
        holding.available += amount

    def settle(self, account: str, asset: str, frozen: Decimal, spent: Decimal) -> None:
        """Take ``spent`` of ``asset`` out of ``frozen`` that was frozen for it; the rest of
        ``frozen`` becomes available again."""
        holding = self.holding(account, asset)
        holding.freeze -= frozen
        holding.available += frozen - spent

    def credit(self, account: str, asset: str, amount: Decimal) -> None:
        self.holding(account, asset).available += amount

    # -- collateral -----------------------------------------------------------------------

    def collateral(self, account: str) -> dict[str, Decimal]:
        return self._account(account).collateral

    def collateral_add(self, account: str, asset: str, amount: Decimal) -> None:
        balances = self.collateral(account)
        balances[asset] = balances.get(asset, ZERO) + amount

    # -- main -----------------------------------------------------------------------------

    def main_amount(self, asset: str) -> Decimal:
        entry = self.main.get(asset)
        return Decimal(entry["main_balance"]) if entry else ZERO

    def main_add(self, asset: str, amount: Decimal) -> None:
        self.main[asset] = {"main_balance": plain(self.main_amount(asset) + amount)}
