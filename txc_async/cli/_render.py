"""How results are written to stdout: JSON, JSON lines, a table on a terminal, tab-separated
lines elsewhere.

Amounts are strings in every form (``Decimal`` as written by the server, never a float), an
enum is its wire value in JSON and TSV and its name on a terminal, and field names are the
library's (snake_case); a hashrate field has its unit beside it (``hashrate_unit``). Times are
Unix seconds in JSON and TSV, ISO 8601 UTC on a terminal. ``rich`` is imported only when a
table is drawn. An answer without records writes nothing to stdout but JSON's own document
(``[]``, or a page with an empty list) and says so on stderr.
"""

from __future__ import annotations

import enum
import json
import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import TextIO, TypeAlias

from ._cells import printable, shown

__all__ = ["Output", "Plain", "flatten", "printable", "to_plain"]

#: Plain data: what ``json`` writes.
Plain: TypeAlias = bool | int | str | list["Plain"] | dict[str, "Plain"] | None


def to_plain(value: object, *, human: bool = False) -> Plain:
    """``value`` as plain data: structs as objects of their fields, ``Decimal`` and every other
    non-integral number as a string, enums as their value, a hashrate field followed by its
    unit (``hashrate_unit``). ``human``: as a person reads it, an integer enum as its name
    (``closed``, not ``2``) and a hashrate in a unit that suits it, with that unit."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, enum.Enum):
        if human and isinstance(value, int):
            return value.name.lower()
        return to_plain(value.value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, float):
        # Never a JSON float: repr is the shortest text that reads back as the same number.
        return repr(value)
    if isinstance(value, Mapping):
        return {str(key): to_plain(item, human=human) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [to_plain(item, human=human) for item in value]
    names = getattr(value, "__struct_fields__", None)
    if names is not None:
        fields = {name: to_plain(getattr(value, name), human=human) for name in names}
        return _with_units(value, fields, human=human)
    raise TypeError(f"cannot write a {type(value).__name__} as JSON")


def _with_units(record: object, fields: dict[str, Plain], *, human: bool) -> dict[str, Plain]:
    """A record's plain ``fields`` with the unit of its hashrate, if it has one: a
    ``<field>_unit`` field right after it (None when the value is not a number), or with
    ``human`` the hashrate written in a unit that suits it, with the unit."""
    from ._hashrate import hashrate_field, readable, unit_of

    known = hashrate_field(record)
    if known is None:
        return fields
    name, bare = known
    value = fields.get(name)
    if not isinstance(value, str):
        return fields
    if human:
        return fields | {name: readable(value, bare)}
    with_unit: dict[str, Plain] = {}
    for key, item in fields.items():
        with_unit[key] = item
        if key == name:
            with_unit[f"{name}_unit"] = unit_of(value, bare)
    return with_unit


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


def nothing(title: str) -> str:
    """The note for an answer without records."""
    return f"no records: {title}"


class Output:
    """Writes a command's result: JSON with ``--json``, else a table on a terminal and
    tab-separated lines on anything else. ``width``: the terminal's columns (default: as
    ``COLUMNS`` or the terminal says)."""

    def __init__(
        self, *, json_mode: bool, stream: TextIO | None = None, terminal: bool | None = None,
        errors: TextIO | None = None, width: int | None = None,
    ) -> None:
        self.json_mode = json_mode
        self.stream = sys.stdout if stream is None else stream
        #: Where notes go (everything that is not a result).
        self.errors = sys.stderr if errors is None else errors
        self.terminal = self.stream.isatty() if terminal is None else terminal
        self.width = width

    def columns(self) -> int:
        """How many columns a table may take."""
        return self.width or shutil.get_terminal_size().columns

    def json(self, value: object) -> None:
        """One JSON document (or one line of JSON lines)."""
        print(json.dumps(to_plain(value), ensure_ascii=False), file=self.stream, flush=True)

    def note(self, text: str) -> None:
        """A line for the reader that is not the result: on stderr."""
        print(text, file=self.errors, flush=True)

    def fields(
        self, value: object, title: str, columns: tuple[str, str] = ("field", "value")
    ) -> None:
        """One object: its fields, a name and a value each."""
        if self.json_mode:
            self.json(value)
            return
        if not self.terminal:
            for key, text in flatten(to_plain(value)).items():
                print(f"{key}\t{text}", file=self.stream)
            return
        row = {key: shown(key, text) for key, text in flatten(to_plain(value, human=True)).items()}
        if not row:
            self.note(f"{title}: the answer is empty")
            return
        from ._layout import draw_fields

        draw_fields(self.stream, title, row, columns, width=self.columns(),
                    terminal=self.terminal)

    def records(self, values: Iterable[object], title: str) -> int:
        """Records as rows (JSON lines with ``--json``); returns how many."""
        records = list(values)
        if self.json_mode:
            for record in records:
                self.json(record)
        elif self.terminal and records:
            kinds = {type(record) for record in records}
            self._draw([self.row(record) for record in records], title,
                       kinds.pop() if len(kinds) == 1 else None)
        else:
            self.rows([self.row(record) for record in records], title)
        return len(records)

    def row(self, record: object) -> dict[str, str]:
        """A record as one row of text cells: as a person reads it on a terminal (see
        `to_plain`), as JSON writes it elsewhere."""
        return flatten(to_plain(record, human=self.terminal))

    def rows(self, rows: list[dict[str, str]], title: str) -> None:
        """Rows of text cells: a table on a terminal, else a header line and tab-separated
        lines; none: a note on stderr, nothing on stdout."""
        if not rows:
            self.note(nothing(title))
            return
        if self.terminal:
            self._draw(rows, title, None)
            return
        columns = list(dict.fromkeys(key for row in rows for key in row))
        print("\t".join(columns), file=self.stream)
        for row in rows:
            print("\t".join(row.get(c, "") for c in columns), file=self.stream)

    def _draw(self, rows: Sequence[dict[str, str]], title: str, kind: type | None) -> None:
        """A table of the columns that matter for records of ``kind`` that fit, else the
        record view; a note names the fields left out."""
        from ._columns import columns_for
        from ._layout import draw_records, draw_table, layout

        cells = [{key: shown(key, text) for key, text in row.items()} for row in rows]
        # Columns no row fills say nothing on a screen.
        names = [name for name in dict.fromkeys(key for row in cells for key in row)
                 if any(row.get(name) for row in cells)]
        candidates, essential = columns_for(kind, names)
        width = self.columns()
        plan = layout(cells, candidates, essential, width)
        if plan.columns is None:
            draw_records(self.stream, title, cells, width=width, terminal=self.terminal)
            return
        draw_table(self.stream, title, plan.columns, cells, width=width,
                   terminal=self.terminal)
        shown_names = {column.name for column in plan.columns}
        hidden = [name for name in names if name not in shown_names]
        if hidden:
            self.note(_left_out(hidden, width))


def _left_out(hidden: Sequence[str], width: int) -> str:
    """The note naming the fields a table leaves out, as many names as fit in ``width``."""
    count = f"{len(hidden)} more field{'s' if len(hidden) > 1 else ''}"
    line = f"{count} not shown: --json shows every field"
    for shown_count in range(len(hidden), 0, -1):
        more = ", ..." if shown_count < len(hidden) else ""
        named = f"{count} not shown ({', '.join(hidden[:shown_count])}{more}): --json shows " \
                "every field"
        if len(named) <= width:
            return named
    return line
