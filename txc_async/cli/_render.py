"""How results are written to stdout: JSON, JSON lines, a table on a terminal, tab-separated
lines elsewhere.

Amounts are strings in every form (``Decimal`` as written by the server, never a float), an
enum is its wire value, and field names are the library's (snake_case). ``rich`` is imported
only when a table is drawn.
"""

from __future__ import annotations

import enum
import json
import sys
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import TextIO, TypeAlias

#: Plain data: what ``json`` writes.
Plain: TypeAlias = bool | int | str | list["Plain"] | dict[str, "Plain"] | None

#: Fields holding Unix seconds: shown as UTC times in a table (as numbers in JSON and TSV).
TIME_FIELDS = frozenset({
    "created", "updated", "payment_time", "date", "timestamp", "created_at", "payout_time",
})


def to_plain(value: object) -> Plain:
    """``value`` as plain data: structs as objects of their fields, ``Decimal`` and every other
    non-integral number as a string, enums as their value."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, enum.Enum):
        return to_plain(value.value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, float):
        # Never a JSON float: repr is the shortest text that reads back as the same number.
        return repr(value)
    if isinstance(value, Mapping):
        return {str(key): to_plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [to_plain(item) for item in value]
    names = getattr(value, "__struct_fields__", None)
    if names is not None:
        return {name: to_plain(getattr(value, name)) for name in names}
    raise TypeError(f"cannot write a {type(value).__name__} as JSON")


def flatten(value: Plain, prefix: str = "") -> dict[str, str]:
    """A record as one row: nested objects' fields as ``outer.inner`` columns."""
    if isinstance(value, dict):
        row: dict[str, str] = {}
        for key, item in value.items():
            row.update(flatten(item, f"{prefix}{key}."))
        return row
    name = prefix.rstrip(".")
    if value is None:
        return {name: ""}
    if isinstance(value, bool):
        return {name: "true" if value else "false"}
    if isinstance(value, list):
        return {name: json.dumps(value, separators=(",", ":"))}
    return {name: str(value)}


def shown(column: str, text: str) -> str:
    """A cell of a table on a terminal: Unix seconds as a UTC time."""
    if column.rsplit(".", 1)[-1] in TIME_FIELDS and text.isdigit():
        return datetime.fromtimestamp(int(text), UTC).strftime("%Y-%m-%d %H:%M:%S")
    return text


def printable(text: str) -> str:
    """``text`` with every character a terminal would act on or not show (control characters,
    escape sequences, direction overrides, zero-width and other unprintable characters)
    written as an escape (``\\x1b``, ``\\u202e``): a value is shown as it is, never able to
    move the cursor, colour the screen or disguise itself."""
    if text.isprintable():
        return text
    # ascii() writes such a character as Python escapes it (no printable one is escaped here).
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


class Output:
    """Writes a command's result: JSON with ``--json``, else a table on a terminal and
    tab-separated lines on anything else."""

    def __init__(
        self, *, json_mode: bool, stream: TextIO | None = None, terminal: bool | None = None,
        errors: TextIO | None = None,
    ) -> None:
        self.json_mode = json_mode
        self.stream = sys.stdout if stream is None else stream
        #: Where notes go (everything that is not a result).
        self.errors = sys.stderr if errors is None else errors
        self.terminal = self.stream.isatty() if terminal is None else terminal

    def json(self, value: object) -> None:
        """One JSON document (or one line of JSON lines)."""
        print(json.dumps(to_plain(value), ensure_ascii=False), file=self.stream, flush=True)

    def fields(
        self, value: object, title: str, columns: tuple[str, str] = ("field", "value")
    ) -> None:
        """One object: its fields, a name and a value each."""
        if self.json_mode:
            self.json(value)
            return
        row = flatten(to_plain(value))
        if self.terminal:
            self._table(title, list(columns), [[key, shown(key, text)]
                                               for key, text in row.items()])
        else:
            for key, text in row.items():
                print(f"{key}\t{text}", file=self.stream)

    def records(self, values: Iterable[object], title: str) -> int:
        """Records as rows (JSON lines with ``--json``); returns how many."""
        rows: list[dict[str, str]] = []
        count = 0
        for value in values:
            count += 1
            if self.json_mode:
                self.json(value)
            else:
                rows.append(flatten(to_plain(value)))
        if not self.json_mode:
            self.rows(rows, title)
        return count

    def rows(self, rows: list[dict[str, str]], title: str) -> None:
        """Rows of text cells: a table on a terminal, else a header line and tab-separated
        lines."""
        columns = list(dict.fromkeys(key for row in rows for key in row))
        if self.terminal:
            # Columns no row fills say nothing on a screen.
            columns = [c for c in columns if any(row.get(c) for row in rows)]
            self._table(title, columns, [[shown(c, row.get(c, "")) for c in columns]
                                         for row in rows])
            return
        if columns:
            print("\t".join(columns), file=self.stream)
        for row in rows:
            print("\t".join(row.get(c, "") for c in columns), file=self.stream)

    def _table(self, title: str, columns: list[str], cells: list[list[str]]) -> None:
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        def text(value: str) -> Text:
            # A server's string is never read as markup (``[/x]`` would end the command,
            # ``[link=...]`` would show a disguised hyperlink) nor as an emoji code.
            return Text(printable(value))

        table = Table(title=text(title), title_justify="left", header_style="bold")
        for column in columns:
            table.add_column(text(column), overflow="fold")
        for line in cells:
            table.add_row(*map(text, line))
        Console(file=self.stream, force_terminal=self.terminal, highlight=False, markup=False,
                emoji=False).print(table)
