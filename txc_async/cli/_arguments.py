"""What the command line's arguments may be: one-line usage errors, dates, numbers, names.

The library's checks are imported when an argument needs them, not to print ``--help``.
Each argument type turns a word of the command line into the value a command uses, or says in
one line why it cannot (argparse prefixes the flag: ``argument --start: ...``, exit status 2).
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, NoReturn

PROG = "txc-async"
DAY = 86_400


class UsageError(Exception):
    """A command-line mistake found after parsing: exit status 2, nothing sent."""


class Parser(argparse.ArgumentParser):
    """Reports a usage error in one line instead of the usage text and a traceback.

    ``later``: adds more of this parser's arguments or commands the first time it parses or
    shows its help, so that a group of generated commands is built only when it is used
    (``txc-async --help`` builds none). ``intermixed``: options may come between its
    positional words (``call NAME a=1 --dry-run b=2``).
    """

    def __init__(self, *args: Any, later: Callable[[Parser], None] | None = None,
                 intermixed: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._later = later
        self._intermixed = intermixed

    def complete(self) -> None:
        """Add what ``later`` adds, once."""
        later, self._later = self._later, None
        if later is not None:
            later(self)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self.complete()
        if self._intermixed:
            # The standard library's intermixed parsing calls this method again, for its two
            # passes: those parse as usual.
            self._intermixed = False
            try:
                return self.parse_known_intermixed_args(args, namespace)
            finally:
                self._intermixed = True
        return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        self.complete()
        return super().format_usage()

    def format_help(self) -> str:
        self.complete()
        return super().format_help()

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{PROG}: error: {message}\n")


class Help(argparse.ArgumentDefaultsHelpFormatter):
    """Shows every option's default, except where there is none to show, and keeps the
    examples of a command's epilog (its indented paragraphs) as they are written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        paragraphs = []
        for paragraph in text.split("\n\n"):
            if paragraph.startswith("  "):
                paragraphs.append("\n".join(indent + line for line in paragraph.splitlines()))
            else:
                paragraphs.append(super()._fill_text(paragraph, width, indent))
        return "\n\n".join(paragraphs)

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.default in (None, argparse.SUPPRESS, False) or "default" in text:
            return text
        return super()._get_help_string(action)

    def _expand_help(self, action: argparse.Action) -> str:
        # A default worked out from the environment (TXC_LIMITER) may be a URL with a
        # password: help, which others may see on a screen or in a log, shows it masked.
        text = super()._expand_help(action)
        if action.default in (None, argparse.SUPPRESS, False):
            return text
        from txc_async._secrets import mask_text, url_secrets

        return mask_text(text, url_secrets(str(action.default)))


def _parse_time(text: str, *, end_of_day: bool) -> int:
    """A date (``2024-01-01``), an ISO datetime with a zone, or Unix seconds, as Unix seconds.

    A bare date means the start of that day in UTC, or its last second for ``--end``.
    """
    from txc_async._validate import MAX_UNIX_TIME

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


def start_time(text: str) -> int:
    """``--start``: the first second of a date, or an exact moment."""
    return _parse_time(text, end_of_day=False)


def end_time(text: str) -> int:
    """``--end``: the last second of a date, or an exact moment."""
    return _parse_time(text, end_of_day=True)


def last_whole_day_end(now: float | None = None) -> int:
    """The last second of the last whole UTC day: settled days do not change."""
    moment = time.time() if now is None else now
    return int(moment) // DAY * DAY - 1


def whole(low: int, high: int) -> Callable[[str], int]:
    """An argument type: a whole number from ``low`` to ``high``."""

    def parse(text: str) -> int:
        value = whole_number(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high}")
        return value

    return parse


def seconds(text: str) -> float:
    """An argument type: a finite number of seconds, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 <= value < math.inf:  # a NaN fails both comparisons
        raise argparse.ArgumentTypeError(f"{text!r}: must be a finite number of seconds, 0 or more")
    return value


def asset_amount(text: str) -> tuple[str, Decimal]:
    """An argument type: ``TICKER=AMOUNT``, an asset and a decimal amount of it, 0 or more."""
    ticker, sep, amount = text.partition("=")
    try:
        value = Decimal(amount)
    except InvalidOperation:
        value = Decimal(-1)
    if not sep or not ticker.isalnum() or not value.is_finite() or value < 0:
        raise argparse.ArgumentTypeError(
            f"{text!r}: must be TICKER=AMOUNT, such as USDT=100000") from None
    return ticker.upper(), value


def whole_number(text: str) -> int:
    """An argument type: any whole number (the client checks its range, and names it)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def shard(text: str) -> tuple[int, int]:
    """``--shard I/N``."""
    index, _, count = text.partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not I/N, e.g. 1/4") from None
    if not 1 <= i <= n:
        raise argparse.ArgumentTypeError(f"{text!r}: I must be from 1 to N")
    return i, n


def account(text: str) -> str:
    """A mining account filter: any name the service may hold (no control characters)."""
    from txc_async._validate import check_account_filter

    try:
        return check_account_filter(text)
    except ValueError as exc:
        problem = str(exc)
    raise argparse.ArgumentTypeError(f"{text!r}: {problem}")


def limiter(text: str) -> str:
    """A limiter URL: ``memory://``, ``sqlite:///FILE``, ``redis://...``."""
    from txc_async._limiters.url import check_limiter_url

    try:
        check_limiter_url(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def limiter_argument(text: str) -> str:
    """``--limiter``: a limiter URL with no password or token in it. The command line of a
    process is readable by every user of the machine (``ps``): a secret comes from the
    environment (``TXC_LIMITER``) or a profile, in a file only its owner reads."""
    from txc_async._secrets import safe_url, url_secrets

    if url_secrets(text):
        raise argparse.ArgumentTypeError(
            f"{safe_url(text)}: a URL with a password or a token is never taken as an "
            "argument (every user of this machine can read the command line); set "
            "TXC_LIMITER, or a profile's limiter, instead"
        )
    return limiter(text)


def out(text: str) -> str:
    """``--out``: a file, a directory or ``-``."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must name a file, a directory or - (it is empty)")
    return text


concurrency = whole(1, 256)
accounts = whole(1, 100_000)
days = whole(1, 36_500)
port = whole(0, 65535)
year = whole(1970, 9999)
