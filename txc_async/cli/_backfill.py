"""``backfill-rewards``: a resumable backfill of mining rewards, and its progress on stderr.

Progress and summaries go to stderr; stdout carries only the rows of ``--out -``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import stat
import sys
import time
from collections import deque
from pathlib import Path
from typing import BinaryIO, Never, TextIO

from tqdm import tqdm

from txc_async._client import Client
from txc_async._export.run import (
    BackfillProgress,
    BackfillSummary,
    Format,
    backfill_to_file,
    backfill_to_stream,
    format_moment,
)
from txc_async._limiters.base import Limiter
from txc_async._limiters.url import check_limiter_url, default_limiter_url, limiter_from_url
from txc_async._operations import DEFAULT_BASE_URL

from ._arguments import UsageError, last_whole_day_end
from ._profiles import Settings, load_settings, missing_credentials

#: How often a progress display that is not a terminal prints a line.
PLAIN_PROGRESS_EVERY = 10.0


class Progress:
    """The progress of a backfill on stderr, drawn by tqdm.

    On a terminal the bar is redrawn at least once a second (a ticker keeps it moving while no
    page arrives) and says when requests wait for rate-limit budget and for about how long; on
    anything else a plain line is printed every ``PLAIN_PROGRESS_EVERY`` seconds. It ends at 100 %.
    Every line fits in ``columns`` (default: the terminal's width, where one is known): the
    parts of the status that do not fit are left out, the last first (time left, rate,
    requests), never cut.
    """

    def __init__(
        self, client: Client, stream: TextIO, *, label: str = "backfill",
        terminal: bool | None = None, plain_every: float = PLAIN_PROGRESS_EVERY,
        columns: int | None = None,
    ) -> None:
        self._client = client
        self._stream = stream
        self._terminal = stream.isatty() if terminal is None else terminal
        # 0 where no width is known (no terminal, no COLUMNS): a plain line is then not held
        # to one, and a bar (a terminal reporting no size) gets the usual 80 x 24.
        size = shutil.get_terminal_size(fallback=(0, 0))
        self._columns = columns if columns is not None else size.columns
        self._plain_every = plain_every
        self._label = label
        self._progress = BackfillProgress()
        self._samples: deque[tuple[float, int]] = deque(
            [(time.monotonic(), client.stats.requests)]
        )
        self._last_plain = time.monotonic()
        self._bar: tqdm[Never] | None = None
        if self._terminal:
            self._bar = tqdm(
                total=100, file=stream, desc=label, unit="%",
                ncols=self._columns or 80, nrows=size.lines or 24, bar_format=_BAR,
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

    def status(self, now: float | None = None, room: int | None = None) -> str:
        """The postfix: records, requests, rate, and what the run is waiting for; within
        ``room`` characters when given (whole parts left out from the end, the first kept)."""
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
            return _within(parts, room)
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
            wait = freed - now
            parts.insert(0, "waiting for rate-limit budget, "
                         + (f"~{wait:.0f} s" if wait >= 1 else "less than 1 s"))
        elif now - quiet_since >= 2.0:
            parts.insert(0, f"waiting for answers ({now - quiet_since:.0f} s)")
        elif progress.fraction > 0.01:
            left = elapsed * (1 - progress.fraction) / progress.fraction
            parts.append(f"~{left:,.0f} s left")
        return _within(parts, room)

    def _draw(self, force: bool = False) -> None:
        percent = 100.0 * (1.0 if self._progress.finished else min(self._progress.fraction, 1.0))
        now = time.monotonic()
        label = self._label if self._progress.phase == "backfill" else "settling"
        elapsed = now - self._progress.started
        if self._bar is not None:
            if self._bar.desc != label:
                self._bar.set_description_str(label, refresh=False)
            self._bar.n = percent
            room = self._room(percent, elapsed, label, _BAR)
            self._bar.set_postfix_str(self.status(now, room), refresh=False)
            self._bar.refresh()
            return
        # Sampled at every tick, printed or not: a wait is reckoned from when requests went
        # out, which a sample taken only as often as a line is printed does not know.
        status = self.status(now)
        if force or now - self._last_plain >= self._plain_every:
            self._last_plain = now
            room = self._room(percent, elapsed, label, _PLAIN)
            line = tqdm.format_meter(percent, 100, elapsed, prefix=label, bar_format=_PLAIN,
                                     postfix=status if room is None else self.status(now, room))
            print(line, file=self._stream, flush=True)

    def _room(
        self, percent: float, elapsed: float, label: str, bar_format: str
    ) -> int | None:
        """The characters left for the status after the line's beginning and its ", "; None
        where no width is known."""
        columns = self._columns or (80 if bar_format == _BAR else 0)
        if not columns:
            return None
        start = tqdm.format_meter(percent, 100, elapsed, prefix=label,
                                  bar_format=bar_format.replace("{bar:12}", "-" * 12))
        # One column spare: a line as wide as the terminal wraps on some of them.
        return columns - 1 - len(start) - len(", ")

    def close(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        if self._bar is not None:
            self._bar.close()
            self._bar = None


#: A progress line on a terminal, redrawn in place; and one printed where there is none.
_BAR = "{desc}: {percentage:5.1f}%|{bar:12}| {elapsed}{postfix}"
_PLAIN = "{desc}: {percentage:5.1f}% after {elapsed}{postfix}"


def _within(parts: list[str], room: int | None) -> str:
    """``parts`` joined by ", ", as many from the first as fit in ``room`` (the first always)."""
    text = parts[0] if parts else ""
    for part in parts[1:]:
        longer = f"{text}, {part}"
        if room is not None and len(longer) > room:
            break
        text = longer
    return text


def _summary_line(summary: BackfillSummary, where: str) -> str:
    if summary.complete_already:
        line = (f"{where}: already complete ({summary.records_before:,} records), nothing new "
                f"on the server: {summary.checked()}, {summary.requests:,} requests")
        settling = summary.settling()
        return line if settling is None else f"{line}; {settling}"
    parts = [f"{where}: {summary.records_written:,} records written"]
    if summary.records_before:
        parts[0] += f" after {summary.records_before:,} kept from before"
    if summary.repaired:
        parts.append(f"repaired ({summary.repaired})")
    if summary.extended_from is not None:
        parts.append(f"extended from {format_moment(summary.extended_from, end=True)}")
    if summary.upgraded:
        parts.append("upgraded to rows with status and payouts (their days read again)")
    parts += [f"{summary.accounts} accounts", f"{summary.requests:,} requests",
              f"{summary.elapsed:.1f} s", summary.checked()]
    line = ", ".join(parts)
    settling = summary.settling()
    return line if settling is None else f"{line}; {settling}"


#: The file a JSON lines or CSV backfill writes in a directory named as ``--out``: the same
#: name every run, so that a rerun resumes or extends it.
FILE_IN_DIRECTORY = "rewards"


def _output_format(out: str, chosen: str | None) -> Format:
    if out == "-":
        if chosen not in (None, "jsonl"):
            raise UsageError("--out - streams JSON lines; use --format jsonl or a file")
        return "jsonl"
    if chosen is not None:
        return chosen  # type: ignore[return-value]
    path = Path(out)
    if path.suffix.lower() == ".csv":
        return "csv"
    if path.suffix.lower() == ".parquet" or _names_directory(out):
        return "parquet"
    return "jsonl"


def _names_directory(out: str) -> bool:
    """Whether ``--out`` names a directory: one that exists, or a path ending in a slash."""
    return out.endswith(("/", os.sep)) or Path(out).is_dir()


def _output_path(out: str, fmt: Format) -> Path:
    """Where the backfill writes: a Parquet dataset is the directory itself; JSON lines or CSV
    asked for in a directory go to a file in it, ``rewards.jsonl`` or ``rewards.csv``. A path
    ending in a slash that names a file is refused, as is a Parquet dataset without pyarrow."""
    path = Path(out)
    if not _names_directory(out):
        return path
    if path.exists() and not path.is_dir():
        raise UsageError(f"--out {out}: ends with a slash (a directory) but {path} is a file; "
                         f"give --out {path} to write to that file")
    if fmt == "parquet":
        try:
            import pyarrow.parquet  # noqa: F401
        except ImportError:
            raise UsageError(
                f"--out {out} is a directory, which holds a Parquet dataset, and that needs "
                "pyarrow (pip install 'txc_async[parquet]'); or give --format jsonl (or csv) "
                f"to write {path / FILE_IN_DIRECTORY}.jsonl"
            ) from None
        return path
    return path / f"{FILE_IN_DIRECTORY}.{fmt}"


async def run_backfill(args: argparse.Namespace) -> int:
    """``backfill-rewards``: every reward of the range to a file, a dataset or stdout."""
    end = last_whole_day_end() if args.end is None else args.end
    if args.start > end:
        raise UsageError(
            f"--start {format_moment(args.start)} is after --end {format_moment(end, end=True)}"
            + (" (the last whole UTC day, the default)" if args.end is None else "")
        )
    # A pipe, a terminal or /dev/stdout is streamed to: it has no place for state.
    streaming = args.out == "-" or _is_stream(args.out)
    fmt = _output_format("-" if streaming else args.out, args.format)
    target = None if streaming else _output_path(args.out, fmt)
    settings = load_settings(args.profile)
    limiter_url = _limiter_url(args.limiter, settings)
    problem = missing_credentials(settings, "backfill-rewards")
    if problem is not None:
        raise problem
    limiter: Limiter = limiter_from_url(limiter_url)
    async with Client(
        settings.api_key, settings.api_secret,
        base_url=settings.base_url or DEFAULT_BASE_URL, limiter=limiter,
    ) as client:
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
                assert target is not None
                if target != Path(args.out):  # a file in the directory --out names
                    target.parent.mkdir(parents=True, exist_ok=True)
                summary = await backfill_to_file(
                    client, start=args.start, end=end, path=target, fmt=fmt,
                    accounts=args.account, concurrency=args.concurrency, shard=args.shard,
                    on_progress=display,
                )
        finally:
            display.close()
    where = "stdout" if args.out == "-" else args.out if target is None else str(target)
    print(_summary_line(summary, where), file=sys.stderr)
    return 0


def _limiter_url(given: object, settings: Settings) -> str:
    """``--limiter`` when given (checked by the parser already), else the settings' limiter
    (``TXC_LIMITER`` or the profile's ``limiter``, as the operation commands read it), else a
    SQLite file in this user's cache directory. A bad setting is refused as a bad ``--limiter``
    is, naming where it came from, never quoting it (a Redis URL may hold a password)."""
    if isinstance(given, str):
        return given
    if not settings.limiter:
        return default_limiter_url()
    try:
        return check_limiter_url(settings.limiter)
    except ValueError as exc:
        raise UsageError(
            f"argument --limiter: {exc} (the default, from TXC_LIMITER or the profile's "
            "limiter)"
        ) from None


def _is_stream(out: str) -> bool:
    """Whether ``out`` names something other than a regular file or a directory."""
    try:
        mode = os.stat(out).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def resumable(args: argparse.Namespace) -> bool:
    """Whether rerunning the interrupted command resumes it (it writes to a file)."""
    return (
        args.command == "backfill-rewards" and args.out != "-" and not _is_stream(args.out)
    )
