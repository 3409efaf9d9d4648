"""What one cell of human output says: a time as ISO 8601 in UTC, and which values are never
cut (numbers, ids, times)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from decimal import ROUND_FLOOR, Decimal, InvalidOperation

__all__ = [
    "MILLISECOND_FIELDS", "TIME_FIELDS", "is_identifier", "is_time", "iso_time", "printable",
    "rigid", "shown",
]

#: Fields holding Unix seconds (an integer, or a number with a fraction) in the service's
#: answers: shown as ISO 8601 UTC times on a terminal (as sent in JSON and TSV).
TIME_FIELDS = frozenset({
    "block_found_at", "cancellation_time", "close_date", "created", "created_at", "ctime",
    "date", "delisted_at", "end_time", "expire_at", "expires_at", "ftime", "funding_time",
    "modify_date", "mtime", "open_date", "payment_time", "payout_time", "start_time", "time",
    "timestamp", "trade_timestamp", "updated", "updated_at",
})
#: Fields holding Unix milliseconds (whitebit-exchange/docs, openapi/public/http-v4.yaml:
#: ``next_funding_rate_timestamp``, "13-digit value (millisecond precision)").
MILLISECOND_FIELDS = frozenset({"next_funding_rate_timestamp"})

#: A number as the service writes one, optionally followed by its unit ("158.97 TH/s", "5 %").
_QUANTITY = re.compile(
    r"[+-]?(?:[0-9][0-9,]*(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?(?: ?[A-Za-z/%]{1,6})?"
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def iso_time(seconds: Decimal) -> str:
    """Unix seconds as ISO 8601 in UTC (``2026-12-07T19:20:00Z``), a fraction of a second kept
    to the microsecond (``...:20.311311Z``)."""
    whole = int(seconds.to_integral_value(rounding=ROUND_FLOOR))
    micro = int(((seconds - whole) * 1_000_000).to_integral_value(rounding=ROUND_FLOOR))
    moment = _EPOCH + timedelta(seconds=whole, microseconds=micro)
    fraction = f".{moment.microsecond:06d}".rstrip("0") if moment.microsecond else ""
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + fraction + "Z"


def _leaf(column: str) -> str:
    return column.rsplit(".", 1)[-1]


def is_time(column: str) -> bool:
    """Whether a (flattened) column holds a time."""
    leaf = _leaf(column)
    return leaf in TIME_FIELDS or leaf in MILLISECOND_FIELDS


def shown(column: str, text: str) -> str:
    """A cell on a terminal: a time field's Unix seconds (or milliseconds) as an ISO 8601 UTC
    time; anything else, and a time no date holds, as it is."""
    if not is_time(column):
        return text
    try:
        seconds = Decimal(text)
        if not seconds.is_finite():
            return text
        if _leaf(column) in MILLISECOND_FIELDS:
            seconds = seconds.scaleb(-3)
        return iso_time(seconds)
    except (InvalidOperation, OverflowError, ValueError):
        return text


def is_identifier(column: str) -> bool:
    """Whether a column names or identifies a record (``id``, ``order_id``, ``name``,
    ``mining_account_name``)."""
    leaf = _leaf(column)
    return leaf in ("id", "name") or leaf.endswith(("_id", "_name"))


def rigid(column: str, cells: list[str]) -> bool:
    """Whether a column is never cut: a time, an id or a name, or numbers (with a unit or
    not) in every cell it fills. A cut number or id could be read as another; other text is
    cut with an ellipsis."""
    if is_time(column) or is_identifier(column):
        return True
    filled = [cell for cell in cells if cell]
    return bool(filled) and all(_QUANTITY.fullmatch(cell) for cell in filled)


def printable(text: str) -> str:
    """``text`` with every character a terminal would act on or not show (control characters,
    escape sequences, direction overrides, zero-width and other unprintable characters)
    written as an escape (``\\x1b``, ``\\u202e``): a value is shown as it is, never able to
    move the cursor, colour the screen or disguise itself."""
    if text.isprintable():
        return text
    # ascii() writes such a character as Python escapes it (no printable one is escaped here).
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)
