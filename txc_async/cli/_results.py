"""How the result of any operation is written: JSON with ``--json``, else by its shape through
the command line's `Output`: a list of records as a table, a mapping of records (balances by
ticker) as a table with the key first, one record as its fields, a page (one list of records
beside a few numbers) as the table of its records, and a bare value as it is. An answer without
records says so on stderr and writes nothing to stdout (with ``--json``: its document, ``[]``
or the page with its empty list)."""

from __future__ import annotations

from collections.abc import Mapping

from ._render import Output, Plain, flatten, to_plain

__all__ = ["show_result"]


def _records(value: Plain) -> bool:
    """A list of records (each an object)."""
    return isinstance(value, list) and all(isinstance(item, dict) for item in value)


def _the_page_list(plain: Mapping[str, Plain]) -> str | None:
    """The field holding a page's records: the one field that is a list, when it is a list of
    records (or an empty list beside nothing but numbers: a limit, an offset, a total) and
    every other field a bare value; else None."""
    lists = [key for key, item in plain.items() if isinstance(item, list | dict)]
    if len(lists) != 1:
        return None
    key = lists[0]
    items = plain[key]
    if not isinstance(items, list) or not _records(items):
        return None
    if items:
        return key
    # An empty list is a page's only beside its paging numbers (a bool is no number here).
    return key if all(type(item) is int for k, item in plain.items() if k != key) else None


def _field(result: object, name: str) -> object:
    """The field ``name`` of a struct or a mapping."""
    if isinstance(result, Mapping):
        return result[name]
    return getattr(result, name)


def show_result(output: Output, result: object, title: str) -> int:
    """Write ``result`` (``title`` names a table); returns the exit status (0)."""
    if output.json_mode:
        output.json(result)
        return 0
    plain = to_plain(result)
    if isinstance(plain, list):
        assert isinstance(result, list | tuple)
        output.records(result, title)
    elif isinstance(plain, dict) and plain and all(isinstance(v, dict) for v in plain.values()):
        items = result.items() if isinstance(result, Mapping) else (
            (key, _field(result, key)) for key in plain)
        output.rows([{"key": str(key)} | output.row(item) for key, item in items], title)
    elif isinstance(plain, dict):
        page = _the_page_list(plain)
        if page is None:
            output.fields(result, title)
        else:
            rest = ", ".join(f"{key} {text}" for key, text in flatten(
                {key: item for key, item in plain.items() if key != page}).items())
            records = _field(result, page)
            assert isinstance(records, list | tuple)
            output.records(records, f"{title}: {page}")
            if rest:
                output.note(rest)
    elif plain is None:
        output.note("done (the answer holds no data)")
    else:
        print(plain if not isinstance(plain, bool) else str(plain).lower(), file=output.stream)
    return 0
