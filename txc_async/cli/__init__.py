"""The ``txc-async`` command line: ping, balance, resumable backfills, the sandbox, a demo.

Errors are one line, ``txc-async: error: ...``, exit status 2 for a usage error and 1 for a
failure. Progress and summaries go to stderr; stdout carries only results (or the rows of
``--out -``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import shutil
import stat
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import BinaryIO, Never, NoReturn, TextIO

import aiohttp
from tqdm import tqdm

from . import __version__
from ._client import Client
from ._errors import TxcError
from ._export import (
    FORMATS,
    BackfillProgress,
    BackfillSummary,
    Format,
    backfill_to_file,
    backfill_to_stream,
    format_moment,
)
from ._limiter_url import check_limiter_url, default_limiter_url, limiter_from_url
from ._ratelimit import Limiter
from ._validate import MAX_UNIX_TIME, check_account_filter

__all__ = ["main"]

PROG = "txc-async"
#: How often a progress display that is not a terminal prints a line.
PLAIN_PROGRESS_EVERY = 10.0


class _Parser(argparse.ArgumentParser):
    """Reports a usage error in one line instead of the usage text and a traceback."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{PROG}: error: {message}\n")


class _Help(argparse.ArgumentDefaultsHelpFormatter):
    """Shows every option's default, except where there is none to show."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.default in (None, argparse.SUPPRESS, False) or "default" in text:
            return text
        return super()._get_help_string(action)


DAY = 86_400


def _parse_time(text: str, *, end_of_day: bool) -> int:
    """A date (``2024-01-01``), an ISO datetime with a zone, or Unix seconds, as Unix seconds.

    A bare date means the start of that day in UTC, or its last second for ``--end``.
    """
    text = text.strip()
    seconds = _read_time(text, end_of_day)
    # The API's range, checked here so that a mistake is a usage error (exit status 2).
    if not 0 <= seconds <= MAX_UNIX_TIME:
        raise argparse.ArgumentTypeError(f"{text!r} is outside 1970-01-01 to 9999-12-31 (UTC)")
    return seconds


def _read_time(text: str, end_of_day: bool) -> int:
    if text.isdigit():
        return int(text)
    try:
        day = date.fromisoformat(text)
    except ValueError:
        pass
    else:
        moment = datetime(day.year, day.month, day.day, tzinfo=UTC)
        # Its last second for --end (counted in seconds: 9999-12-31 has no next day).
        return int(moment.timestamp()) + (DAY - 1 if end_of_day else 0)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a date (YYYY-MM-DD), an ISO datetime with a zone, or Unix seconds"
        ) from None
    if moment.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{text!r} has no time zone; add one, e.g. +00:00")
    return int(moment.timestamp() // 1)


def _start(text: str) -> int:
    return _parse_time(text, end_of_day=False)


def _end(text: str) -> int:
    return _parse_time(text, end_of_day=True)


def last_whole_day_end(now: float | None = None) -> int:
    """The last second of the last whole UTC day: settled days do not change."""
    moment = time.time() if now is None else now
    return int(moment) // DAY * DAY - 1


def _whole(low: int, high: int) -> Callable[[str], int]:
    """An argument type: a whole number from ``low`` to ``high``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high}")
        return value

    return parse


def _shard(text: str) -> tuple[int, int]:
    index, _, count = text.partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not I/N, e.g. 1/4") from None
    if not 1 <= i <= n:
        raise argparse.ArgumentTypeError(f"{text!r}: I must be from 1 to N")
    return i, n


def _account(text: str) -> str:
    try:
        return check_account_filter(text)
    except ValueError as exc:
        problem = str(exc)
    raise argparse.ArgumentTypeError(f"{text!r}: {problem}")


def _limiter(text: str) -> str:
    try:
        check_limiter_url(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


_concurrency = _whole(1, 256)
_accounts = _whole(1, 100_000)
_days = _whole(1, 36_500)
_port = _whole(0, 65535)
_year = _whole(1970, 9999)


def _out(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("must name a file, a directory or - (it is empty)")
    return text


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG, formatter_class=_Help,
        description="Client of the exchange API v4. Credentials come from TXC_API_KEY, "
        "TXC_API_SECRET and TXC_BASE_URL.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    commands.add_parser("ping", help="check that the API answers", formatter_class=_Help)
    commands.add_parser("balance", help="print the main-account balance", formatter_class=_Help)
    backfill = commands.add_parser(
        "backfill-rewards", formatter_class=_Help,
        help="write every mining reward of a date range to a file (rerun to resume or extend)",
        description="Write every mining reward of a date range to a file, a Parquet dataset "
        "directory or stdout. Rerunning the same command resumes where it stopped; a later "
        "--end (or none) appends only the new days.",
    )
    backfill.add_argument("--start", required=True, type=_start,
                          help="first day (UTC), e.g. 2024-01-01")
    backfill.add_argument(
        "--end", type=_end, default=None,
        help="last day (UTC), e.g. 2024-12-31 (default: the last whole UTC day)",
    )
    backfill.add_argument(
        "--account", action="append", type=_account, default=None, metavar="NAME",
        help="only this mining account, repeat for several (default: every account)",
    )
    backfill.add_argument(
        "--out", type=_out, required=True,
        help="output file, Parquet dataset directory, or - for JSON lines on stdout",
    )
    backfill.add_argument(
        "--format", choices=FORMATS, default=None,
        help="default: from --out (.csv: csv, .parquet or a directory: parquet, else jsonl)",
    )
    backfill.add_argument("--concurrency", type=_concurrency, default=8,
                          help="pieces walked at once")
    backfill.add_argument(
        "--limiter", type=_limiter, default=os.environ.get("TXC_LIMITER") or default_limiter_url(),
        help="where rate-limit budgets live, shared by every process using it: sqlite:///FILE "
        "(every process of this machine), redis://host:port/db (every machine) or memory:// "
        "(this run only) (environment: TXC_LIMITER)",
    )
    backfill.add_argument(
        "--shard", type=_shard, default=(1, 1), metavar="I/N",
        help="take the I-th of N fixed shares of the pieces (one per machine); default 1/1",
    )
    sandbox = commands.add_parser("sandbox", help="serve the embedded simulator on 127.0.0.1",
                                  formatter_class=_Help)
    sandbox.add_argument("--port", type=_port, default=8080, help="port on 127.0.0.1")
    sandbox.add_argument("--accounts", type=_accounts, default=40, help="mining accounts")
    sandbox.add_argument("--days", type=_days, default=731,
                         help="days of daily rewards from 2024-01-01")
    sandbox.add_argument(
        "--live", action="store_true",
        help="book new rewards while serving (one per second: today's, and one at a random "
        "day of the range), as the live service does",
    )
    demo = commands.add_parser(
        "demo", formatter_class=_Help,
        help="backfill a year of rewards from the embedded sandbox and print a summary",
    )
    demo.add_argument("--year", type=_year, default=2024, help="the year to backfill")
    demo.add_argument(
        "--accounts", type=_accounts, default=300,
        help="mining accounts the sandbox serves (enough to reach the rate limit)",
    )
    demo.add_argument("--concurrency", type=_concurrency, default=8, help="pieces walked at once")
    return parser


class Progress:
    """The progress of a backfill on stderr, drawn by tqdm.

    On a terminal the bar is redrawn at least once a second (a ticker keeps it moving while no
    page arrives) and says when requests wait for rate-limit budget and for about how long; on
    anything else a plain line is printed every ``PLAIN_PROGRESS_EVERY`` seconds. It ends at 100 %.
    """

    def __init__(
        self, client: Client, stream: TextIO, *, label: str = "backfill",
        terminal: bool | None = None, plain_every: float = PLAIN_PROGRESS_EVERY,
    ) -> None:
        self._client = client
        self._stream = stream
        self._terminal = stream.isatty() if terminal is None else terminal
        self._plain_every = plain_every
        self._label = label
        self._progress = BackfillProgress()
        self._samples: deque[tuple[float, int]] = deque(
            [(time.monotonic(), client.stats.requests)]
        )
        self._last_plain = time.monotonic()
        self._bar: tqdm[Never] | None = None
        if self._terminal:
            size = shutil.get_terminal_size()
            self._bar = tqdm(
                total=100, file=stream, desc=label, unit="%",
                # A terminal that reports no size (0 x 0) gets the usual 80 x 24 instead of
                # no bar at all.
                ncols=size.columns, nrows=size.lines,
                bar_format="{desc}: {percentage:5.1f}%|{bar:12}| {elapsed}{postfix}",
                mininterval=0.2,
            )
        self._ticker: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._ticker = asyncio.get_running_loop().create_task(self._tick())

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(0.25)
            self._draw()

    def __call__(self, progress: BackfillProgress) -> None:
        self._progress = progress
        if progress.finished:
            self._draw(force=True)

    def status(self, now: float | None = None) -> str:
        """The postfix: records, requests, rate, and what the run is waiting for."""
        now = time.monotonic() if now is None else now
        progress = self._progress
        requests = self._client.stats.requests
        samples = self._samples
        samples.append((now, requests))
        limit = self._client.rate_limits["mining_rewards"]
        while len(samples) > 2 and samples[1][0] <= now - limit.per_seconds - 1:
            samples.popleft()
        elapsed = max(now - progress.started, 1e-9)
        parts = [
            f"{progress.records_before + progress.records:,} records",
            f"{requests:,} requests",
            f"{progress.records / elapsed:,.0f} records/s",
        ]
        if progress.finished:
            return ", ".join(parts)
        # Requests this client sent in the last window of the scope's budget.
        quiet_since = next(
            (t for t, n in reversed(samples) if n != requests), samples[0][0]
        )
        # The count at the window's start: the last sample at or before it, else the first.
        base = samples[0][1]
        for t, n in samples:
            if t > now - limit.per_seconds:
                break
            base = n
        sent = requests - base
        # What the run waits for comes first, so that a narrow terminal still shows it.
        if now - quiet_since >= 1.0 and sent >= limit.max_requests:
            # Budget returns when the request max_requests back leaves the window.
            target = requests - limit.max_requests + 1
            freed = next((t for t, n in samples if n >= target), now) + limit.per_seconds
            parts.insert(0, f"waiting for rate-limit budget, ~{max(0.0, freed - now):.0f} s")
        elif now - quiet_since >= 2.0:
            parts.insert(0, f"waiting for answers ({now - quiet_since:.0f} s)")
        elif progress.fraction > 0.01:
            left = elapsed * (1 - progress.fraction) / progress.fraction
            parts.append(f"~{left:,.0f} s left")
        return ", ".join(parts)

    def _draw(self, force: bool = False) -> None:
        percent = 100.0 * (1.0 if self._progress.finished else min(self._progress.fraction, 1.0))
        now = time.monotonic()
        if self._bar is not None:
            self._bar.n = percent
            self._bar.set_postfix_str(self.status(now), refresh=False)
            self._bar.refresh()
            return
        if force or now - self._last_plain >= self._plain_every:
            self._last_plain = now
            line = tqdm.format_meter(
                percent, 100, now - self._progress.started, prefix=self._label,
                bar_format="{desc}: {percentage:5.1f}% after {elapsed}{postfix}",
                postfix=self.status(now),
            )
            print(line, file=self._stream, flush=True)

    def close(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def _summary_line(summary: BackfillSummary, where: str) -> str:
    if summary.complete_already:
        return (f"{where}: already complete ({summary.records_before:,} records); "
                "nothing to fetch")
    parts = [f"{where}: {summary.records_written:,} records written"]
    if summary.records_before:
        parts[0] += f" after {summary.records_before:,} kept from before"
    if summary.repaired:
        parts.append(f"repaired ({summary.repaired})")
    if summary.extended_from is not None:
        parts.append(f"extended from {format_moment(summary.extended_from, end=True)}")
    parts += [f"{summary.accounts} accounts", f"{summary.requests:,} requests",
              f"{summary.elapsed:.1f} s"]
    return ", ".join(parts)


def _output_format(out: str, chosen: str | None) -> Format:
    if out == "-":
        if chosen not in (None, "jsonl"):
            raise _UsageError("--out - streams JSON lines; use --format jsonl or a file")
        return "jsonl"
    if chosen is not None:
        return chosen  # type: ignore[return-value]
    path = Path(out)
    if path.suffix.lower() == ".csv":
        return "csv"
    if path.suffix.lower() == ".parquet" or path.is_dir():
        return "parquet"
    return "jsonl"


class _UsageError(Exception):
    """A command-line mistake found after parsing: exit status 2."""


async def _backfill(args: argparse.Namespace) -> int:
    end = last_whole_day_end() if args.end is None else args.end
    if args.start > end:
        raise _UsageError(
            f"--start {format_moment(args.start)} is after --end {format_moment(end, end=True)}"
            + (" (the last whole UTC day, the default)" if args.end is None else "")
        )
    # A pipe, a terminal or /dev/stdout is streamed to: it has no place for state.
    streaming = args.out == "-" or _is_stream(args.out)
    fmt = _output_format("-" if streaming else args.out, args.format)
    limiter: Limiter = limiter_from_url(args.limiter)
    async with Client.from_env(limiter=limiter) as client:
        display = Progress(client, sys.stderr)
        display.start()
        try:
            if streaming:
                with contextlib.ExitStack() as stack:
                    stream: BinaryIO = (
                        sys.stdout.buffer if args.out == "-"
                        else stack.enter_context(open(args.out, "wb"))  # noqa: ASYNC230
                    )
                    summary = await backfill_to_stream(
                        client, start=args.start, end=end, stream=stream,
                        accounts=args.account, concurrency=args.concurrency, shard=args.shard,
                        on_progress=display,
                    )
            else:
                summary = await backfill_to_file(
                    client, start=args.start, end=end, path=Path(args.out), fmt=fmt,
                    accounts=args.account, concurrency=args.concurrency, shard=args.shard,
                    on_progress=display,
                )
        finally:
            display.close()
    print(_summary_line(summary, "stdout" if args.out == "-" else args.out), file=sys.stderr)
    return 0


def _is_stream(out: str) -> bool:
    """Whether ``out`` names something other than a regular file or a directory."""
    try:
        mode = os.stat(out).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


async def _book_live(box: object, stop: asyncio.Event) -> None:
    """Book rewards while the sandbox serves: today's (dated 00:00 UTC today) and one at a
    random day of the range, each second."""
    from .sandbox import Sandbox

    assert isinstance(box, Sandbox)
    book = box.rewards
    chance = random.Random(box.seed)
    while not stop.is_set():
        today = int(time.time()) // DAY * DAY
        book.book(chance.choice(book.names), today)
        day = book.start + chance.randrange(max(1, book.count // book.per_day)) * DAY
        book.book(chance.choice(book.names), day)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 1.0)


async def _sandbox(args: argparse.Namespace) -> int:
    from .sandbox import Sandbox

    async with Sandbox(port=args.port, mining_accounts=args.accounts,
                       rewards_days=args.days) as box:
        print(f"sandbox serving on {box.url}: {args.accounts} mining accounts, {args.days} days "
              f"of rewards from {format_moment(box.rewards.start)}"
              + (", booking new rewards live" if args.live else ""))
        print(f"export TXC_BASE_URL={box.url}")
        print(f"export TXC_API_KEY={box.api_key}")
        print(f"export TXC_API_SECRET={box.api_secret}")
        print(f"# OAuth: client_id={box.oauth_client_id} client_secret={box.oauth_client_secret} "
              f"refresh_token={box.oauth_refresh_token}")
        print("press Ctrl-C to stop", flush=True)
        stop = asyncio.Event()
        booking = asyncio.create_task(_book_live(box, stop)) if args.live else None
        try:
            await asyncio.Event().wait()
        finally:
            stop.set()
            if booking is not None:
                await booking
    return 0


async def _demo(year: int, accounts: int, concurrency: int) -> int:
    from .sandbox import Sandbox

    start = int(datetime(year, 1, 1, tzinfo=UTC).timestamp())
    end = int(datetime(year, 12, 31, tzinfo=UTC).timestamp()) + DAY - 1
    async with Sandbox(mining_accounts=accounts) as box:
        async with Client(
            api_key=box.api_key, api_secret=box.api_secret, base_url=box.url
        ) as client:
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / f"rewards-{year}.jsonl"
                limit = client.rate_limits["mining_rewards"]
                print(
                    f"demo: the embedded sandbox serves {accounts} mining accounts on {box.url};\n"
                    f"      backfilling every reward of {year} ({format_moment(start)} to "
                    f"{format_moment(end, end=True)}) into {path}\n"
                    f"      with {concurrency} pieces at once, within the sandbox's rate limit "
                    f"of {limit.max_requests} requests per {limit.per_seconds:g} s "
                    "(progress on stderr)",
                    flush=True,
                )
                display = Progress(client, sys.stderr, label="demo")
                display.start()
                try:
                    summary = await backfill_to_file(
                        client, start=start, end=end, path=path, concurrency=concurrency,
                        on_progress=display,
                    )
                finally:
                    display.close()
                with path.open("rb") as handle:
                    lines = handle.read().splitlines()
                unique = len(set(lines))
        peak = box.stats.max_in_window("mining_rewards", limit.per_seconds)
        stats = box.stats
    print(f"backfill of every mining account of the sandbox, {year}, concurrency {concurrency}")
    print(f"  records        {summary.records_written:,} ({unique:,} distinct) "
          f"from {summary.accounts} accounts")
    print(f"  requests       {summary.requests:,}")
    print(f"  elapsed        {summary.elapsed:.2f} s "
          f"({summary.records_written / max(summary.elapsed, 1e-9):,.0f} records/s)")
    print(f"  rate limit     peak {peak} requests in any {limit.per_seconds:g} s "
          f"of {limit.max_requests} allowed ({peak / limit.max_requests:.0%})")
    print(f"  refusals       {stats.rate_limited} rate-limit 429s, "
          f"{stats.nonce_refused} nonce refusals, {stats.auth_failed} auth failures")
    ok = (
        unique == summary.records_written
        and stats.rate_limited == 0
        and stats.nonce_refused == 0
        and stats.auth_failed == 0
    )
    return 0 if ok else 1


async def _run(args: argparse.Namespace) -> int:
    if args.command == "ping":
        async with Client.from_env() as client:
            alive = await client.ping()
        print("pong" if alive else "unexpected answer")
        return 0 if alive else 1
    if args.command == "balance":
        async with Client.from_env() as client:
            balance = await client.main_balance()
        for ticker in sorted(balance):
            print(f"{ticker}\t{balance[ticker]}")
        return 0
    if args.command == "backfill-rewards":
        return await _backfill(args)
    if args.command == "sandbox":
        return await _sandbox(args)
    return await _demo(args.year, args.accounts, args.concurrency)


def describe(exc: BaseException) -> str:
    """An error in one line; a connection failure names host:port and the reason."""
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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``txc-async``; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return asyncio.run(_run(args))
    except KeyboardInterrupt:
        resumable = (
            args.command == "backfill-rewards" and args.out != "-" and not _is_stream(args.out)
        )
        print(f"{PROG}: interrupted" + ("; rerun the same command to resume" if resumable
                                        else ""), file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of stdout (| head, ...) went away: not a failure of this command.
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 0
    except _UsageError as exc:
        return _fail(str(exc), 2)
    except (TxcError, OSError, ValueError) as exc:
        return _fail(describe(exc), 1)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
