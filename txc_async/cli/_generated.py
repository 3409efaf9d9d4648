"""The generated commands: a group per tag of the documentation, a command per operation, a flag
per parameter, and ``txc-async call NAME key=value ...``, all made from the declarations.

A group's commands are built the first time the group parses or shows its help (`Parser`'s
``later``): ``txc-async --help`` loads no group's declarations, ``txc-async spot ...`` loads
the spot group's alone.
"""

from __future__ import annotations

import argparse
import re
from typing import Any, TypeAlias

from txc_async._operations import OPERATIONS, Operation, Param

from ._arguments import PROG, Help, Parser
from ._groups import GROUPS, command_of, group_of_tag, operation_names
from ._values import PARAM_DEST, choice_labels, flag_of, value_reader

__all__ = ["Subcommands", "add_call", "add_group", "add_operations", "example_of"]

#: A parser's commands (the standard library's name for them is private).
Subcommands: TypeAlias = "argparse._SubParsersAction[Parser]"

#: The value a flag of each kind shows in the usage line, when its parameter names none.
_METAVARS = {"text": "TEXT", "integer": "N", "decimal": "A", "time": "DATE", "list": "JSON",
             "object": "JSON", "boolean": "{true,false}"}
#: An example value in a parameter's help ("..., e.g. BTC_USDT").
_EXAMPLE = re.compile(r"e\.g\. ([^\s,()]+)")
#: An example value of each kind, where the parameter's help gives none.
_SAMPLES = {"decimal": "0.01", "integer": "1", "time": "2024-01-01", "boolean": "true"}
#: The declarations' words for a value, as the command line takes it.
_WORDING = (
    ("a decimal (Decimal, str or int; not a float)", "a decimal number, e.g. 0.01"),
    ("True or False", "true or false"),
    ("Unix seconds or an aware datetime",
     "a day (UTC), an ISO datetime with a zone, or Unix seconds"),
    ("a list of ", "JSON, a list of "),
    ("a dict of ", "JSON, an object of "),
)


def _metavar(param: Param) -> str:
    if param.choices and param.kind != "list":
        return "{" + ",".join(choice_labels(param)) + "}"
    return param.metavar or _METAVARS.get(param.kind, "VALUE")


def _example_value(param: Param) -> str:
    if param.choices and param.kind != "list":
        return choice_labels(param)[0]
    found = _EXAMPLE.search(param.help)
    if found is not None and param.kind in ("text", "decimal", "integer"):
        return found.group(1)
    return _SAMPLES.get(param.kind) or _metavar(param)


def _help(param: Param, op: Operation[Any]) -> str:
    """A parameter's help as the command line reads it; a required one says so first."""
    if param.name == "client_order_id" and not op.retry_safe:
        # As the order commands written by hand do: made up when none is given.
        return ("your id of the order, to look it up by if the answer is lost (default: one "
                "is made up and printed before sending)")
    text = param.help
    for declared, typed in _WORDING:
        if text.startswith(declared):
            text = typed + text[len(declared):]
    # argparse formats a help with %: a percent sign of the declaration stays one.
    return ("required: " if param.required else "") + text.replace("%", "%%")


def example_of(group: str, command: str, op: Operation[Any]) -> str:
    """A command line of ``op`` with its required parameters (their documented examples where
    there are some)."""
    words = [PROG, group, command]
    for param in op.params:
        if param.required and not param.secret:
            words += [flag_of(param), _example_value(param)]
    if not op.retry_safe:
        words.append("--yes")
    return " ".join(words)


def _description(name: str, op: Operation[Any]) -> str:
    limit = op.rate_limit
    kind = ("A write: it asks before it is sent (--yes without a terminal) and is never sent "
            "twice." if not op.retry_safe else "A read.")
    secrets = [param.name for param in op.params if param.secret]
    secret = (f" {', '.join(secrets)}: a secret, never taken from the command line (from "
              "the environment or a profile where one holds it, else asked for on a terminal, "
              "or one line of stdin)." if secrets else "")
    unsendable = f" This version cannot send it: {op.unsendable}." if op.unsendable else ""
    return (f"{name}: {op.method} {op.path}, at most {limit.max_requests} requests per "
            f"{limit.per_seconds:g} s. {kind}{secret}{unsendable}")


def _add_operation(
    kinds: Subcommands, group: str, name: str, op: Operation[Any], common: Parser
) -> None:
    command = command_of(name)
    sub = kinds.add_parser(
        command, help=f"{op.method} {op.path}" + (" (write)" if not op.retry_safe else ""),
        description=_description(name, op), formatter_class=Help, parents=[common],
        epilog="example:\n\n  " + example_of(group, command, op),
    )
    sub.set_defaults(operation=f"{group} {command}", generated=name)
    for param in op.params:
        if param.secret:
            continue
        sub.add_argument(
            flag_of(param), dest=PARAM_DEST + param.name, required=param.required,
            metavar=_metavar(param), type=value_reader(param),
            help=_help(param, op),
        )
    if not op.retry_safe:
        sub.add_argument("--yes", action="store_true",
                         help="send without asking (default: ask on a terminal; without one, "
                         "--yes is required)")


def add_operations(kinds: Subcommands, tag: str, common: Parser) -> None:
    """A command for each operation of ``tag`` (loading that group's declarations), beside
    the commands ``kinds`` has already; a name taken already keeps its command."""
    group = group_of_tag(tag)
    for name in operation_names(tag):
        if command_of(name) not in kinds.choices:
            _add_operation(kinds, group, name, OPERATIONS[name], common)


def add_group(commands: Subcommands, tag: str, common: Parser) -> None:
    """The group of ``tag``: its commands are added when it is used."""

    def later(parser: Parser) -> None:
        kinds = parser.add_subparsers(dest="group_command", required=True, parser_class=Parser,
                                      metavar="COMMAND")
        add_operations(kinds, tag, common)

    group = group_of_tag(tag)
    commands.add_parser(
        group, help=GROUPS[tag], formatter_class=Help, later=later,
        description=GROUPS[tag][0].upper() + GROUPS[tag][1:] + ", as the documentation groups "
        "them: a command per operation, a flag per parameter.",
        epilog=f"example:\n\n  {PROG} {group} --help     # its commands",
    )


def _operation_names(**_: object) -> list[str]:
    """Every operation's name (no group's declarations load)."""
    return list(OPERATIONS)


def add_call(commands: Subcommands, common: Parser) -> None:
    """``txc-async call NAME key=value ...``."""
    call = commands.add_parser(
        "call", formatter_class=Help, parents=[common], intermixed=True,
        help="call any operation by its name, its parameters as key=value",
        description="Call any operation of the API by its name (txc-async operations lists "
        "them), its parameters as key=value: a key is the parameter's keyword (snake_case) or "
        "its wire name; an amount as written (never a float), a whole number, true or false, "
        "a day or an ISO datetime with a zone or Unix seconds for a moment, JSON for a list or "
        "a record. A write asks before it is sent (--yes without a terminal).",
        epilog="example:\n\n"
        f"  {PROG} call ticker\n"
        f"  {PROG} call create_limit_order market=BTC_USDT side=buy amount=0.01 price=40000 "
        "--yes\n"
        f"  {PROG} call create_bulk_limit_order "
        """'orders=[{"market":"BTC_USDT","side":"buy","amount":"0.01","price":"40000"}]' """
        "--dry-run",
    )
    call.set_defaults(operation="call")
    name = call.add_argument("name", metavar="NAME",
                             help="the operation's name, e.g. create_limit_order")
    # Completed by the shell (argcomplete reads the action's completer).
    setattr(name, "completer", _operation_names)  # noqa: B010
    call.add_argument("pairs", metavar="key=value", nargs="*", default=[],
                      help="a parameter and its value (default: none)")
    call.add_argument("--yes", action="store_true",
                      help="send a write without asking (default: ask on a terminal; without "
                      "one, --yes is required)")
