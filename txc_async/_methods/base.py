"""What the typed methods of every group share: the group's link to its client and the walk over
an operation's pages (``iter_<name>``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._paging import walk_offset_pages

if TYPE_CHECKING:
    from .._operations import Operation
    from .hand import HandMethods

__all__ = ["MethodGroup", "records_of", "walk_operation"]

#: How deep a walk goes where the documents give no bound to the offset.
_NO_BOUND = 2**63 - 1


class MethodGroup:
    """The typed methods of one documentation group, bound to a client (``client.spot``)."""

    __slots__ = ("_client",)

    def __init__(self, client: HandMethods) -> None:
        self._client = client

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self._client!r}>"


def records_of(page: Any, records: str) -> Sequence[Any]:
    """The records of one page of an answer: the page itself (``""``), one of its fields
    (``"records"``, ``"data.workers"``), every market's records with its market (``"*"``), or
    whichever of the first and the last the page is (``"?"``)."""
    if records == "?":
        records = "*" if isinstance(page, Mapping) else ""
    if records == "":
        return page if isinstance(page, list) else []
    if records == "*":
        return [(market, record) for market, found in page.items() for record in found or ()]
    for name in records.split("."):
        page = getattr(page, name, None)
        if page is None:
            return []
    return page if isinstance(page, list) else []


async def walk_operation(
    client: HandMethods,
    op: Operation[Any],
    keywords: Mapping[str, object],
    *,
    records: str,
    limit: int,
    max_offset: int | None,
    narrow_by: str,
) -> AsyncIterator[Any]:
    """Every record of every page of ``op`` with the filters ``keywords``, each once, up to the
    deepest offset the documents allow (an error naming the filters beyond it)."""
    filters = op.wire_params(keywords)

    async def page(size: int, offset: int) -> tuple[Sequence[Any], int]:
        answer = await client._send(op, {**filters, "limit": size, "offset": offset})
        used = getattr(answer, "limit", None)
        return records_of(answer, records), used if isinstance(used, int) and used > 0 else size

    async for record in walk_offset_pages(
        page, limit=limit, max_offset=_NO_BOUND if max_offset is None else max_offset,
        what=f"records of {op.name}", narrow_by=narrow_by,
    ):
        yield record
