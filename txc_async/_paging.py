"""Walking an operation's pages by ``limit`` and ``offset``: the service's paging bounds, when a
page is the last, and the walk that yields every record of every page up to the deepest offset
the API serves."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence, Sized
from typing import TypeVar

from ._errors import TxcError

__all__ = ["MAX_OFFSET", "PAGE_LIMIT", "is_last", "walk_offset_pages"]

T = TypeVar("T")

#: Records per request: the most a page of rewards or investments holds.
PAGE_LIMIT = 100
#: The deepest offset the paged operations accept.
MAX_OFFSET = 10_000


def is_last(records: Sized, asked: int, used: int) -> bool:
    """Whether a page of ``records`` is the last one, asked for with ``limit=asked``, when its
    answer says it used ``limit=used``: a page shorter than its limit ends the walk. A server
    that gives fewer records per page than asked says so in the ``limit`` it echoes, and the walk
    goes on from the records it gave; an empty page always ends it (it could not move on)."""
    count = len(records)
    return count == 0 or count < min(asked, used)


async def walk_offset_pages(
    fetch: Callable[[int, int], Awaitable[tuple[Sequence[T], int]]],
    *,
    limit: int,
    max_offset: int,
    what: str,
    narrow_by: str = "",
) -> AsyncIterator[T]:
    """Every record of the pages ``fetch(limit, offset)`` returns (each as ``(records, the limit
    its answer echoes)``), in order, each once.

    Never asks past ``max_offset``: a server that gives short pages is read up to it, the
    records it returned before that page skipped; more records beyond it are an error naming
    ``what`` and the filters to narrow (``narrow_by``), never a silent end.
    """
    offset = 0
    # Records of the page at the deepest offset that were returned before it.
    skip = 0
    while True:
        records, used = await fetch(limit, offset)
        for record in records[skip:] if skip else records:
            yield record
        if is_last(records, limit, used):
            return
        if offset >= max_offset:
            raise TxcError(
                f"more than {offset + len(records)} {what} match; the API pages no deeper than "
                f"offset {max_offset}: narrow the filters"
                + (f" ({narrow_by})" if narrow_by else "")
            )
        following = offset + len(records)
        offset = min(following, max_offset)
        skip = following - offset
