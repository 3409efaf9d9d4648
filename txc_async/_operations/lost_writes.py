"""What to look for before sending again a write whose answer was lost: the order by its client
order id, the transfer in its history, the code among the account's codes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .declaration import Operation

__all__ = ["what_to_check"]

#: Where each group's writes show once they took effect, by the documentation's group.
_WHERE: dict[str, str] = {
    "main_account": "the main balance and its history (get_deposit_withdraw_history)",
    "transfers": "the balances (get_main_balance, trade_account_balance) and the history "
                 "(get_deposit_withdraw_history)",
    "withdrawals": "the deposit and withdrawal history (get_deposit_withdraw_history)",
    "deposits": "the deposit addresses and the history (get_deposit_withdraw_history)",
    "codes": "the account's codes (get_my_codes, get_codes_history)",
    "sub_accounts": "the sub-accounts (list_sub_accounts) and their transfer history "
                    "(get_sub_account_transfer_history)",
    "lending": "the investments (get_user_flex_investments, get_fixed_investments_history)",
    "mining": "the mining accounts (get_mining_accounts)",
    "convert": "the conversions (convert_history)",
}
_ORDERS = "the orders (get_active_orders, get_order_history)"
_POSITIONS = "the orders and positions (get_active_orders, get_open_positions)"


def _shown(value: object) -> str:
    text = str(value)
    return repr(text if len(text) <= 64 else text[:61] + "...")


def what_to_check(op: Operation[Any], params: Mapping[str, Any]) -> str:
    """What the caller looks for before sending ``op`` once more, from its wire ``params`` (a
    client order id and a market are named; no other value is quoted)."""
    market = params.get("market")
    order_id = params.get("clientOrderId") or params.get("client_order_id")
    if op.tag in ("spot", "collateral"):
        where = _POSITIONS if op.tag == "collateral" else _ORDERS
        if market is not None:
            where = where.replace("the orders", f"the orders of {_shown(market)}", 1)
        if order_id:
            return f"look for client order id {_shown(order_id)} among {where}"
        return f"look among {where} (an order sent without a client order id has none)"
    found = _WHERE.get(op.tag)
    if found is not None:
        return f"look at {found}"
    return "check whether it took effect before sending it again"
