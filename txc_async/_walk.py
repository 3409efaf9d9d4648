"""The exact walk through a range of mining rewards, shared by ``Client.iter_mining_rewards`` and
the backfills: every record once, even while the server books new rewards inside the range."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import msgspec

from ._errors import TxcError
from ._models import MiningReward, RewardsPage
from ._operations import MINING_REWARDS, Auth, Operation

if TYPE_CHECKING:
    from ._client import Client

__all__ = [
    "CATCH_UP_PASSES",
    "MAX_OFFSET",
    "PAGE_LIMIT",
    "REWARD_RECORDS",
    "UNSETTLED_SECONDS",
    "WIRE_RECORDS",
    "RewardsCursor",
    "WireReward",
    "read_again",
    "walk_rewards",
]

#: Records per request: the most the API gives.
PAGE_LIMIT = 100
#: The deepest offset the API accepts.
MAX_OFFSET = 10_000
#: A range ending less than this many seconds ago may still get bookings at its newest dates.
UNSETTLED_SECONDS = 2 * 86_400
#: How many times, at most, a walk of such a range reads its newest dates again at the end.
CATCH_UP_PASSES = 3


class WireReward(msgspec.Struct, frozen=True, rename="camel"):
    """A mining reward as the wire carries it: decimal amounts kept as the server's strings.

    Exports use it: writing a reward to a file needs no ``Decimal``, and a string the server
    sent cannot be rounded. ``MiningReward`` is the same record with ``Decimal`` amounts.
    """

    mining_account_name: str
    total_reward: str
    reward: str
    fee: str
    fpps_rate: str
    hash_rate: str
    date: int


class _WireRewardsPage(msgspec.Struct, frozen=True):
    offset: int
    limit: int
    data: list[WireReward]


# The typed page goes through the operation's own decoder: tolerant where the API leaves things
# open, and refusing any non-finite amount.
_decode_page: Callable[[bytes], RewardsPage] = MINING_REWARDS.decode
_decode_wire_page = msgspec.json.Decoder(_WireRewardsPage).decode
# A plain decimal, as the service writes amounts; anything else (empty, NaN, Infinity, an
# exponent) sends the page through the typed decoder, which reads it tolerantly or refuses it.
_PLAIN_DECIMAL = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")


def _records(body: bytes) -> list[MiningReward]:
    return _decode_page(body).data


def _as_wire(record: MiningReward) -> WireReward:
    def text(value: object) -> str:
        return "" if value is None else format(value, "f")

    return WireReward(
        record.mining_account_name, text(record.total_reward), text(record.reward),
        text(record.fee), text(record.fpps_rate), record.hash_rate, record.date,
    )


def _wire_records(body: bytes) -> list[WireReward]:
    try:
        records = _decode_wire_page(body).data
    except (msgspec.ValidationError, msgspec.DecodeError):
        return [_as_wire(record) for record in _records(body)]
    plain = _PLAIN_DECIMAL.fullmatch
    for record in records:
        if not (
            plain(record.total_reward) and plain(record.reward) and plain(record.fee)
            and plain(record.fpps_rate)
        ):
            return [_as_wire(record) for record in _records(body)]
    return records


#: The rewards operation, answering the records of a page as ``MiningReward``s.
REWARD_RECORDS: Operation[list[MiningReward]] = Operation(
    MINING_REWARDS.name, MINING_REWARDS.method, MINING_REWARDS.path, MINING_REWARDS.scope,
    Auth.SIGNED, MINING_REWARDS.retry_safe, _records,
)
#: The rewards operation, answering the records of a page as ``WireReward``s (for exports).
WIRE_RECORDS: Operation[list[WireReward]] = Operation(
    MINING_REWARDS.name, MINING_REWARDS.method, MINING_REWARDS.path, MINING_REWARDS.scope,
    Auth.SIGNED, MINING_REWARDS.retry_safe, _wire_records,
)

R = TypeVar("R", MiningReward, WireReward)


@dataclass(slots=True)
class RewardsCursor(Generic[R]):
    """Where a walk stands: the range still to walk is ``params`` (its ``to`` is the *boundary
    date*, the oldest date reached so far), ``offset`` is the position within that range to read
    next, and ``seen`` holds the records already returned at the boundary date.

    A walk resumes from a cursor. Rebuilt from records written earlier, a cursor is
    ``params | {"to": oldest date written}``, ``seen`` = the records written at that date and
    ``offset = len(seen)``: never past the true position, so nothing is skipped.
    """

    params: dict[str, Any]
    offset: int = 0
    seen: set[R] = field(default_factory=set)


async def walk_rewards(
    client: Client,
    cursor: RewardsCursor[R],
    records: Operation[list[R]],
    *,
    catch_up: bool = True,
    now: float | None = None,
) -> AsyncIterator[list[R]]:
    """Every reward of ``cursor.params``'s range exactly once, page by page, newest first.

    ``records`` says how a page decodes (``REWARD_RECORDS`` or ``WIRE_RECORDS``). The cursor is
    updated as pages are returned, so the walk can be resumed from it.

    How it stays exact while the server books rewards. The server answers ``from..to`` newest
    first (by date, then by account), ``limit`` records from ``offset``; booking a reward inserts
    it somewhere in that order and shifts every later one. The walk never pages deep: after each
    page it moves ``to`` down to the page's oldest date ``d`` (the boundary) and goes on from
    offset ``j``, the number of records of the page dated ``d``, keeping those ``j`` records in
    ``seen``. Then:

    * No record is returned twice. A record newer than the boundary can never come back, since
      every later request ends at ``to = d``; a record dated ``d`` that comes back (an insertion
      before it pushed it to a later position) is in ``seen`` and dropped. Older records have
      not been returned yet.
    * No record is missed that was in the range when the walk began, nor any booked meanwhile
      at a date older than the boundary. Records are only ever added: an insertion moves a
      record to a later position, never an earlier one. Every request reads the positions right
      after the ones already read in the same ``to``-range, so whatever was not read yet lies at
      or after ``offset`` and is read later.
    * A reward booked meanwhile *behind* the walk (newer than the boundary, or at the boundary
      date before ``offset``) has left the part still to walk. It causes no duplicate and no
      miss of another record. Bookings land on the newest dates (today's rewards; yesterday's
      booked just after midnight): so when a fresh walk's range ends less than
      ``UNSETTLED_SECONDS`` ago, the walk reads its newest dates once more at the end (from the
      newest date it saw first to the range's end) and returns what it had not returned, up to
      ``CATCH_UP_PASSES`` times while such reads still find something (``catch_up=False``
      leaves that to the caller, see :func:`read_again`). A booking behind the
      walk at an older date (a correction of a settled day) is not returned by this walk;
      settled days do not change, which is why the command line's range ends with the last
      whole UTC day by default.

    Memory: ``seen`` only holds records of one date (the boundary) (and a walk that reads its
    newest dates again keeps the records of those dates), at most the
    10,100 records one date can hold before the API's offset bound makes the walk fail (name the
    account then), plus the page being read. Requests: one per page, as plain offset paging;
    offsets stay below the records of one date, so the API's 10,000 bound is no limit on range
    size. It assumes, as any offset paging does, that records of one date keep their order.
    """
    moment = time.time() if now is None else now
    end = cursor.params.get("to")
    catch_up = (
        catch_up
        and cursor.offset == 0 and not cursor.seen
        and (end is None or end >= moment - UNSETTLED_SECONDS)
    )
    original = dict(cursor.params)
    newest: int | None = None
    recent: set[R] = set()  # what was returned at the newest dates, for the reads at the end
    async for page in _walk(client, cursor, records):
        if catch_up:
            if newest is None:
                newest = page[0].date
            recent.update(r for r in page if r.date >= newest)
        yield page
    if catch_up:
        tail = original if newest is None else original | {"from": newest}
        async for page in read_again(client, [tail], recent, records):
            yield page


async def read_again(
    client: Client,
    ranges: list[dict[str, Any]],
    returned: set[R],
    records: Operation[list[R]],
) -> AsyncIterator[list[R]]:
    """Read ``ranges`` (the newest dates of walks already made) again and return what is not in
    ``returned`` (every record returned in those ranges), up to ``CATCH_UP_PASSES`` times while
    a read still finds something: the rewards booked there while the walks ran."""
    for _ in range(CATCH_UP_PASSES):
        found = False
        for params in ranges:
            again: RewardsCursor[R] = RewardsCursor(dict(params))
            async for page in _walk(client, again, records):
                fresh = [r for r in page if r not in returned]
                if fresh:
                    found = True
                    returned.update(fresh)
                    yield fresh
        if not found:
            return


async def _walk(
    client: Client, cursor: RewardsCursor[R], records: Operation[list[R]]
) -> AsyncIterator[list[R]]:
    """The walk itself: every record of ``cursor.params``'s range, see :func:`walk_rewards`."""
    limit = PAGE_LIMIT
    while True:
        page = await client._rewards_page(
            records, cursor.params | {"limit": limit, "offset": cursor.offset}
        )
        boundary = cursor.params.get("to")
        fresh: list[R] = []
        oldest = boundary
        for record in page:
            if record.date == boundary:
                if record in cursor.seen:
                    continue
                cursor.seen.add(record)
            elif boundary is not None and record.date > boundary:
                raise TxcError(
                    f"mining_rewards: the server answered a reward dated {record.date}, "
                    f"after the range's end {boundary}"
                )
            fresh.append(record)
            if oldest is None or record.date < oldest:
                oldest = record.date
        if len(page) < limit:
            if fresh:
                yield fresh
            return
        if oldest is not None and oldest != boundary:
            # The page reached an older date: everything newer than it is complete.
            at_oldest = [r for r in page if r.date == oldest]
            cursor.params = cursor.params | {"to": oldest}
            cursor.seen = set(at_oldest)
            cursor.offset = len(at_oldest)
        else:
            cursor.offset += len(page)
            if cursor.offset > MAX_OFFSET:
                raise TxcError(
                    f"mining_rewards: more than {MAX_OFFSET + PAGE_LIMIT} rewards share the "
                    f"date {boundary}; the API cannot page through them: name the account"
                )
        if fresh:
            yield fresh

