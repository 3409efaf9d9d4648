"""The walk through a range of mining rewards, shared by ``Client.iter_mining_rewards`` and the
backfills: every record once, even while the server books new rewards inside the range (what is
booked behind the walk is left to the check that follows it, in ``ledger``)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from operator import attrgetter
from typing import Any, Generic, Protocol, TypeVar

import msgspec

from .._errors import TxcError
from .._models import MiningReward, RewardsPage
from .._operations import MAX_OFFSET, MINING_REWARDS, PAGE_LIMIT, Operation
from .._paging import is_last
from .._stats import ClientStats

__all__ = [
    "MAX_OFFSET",
    "PAGE_LIMIT",
    "REWARD_RECORDS",
    "WIRE_RECORDS",
    "FetchPage",
    "Page",
    "R",
    "RewardsClient",
    "RewardsCursor",
    "WireReward",
    "fixed_fields",
    "is_last",
    "walk_rewards",
]



class WireReward(msgspec.Struct, frozen=True, rename="camel", gc=False):
    """A mining reward as the wire carries it: decimal amounts kept as the server's strings.

    Exports use it: writing a reward to a file needs no ``Decimal``, and a string the server
    sent cannot be rounded. ``MiningReward`` is the same record with ``Decimal`` amounts and
    enums. The status and payout fields are the wire's strings (``None`` where the server
    sent null or nothing, as in the records of the API's first specification and rows written
    before they were read).
    """

    mining_account_name: str
    total_reward: str
    reward: str
    fee: str
    fpps_rate: str
    hash_rate: str
    date: int
    status: str | None = None
    reward_currency: str | None = None
    payout_destination: str | None = None
    payout_transaction_hash: str | None = None
    payout_address: str | None = None
    payout_time: int | None = None


R = TypeVar("R", MiningReward, WireReward)


class _WireRewardsPage(msgspec.Struct, frozen=True):
    offset: int
    limit: int
    data: list[WireReward]


# The typed page goes through the operation's own decoder: tolerant where the API leaves things
# open, and refusing any non-finite amount.
_decode_page: Callable[[bytes], RewardsPage] = MINING_REWARDS.decode
_decode_wire_page = msgspec.json.Decoder(_WireRewardsPage).decode
# A plain decimal, as the service writes amounts, is kept as sent; anything else is read as the
# typed decoder reads it: empty or null is "", an exponent is written out (unless huge), and a
# NaN or an infinity makes the typed decoder refuse the page.
_PLAIN_DECIMAL = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")


_T = TypeVar("_T")


class Page(list[_T]):
    """One page of a walk: its records, and the ``limit`` the server's answer says it used.

    A page without records is false, as an empty list is: an error body in a page's shape
    (``{"offset": 0, "limit": 100, "data": [], "message": ...}``) is then the error it says (see
    ``decode_answer``), never an empty last page."""

    __slots__ = ("limit",)

    def __init__(self, records: list[_T], limit: int) -> None:
        super().__init__(records)
        self.limit = limit


def _records(body: bytes) -> Page[MiningReward]:
    page = _decode_page(body)
    return Page(page.data, page.limit)


class _RawRewardsPage(msgspec.Struct):
    data: list[Any]


_decode_raw_page = msgspec.json.Decoder(_RawRewardsPage).decode
_AMOUNTS = (
    ("total_reward", "totalReward"), ("reward", "reward"), ("fee", "fee"),
    ("fpps_rate", "fppsRate"),
)


def _from_typed(body: bytes) -> Page[WireReward]:
    """The page read by the typed decoder (tolerant where the API leaves things open, refusing a
    non-finite amount), each amount then spelled as the wire spells it when that is a plain
    decimal string, else written out from the decoded value: a record's spelling never depends
    on what else its page holds."""
    page = _decode_page(body)
    typed = page.data
    try:
        raw = _decode_raw_page(body).data
    except (msgspec.ValidationError, msgspec.DecodeError):
        raw = []
    if len(raw) != len(typed):
        raw = [None] * len(typed)
    plain = _PLAIN_DECIMAL.fullmatch
    out: list[WireReward] = []
    for record, sent in zip(typed, raw, strict=True):
        texts: list[str] = []
        for attr, key in _AMOUNTS:
            text = sent.get(key) if isinstance(sent, dict) else None
            if not (isinstance(text, str) and plain(text)):
                value = getattr(record, attr)
                text = "" if value is None else _written_out(value)
            texts.append(text)
        total, reward, fee, rate = texts
        out.append(WireReward(
            record.mining_account_name, total, reward, fee, rate, record.hash_rate, record.date,
            _text(record.status), record.reward_currency, _text(record.payout_destination),
            record.payout_transaction_hash, record.payout_address, record.payout_time,
        ))
    return Page(out, page.limit)


def _text(value: str | None) -> str | None:
    """An enum member as its wire value (a ``StrEnum`` is its value), or the value as read."""
    return None if value is None else str(value)


#: An amount whose exponent reaches this far keeps its exponent when written: written out, a
#: dozen characters such as ``1E+10000000`` would take megabytes.
_WRITE_OUT_DIGITS = 60


def _written_out(amount: Decimal) -> str:
    """A finite amount as a plain decimal, or with its exponent when that would be huge."""
    if -_WRITE_OUT_DIGITS <= amount.adjusted() <= _WRITE_OUT_DIGITS:
        return format(amount, "f")
    return str(amount)


def _wire_records(body: bytes) -> Page[WireReward]:
    """The page's records with their amounts as the wire spells them. A page whose amounts are
    all plain decimal strings is taken as it is; any other goes through the typed decoder, and
    each record still keeps every plain amount as the wire wrote it (see `_from_typed`),
    whatever else its page holds."""
    try:
        page = _decode_wire_page(body)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return _from_typed(body)
    if not _all_plain(page.data):
        return _from_typed(body)
    return Page(page.data, page.limit)


_AMOUNTS_OF = attrgetter("total_reward", "reward", "fee", "fpps_rate")
_PLAIN_AMOUNTS = re.compile(r"(?:-?[0-9]+(?:\.[0-9]+)?,)*")


def _all_plain(records: list[WireReward]) -> bool:
    """Whether every amount of ``records`` is a plain decimal string: one match over the page's
    amounts joined by commas, which costs a fifth of a match per amount. An amount holding a
    comma would split in two, so the commas are counted too."""
    if not records:
        return True
    joined = ",".join(map(",".join, map(_AMOUNTS_OF, records))) + ","
    return (
        joined.count(",") == len(_AMOUNTS) * len(records)
        and _PLAIN_AMOUNTS.fullmatch(joined) is not None
    )


#: The rewards operation, answering the records of a page as ``MiningReward``s.
REWARD_RECORDS: Operation[Page[MiningReward]] = MINING_REWARDS.with_decoder(_records)
#: The rewards operation, answering the records of a page as ``WireReward``s (for exports).
WIRE_RECORDS: Operation[Page[WireReward]] = MINING_REWARDS.with_decoder(_wire_records)


def fixed_fields(record: MiningReward | WireReward) -> tuple[str, int, str]:
    """A reward's identity: what the service keeps fixed for it, its account, date and currency
    (``""`` where the record names none: the records of the API's first specification, rows written
    before the currency was read). The one definition the walk's ``seen``, the check's digests and
    the exports' settling all compare.

    Why these three. The API gives rewards no identifier, and its documentation
    (whitebit-exchange/docs, ``openapi/private/main_api_v4.yaml``, schema ``MiningReward``)
    says a reward changes after it is booked: ``status`` goes from ``pending`` to
    ``successful`` or ``canceled`` and the payout fields fill in. It says nothing of the
    amounts staying as they are while a reward is pending ("waiting for block confirmations /
    batch accumulation"), so they are not part of it either, nor is the payout destination,
    an account's setting. An account is paid once a day per currency: its name, the reward's
    date and its currency tell its rewards apart.
    """
    return (record.mining_account_name, record.date, record.reward_currency or "")


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
    seen: set[Any] = field(default_factory=set)
    #: Requests made by walks from this cursor.
    requests: int = 0


class FetchPage(Protocol):
    """Fetches one page of rewards: the request ``params`` decoded by ``records`` (typed or wire
    records), under the client's budgets and retries."""

    def __call__(
        self, records: Operation[Page[R]], params: Mapping[str, Any], /
    ) -> Awaitable[Page[R]]: ...


class RewardsClient(Protocol):
    """What the backfills need of a client (``txc_async.Client`` has it): a page fetcher, and
    counters of the requests it sent."""

    @property
    def stats(self) -> ClientStats: ...

    def _rewards_page(
        self, records: Operation[Page[R]], params: Mapping[str, Any], /
    ) -> Awaitable[Page[R]]: ...


async def walk_rewards(
    fetch: FetchPage, cursor: RewardsCursor[R], records: Operation[Page[R]]
) -> AsyncIterator[list[R]]:
    """Every reward of ``cursor.params``'s range once, page by page, newest first.

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
    * A reward is its identity (`fixed_fields`: account, date, currency), never its
      changing fields: a reward read ``pending`` on one page and ``successful`` on a later
      one (it settled while the walk ran) is one reward, returned once, in the state first
      read. Records of one identity are one reward, returned once (the walk could not tell a
      second one from the first pushed into a later page).
    * A reward booked meanwhile *behind* the walk (newer than the boundary, or at the boundary
      date before ``offset``) has left the part still to walk: the walk does not return it. The
      check that follows every walk (``txc_async._backfill.ledger.check_rewards``) finds and
      returns it.

    Memory: ``seen`` only holds records of one date (the boundary), at most the 10,100 records
    one date can hold before the API's offset bound makes the walk fail (name the account then),
    plus the page being read. Requests: one per page, as plain offset paging; offsets stay below
    the records of one date, so the API's 10,000 bound is no limit on range size. It assumes, as
    any offset paging does, that records of one date keep their order.
    """
    limit = PAGE_LIMIT
    while True:
        cursor.requests += 1
        page = await fetch(
            records, cursor.params | {"limit": limit, "offset": cursor.offset}
        )
        boundary = cursor.params.get("to")
        # Without a start, Unix time's: a reward is never dated before 1970.
        start = cursor.params.get("from") or 0
        fresh: list[R] = []
        oldest = boundary
        alike: set[Any] = set()  # records of one identity are one reward
        keys = list(map(fixed_fields, page))
        for record, key in zip(page, keys, strict=True):
            if record.date == boundary:
                if key in cursor.seen:
                    continue
                cursor.seen.add(key)
            elif boundary is not None and record.date > boundary:
                raise TxcError(
                    f"mining_rewards: the server answered a reward dated {record.date}, "
                    f"after the range's end {boundary}"
                )
            elif record.date < start:
                raise TxcError(
                    f"mining_rewards: the server answered a reward dated {record.date}, "
                    f"before the range's start {start}"
                )
            elif key in alike:
                continue
            else:
                alike.add(key)
            fresh.append(record)
            if oldest is None or record.date < oldest:
                oldest = record.date
        if is_last(page, limit, page.limit):
            if fresh:
                yield fresh
            return
        if oldest is not None and oldest != boundary:
            # The page reached an older date: everything newer than it is complete.
            at_oldest = [key for r, key in zip(page, keys, strict=True) if r.date == oldest]
            cursor.params = cursor.params | {"to": oldest}
            cursor.seen = set(at_oldest)
            cursor.offset = len(at_oldest)
        else:
            if cursor.offset >= MAX_OFFSET:
                raise TxcError(
                    f"mining_rewards: more than {MAX_OFFSET + len(page)} rewards share the "
                    f"date {boundary}; the API pages no deeper than offset {MAX_OFFSET}: name "
                    "the account"
                )
            # At most the deepest offset: records read again there are in ``seen``.
            cursor.offset = min(cursor.offset + len(page), MAX_OFFSET)
        if fresh:
            yield fresh

