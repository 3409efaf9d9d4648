"""The eight operations of the API as commands: what each calls, and how its result is shown.

Every command hands its flags to the client as they were typed (the flags of its operation's
parameters, read from the declaration as the parser made them): the client checks them (a bad
value is a usage error naming the flag) and builds the request, real or ``--dry-run``.
"""

from __future__ import annotations

import argparse
import enum
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import txc_async
from txc_async._operations import (
    BALANCE_OF_TICKER,
    COLLATERAL_STOP_LIMIT,
    CREATE_MINING_ACCOUNT,
    INVESTMENTS,
    MINING_HASHRATE,
    MINING_REWARDS,
    Operation,
)

from ._arguments import UsageError
from ._invocation import Invocation, Show
from ._oauth import refresh_command
from ._profiles import Settings
from ._render import Output
from ._values import choice_value
from ._writes import Write, new_client_order_id


def _flags(args: argparse.Namespace, op: Operation[Any]) -> dict[str, Any]:
    """The keywords of ``op`` whose flags were given, as the client takes them (a status as
    its enum's member, a switch that is off left out)."""
    given: dict[str, Any] = {}
    for param in op.params:
        value = getattr(args, param.name, None)
        if value is None or value is False:
            continue
        given[param.name] = choice_value(param, value) if param.choices else value
    return given


def _paged(args: argparse.Namespace, op: Operation[Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The page's keywords and the walk's (the page's without its limit and offset); a limit
    or an offset is refused with ``--all`` (which walks every page)."""
    page = _flags(args, op)
    if args.all and ("limit" in page or "offset" in page):
        raise UsageError("--all walks every page: leave out --limit and --offset")
    return page, {name: value for name, value in page.items() if name not in ("limit", "offset")}


def _title(noun: str, given: dict[str, Any]) -> str:
    """A table's title: what it lists, and the filters given (``mining rewards (account
    nope)``), which also name what matched nothing."""
    from decimal import Decimal

    from ._cells import is_time, iso_time

    parts = []
    for name, value in given.items():
        if isinstance(value, enum.Enum):
            text = value.name.lower() if isinstance(value, int) else str(value.value)
        elif is_time(name) or name in ("start", "end"):
            text = iso_time(Decimal(value)) if isinstance(value, int) else str(value)
        else:
            text = str(value)
        parts.append(f"{name.replace('_', ' ')} {text}")
    return f"{noun} ({', '.join(parts)})" if parts else noun


def _ping(args: argparse.Namespace, settings: Settings) -> Invocation:
    def show(output: Output, alive: object) -> int:
        if output.json_mode:
            output.json({"pong": alive is True})
        else:
            print("pong" if alive is True else "unexpected answer", file=output.stream)
        return 0 if alive is True else 1

    return Invocation(lambda client: client.ping(), show)


def _balance(args: argparse.Namespace, settings: Settings) -> Invocation:
    params = _flags(args, BALANCE_OF_TICKER)

    def show(output: Output, balance: object) -> int:
        assert isinstance(balance, dict)
        output.fields(dict(sorted(balance.items())), "main balance",
                      columns=("ticker", "main balance"))
        return 0

    return Invocation(lambda client: client.main_balance(**params), show, frozenset(params))


def _investments(args: argparse.Namespace, settings: Settings) -> Invocation:
    page, filters = _paged(args, INVESTMENTS)
    title = _title("investments", filters if args.all else page)

    def call(client: txc_async.Client) -> Awaitable[object]:
        return client.investments_history(**page)

    def walk(client: txc_async.Client) -> AsyncIterator[object]:
        return client.iter_investments_history(**filters)

    def show(output: Output, result: object) -> int:
        assert isinstance(result, txc_async.InvestmentsPage)
        return _show_page(output, result, result.records, title)

    return Invocation(call, show, frozenset(page), walk if args.all else None, title)


def _show_page(output: Output, page: object, records: Sequence[object], title: str) -> int:
    if output.json_mode:
        output.json(page)
    else:
        output.records(records, title)
    return 0


def _show_fields(title: str) -> Show:
    def show(output: Output, result: object) -> int:
        output.fields(result, title)
        return 0

    return show


def _stop_limit_order(args: argparse.Namespace, settings: Settings) -> Invocation:
    notes = []
    order_id = args.client_order_id
    if order_id is None and args.dry_run:
        notes.append("no --client-order-id: one is made up when the order is sent")
    elif order_id is None:
        order_id = new_client_order_id()
        notes.append(f"client order id {order_id} (made up, since none was given: look for "
                     "it if the answer is lost)")
    params = _flags(args, COLLATERAL_STOP_LIMIT)
    if order_id is not None:
        params["client_order_id"] = order_id
    write = Write(
        "order stop-limit", "Place this order",
        f"Look for client order id {order_id} among the orders of {args.market} before "
        "placing it again.", operation=COLLATERAL_STOP_LIMIT,
    )

    def call(client: txc_async.Client) -> Awaitable[object]:
        return client.collateral_stop_limit_order(**params)

    return Invocation(call, _show_fields("collateral stop-limit order"), frozenset(params),
                      write=write, notes=notes, confirm=True)


def _create_mining_account(args: argparse.Namespace, settings: Settings) -> Invocation:
    params = _flags(args, CREATE_MINING_ACCOUNT)
    write = Write(
        "mining create-account", "Create this mining account",
        f"Check whether it exists before creating it again: txc-async mining hashrate "
        f"--account {args.name} answers 'Account not found' for an account that does not.",
        operation=CREATE_MINING_ACCOUNT,
    )

    def call(client: txc_async.Client) -> Awaitable[object]:
        return client.create_mining_account(**params)

    return Invocation(call, _show_fields("mining account"), frozenset(params), write=write,
                      confirm=True)


def _mining_rewards(args: argparse.Namespace, settings: Settings) -> Invocation:
    page, filters = _paged(args, MINING_REWARDS)
    title = _title("mining rewards", filters if args.all else page)

    def call(client: txc_async.Client) -> Awaitable[object]:
        return client.mining_rewards(**page)

    def walk(client: txc_async.Client) -> AsyncIterator[object]:
        return client.iter_mining_rewards(**filters)

    def show(output: Output, result: object) -> int:
        assert isinstance(result, txc_async.RewardsPage)
        return _show_page(output, result, list(result.data), title)

    return Invocation(call, show, frozenset(page), walk if args.all else None, title)


def _mining_hashrate(args: argparse.Namespace, settings: Settings) -> Invocation:
    from ._hashrate import plot, scaled_rows
    from ._series import whole_hashrate

    if args.plot and args.json:
        raise UsageError("--plot draws the series; leave out --json (or --plot)")
    params = _flags(args, MINING_HASHRATE)

    def call(client: txc_async.Client) -> Awaitable[object]:
        return whole_hashrate(client, params)

    def show(output: Output, series: object) -> int:
        assert isinstance(series, txc_async.Hashrate)
        if output.json_mode or not (output.terminal or args.plot):
            return _show_page(output, series, list(series.hashrate), "hashrate")
        if not series.hashrate:
            output.note(f"no records: {_title('hashrate points', params)}")
        elif args.plot:
            plot(series, output.stream, terminal=output.terminal)
        else:
            output.rows(scaled_rows(series), f"hashrate of {series.account}")
        return 0

    return Invocation(call, show, frozenset(params))


#: Every operation command by its name on the command line.
COMMANDS: dict[str, Callable[[argparse.Namespace, Settings], Invocation]] = {
    "ping": _ping,
    "balance": _balance,
    "investments": _investments,
    "order stop-limit": _stop_limit_order,
    "mining create-account": _create_mining_account,
    "mining rewards": _mining_rewards,
    "mining hashrate": _mining_hashrate,
    "oauth refresh": refresh_command,
}


def invocation_of(args: argparse.Namespace, settings: Settings) -> Invocation:
    """What the operation command ``args.operation`` runs: a command written here, or any
    operation (``call`` and the generated commands)."""
    build = COMMANDS.get(args.operation)
    if build is None:
        from ._any_operation import any_operation

        build = any_operation
    return build(args, settings)
