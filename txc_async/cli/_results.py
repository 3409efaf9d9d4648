"""How the result of any operation is written: JSON with ``--json``, else by its shape through
the command line's `Output`: a list of records as a table, a mapping of records (balances by
ticker) as a table with the key first, one record as its fields, a page (one list of records
beside a few numbers) as the table of its records, and a bare value as it is."""

from __future__ import annotations

from collections.abc import Mapping

from ._render import Output, Plain, flatten, to_plain

__all__ = ["show_result"]


def _records(value: Plain) -> bool:
    """A list of records (each an object)."""
    return isinstance(value, list) and all(isinstance(item, dict) for item in value)


def _the_page_list(plain: Mapping[str, Plain]) -> str | None:
    """The field holding a page's records: the one field that is a list, when it is a
    non-empty list of records and every other field a bare value (a limit, an offset, a
    total); else None."""
    lists = [key for key, item in plain.items() if isinstance(item, list | dict)]
    if len(lists) != 1:
        return None
    key = lists[0]
    items = plain[key]
    return key if isinstance(items, list) and items and _records(items) else None


def show_result(output: Output, result: object, title: str) -> int:
    """Write ``result`` (``title`` names a table); returns the exit status (0)."""
    if output.json_mode:
        output.json(result)
        return 0
    plain = to_plain(result)
    if isinstance(plain, list):
        output.records(plain, title)
    elif isinstance(plain, dict) and plain and all(isinstance(v, dict) for v in plain.values()):
        output.rows([{"key": key} | flatten(item) for key, item in plain.items()], title)
    elif isinstance(plain, dict):
        page = _the_page_list(plain)
        if page is None:
            output.fields(plain, title)
        else:
            rest = ", ".join(f"{key} {text}" for key, text in flatten(
                {key: item for key, item in plain.items() if key != page}).items())
            output.records(_list(plain[page]), f"{title}: {page}")
            if rest:
                print(rest, file=output.errors)
    elif plain is None:
        print("done (the answer holds no data)", file=output.errors)
    else:
        print(plain if not isinstance(plain, bool) else str(plain).lower(), file=output.stream)
    return 0


def _list(value: Plain) -> list[Plain]:
    assert isinstance(value, list)
    return value
