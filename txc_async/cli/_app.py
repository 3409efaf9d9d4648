"""``main``: parses the command line, runs the command, and turns its end into an exit status.

0 done, 1 failed, 2 usage error (nothing sent), 3 a write that may have taken effect (its
answer was lost), 130 interrupted. Errors are one line, ``txc-async: error: ...``, on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence

from ._arguments import PROG, UsageError
from ._parser import build_parser


def describe(exc: BaseException) -> str:
    """An error in one line; a connection failure names host:port and the reason."""
    import aiohttp

    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            break
        if isinstance(seen, aiohttp.ClientConnectorError):
            error = seen.os_error
            reason = (
                os.strerror(error.errno) if error.errno else str(error) or type(error).__name__
            )
            return f"cannot connect to {seen.host}:{seen.port}: {reason}"
        seen = seen.__cause__ or seen.__context__
    return str(exc)


def _fail(message: str, status: int) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return status


async def _run(args: argparse.Namespace, state: object) -> int:
    if getattr(args, "operation", None) is not None:
        from ._execute import RunState, run_operation

        assert isinstance(state, RunState)
        return await run_operation(args, state)
    if args.command == "backfill-rewards":
        from ._backfill import run_backfill

        return await run_backfill(args)
    if args.command == "operations":
        from ._catalogue import print_catalogue

        return print_catalogue(json_mode=args.json)
    if args.command == "sandbox":
        from ._sandbox import run_sandbox

        return await run_sandbox(args)
    from ._sandbox import run_demo

    return await run_demo(args.year, args.accounts, args.concurrency)


def _completion(shell: str) -> int:
    from ._completion import script

    sys.stdout.write(script(shell))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``txc-async``; returns the exit status."""
    from ._completion import complete_if_asked

    parser = build_parser()
    complete_if_asked(parser)
    args = parser.parse_args(argv)
    if args.command == "completion":
        return _completion(args.shell)
    import asyncio

    from ._execute import RunState

    state = RunState()
    try:
        return asyncio.run(_run(args, state))
    except KeyboardInterrupt:
        return _interrupted(args, state)
    except BrokenPipeError:
        # The reader of stdout (| head, ...) went away: not a failure of this command.
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 0
    except Exception as exc:
        return _failed(exc)


def _interrupted(args: argparse.Namespace, state: object) -> int:
    from ._backfill import resumable
    from ._execute import RunState

    if isinstance(state, RunState) and state.pending is not None:
        write = state.pending
        return _fail(f"interrupted while {write.command} was under way: it may have taken "
                     f"effect. {write.check}", 3)
    hint = "; rerun the same command to resume" if resumable(args) else ""
    print(f"{PROG}: interrupted{hint}", file=sys.stderr)
    return 130


def _failed(exc: Exception) -> int:
    """The exit status of a command that ended with ``exc``, its one line on stderr."""
    from txc_async import TxcError

    from ._profiles import ConfigError
    from ._writes import Declined, MayHaveTakenEffect

    if isinstance(exc, UsageError):
        return _fail(str(exc), 2)
    if isinstance(exc, MayHaveTakenEffect):
        return _fail(str(exc), 3)
    if isinstance(exc, ConfigError | Declined | TxcError | OSError | ValueError):
        return _fail(describe(exc), 1)
    raise exc
