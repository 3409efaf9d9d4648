"""``main``: parses the command line, runs the command, and turns its end into an exit status.

0 done, 1 failed, 2 usage error (nothing sent), 3 a write that may have taken effect (its
answer was lost, or it was interrupted or terminated while under way), 130 interrupted, 143
terminated. Errors are one line, ``txc-async: error: ...``, on stderr, and so are the library's
warnings (``txc-async: warning: ...``).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shlex
import signal
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from ._arguments import PROG, UsageError
from ._parser import build_parser

if TYPE_CHECKING:
    from ._execute import RunState


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


#: Options of a command that are mistyped before it (``txc-async --json balance``).
_COMMAND_OPTIONS = ("--json", "--dry-run", "--yes", "--all", "--plot")


def misplaced_option(argv: Sequence[str]) -> str | None:
    """The usage error for an option of a command given before the command's name, naming
    the command line that works; None when there is none."""
    words = list(argv)
    misplaced: list[int] = []
    index = 0
    while index < len(words) and words[index].startswith("-") and words[index] != "--":
        if words[index] in _COMMAND_OPTIONS:
            misplaced.append(index)
        # --profile NAME: its value is no command's name.
        index += 2 if words[index] == "--profile" else 1
    if not misplaced:
        return None
    options = [words[i] for i in misplaced]
    rest = [word for i, word in enumerate(words) if i not in misplaced]
    # After the command and its arguments: the command line that works.
    fixed = shlex.join([PROG, *rest, *options])
    verb = "goes" if len(options) == 1 else "go"
    return f"{' and '.join(options)} {verb} after the command's name, not before it: {fixed}"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``txc-async``; returns the exit status."""
    from ._completion import complete_if_asked

    parser = build_parser()
    complete_if_asked(parser)
    misplaced = misplaced_option(sys.argv[1:] if argv is None else argv)
    if misplaced is not None:
        return _fail(misplaced, 2)
    args = parser.parse_args(argv)
    if args.command == "completion":
        return _completion(args.shell)
    import asyncio

    state: RunState | None = None
    try:
        # Imported here: an interruption while the library loads is an interruption too.
        from ._execute import RunState

        state = RunState()
        with _log_records_in_one_line():
            return asyncio.run(_run(args, state))
    except KeyboardInterrupt:
        return _interrupted(args, state)
    except asyncio.CancelledError:
        if state is None or not state.terminated:
            raise
        return _interrupted(args, state)
    except BrokenPipeError:
        # The reader of stdout (| head, ...) went away: not a failure of this command.
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 0
    except Exception as exc:
        return _failed(exc)


class _OneLine(logging.Handler):
    """Writes a log record (the library's warnings, asyncio's errors) to stderr as one line,
    ``txc-async: warning: ...``, an exception it carries as its one-line description."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
            if record.exc_info and record.exc_info[1] is not None:
                text = f"{text}: {describe(record.exc_info[1])}"
            line = " ".join(text.split())
            print(f"{PROG}: {record.levelname.lower()}: {line}", file=sys.stderr, flush=True)
        except Exception:
            self.handleError(record)


@contextlib.contextmanager
def _log_records_in_one_line() -> Iterator[None]:
    """While a command runs, warnings and errors logged by any library reach stderr through
    `_OneLine` rather than Python's last-resort handler."""
    handler = _OneLine(logging.WARNING)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)


def _interrupted(args: argparse.Namespace, state: RunState | None) -> int:
    from ._backfill import resumable

    terminated = state is not None and state.terminated > 0
    how = "terminated (SIGTERM)" if terminated else "interrupted"
    if state is not None and state.pending is not None:
        write = state.pending
        return _fail(f"{how} while {write.command} was under way: it may have taken "
                     f"effect. {write.check}", 3)
    hint = "; rerun the same command to resume" if resumable(args) else ""
    print(f"{PROG}: {how}{hint}", file=sys.stderr)
    return 128 + signal.SIGTERM if terminated else 130


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
