"""Any operation as a command: ``txc-async call NAME key=value ...`` and the generated commands
(``txc-async spot create-limit-order --market ...``).

Both read the parameters' values by their declared kinds (`_values`), run the operation's own
checks before anything is sent (a refusal is a usage error naming the key or the flag), and
hand the operation to ``client.call``. A write asks first, as the hand-written commands do, and
one with a client order id gets one made up when none is given, to look it up by if its answer
is lost. A secret is never taken from the command line: it comes from the environment or a
profile where one holds it (the OAuth application's secret and refresh token), else it is asked
for on a terminal without echo, or read as one line of stdin.
"""

from __future__ import annotations

import argparse
import difflib
import getpass
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import txc_async
from txc_async._operations import OPERATIONS, Auth, Operation, Param

from ._arguments import UsageError
from ._invocation import Invocation
from ._oauth import refreshed
from ._profiles import Settings
from ._render import Output
from ._results import show_result
from ._series import whole_hashrate
from ._values import PARAM_DEST, flag_of, read_value
from ._writes import Write, new_client_order_id

__all__ = ["SECRET_PLACEHOLDER", "any_operation", "find_operation", "read_pairs"]

#: What a dry run sends for a secret: the secret itself is never read for one.
SECRET_PLACEHOLDER = "<secret: read when sent>"
#: The settings (environment or profile) that hold a secret parameter's value.
_SECRET_SETTINGS = {"client_secret": "oauth_client_secret", "refresh_token": "oauth_refresh_token"}

#: How a parameter is named in a usage error.
Naming = Callable[[Param], str]


def _keyword(param: Param) -> str:
    return param.name


def any_operation(args: argparse.Namespace, settings: Settings) -> Invocation:
    """The invocation of ``txc-async call`` or of a generated command."""
    if args.operation == "call":
        name = _canonical(args.name)
        op = find_operation(name)
        given = read_pairs(op, name, args.pairs)
        return _invocation(op, name, given, settings, command=f"call {name}",
                           naming=_keyword, dry_run=args.dry_run)
    name = args.generated
    op = OPERATIONS[name]
    given = {}
    for param in op.params:
        value = getattr(args, PARAM_DEST + param.name, None)
        if value is not None:
            given[param.name] = value
    return _invocation(op, name, given, settings, command=args.operation, naming=flag_of,
                       dry_run=args.dry_run)


def _canonical(name: str) -> str:
    # A command's spelling (create-limit-order) names the same operation.
    return name.replace("-", "_")


def find_operation(name: str) -> Operation[Any]:
    """The operation named ``name``; an unknown name is a usage error suggesting close ones."""
    if name in OPERATIONS:
        return OPERATIONS[name]
    close = difflib.get_close_matches(name, list(OPERATIONS), n=4, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise UsageError(f"unknown operation {name!r}{hint} (txc-async operations lists every one)")


def read_pairs(op: Operation[Any], name: str, pairs: list[str]) -> dict[str, object]:
    """The keywords of ``key=value`` words: a key is a parameter's keyword (snake_case) or its
    wire name; each value read by its parameter's kind."""
    by_key: dict[str, Param] = {}
    for declared in op.params:
        for key in (declared.name, declared.name.rstrip("_"), *declared.wire):
            by_key.setdefault(key, declared)
    given: dict[str, object] = {}
    for pair in pairs:
        key, equals, text = pair.partition("=")
        if not equals or not key:
            raise UsageError(f"{pair!r}: parameters are given as key=value, e.g. market=BTC_USDT")
        param: Param | None = by_key.get(key) or by_key.get(key.replace("-", "_"))
        if param is None:
            known = ", ".join(p.name for p in op.params) or "none"
            close = difflib.get_close_matches(key, list(by_key), n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise UsageError(f"{key}: is not a parameter of {name}{hint} (its parameters: "
                             f"{known})")
        if param.secret:
            raise UsageError(f"{key}: is a secret and never taken from the command line (any "
                             "user of this machine can read it there); it is asked for on a "
                             "terminal, or read from stdin")
        if param.name in given:
            raise UsageError(f"{key}: given twice")
        try:
            given[param.name] = read_value(param, text)
        except ValueError as exc:
            raise UsageError(f"{key}: {exc}") from None
    return given


def _invocation(
    op: Operation[Any], name: str, given: dict[str, object], settings: Settings, *,
    command: str, naming: Naming, dry_run: bool,
) -> Invocation:
    notes: list[str] = []
    order_id = _client_order_id(op, given, dry_run, notes)
    # A required secret, or an optional one the settings hold (an optional one without a
    # source, such as a PKCE verifier, is left out rather than asked for).
    secrets = [param for param in op.params
               if param.secret and (param.required or _configured(param, settings))]
    # Every other value is checked before a secret is asked for.
    _check(op, given | {param.name: SECRET_PLACEHOLDER for param in secrets}, naming)
    if secrets and not dry_run:
        for param in secrets:
            given[param.name] = _secret(param, settings)
        _check(op, given, naming)
    elif secrets:
        given |= {param.name: SECRET_PLACEHOLDER for param in secrets}
    params = dict(given)
    write = None if op.retry_safe else Write(
        command, f"Send {name}", _what_to_check(op, params, order_id), operation=op)

    # A refresh with the refresh token of the settings: the new one is kept where that came
    # from (a profile's file), as `oauth refresh` keeps it.
    rotates = op.name == "refresh_oauth_token" and bool(settings.oauth_refresh_token)

    def call(client: txc_async.Client) -> Awaitable[object]:
        if op.name == "mining_hashrate":  # the whole range, past the points of one answer
            return whole_hashrate(client, params)
        exchange = client.call(op, **params)
        return refreshed(settings, exchange) if rotates else exchange

    def show(output: Output, result: object) -> int:
        return show_result(output, result, name)

    return Invocation(
        call, show, write=write, notes=notes,
        # A token exchange is sent without a question, as `oauth refresh` is; every other
        # write asks.
        confirm=write is not None and op.auth is not Auth.FORM,
    )


def _client_order_id(
    op: Operation[Any], given: dict[str, object], dry_run: bool, notes: list[str]
) -> str | None:
    """The client order id of a write that takes one: as given, else made up (and printed
    before sending), so that a lost answer can be looked up by it."""
    if op.retry_safe or not any(param.name == "client_order_id" for param in op.params):
        return None
    given_id = given.get("client_order_id")
    if isinstance(given_id, str):
        return given_id
    if dry_run:
        notes.append("no client order id given: one is made up when the order is sent")
        return None
    made_up = new_client_order_id()
    given["client_order_id"] = made_up
    notes.append(f"client order id {made_up} (made up, since none was given: look for it if "
                 "the answer is lost)")
    return made_up


def _what_to_check(op: Operation[Any], params: Mapping[str, object], order_id: str | None) -> str:
    """What to look for before sending a write again whose answer was lost."""
    if order_id is not None:
        market = params.get("market")
        where = f"the orders of {market}" if isinstance(market, str) else "your orders"
        return f"Look for client order id {order_id} among {where} before placing it again."
    return (f"Check whether it took effect (the lists and histories of txc-async "
            f"{op.tag.replace('_', '-')} --help) before sending it again.")


def _check(op: Operation[Any], given: Mapping[str, object], naming: Naming) -> None:
    """The operation's own checks, run now: a refused parameter is a usage error naming it."""
    try:
        op.wire_params(given)
    except txc_async.InvalidParameterError as exc:
        params = {param.name: param for param in op.params}
        top = exc.parameter.split("[", 1)[0].split(".", 1)[0]
        param = params.get(top)
        if param is None:
            raise  # not one of the parameters: the operation itself (unsendable)
        where = "" if exc.parameter == top else f"{exc.parameter} "
        rule = exc.rule
        value = given.get(top)
        if param.secret and isinstance(value, str) and value and value in rule:
            rule = "is refused by its check"
        raise UsageError(f"{naming(param)}: {where}{rule}") from None


def _configured(param: Param, settings: Settings) -> bool:
    """Whether the settings (environment or profile) hold a value of the secret ``param``."""
    setting = _SECRET_SETTINGS.get(param.name)
    return setting is not None and bool(getattr(settings, setting, None))


def _secret(param: Param, settings: Settings) -> str:
    """A secret parameter's value: from the settings that hold it, else asked for."""
    setting = _SECRET_SETTINGS.get(param.name)
    value = getattr(settings, setting) if setting is not None else None
    if isinstance(value, str) and value:
        return value
    if sys.stdin.isatty():
        return getpass.getpass(f"{param.name} (not shown): ")
    line = sys.stdin.readline().rstrip("\r\n")
    if not line:
        source = (f"the environment's TXC_{setting.upper()} or a profile's {setting}, "
                  if setting is not None else "")
        raise UsageError(f"{param.name} is a secret: give it through {source}a terminal, or "
                         "one line of stdin; nothing was sent")
    return line
