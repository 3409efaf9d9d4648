"""The groups of the generated commands (one per tag of the documentation) and the names of
their operations, read from the catalogue's index: listing them loads no group's declarations.

A group's commands are its operations' names in kebab-case (``create_limit_order`` is
``txc-async spot create-limit-order``); a group is the tag in kebab-case (``main_account`` is
``main-account``).
"""

from __future__ import annotations

from typing import Any

from txc_async._operations import OPERATIONS, Operation
from txc_async._operations.generated.index import WHERE

__all__ = ["GROUPS", "command_of", "group_of_tag", "operation_names", "operations_of"]

#: Every tag of the documentation, with what its group of commands is for (its help line).
GROUPS: dict[str, str] = {
    "market": "public market data: markets, tickers, order books, trades, assets, funding",
    "spot": "spot trading: balance, place, modify and cancel orders, order history, kill-switch",
    "collateral": "collateral trading: orders, positions, leverage, hedge mode, OCO and "
    "conditional orders",
    "main_account": "the main account: balance, deposit and withdrawal history, investments",
    "deposits": "deposit addresses, fiat deposit links, refunds",
    "withdrawals": "withdrawals to an address, a payment system or by express token",
    "transfers": "transfers between the main, spot and collateral balances",
    "codes": "WhiteBIT codes: create, apply, list",
    "lending": "crypto lending: fixed and flex plans and investments",
    "sub_accounts": "sub-accounts, their transfers, balances and API keys",
    "mining": "mining-pool accounts, rewards, hashrate, workers and watcher links",
    "convert": "convert one currency to another: estimate, confirm, history",
    "fees": "trading and deposit/withdrawal fees",
    "jwt": "WebSocket and JWT tokens",
    "oauth": "OAuth tokens and API keys",
    "credit_line": "the credit line",
    "travel_rule": "travel-rule verification of deposits",
}


def group_of_tag(tag: str) -> str:
    """The command line's name of a tag's group: ``main_account`` is ``main-account``."""
    return tag.replace("_", "-")


def command_of(name: str) -> str:
    """The command of an operation in its group: ``create_limit_order`` is
    ``create-limit-order``."""
    return name.replace("_", "-")


def _tag_of(name: str) -> str:
    module, _ = WHERE[name]
    # A generated module is its tag's; an operation declared by hand is loaded already.
    return module or OPERATIONS[name].tag


def operation_names(tag: str | None = None) -> list[str]:
    """The generated name of every operation (of ``tag`` only, when given), in the
    catalogue's order; no group's declarations load."""
    return [name for name in WHERE if tag is None or _tag_of(name) == tag]


def operations_of(tag: str) -> list[Operation[Any]]:
    """The operations of ``tag`` (loading that group's declarations, no other's)."""
    return [OPERATIONS[name] for name in operation_names(tag)]
