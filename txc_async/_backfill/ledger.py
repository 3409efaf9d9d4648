"""The check that ends every walk of mining rewards: what the walk returned, counted per date,
is compared with what the server holds, so a reward booked anywhere in the walked ranges while the
walk ran (behind it as well as ahead) is found and returned, once.

How it is exact. Records are only ever added, never removed, and the server answers any
``from..to`` newest first. So a request for ``from..to`` at ``offset = n`` (the number of records
already returned there) with ``limit = 1`` answers a record when the server holds more records in
``from..to`` than were returned: when something was booked there that the walk did not return.
The check asks that of the walked ranges, cut into pieces of at most ``MAX_OFFSET`` returned
records (one request per 10,000 records), halves a piece that answers until it is down to one
segment (about ``SEGMENT_RECORDS`` records, or one date when a date holds more), reads that
segment again and returns the records it did not return before, compared by a 128-bit digest of
their identity (``walk.fixed_fields``: account, date, currency). A reward whose status or
payout changed since the walk read it is the same reward: it is not returned again, and it
does not move the count (a reward changes, it is not added). Records of one identity are one
reward, returned once; a segment holding such a pair answers the probe and is read again at
every check, finding nothing.

What it guarantees: every reward the server holds in the ranges when the check begins is returned
exactly once. A check that found something is followed by another (up to ``CHECK_PASSES``), for
what was booked while it ran.

Memory: 24 bytes per returned record (its date and digest: 2.4 MB per 100,000 records), and no
object per record or per date.
Requests: one per 10,000 returned records and range, plus for each place where something was
booked about ``2 * log2(segments of its piece)`` probes and a read of its segment (one request
per 100 of its records).
"""

from __future__ import annotations

import asyncio
import hashlib
from array import array
from collections import Counter
from collections.abc import AsyncIterator, Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic

import msgspec

from .._operations import Operation
from .walk import MAX_OFFSET, FetchPage, Page, R, RewardsCursor, fixed_fields, walk_rewards

__all__ = [
    "CHECK_PASSES",
    "SEGMENT_RECORDS",
    "RewardLedger",
    "SeenAgain",
    "check_rewards",
    "every_reward",
    "record_digest",
    "wire_digest",
]

#: A segment, the part the check reads again around a place where something was booked, ends at
#: the first date boundary after this many records (a date holding more is one segment).
SEGMENT_RECORDS = 100
#: A check that found something is repeated, at most this many checks in all.
CHECK_PASSES = 3
#: How many pieces are probed at once.
CHECK_CONCURRENCY = 8
_DIGEST_BYTES = 16


_encode = msgspec.msgpack.Encoder().encode


def record_digest(record: Any) -> bytes:
    """A 128-bit digest of a reward's identity (`fixed_fields`:
    its account, date and currency), whatever read it (``MiningReward`` or ``WireReward``, from
    the wire or a file) and whatever its changing fields say: equal for one reward read before
    and after it settled."""
    # Encoded as a list: no field's text can run into the next one's.
    return hashlib.blake2b(_encode(fixed_fields(record)), digest_size=_DIGEST_BYTES).digest()


def digests_of(records: Iterable[Any]) -> bytes:
    """The `record_digest` of each of ``records``, one after the other (16 bytes each): the
    same digests, without a call of it per record."""
    blake2b = hashlib.blake2b
    return b"".join([
        blake2b(key, digest_size=_DIGEST_BYTES).digest()
        for key in map(_encode, map(fixed_fields, records))
    ])


#: The digest of records as read from the wire: the same as `record_digest`, since a
#: reward's identity holds no amount whose spelling could differ between readers.
wire_digest = record_digest


@dataclass(slots=True)
class _Range:
    key: Hashable
    base: dict[str, Any]
    start: int | None
    end: int | None
    #: The date and the digest of each record returned, in the order they came: 24 bytes a
    #: record, and no object per record or per date.
    dates: array[int] = field(default_factory=lambda: array("q"))
    digests: bytearray = field(default_factory=bytearray)

    def add(self, record: Any, digest: bytes) -> None:
        """One record returned, with its `record_digest`."""
        self.dates.append(record.date)
        self.digests += digest

    def returned(self, lo: int | None, hi: int | None) -> set[bytes]:
        """The digests of the records returned dated ``lo..hi``."""
        found: set[bytes] = set()
        digests = self.digests
        for i, date in enumerate(self.dates):
            if (lo is None or date >= lo) and (hi is None or date <= hi):
                at = i * _DIGEST_BYTES
                found.add(bytes(digests[at:at + _DIGEST_BYTES]))
        return found


@dataclass(frozen=True, slots=True)
class _Segment:
    range: _Range
    lo: int | None
    hi: int | None
    count: int


class RewardLedger(Generic[R]):
    """What walks returned, per range (``key``: a backfill's piece, say) and date, for
    `check_rewards`. Records are compared by `record_digest` (their identity), so
    rows read back from a file, whatever its spelling of amounts, compare with the wire's."""

    def __init__(self) -> None:
        self._ranges: dict[Hashable, _Range] = {}

    def add_range(self, key: Hashable, params: dict[str, Any]) -> None:
        """A range that is walked: its request parameters (``from``, ``to``, ``account``)."""
        base = {k: v for k, v in params.items() if k not in ("from", "to", "offset", "limit")}
        self._ranges[key] = _Range(key, base, params.get("from"), params.get("to"))

    def __contains__(self, key: object) -> bool:
        return key in self._ranges

    def add(self, key: Hashable, records: Iterable[R]) -> None:
        """Records returned for range ``key``."""
        rng = self._ranges[key]
        batch = records if isinstance(records, list) else list(records)
        rng.dates.extend([record.date for record in batch])
        rng.digests += digests_of(batch)

    def __len__(self) -> int:
        return sum(len(rng.dates) for rng in self._ranges.values())

    def pieces(self) -> list[list[_Segment]]:
        """The ranges cut into segments of about ``SEGMENT_RECORDS`` records (newest first), and
        those gathered into pieces of at most ``MAX_OFFSET`` records over contiguous dates of
        the same filters."""
        by_filter: dict[tuple[tuple[str, Any], ...], list[_Segment]] = {}
        for rng in self._ranges.values():
            by_filter.setdefault(tuple(sorted(rng.base.items())), []).extend(_segments(rng))
        pieces: list[list[_Segment]] = []
        for segments in by_filter.values():
            segments.sort(key=lambda s: (s.hi is None, s.hi), reverse=True)
            piece: list[_Segment] = []
            total = 0
            for segment in segments:
                if piece and (
                    total + segment.count > MAX_OFFSET
                    or piece[-1].lo is None or segment.hi is None
                    or segment.hi != piece[-1].lo - 1
                ):
                    pieces.append(piece)
                    piece, total = [], 0
                piece.append(segment)
                total += segment.count
            if piece:
                pieces.append(piece)
        return pieces


def _segments(rng: _Range) -> list[_Segment]:
    """``rng`` cut into segments that tile it (newest first), each closed at a date once it
    holds ``SEGMENT_RECORDS`` records."""
    per_date = sorted(Counter(rng.dates).items(), reverse=True)
    segments: list[_Segment] = []
    hi = rng.end
    count = 0
    for i, (date, records) in enumerate(per_date):
        count += records
        if count >= SEGMENT_RECORDS and i + 1 < len(per_date):
            segments.append(_Segment(rng, date, hi, count))
            hi, count = date - 1, 0
    segments.append(_Segment(rng, rng.start, hi, count))
    return segments


def _span(base: dict[str, Any], lo: int | None, hi: int | None) -> dict[str, Any]:
    params = dict(base)
    if lo is not None:
        params["from"] = lo
    if hi is not None:
        params["to"] = hi
    return params


async def _holds_more(
    fetch: FetchPage, piece: Sequence[_Segment], count: int, records: Operation[Page[R]]
) -> bool:
    """Whether the server holds more records in ``piece`` than the ``count`` returned there."""
    params = _span(piece[0].range.base, piece[-1].lo, piece[0].hi)
    page = await fetch(records, params | {"offset": count, "limit": 1})
    return bool(page)


#: Told of the records a check read again that were returned before (``range key, records``):
#: the same rewards, perhaps in a newer state.
SeenAgain = Callable[[Hashable, list[Any]], None]


async def _read_again(fetch: FetchPage, segment: _Segment, records: Operation[Page[R]],
                      seen_again: SeenAgain | None) -> list[R]:
    """The records of ``segment`` that were not returned before (now recorded as returned);
    ``seen_again`` is told of the others."""
    rng = segment.range
    returned = rng.returned(segment.lo, segment.hi)
    fresh: list[R] = []
    again: list[R] = []
    cursor: RewardsCursor[R] = RewardsCursor(_span(rng.base, segment.lo, segment.hi))
    async for page in walk_rewards(fetch, cursor, records):
        for record in page:
            digest = record_digest(record)
            if digest not in returned:
                returned.add(digest)
                fresh.append(record)
                rng.add(record, digest)
            else:
                again.append(record)
    if again and seen_again is not None:
        seen_again(rng.key, again)
    return fresh


async def _search(
    fetch: FetchPage, piece: Sequence[_Segment], records: Operation[Page[R]], *, known: bool,
    seen_again: SeenAgain | None,
) -> list[tuple[Hashable, list[R]]]:
    """What ``piece`` holds that was not returned (``known``: it holds something)."""
    count = sum(s.count for s in piece)
    if not known and count <= MAX_OFFSET:
        known = await _holds_more(fetch, piece, count, records)
        if not known:
            return []
    if len(piece) == 1:
        fresh = await _read_again(fetch, piece[0], records, seen_again)
        return [(piece[0].range.key, fresh)] if fresh else []
    middle = len(piece) // 2
    newer = await _search(fetch, piece[:middle], records, known=False, seen_again=seen_again)
    # Records are never removed: when the newer half holds nothing new, the older one does.
    older = await _search(
        fetch, piece[middle:], records, known=not newer, seen_again=seen_again
    )
    return newer + older


async def check_rewards(
    fetch: FetchPage, ledger: RewardLedger[R], records: Operation[Page[R]],
    seen_again: SeenAgain | None = None,
) -> AsyncIterator[tuple[Hashable, list[R]]]:
    """``(range key, records)`` for every reward the server holds in the ledger's ranges that
    was not returned: see the module's description. The ledger records them as returned.
    ``seen_again`` is told of the rewards a segment read again holds that were returned before:
    their latest state, for an output that keeps it."""
    gate = asyncio.Semaphore(CHECK_CONCURRENCY)

    async def search(piece: list[_Segment]) -> list[tuple[Hashable, list[R]]]:
        async with gate:
            return await _search(fetch, piece, records, known=False, seen_again=seen_again)

    for _ in range(CHECK_PASSES):
        found = False
        tasks = [asyncio.ensure_future(search(p)) for p in ledger.pieces()]
        try:
            answers = await asyncio.gather(*tasks)
        finally:  # a failing probe (or leaving early) stops the others
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        for answer in answers:
            for key, fresh in answer:
                found = True
                yield key, fresh
        if not found:
            return


async def every_reward(
    fetch: FetchPage, params: dict[str, Any], records: Operation[Page[R]]
) -> AsyncIterator[list[R]]:
    """Every reward of ``params``'s range exactly once, page by page: the walk, then the check
    (not needed when the walk took one request: that answer held the whole range at once)."""
    ledger: RewardLedger[R] = RewardLedger()
    ledger.add_range(0, params)
    cursor: RewardsCursor[R] = RewardsCursor(dict(params))
    async for page in walk_rewards(fetch, cursor, records):
        ledger.add(0, page)
        yield page
    if cursor.requests > 1:
        async for _key, fresh in check_rewards(fetch, ledger, records):
            yield fresh
