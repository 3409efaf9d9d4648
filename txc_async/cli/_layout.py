"""Records drawn on a terminal with rich: a table of the columns that matter that fits the
terminal's width, or, when those cannot fit, the record view (a block of ``field  value``
lines per record).

Nothing is split across lines: a number (an amount, a numeric id, a hashrate with its unit), an
id and a time keep their whole width, or their column is left out; other text is cut with an
ellipsis. Every column's width is worked out here, so that the table is exact by construction
rather than shrunk by rich. Every server string is a plain ``Text`` (never markup nor an emoji
code), its unprintable characters escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

from rich.cells import cell_len
from rich.console import Console, JustifyMethod
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from ._cells import is_identifier, is_time, printable, rigid

__all__ = ["Layout", "draw_fields", "draw_records", "draw_table", "layout"]

#: The narrowest a cut text column gets (its ellipsis included).
TEXT_LEAST = 8
#: The longest header word a cut text column keeps whole.
WORD_MOST = 14
#: What a table takes beyond its cells: a left edge, and per column two spaces of padding and
#: one rule (rich's default box, padding (0, 1), edges shown).
EDGE = 1
PER_COLUMN = 3


@dataclass(frozen=True, slots=True)
class Column:
    """A column as laid out: its field, its header, whether it may be cut, and its width."""

    name: str
    header: str
    rigid: bool
    width: int


@dataclass(frozen=True, slots=True)
class Layout:
    """The columns a table shows (``None``: the record view instead) and the non-empty ones
    it leaves out."""

    columns: list[Column] | None
    left_out: list[str]


def header_of(name: str) -> str:
    """A field's header: its words (``payout_time`` as ``payout time``), which may wrap."""
    return name.replace("_", " ").replace(".", " ")


def _width(text: str) -> int:
    return cell_len(printable(text))


def layout(
    rows: Sequence[dict[str, str]], candidates: Sequence[str], essential: Sequence[str],
    width: int,
) -> Layout:
    """The columns of ``candidates`` (in order; ``rows`` hold every cell as shown) that fit in
    ``width``, each at least as wide as its widest cell (a rigid column) or as ``TEXT_LEAST``
    (a text one, then widened towards its widest cell with what is left); ``columns`` is
    None when one of ``essential`` does not fit."""
    budget = width - EDGE
    chosen: list[tuple[str, bool, int, int]] = []
    left_out: list[str] = []
    for name in candidates:
        cells = [row.get(name, "") for row in rows]
        fixed = rigid(name, cells)
        longest_word = max(_width(word) for word in header_of(name).split())
        natural = max([longest_word, *(_width(cell) for cell in cells)])
        # A cut text column keeps its header's words whole when they are not long.
        least = natural if fixed else min(natural, max(TEXT_LEAST, min(longest_word, WORD_MOST)))
        if least + PER_COLUMN <= budget:
            chosen.append((name, fixed, least, natural))
            budget -= least + PER_COLUMN
        else:
            left_out.append(name)
    if any(name in left_out for name in essential):
        return Layout(None, left_out)
    widths = _share(budget, {name: (least, natural) for name, _, least, natural in chosen})
    return Layout([Column(name, header_of(name), fixed, widths[name])
                   for name, fixed, _, _ in chosen], left_out)


def _share(budget: int, wants: dict[str, tuple[int, int]]) -> dict[str, int]:
    """Widths from ``(least, natural)`` per column, the ``budget`` left shared out evenly
    among the columns narrower than their natural width (one that needs less than an even
    share gets what it needs, and the rest is shared among the others)."""
    widths = {name: least for name, (least, _) in wants.items()}
    hungry = sorted((natural - least, name) for name, (least, natural) in wants.items()
                    if natural > least)
    while hungry and budget > 0:
        share = budget // len(hungry)
        need, name = hungry[0]
        if need <= share:
            hungry.pop(0)
            widths[name] += need
            budget -= need
            continue
        if share == 0:  # fewer columns than spare cells: one more each, first come
            for _, name in hungry[:budget]:
                widths[name] += 1
            break
        for index, (need, name) in enumerate(hungry):
            widths[name] += share
            hungry[index] = (need - share, name)
        budget -= share * len(hungry)
    return widths


def _header(header: str, width: int) -> Text:
    """A header's words in lines of at most ``width`` cells (a longer word on a line of its
    own, folded by rich): the table's header wraps between words only."""
    lines: list[str] = []
    for word in header.split():
        if lines and _width(lines[-1]) + 1 + _width(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return Text("\n", no_wrap=False, overflow="fold").join(_text(line) for line in lines)


def _console(stream: TextIO, width: int, terminal: bool) -> Console:
    return Console(file=stream, width=width, force_terminal=terminal, highlight=False,
                   markup=False, emoji=False)


def _text(value: str, *, cut: bool = False) -> Text:
    # A server's string is never read as markup (``[/x]`` would end the command,
    # ``[link=...]`` would show a disguised hyperlink) nor as an emoji code.
    if cut:
        return Text(printable(value), no_wrap=True, overflow="ellipsis")
    return Text(printable(value), no_wrap=False, overflow="fold")


def draw_table(
    stream: TextIO, title: str, columns: Sequence[Column], rows: Sequence[dict[str, str]], *,
    width: int, terminal: bool,
) -> None:
    """The rows as a table of ``columns`` (from `layout`)."""
    table = Table(title=_text(title), title_justify="left", header_style="bold")
    for column in columns:
        # Every width is the column's widest cell at least when it is rigid: nothing is cut
        # there (an ellipsis would show it, were it ever).
        table.add_column(_header(column.header, column.width), width=column.width,
                         no_wrap=True,
                         overflow="ellipsis", justify=_justify(column))
    for row in rows:
        table.add_row(*(_text(row.get(c.name, ""), cut=True) for c in columns))
    _console(stream, width, terminal).print(table)


def _justify(column: Column) -> JustifyMethod:
    """Numbers to the right, so that their digits line up; ids, times and text to the left."""
    number = column.rigid and not is_time(column.name) and not is_identifier(column.name)
    return "right" if number else "left"


def draw_records(
    stream: TextIO, title: str, rows: Sequence[dict[str, str]], *, width: int, terminal: bool,
) -> None:
    """The record view: per record a heading and its non-empty fields, one a line (see
    `_fields_block`)."""
    console = _console(stream, width, terminal)
    for number, row in enumerate(rows, 1):
        if number > 1:
            console.print()
        console.print(_text(f"{title}: {number} of {len(rows)}"), style="bold")
        console.print(_fields_block({key: text for key, text in row.items() if text}, width))


def draw_fields(
    stream: TextIO, title: str, row: dict[str, str], headers: tuple[str, str], *, width: int,
    terminal: bool,
) -> None:
    """One object as a table of its fields, a name and a value each."""
    table = Table(title=_text(title), title_justify="left", header_style="bold")
    table.add_column(_text(headers[0]), no_wrap=True)
    # Numbers only (balances by ticker): to the right, their digits lined up.
    numbers = rigid(headers[1], list(row.values())) and not any(
        is_time(key) or is_identifier(key) for key in row)
    table.add_column(_text(headers[1]), justify="right" if numbers else "left")
    for key, text in row.items():
        table.add_row(_text(key), _value(key, text))
    _console(stream, width, terminal).print(table)


def _fields_block(row: dict[str, str], width: int) -> Table:
    """Fields as ``name  value`` lines, the values lined up, when every number, id and time
    fits whole beside the names; else each value on the line under its name. A value is never
    cut: a number, an id or a time stays on one line, a long text wraps."""
    names = max((_width(key) for key in row), default=0)
    whole = max((_width(text) for key, text in row.items() if rigid(key, [text])), default=0)
    beside = names + 2 + max(whole, TEXT_LEAST) <= width
    grid = Table.grid(padding=(0, 2))
    if beside:
        grid.add_column(no_wrap=True, width=names)
        grid.add_column(width=width - names - 2)
        for key, text in row.items():
            grid.add_row(_text(key), _value(key, text))
    else:
        grid.add_column(width=width)
        for key, text in row.items():
            grid.add_row(_text(key))
            grid.add_row(Padding(_value(key, text), (0, 0, 0, 2)))
    return grid


def _value(key: str, text: str) -> Text:
    """A value in a view of whole fields: a number, id or time kept on one line, text
    wrapped."""
    if rigid(key, [text]):
        return Text(printable(text), no_wrap=True, overflow="ellipsis")
    return _text(text)
