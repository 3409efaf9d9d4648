"""The ``txc-async`` command line: ping, balance, resumable backfills, the sandbox, a demo."""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import NoReturn, TextIO

from ._client import Client
from ._errors import InvalidParameterError, TxcError
from ._export import BackfillProgress, BackfillSummary, Format, backfill_to_file
from ._validate import ACCOUNT_NAME, ACCOUNT_NAME_RULE

__all__ = ["main"]

PROG = "txc-async"


class _Parser(argparse.ArgumentParser):
    """Reports a usage error in one line instead of the usage text and a traceback."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _parse_time(text: str, *, end_of_day: bool) -> int:
    """A date (``2024-01-01``), an ISO datetime with a zone, or Unix seconds, as Unix seconds.

    A bare date means the start of that day in UTC, or its last second for ``--end``.
    """
    text = text.strip()
    if text.isdigit():
        return int(text)
    try:
        day = date.fromisoformat(text)
    except ValueError:
        pass
    else:
        moment = datetime(day.year, day.month, day.day, tzinfo=UTC)
        if end_of_day:
            moment += timedelta(days=1, seconds=-1)
        return int(moment.timestamp())
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a date (YYYY-MM-DD), an ISO datetime with a zone, or Unix seconds"
        ) from None
    if moment.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{text!r} has no time zone; add one, e.g. +00:00")
    return int(moment.timestamp())


def _start(text: str) -> int:
    return _parse_time(text, end_of_day=False)


def _end(text: str) -> int:
    return _parse_time(text, end_of_day=True)


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


_concurrency = _whole(1, 256)
_accounts = _whole(1, 100_000)
_port = _whole(0, 65535)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Client of the exchange API v4. Credentials come from TXC_API_KEY, "
        "TXC_API_SECRET and TXC_BASE_URL.",
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    commands.add_parser("ping", help="check that the API answers")
    commands.add_parser("balance", help="print the main-account balance")
    backfill = commands.add_parser(
        "backfill-rewards",
        help="write every mining reward of a date range to a file (rerun to resume)",
    )
    backfill.add_argument("--start", required=True, type=_start, help="first day, e.g. 2024-01-01")
    backfill.add_argument("--end", required=True, type=_end, help="last day, e.g. 2024-12-31")
    backfill.add_argument(
        "--account", action="append", default=None, metavar="NAME",
        help="only this mining account (repeat for several); default: every account",
    )
    backfill.add_argument("--out", required=True, type=Path, help="output file")
    backfill.add_argument("--format", choices=("jsonl", "csv"), default=None,
                          help="default: from the file's extension, else jsonl")
    backfill.add_argument("--concurrency", type=_concurrency, default=8)
    sandbox = commands.add_parser("sandbox", help="serve the embedded simulator on 127.0.0.1")
    sandbox.add_argument("--port", type=_port, default=8080)
    demo = commands.add_parser(
        "demo", help="backfill a year of rewards from the embedded sandbox and print a summary"
    )
    demo.add_argument("--year", type=int, default=2024)
    demo.add_argument(
        "--accounts", type=_accounts, default=300,
        help="mining accounts the sandbox serves (default 300: enough to reach the rate limit)",
    )
    demo.add_argument("--concurrency", type=_concurrency, default=8)
    return parser


class _ProgressLine:
    """A one-line progress display on a terminal: records, requests, rate, time left."""

    def __init__(self, client: Client, stream: TextIO) -> None:
        self._client = client
        self._stream = stream
        self._last = 0.0
        self._shown = False

    def __call__(self, progress: BackfillProgress) -> None:
        now = time.monotonic()
        if now - self._last < 0.2:
            return
        self._last = now
        elapsed = now - progress.started
        requests = self._client.stats.requests
        rate = progress.records / elapsed if elapsed > 0 else 0.0
        left = "?"
        if progress.fraction > 0.01:
            remaining = elapsed * (1 - progress.fraction) / progress.fraction
            left = f"{remaining:,.0f} s"
        self._stream.write(
            f"\r{progress.fraction:6.1%}  {progress.records_before + progress.records:,} records"
            f"  {requests:,} requests  {rate:,.0f} records/s  {left} left   "
        )
        self._stream.flush()
        self._shown = True

    def close(self) -> None:
        if self._shown:
            self._stream.write("\n")
            self._stream.flush()


def _print_summary(summary: BackfillSummary, stream: TextIO) -> None:
    if summary.requests == 0 and summary.records_written == 0 and summary.jobs_resumed == 0:
        print(f"{summary.path}: already complete ({summary.records_before:,} records); "
              "nothing to fetch", file=stream)
        return
    print(
        f"{summary.path}: {summary.records_written:,} records written"
        + (f" after {summary.records_before:,} kept from before" if summary.records_before else "")
        + f", {summary.accounts} accounts, {summary.requests:,} requests, "
        f"{summary.elapsed:.1f} s",
        file=stream,
    )


async def _backfill(args: argparse.Namespace) -> int:
    path: Path = args.out
    fmt: Format = args.format or ("csv" if path.suffix.lower() == ".csv" else "jsonl")
    if args.start > args.end:
        raise InvalidParameterError("--start", "must not be after --end")
    for name in args.account or ():
        if not ACCOUNT_NAME.fullmatch(name):
            raise InvalidParameterError("--account", f"{name!r}: {ACCOUNT_NAME_RULE}")
    async with Client.from_env() as client:
        display = _ProgressLine(client, sys.stderr) if sys.stderr.isatty() else None
        try:
            summary = await backfill_to_file(
                client, start=args.start, end=args.end, path=path, fmt=fmt,
                accounts=args.account, concurrency=args.concurrency, on_progress=display,
            )
        finally:
            if display is not None:
                display.close()
    _print_summary(summary, sys.stdout)
    return 0


async def _sandbox(port: int) -> int:
    from .sandbox import Sandbox

    async with Sandbox(port=port) as box:
        print(f"sandbox serving on {box.url}")
        print(f"export TXC_BASE_URL={box.url}")
        print(f"export TXC_API_KEY={box.api_key}")
        print(f"export TXC_API_SECRET={box.api_secret}")
        print("press Ctrl-C to stop", flush=True)
        await asyncio.Event().wait()
    return 0


async def _demo(year: int, accounts: int, concurrency: int) -> int:
    from .sandbox import Sandbox

    start = int(datetime(year, 1, 1, tzinfo=UTC).timestamp())
    end = int(datetime(year + 1, 1, 1, tzinfo=UTC).timestamp()) - 1
    async with Sandbox(mining_accounts=accounts) as box:
        async with Client(
            api_key=box.api_key, api_secret=box.api_secret, base_url=box.url
        ) as client:
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / f"rewards-{year}.jsonl"
                display = _ProgressLine(client, sys.stderr) if sys.stderr.isatty() else None
                try:
                    summary = await backfill_to_file(
                        client, start=start, end=end, path=path, concurrency=concurrency,
                        on_progress=display,
                    )
                finally:
                    if display is not None:
                        display.close()
                with path.open("rb") as handle:
                    lines = handle.read().splitlines()
                unique = len(set(lines))
        limit = client.rate_limits["mining_rewards"]
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
        return await _sandbox(args.port)
    return await _demo(args.year, args.accounts, args.concurrency)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``txc-async``; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return asyncio.run(_run(args))
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130
    except (TxcError, OSError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
