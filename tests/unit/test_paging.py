"""The offset walk every paged operation uses: each record once, short pages followed, never a
request past the deepest offset, and more records than it reaches said, never dropped."""

from __future__ import annotations

import pytest

from txc_async import TxcError
from txc_async._paging import is_last, walk_offset_pages


def pages_of(records: list[int], serve_at_most: int) -> tuple[object, list[tuple[int, int]]]:
    asked: list[tuple[int, int]] = []

    async def fetch(limit: int, offset: int) -> tuple[list[int], int]:
        asked.append((limit, offset))
        used = min(limit, serve_at_most)
        return records[offset : offset + used], used

    return fetch, asked


async def walk(fetch: object, **options: object) -> list[int]:
    return [r async for r in walk_offset_pages(fetch, **options)]  # type: ignore[arg-type]


@pytest.mark.parametrize(("total", "served"), [(0, 100), (1, 100), (100, 100), (250, 100),
                                              (250, 30), (77, 7)])
async def test_every_record_once_in_order(total: int, served: int) -> None:
    fetch, asked = pages_of(list(range(total)), served)
    assert await walk(fetch, limit=100, max_offset=10_000, what="records") == list(range(total))
    assert all(offset <= 10_000 for _, offset in asked)


async def test_short_pages_are_read_up_to_the_deepest_offset_without_repeating() -> None:
    fetch, asked = pages_of(list(range(24)), 7)
    assert await walk(fetch, limit=10, max_offset=20, what="records") == list(range(24))
    assert [offset for _, offset in asked] == [0, 7, 14, 20]


async def test_more_than_the_deepest_offset_reaches_is_an_error_naming_the_filters() -> None:
    fetch, _ = pages_of(list(range(40)), 10)
    seen: list[int] = []
    with pytest.raises(TxcError, match=r"more than 30 investments match.*\(ticker, status\)"):
        async for record in walk_offset_pages(
            fetch, limit=10, max_offset=20, what="investments", narrow_by="ticker, status"
        ):
            seen.append(record)
    assert seen == list(range(30))


@pytest.mark.parametrize(("count", "asked", "used", "last"), [
    (0, 100, 100, True), (99, 100, 100, True), (100, 100, 100, False),
    (30, 100, 30, False), (29, 100, 30, True),
])
def test_a_page_is_last_when_shorter_than_the_limit_its_answer_used(
    count: int, asked: int, used: int, last: bool
) -> None:
    assert is_last([None] * count, asked, used) is last
