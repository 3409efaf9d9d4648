"""The command line's grammar: every command, its flags, its help and an example of it.

An operation's flags are its declared parameters (``txc_async._operations``): name, required,
choices, metavar and help come from each ``Param``; the flags that are not parameters
(``--all``, ``--plot``, ``--yes``, ``--json``, ``--dry-run``) are written here. The commands
written here stand beside ``call`` and a group per tag of the documentation (`_generated`),
whose commands are built when the group is used. Built with the standard library's argparse
and the declarations alone (no aiohttp, no group's declarations), so that ``txc-async --help``
starts fast; the commands import what they need when they run.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping
from typing import Any

from txc_async._operations import (
    BALANCE_OF_TICKER,
    COLLATERAL_STOP_LIMIT,
    CREATE_MINING_ACCOUNT,
    INVESTMENTS,
    MINING_HASHRATE,
    MINING_REWARDS,
    Operation,
)
from txc_async._version import __version__

from . import _arguments as types
from ._arguments import PROG, Help, Parser
from ._generated import Subcommands, add_call, add_group, add_operations
from ._groups import GROUPS
from ._values import choice_labels, flag_of

#: The output formats of backfill-rewards (txc_async._export.run.FORMATS, which a test compares
#: with this: that module is not imported to print --help).
FORMATS = ("jsonl", "csv", "parquet")
CREDENTIALS = (
    "Credentials and settings come from the environment (TXC_API_KEY, TXC_API_SECRET, "
    "TXC_BASE_URL, TXC_LIMITER, TXC_OAUTH_CLIENT_ID, TXC_OAUTH_CLIENT_SECRET, "
    "TXC_OAUTH_REFRESH_TOKEN), which wins over the default profile of "
    "$XDG_CONFIG_HOME/txc-async/config.toml (a profile named with --profile wins over it, and "
    "the variables set aside are named on stderr); secrets are never taken as arguments. "
    "Exit status: 0 done, 1 failed, 2 usage error, 3 a write that may have taken effect."
)


class LimiterDefault:
    """The default of ``--limiter``: ``TXC_LIMITER``, else a SQLite file in this user's cache
    directory; worked out when it is shown or used, so that ``--help`` imports no limiter."""

    def __str__(self) -> str:
        from txc_async._limiters.url import default_limiter_url

        return os.environ.get("TXC_LIMITER") or default_limiter_url()


#: The value a flag of each kind shows in the usage line, when its parameter names none.
_METAVARS = {"text": "TEXT", "integer": "N", "decimal": "A", "time": "DATE"}
#: Values read by the command line before the client checks them: a date is a day or a moment
#: here, and a bad account name a usage error of argparse's.
_TYPES: Mapping[str, Callable[[str], object]] = {
    "account": types.account, "start": types.start_time, "end": types.end_time,
}
_KIND_TYPES: Mapping[str, Callable[[str], object]] = {"integer": types.whole_number}
#: Where the command line reads a parameter otherwise than the client does.
_HELP = {
    "start": "from this day (UTC) or moment, e.g. 2024-01-01 (default: none)",
    "end": "to the end of this day (UTC) or this moment (default: none)",
    "client_order_id": "your id of the order, to look it up by (default: one is made up and "
    "printed before sending)",
}


def _example(*lines: str) -> str:
    return "example:\n\n" + "\n".join(f"  {PROG} {line}" for line in lines)


def _add_params(sub: Parser, op: Operation[Any]) -> None:
    """A flag for each parameter of ``op`` (a secret is never taken from a flag)."""
    for param in op.params:
        if param.secret:
            continue
        text = _HELP.get(param.name, param.help)
        if param.kind == "boolean":
            sub.add_argument(flag_of(param), action="store_true", help=text)
        elif param.choices:
            sub.add_argument(flag_of(param), required=param.required,
                             choices=choice_labels(param), help=text)
        else:
            sub.add_argument(
                flag_of(param), required=param.required, help=text,
                metavar=param.metavar or _METAVARS.get(param.kind, "VALUE"),
                type=_TYPES.get(param.name) or _KIND_TYPES.get(param.kind, str),
            )


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command."""
    parser = Parser(
        prog=PROG, formatter_class=Help,
        description=f"Client of the exchange API v4. {CREDENTIALS}",
        epilog=_example("balance --ticker BTC", "mining hashrate --account pool-1 --plot",
                        "spot create-limit-order --market BTC_USDT --side buy --amount 0.01 "
                        "--price 40000", "call ticker --json", "spot --help"),
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    parser.add_argument(
        "--profile", metavar="NAME", default=None,
        help="the [profiles.NAME] table of the configuration file (default: the 'default' "
        "profile when there is one; environment variables win over it)",
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser,
                                     metavar="COMMAND")
    common = _common_options()
    _add_reads(commands, common)
    _add_writes(commands, common)
    hand_groups = _add_mining(commands, common)
    _add_catalogue(commands)
    add_call(commands, common)
    for tag in GROUPS:
        if tag not in hand_groups:
            add_group(commands, tag, common)
    _add_backfill(commands)
    _add_sandbox(commands)
    _add_demo(commands)
    _add_completion(commands)
    return parser


def _common_options() -> Parser:
    """--profile, --json and --dry-run, taken by every operation after its name."""
    common = Parser(add_help=False)
    # SUPPRESS: given before the command, the value is not overwritten here.
    common.add_argument("--profile", metavar="NAME", default=argparse.SUPPRESS,
                        help="the [profiles.NAME] table of the configuration file "
                        "(default: as given before the command, else 'default' if present)")
    common.add_argument("--json", action="store_true",
                        help="print JSON, amounts as strings (default: a table on a terminal, "
                        "tab-separated lines elsewhere)")
    common.add_argument("--dry-run", action="store_true",
                        help="print the request that would be sent, key masked, and send "
                        "nothing (default: send it)")
    return common


def _command(
    commands: Subcommands, name: str, summary: str, example: str,
    parents: list[Parser], operation: str | None = None,
) -> Parser:
    sub = commands.add_parser(
        name, help=summary, description=summary[0].upper() + summary[1:] + ".",
        epilog=_example(example), formatter_class=Help, parents=parents,
    )
    if operation is not None:
        sub.set_defaults(operation=operation)
    return sub


def _add_reads(commands: Subcommands,
               common: Parser) -> None:
    _command(commands, "ping", "check that the API answers", "ping", [common], "ping")
    balance = _command(commands, "balance", "print the main-account balance",
                       "balance --ticker BTC", [common], "balance")
    _add_params(balance, BALANCE_OF_TICKER)
    investments = _command(
        commands, "investments", "list the fixed-lending investments (B2B partner keys)",
        "investments --status active --all --json", [common], "investments",
    )
    _add_params(investments, INVESTMENTS)
    _add_all(investments)


def _add_all(sub: Parser) -> None:
    sub.add_argument("--all", action="store_true",
                     help="walk every page; JSON lines with --json (default: one page)")


def _add_writes(commands: Subcommands,
                common: Parser) -> None:
    order = commands.add_parser("order", help="place orders", formatter_class=Help,
                                description="Place orders.")
    kinds = order.add_subparsers(dest="order_command", required=True, parser_class=Parser)
    stop = _command(
        kinds, "stop-limit", "place a stop-limit order on the collateral market",
        "order stop-limit --market BTC_USDT --side sell --amount 0.01 --price 59000 "
        "--activation-price 60000 --client-order-id protect-1", [common], "order stop-limit",
    )
    _add_params(stop, COLLATERAL_STOP_LIMIT)
    _add_yes(stop)


def _add_yes(sub: Parser) -> None:
    sub.add_argument("--yes", action="store_true",
                     help="send without asking (default: ask on a terminal; without one, "
                     "--yes is required)")


def _add_mining(commands: Subcommands, common: Parser) -> frozenset[str]:
    """The mining and oauth groups: the commands written here, and the generated ones of
    their tags when used; returns those tags."""
    kinds: Subcommands
    oauth_kinds: Subcommands
    mining = commands.add_parser(
        "mining", help="mining-pool accounts, rewards, hashrate, workers and watcher links",
        formatter_class=Help, description="Mining-pool accounts, rewards and hashrate; the "
        "other commands, one per operation, as the documentation groups them.",
        epilog=_example("mining rewards --account pool-1 --all --json",
                        "mining get-mining-accounts --json"),
        later=lambda _: add_operations(kinds, "mining", common),
    )
    kinds = mining.add_subparsers(dest="mining_command", required=True, parser_class=Parser,
                                  metavar="COMMAND")
    create = _command(kinds, "create-account", "create a mining-pool account",
                      "mining create-account --name rig_01 --yes", [common],
                      "mining create-account")
    _add_params(create, CREATE_MINING_ACCOUNT)
    _add_yes(create)
    rewards = _command(kinds, "rewards", "list mining rewards, newest first",
                       "mining rewards --account pool-1 --start 2024-01-01 --all --json",
                       [common], "mining rewards")
    _add_params(rewards, MINING_REWARDS)
    _add_all(rewards)
    hashrate = _command(kinds, "hashrate", "print or plot the hashrate of a mining account",
                        "mining hashrate --account pool-1 --interval 1h --plot", [common],
                        "mining hashrate")
    _add_params(hashrate, MINING_HASHRATE)
    hashrate.add_argument("--plot", action="store_true",
                          help="draw the series in the terminal (default: a table)")
    oauth = commands.add_parser(
        "oauth", help="OAuth tokens and API keys", formatter_class=Help,
        description="OAuth tokens; the other commands, one per operation, as the "
        "documentation groups them.",
        epilog=_example("oauth refresh --json", "oauth oauth2-token --help"),
        later=lambda _: add_operations(oauth_kinds, "oauth", common),
    )
    oauth_kinds = oauth.add_subparsers(dest="oauth_command", required=True, parser_class=Parser,
                                       metavar="COMMAND")
    _command(oauth_kinds, "refresh",
             "exchange the refresh token for a new access token (from TXC_OAUTH_CLIENT_ID, "
             "TXC_OAUTH_CLIENT_SECRET, TXC_OAUTH_REFRESH_TOKEN or a profile)",
             "--profile main oauth refresh --json", [common], "oauth refresh")
    return frozenset({"mining", "oauth"})


def _add_catalogue(commands: Subcommands) -> None:
    catalogue = commands.add_parser(
        "operations", formatter_class=Help, epilog=_example("operations --json"),
        help="list every operation of the API: name, method, path, rate limit, write",
        description="List every operation of the API, as the library declares it: its name "
        "(the client's method, and what client.call takes), method, path, the rate limit the "
        "service documents for it, and whether it is a write (never sent again once it may "
        "have reached the server).",
    )
    catalogue.add_argument("--json", action="store_true",
                           help="print JSON lines (default: a table on a terminal, "
                           "tab-separated lines elsewhere)")


def _add_backfill(commands: Subcommands) -> None:
    backfill = commands.add_parser(
        "backfill-rewards", formatter_class=Help,
        help="write every mining reward of a date range to a file (rerun to resume or extend)",
        description="Write every mining reward of a date range to a file, a Parquet dataset "
        "directory or stdout. Rerunning the same command resumes where it stopped; a later "
        "--end (or none) appends only the new days.",
        epilog=_example("backfill-rewards --start 2024-01-01 --end 2024-12-31 "
                        "--out rewards.jsonl"),
    )
    backfill.add_argument("--start", required=True, type=types.start_time,
                          help="first day (UTC), e.g. 2024-01-01")
    backfill.add_argument(
        "--end", type=types.end_time, default=None,
        help="last day (UTC), e.g. 2024-12-31 (default: the last whole UTC day)",
    )
    backfill.add_argument(
        "--account", action="append", type=types.account, default=None, metavar="NAME",
        help="only this mining account, repeat for several (default: every account)",
    )
    backfill.add_argument(
        "--out", type=types.out, required=True,
        help="output file, a directory (an existing one, or a path ending in /: a Parquet "
        "dataset, or rewards.jsonl / rewards.csv inside with --format), or - for JSON lines on "
        "stdout",
    )
    backfill.add_argument(
        "--format", choices=FORMATS, default=None,
        help="default: from --out (.csv: csv, .parquet or a directory: parquet, else jsonl)",
    )
    backfill.add_argument("--concurrency", type=types.concurrency, default=8,
                          help="pieces walked at once")
    backfill.add_argument(
        "--limiter", type=types.limiter_argument, default=LimiterDefault(),
        help="where rate-limit budgets live, shared by every process using it: sqlite:///FILE "
        "(every process of this machine), redis://host:port/db (every machine) or memory:// "
        "(this run only) (environment: TXC_LIMITER, else the profile's limiter)",
    )
    backfill.add_argument(
        "--shard", type=types.shard, default=(1, 1), metavar="I/N",
        help="take the I-th of N fixed shares of the pieces (one per machine); default 1/1",
    )


def _add_sandbox(commands: Subcommands) -> None:
    sandbox = commands.add_parser("sandbox", help="serve the embedded simulator on 127.0.0.1",
                                  formatter_class=Help, epilog=_example("sandbox --port 8080"))
    sandbox.add_argument("--port", type=types.port, default=8080, help="port on 127.0.0.1")
    sandbox.add_argument("--accounts", type=types.accounts, default=40, help="mining accounts")
    sandbox.add_argument("--days", type=types.days, default=731,
                         help="days of daily rewards from 2024-01-01")
    sandbox.add_argument(
        "--live", action="store_true",
        help="book new rewards while serving (one per second: today's, and one at a random "
        "day of the range), as the live service does; they are pending at first, as are the "
        "rewards of the last --pending-days days, and settle after --settle-after seconds",
    )
    sandbox.add_argument(
        "--pending-days", type=types.whole(0, 36_500), default=None, metavar="N",
        help="the rewards of the last N days are pending at first (default: 2 with --live, "
        "else 0)",
    )
    sandbox.add_argument(
        "--settle-after", type=types.seconds, default=60.0, metavar="SECONDS",
        help="a pending reward settles (successful, or canceled) this long after the sandbox "
        "started or booked it",
    )
    sandbox.add_argument(
        "--trade-balance", type=types.asset_amount, action="append", default=None,
        metavar="TICKER=AMOUNT",
        help="what every key's trading balance starts with, one asset per option "
        "(e.g. --trade-balance USDT=100000 --trade-balance BTC=2; default: none)",
    )


def _add_demo(commands: Subcommands) -> None:
    demo = commands.add_parser(
        "demo", formatter_class=Help, epilog=_example("demo --year 2024"),
        help="backfill a year of rewards from the embedded sandbox and print a summary",
    )
    demo.add_argument("--year", type=types.year, default=2024, help="the year to backfill")
    demo.add_argument(
        "--accounts", type=types.accounts, default=300,
        help="mining accounts the sandbox serves (enough to reach the rate limit)",
    )
    demo.add_argument("--concurrency", type=types.concurrency, default=8,
                      help="pieces walked at once")


def _add_completion(commands: Subcommands) -> None:
    completion = commands.add_parser(
        "completion", formatter_class=Help,
        help="print the shell completion script for bash, zsh or fish",
        description="Print the script that completes txc-async's commands and flags in your "
        "shell. Load it from your shell's startup file.",
        epilog='example:\n\n  eval "$(txc-async completion bash)"     # ~/.bashrc\n'
        '  eval "$(txc-async completion zsh)"      # ~/.zshrc\n'
        "  txc-async completion fish | source      # ~/.config/fish/config.fish",
    )
    completion.add_argument("shell", choices=("bash", "zsh", "fish"), help="your shell")
