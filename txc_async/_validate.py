"""Checks every parameter before anything is sent, and turns it into its wire form.

The ``check_*`` functions check one value; the factories after them (`int_range`, `pattern`,
`choice`, `text`) make the `Check` an operation's parameter declares: ``check(name, value)``
returns the value as sent, or raises `InvalidParameterError` naming ``name``.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from ._errors import InvalidParameterError

__all__ = [
    "ACCOUNT_NAME",
    "ACCOUNT_NAME_RULE",
    "CLIENT_ORDER_ID",
    "CLIENT_ORDER_ID_RULE",
    "Check",
    "account_filter",
    "array_of",
    "check_account_filter",
    "check_bool",
    "check_choice",
    "check_decimal",
    "check_int_range",
    "check_pattern",
    "check_positive_seconds",
    "check_text",
    "check_time_range",
    "check_timestamp",
    "choice",
    "int_range",
    "pattern",
    "record",
    "text",
]

#: A parameter's check: ``(name, value) -> the value as sent``; raises
#: ``InvalidParameterError(name, rule)``.
Check = Callable[[str, Any], Any]

#: The last second of year 9999 (UTC): the latest Unix time a request may carry.
MAX_UNIX_TIME = 253402300799
_DECIMAL_TEXT = re.compile(r"[0-9]+(\.[0-9]+)?|\.[0-9]+")
#: The most digits an amount may have on either side of its decimal point (trailing zeros
#: after it do not count): far beyond any amount of any asset, short of a request so long it
#: would be refused or stall the client.
MAX_PLAIN_DIGITS = 100
#: Mining account names: letters, digits and underscores, at most 255.
ACCOUNT_NAME = re.compile(r"[A-Za-z0-9_]{1,255}")
ACCOUNT_NAME_RULE = "must be 1 to 255 letters, digits or underscores"
#: Control characters (C0, DEL and C1): never part of an account filter.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
#: The exchange's rule for client order ids: Latin letters, digits, '-', '.', '_'; not empty,
#: no spaces (so none around it either). Its length limit is not documented; 255 is the
#: longest the library sends.
CLIENT_ORDER_ID = re.compile(r"[A-Za-z0-9._-]{1,255}")
CLIENT_ORDER_ID_RULE = (
    "must be 1 to 255 Latin letters, digits, '-', '.' or '_' (no spaces, not empty)"
)


def check_decimal(name: str, value: object, *, allow_zero: bool = False) -> str:
    """A positive decimal amount given as Decimal, str or int, in plain (non-exponent) notation."""
    if isinstance(value, bool | float):
        raise InvalidParameterError(
            name,
            f"must be a Decimal, str or int, not {type(value).__name__} "
            "(a float cannot hold a decimal amount exactly)",
        )
    if isinstance(value, int):
        number = Decimal(value)
    elif isinstance(value, Decimal):
        # A subclass may format, compare or test itself its own way: what is checked and sent
        # is its value, as a plain Decimal.
        number = value if type(value) is Decimal else Decimal(value)
    elif isinstance(value, str):
        # As given, spaces included: "1 " may be the remains of a mistake ("1 000").
        text = value
        if not _DECIMAL_TEXT.fullmatch(text):
            raise InvalidParameterError(
                name, f"must be a plain decimal number such as '0.01', got {value!r}"
            )
        try:
            number = Decimal(text)
        except InvalidOperation:  # pragma: no cover - the pattern already guarantees a number
            raise InvalidParameterError(name, f"is not a decimal number: {value!r}") from None
    else:
        raise InvalidParameterError(
            name, f"must be a Decimal, str or int, not {type(value).__name__}"
        )
    if not number.is_finite():
        raise InvalidParameterError(name, "must be a finite number (not NaN or infinity)")
    if number < 0 or (number == 0 and not allow_zero):
        raise InvalidParameterError(name, "must be greater than 0")
    if number == 0:
        return "0"  # 0E-1000000000 too, without writing its zeros out
    # Checked before writing it out: 1E+1000000000 would be a gigabyte of digits.
    digits, exponent = number.as_tuple()[1:]
    assert isinstance(exponent, int)  # finite
    last_digit_at = exponent + len(digits) - len(bytes(digits).rstrip(b"\0"))
    if number.adjusted() >= MAX_PLAIN_DIGITS or last_digit_at < -MAX_PLAIN_DIGITS:
        raise InvalidParameterError(
            name,
            f"must be written with at most {MAX_PLAIN_DIGITS} digits before and "
            f"{MAX_PLAIN_DIGITS} after the decimal point",
        )
    text = format(number, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".") or "0"
    return text


def check_int_range(name: str, value: object, low: int, high: int) -> int:
    """An integer (not a bool) within ``low..high`` inclusive."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidParameterError(name, f"must be an integer from {low} to {high}")
    if not low <= value <= high:
        raise InvalidParameterError(name, f"must be from {low} to {high}, got {value}")
    return int(value)


def check_choice(
    name: str,
    value: object,
    choices: tuple[str, ...] | tuple[int, ...],
    kind: type[enum.Enum] | None = None,
) -> object:
    """One of ``choices``; members of ``kind`` (the parameter's enum) are taken by value, and a
    member of any other enum is refused, whatever its value (``PlanStatus.NO_COINS_LEFT`` is
    2, which is not what ``InvestmentStatus`` 2 means)."""
    if isinstance(value, enum.Enum):
        if kind is None or not isinstance(value, kind):
            expected = f"a {kind.__name__} or one of" if kind is not None else "one of"
            shown = ", ".join(repr(c) for c in choices)
            raise InvalidParameterError(
                name, f"must be {expected} {shown}, not a {type(value).__name__}"
            )
        raw: object = value.value
    else:
        raw = value
    # Only a str or an int can equal a choice: a float or Decimal that compares equal (1.0,
    # Decimal(1)) would go out in the wrong JSON type, and a signalling NaN cannot be compared.
    if isinstance(raw, bool) or not isinstance(raw, str | int) or raw not in choices:
        shown = ", ".join(repr(c) for c in choices)
        raise InvalidParameterError(name, f"must be one of {shown}, got {value!r}")
    return raw


def check_positive_seconds(name: str, value: object) -> float:
    """A finite number of seconds above 0 (an int or a float, not a bool)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 0 < value < math.inf  # a NaN fails both comparisons
    ):
        raise InvalidParameterError(name, "must be a finite number of seconds greater than 0")
    return float(value)


def check_text(name: str, value: object, *, max_length: int, min_length: int = 1) -> str:
    """A string of ``min_length..max_length`` characters."""
    if not isinstance(value, str):
        raise InvalidParameterError(name, f"must be a string, not {type(value).__name__}")
    if not min_length <= len(value) <= max_length:
        raise InvalidParameterError(
            name, f"must be {min_length} to {max_length} characters long, got {len(value)}"
        )
    if not value.isascii():
        try:
            value.encode("utf-8")
            encodes = True
        except UnicodeEncodeError:
            encodes = False
        if not encodes:
            # Raised outside the except clause: the encoding error holds the whole value (a
            # secret, for OAuth) and would stay reachable as the error's __context__.
            raise InvalidParameterError(
                name, "must be valid Unicode text (it holds a lone surrogate)"
            )
    return value


def check_account_filter(value: object, name: str = "account") -> str:
    """The ``account`` filter of rewards and hashrate: any name of 1 to 255 characters without
    control characters. The creation rule (`ACCOUNT_NAME`) is not applied: the service
    documents no pattern for the filter, and its own examples use dashes
    (``my-mining-account-01``; whitebit-exchange/docs, openapi/private/main_api_v4.yaml)."""
    text = check_text(name, value, max_length=255)
    if _CONTROL.search(text):
        raise InvalidParameterError(name, "must not contain control characters")
    return text


def check_pattern(name: str, value: object, pattern: re.Pattern[str], rule: str) -> str:
    """A string that matches ``pattern`` entirely; ``rule`` says the rule in words."""
    if not isinstance(value, str):
        raise InvalidParameterError(name, f"must be a string, not {type(value).__name__}")
    if not pattern.fullmatch(value):
        raise InvalidParameterError(name, f"{rule}, got {value!r}")
    return value


def check_timestamp(name: str, value: object) -> int:
    """Unix seconds from an int or a timezone-aware datetime."""
    if type(value) is int and 0 <= value <= MAX_UNIX_TIME:
        return value  # the usual case, at once
    if isinstance(value, datetime):
        if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
            raise InvalidParameterError(
                name, "a datetime must be timezone-aware (e.g. datetime(..., tzinfo=UTC))"
            )
        # An aware datetime's timestamp is plain arithmetic: any year gives one.
        seconds = int(value.timestamp() // 1)
    elif isinstance(value, bool) or not isinstance(value, int):
        raise InvalidParameterError(
            name, f"must be an int Unix time or an aware datetime, not {type(value).__name__}"
        )
    else:
        seconds = int(value)
    # The same bounds for both: a datetime before 1970 is a negative Unix time.
    if not 0 <= seconds <= MAX_UNIX_TIME:
        raise InvalidParameterError(name, "must be a Unix time in seconds from 0 to year 9999")
    return seconds


def check_time_range(start: object, end: object) -> tuple[int | None, int | None]:
    """``start``/``end`` as Unix seconds; ``start`` may not come after ``end``."""
    lo = None if start is None else check_timestamp("start", start)
    hi = None if end is None else check_timestamp("end", end)
    if lo is not None and hi is not None and lo > hi:
        raise InvalidParameterError("start", "must not be after end")
    return lo, hi


def check_bool(name: str, value: object) -> bool:
    """True or False, nothing that merely tests as one (1, "yes")."""
    if not isinstance(value, bool):
        raise InvalidParameterError(name, f"must be True or False, not {type(value).__name__}")
    return value


def account_filter(name: str, value: object) -> str:
    """`check_account_filter` as a `Check`."""
    # Printable ASCII of a length the filter takes passes at once (an ASCII string is
    # printable exactly when it holds no control character).
    if type(value) is str and 0 < len(value) <= 255 and value.isascii() and value.isprintable():
        return value
    return check_account_filter(value, name)


def int_range(low: int, high: int) -> Check:
    """The check of an integer within ``low..high`` inclusive."""

    def check(name: str, value: object) -> int:
        # The usual integers pass with two comparisons; anything else gets the full check.
        if type(value) is int and low <= value <= high:
            return value
        return check_int_range(name, value, low, high)

    return check


def pattern(regex: re.Pattern[str], rule: str) -> Check:
    """The check of a string that matches ``regex`` entirely; ``rule`` says the rule in words."""

    def check(name: str, value: object) -> str:
        if type(value) is str and regex.fullmatch(value):
            return value  # the usual case, at once
        return check_pattern(name, value, regex, rule)

    return check


def choice(
    choices: tuple[str, ...] | tuple[int, ...], kind: type[enum.Enum] | None = None
) -> Check:
    """The check of one of ``choices``, or a member of ``kind`` (see `check_choice`)."""
    accepted = frozenset(choices)

    def check(name: str, value: object) -> object:
        # A plain str or int among the choices passes at once; an enum member, a bool or
        # anything else gets the full check.
        if (type(value) is str or type(value) is int) and value in accepted:
            return value
        return check_choice(name, value, choices, kind)

    return check


def text(max_length: int, min_length: int = 1) -> Check:
    """The check of a string of ``min_length..max_length`` characters."""

    def check(name: str, value: object) -> str:
        if type(value) is str and min_length <= len(value) <= max_length and value.isascii():
            return value  # the usual case, at once
        return check_text(name, value, max_length=max_length, min_length=min_length)

    return check


def array_of(item: Check, *, min_items: int = 0, max_items: int = 1000) -> Check:
    """The check of a list (or tuple) of ``min_items..max_items`` values, each checked by
    ``item`` (named ``name[i]`` when refused); sent as a list."""

    def check(name: str, value: object) -> list[Any]:
        if not isinstance(value, list | tuple):
            raise InvalidParameterError(name, f"must be a list, not {type(value).__name__}")
        if not min_items <= len(value) <= max_items:
            raise InvalidParameterError(
                name, f"must hold {min_items} to {max_items} values, got {len(value)}"
            )
        return [item(f"{name}[{index}]", entry) for index, entry in enumerate(value)]

    return check


def record(fields: dict[str, Check], required: tuple[str, ...] = ()) -> Check:
    """The check of a mapping whose keys are the wire's names: each of ``fields`` checked by
    its check (named ``name.key`` when refused), the ``required`` ones present, no other key,
    a value given as None left out; sent as a dict."""

    def check(name: str, value: object) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise InvalidParameterError(name, f"must be a dict, not {type(value).__name__}")
        wire: dict[str, Any] = {}
        for key, entry in value.items():
            if entry is None:
                continue
            field_check = fields.get(key) if isinstance(key, str) else None
            if field_check is None:
                raise InvalidParameterError(
                    name, f"has no field {key!r} (its fields: {', '.join(fields)})"
                )
            wire[key] = field_check(f"{name}.{key}", entry)
        for key in required:
            if key not in wire:
                raise InvalidParameterError(f"{name}.{key}", "is required")
        return wire

    return check
