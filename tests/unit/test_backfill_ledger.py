"""The check that ends every walk of mining rewards (``txc_async._backfill.ledger``)."""

from __future__ import annotations

import io
import itertools
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec
import pytest
from aioresponses import aioresponses

import txc_async
from txc_async._backfill.ledger import RewardLedger, check_rewards, record_digest
from txc_async._backfill.walk import MAX_OFFSET, REWARD_RECORDS, WireReward
from txc_async._export.parquet import read_part_rows
from txc_async._export.rowfile import read_rows
from txc_async._models import MiningReward

from ..support.common import BASE, decode_signed, make_rewards, requests_to, serve_rewards

START = 1704067200
DAY = 86400
REWARDS_PATH = "/api/v4/mining/rewards"


def _wire(total: str, date: int = START) -> WireReward:
    return WireReward("acc_1", total, "1", "0", "0.5", "1 TH/s", date)


def test_a_rewards_digest_is_its_identity_account_date_and_currency() -> None:
    pending = WireReward("acc_1", "1.2", "1", "0", "0.5", "1 TH/s", START, "pending", "BTC",
                         "external_address")
    # One reward read before and after it settled, its amounts spelled any way, typed or not.
    same = [pending, _wire("1.20"), _wire("12"),
            WireReward("acc_1", "1.2", "1", "0", "0.5", "1 TH/s", START, "successful", "BTC",
                       "external_address", "ab" * 32, "bc1q", START + 3600),
            MiningReward("acc_1", Decimal("1.20"), Decimal(1), Decimal(0), Decimal("0.50"),
                         "1 TH/s", START, txc_async.RewardStatus.CANCELED, "BTC")]
    same[1:3] = [msgspec.structs.replace(r, reward_currency="BTC") for r in same[1:3]]
    assert len({record_digest(r) for r in same}) == 1
    different = [pending, _wire("1.2", START + 1), _wire("1.2"),
                 msgspec.structs.replace(pending, reward_currency="ETH"),
                 msgspec.structs.replace(pending, mining_account_name="acc_2")]
    assert len({record_digest(r) for r in different}) == len(different)


def test_segments_tile_the_ranges_and_pieces_stay_within_the_offset_bound() -> None:
    ledger: RewardLedger[WireReward] = RewardLedger()
    end = START + 300 * DAY - 1
    ledger.add_range("a", {"from": START, "to": START + 150 * DAY - 1})
    ledger.add_range("b", {"from": START + 150 * DAY, "to": end})
    for key, first in (("a", 0), ("b", 150)):
        ledger.add(key, (WireReward(f"acc_{n:02d}", "1", "1", "0", "1", "1 TH/s",
                                    START + day * DAY)
                         for day in range(first, first + 150) for n in range(60)))
    assert len(ledger) == 18_000
    pieces = ledger.pieces()
    segments = [s for piece in pieces for s in piece]
    assert all(sum(s.count for s in piece) <= MAX_OFFSET for piece in pieces)
    assert len(pieces) == 2 and sum(s.count for s in segments) == 18_000
    # Newest first, contiguous, covering the two ranges exactly: one piece spans both ranges.
    assert segments[0].hi == end and segments[-1].lo == START
    assert all(
        newer.lo == older.hi + 1  # type: ignore[operator]
        for newer, older in itertools.pairwise(segments)
    )
    assert all(s.count <= 120 for s in segments)


async def test_the_check_finds_what_was_booked_behind_the_walk_in_few_requests(
    mocked: aioresponses, client: txc_async.Client
) -> None:
    records = make_rewards(60, 300)
    serve_rewards(mocked, records)
    ledger: RewardLedger[MiningReward] = RewardLedger()
    params = {"from": START, "to": START + 300 * DAY - 1}
    ledger.add_range(0, params)
    ledger.add(0, [r async for r in client.iter_mining_rewards(**{  # type: ignore[arg-type]
        "start": START, "end": START + 300 * DAY - 1})])
    walked = len(requests_to(mocked, REWARDS_PATH))
    # Three rewards in a second currency at days the walk had passed, booked after it did.
    booked = [
        records[0] | {"totalReward": "9.99", "date": START + day * DAY, "rewardCurrency": "ETH"}
        for day in (3, 150, 299)
    ]
    records.extend(booked)
    found = [
        (key, r)
        async for key, page in check_rewards(client._rewards_page, ledger, REWARD_RECORDS)
        for r in page
    ]
    assert sorted(r.date for _, r in found) == [START + d * DAY for d in (3, 150, 299)]
    assert {key for key, _ in found} == {0}
    assert all(r.total_reward == Decimal("9.99") for _, r in found)
    used = len(requests_to(mocked, REWARDS_PATH)) - walked
    # Two pieces probed, then halving down to a segment per booking, one read of each, and a
    # second check that finds nothing: a few dozen requests for 18,000 records.
    assert used <= 60
    # Nothing more: a check of the same ledger costs one request per piece.
    before = len(requests_to(mocked, REWARDS_PATH))
    assert [p async for p in check_rewards(client._rewards_page, ledger, REWARD_RECORDS)] == []
    assert len(requests_to(mocked, REWARDS_PATH)) - before == 2


def test_the_ledger_keeps_24_bytes_a_record() -> None:
    import tracemalloc

    ledger: RewardLedger[WireReward] = RewardLedger()
    # One range per account, one record per date: the case where an object per date would
    # cost the most.
    for n in range(100):
        ledger.add_range(n, {"from": START, "to": START + 1000 * DAY, "account": f"acc_{n:03d}"})
    tracemalloc.start()
    try:
        for n in range(100):
            ledger.add(n, (WireReward(f"acc_{n:03d}", "1.5", "1", "0.5", "0.1", "1 TH/s",
                                      START + day * DAY) for day in range(1000)))
        held, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(ledger) == 100_000
    assert held < 100_000 * 30, f"{held / 100_000:.1f} bytes a record"


# -- records the way the server may spell them ---------------------------------------------------


def _rec(account: str, date: int, reward: str = "1.5", fee: str | None = "0") -> dict[str, Any]:
    return {"miningAccountName": account, "totalReward": "1.5", "reward": reward, "fee": fee,
            "fppsRate": "0.5", "hashRate": "1 TH/s", "date": date}


def _serve_booking_at_the_check(
    mocked: aioresponses, records: list[dict[str, Any]], booking: dict[str, Any]
) -> None:
    """Answer like the service; when the check's first probe arrives, book ``booking`` first."""
    from aioresponses import CallbackResult

    booked = [False]

    def answer(url: Any, **kwargs: Any) -> CallbackResult:
        body = decode_signed(kwargs)
        if body["limit"] == 1 and not booked[0]:
            booked[0] = True
            records.append(booking)
        chosen = [r for r in records if body.get("from", 0) <= r["date"] <= body.get("to", 2**62)]
        chosen.sort(key=lambda r: (-r["date"], r["miningAccountName"]))
        offset, limit = body["offset"], body["limit"]
        return CallbackResult(payload={"offset": offset, "limit": limit,
                                       "data": chosen[offset:offset + limit]})

    mocked.post(BASE + REWARDS_PATH, callback=answer, repeat=True)


def _odd_spellings() -> list[dict[str, Any]]:
    """Two dates: the newer holds a reward spelled "00.5" among 149 others; the older holds one
    with a null fee, so pages differ in what they hold besides plain decimals."""
    newer, older = START + 2 * DAY, START + DAY
    records = [_rec(f"acc_{i:03d}", newer, reward="00.5" if i == 120 else "1.5")
               for i in range(150)]
    return records + [_rec("acc_000", older, fee=None)] + [
        _rec(f"acc_{i:03d}", older) for i in range(1, 20)]


@pytest.mark.parametrize("fmt", ["stream", "jsonl", "csv", "parquet"])
async def test_an_amount_keeps_its_spelling_whatever_its_page_holds(
    mocked: aioresponses, client: txc_async.Client, tmp_path: Path, fmt: str
) -> None:
    from txc_async._export.run import backfill_to_file, backfill_to_stream

    records = _odd_spellings()
    # Booked behind the walk: the check reads the newer date again, in other pages.
    _serve_booking_at_the_check(mocked, records, _rec("acc_200", START + 2 * DAY))
    end = START + 3 * DAY - 1
    if fmt == "stream":
        out = io.BytesIO()
        summary = await backfill_to_stream(client, start=START, end=end, stream=out)
        assert summary.records_written == len(records) == 171
        lines = out.getvalue().splitlines()
        assert len([line for line in lines if b'"acc_120"' in line]) == 1
        assert b'"reward":"00.5"' in out.getvalue()
        return
    path = tmp_path / ("rewards" if fmt == "parquet" else f"rewards.{fmt}")
    summary = await backfill_to_file(client, start=START, end=end, path=path,
                                     fmt=fmt)  # type: ignore[arg-type]
    assert summary.records_written == len(records) == 171
    rows = list(read_part_rows(path) if fmt == "parquet" else read_rows(path, fmt))  # type: ignore[arg-type]
    assert len(rows) == 171
    assert len({record_digest(r) for r in rows}) == 171
    empty = [r for r in rows if r.mining_account_name == "acc_000" and r.date == START + DAY]
    assert len(empty) == 1 and empty[0].fee == ""


@pytest.mark.parametrize("how", ["iter_mining_rewards", "stream"])
async def test_records_of_one_identity_are_one_reward(
    mocked: aioresponses, client: txc_async.Client, how: str
) -> None:
    from txc_async._export.run import backfill_to_stream

    date = START + DAY
    # 150 records at one date, a page boundary among them, and a second reading of a reward at
    # each end of it: alike, or settled since (another status, the payout filled in).
    records = [_rec(f"acc_{i:03d}", date) | {"status": "pending"} for i in range(150)]
    records += [_rec("acc_099", date) | {"status": "pending"},
                _rec("acc_100", date) | {"status": "successful", "payoutTime": date + 60},
                _rec("acc_005", date) | {"status": "canceled"}]
    serve_rewards(mocked, records)
    if how == "stream":
        out = io.BytesIO()
        await backfill_to_stream(client, start=START, end=START + 2 * DAY - 1, stream=out)
        got = [msgspec.json.decode(line) for line in out.getvalue().splitlines()]
        names = [r["miningAccountName"] for r in got]
    else:
        names = [r.mining_account_name async for r in client.iter_mining_rewards(
            start=START, end=START + 2 * DAY - 1)]
    assert sorted(names) == [f"acc_{i:03d}" for i in range(150)]


async def test_a_csv_output_refuses_a_line_break_in_a_text_field(
    mocked: aioresponses, client: txc_async.Client, tmp_path: Path
) -> None:
    from txc_async._export.rowfile import OutputFileError
    from txc_async._export.run import backfill_to_file

    serve_rewards(mocked, [_rec("acc_a", START) | {"hashRate": "1 TH/s\r"}])
    with pytest.raises(OutputFileError, match=r"hashRate .* holds a line break.*--format jsonl"):
        await backfill_to_file(client, start=START, end=START + DAY - 1,
                               path=tmp_path / "r.csv", fmt="csv")


def test_a_records_spelling_does_not_depend_on_its_neighbours_shapes() -> None:
    from txc_async._backfill.walk import WIRE_RECORDS

    x = _rec("acc_x", START, reward="00.5")
    odd = [_rec("acc_n", START) | {"fee": 0}, _rec("acc_s", START) | {"date": str(START)},
           _rec("acc_e", START) | {"fee": "1E-2"}, _rec("acc_z", START, fee=None)]
    alone = WIRE_RECORDS.decode(msgspec.json.encode({"offset": 0, "limit": 100, "data": [x]}))
    assert alone[0].reward == "00.5"
    for neighbour in odd:
        body = msgspec.json.encode({"offset": 0, "limit": 100, "data": [neighbour, x]})
        try:
            page = WIRE_RECORDS.decode(body)
        except txc_async.AnswerFormatError:
            continue  # a shape the typed decoder refuses: the whole page is refused
        assert page[1] == alone[0], neighbour
    body = msgspec.json.encode({"offset": 0, "limit": 100, "data": [odd[0], odd[2], x]})
    page = WIRE_RECORDS.decode(body)
    fee0, fee_exp, same = page
    assert page.limit == 100
    assert (fee0.fee, fee_exp.fee, same.reward) == ("0", "0.01", "00.5")


@pytest.mark.parametrize("how", ["iter_mining_rewards", "stream"])
async def test_rewards_of_one_account_and_date_in_two_currencies_are_two_on_every_path(
    mocked: aioresponses, client: txc_async.Client, how: str
) -> None:
    from txc_async._export.run import backfill_to_stream

    records = [_rec("acc_a", START + DAY) | {"rewardCurrency": currency}
               for currency in ("BTC", "ETH")]
    records += [_rec(f"acc_{i:03d}", START + DAY) for i in range(120)]
    serve_rewards(mocked, records)
    if how == "stream":
        out = io.BytesIO()
        summary = await backfill_to_stream(client, start=START, end=START + 2 * DAY - 1,
                                           stream=out)
        assert summary.records_written == 122
        assert b'"rewardCurrency":"ETH"' in out.getvalue()
    else:
        got = [r async for r in client.iter_mining_rewards(start=START, end=START + 2 * DAY - 1)]
        assert len(got) == 122
        assert sorted(str(r.reward_currency) for r in got if r.mining_account_name == "acc_a") == [
            "BTC", "ETH"]


def test_an_amount_with_a_huge_exponent_keeps_it() -> None:
    from txc_async._backfill.walk import WIRE_RECORDS

    body = msgspec.json.encode({"offset": 0, "limit": 100, "data": [
        _rec("acc_a", START) | {"totalReward": "1E+10000000", "fee": "2.5E-3"}]})
    (record,) = WIRE_RECORDS.decode(body)
    assert (record.total_reward, record.fee) == ("1E+10000000", "0.0025")
    assert record_digest(_wire("1E+10000000")) == record_digest(_wire("10E+9999999"))


@pytest.mark.parametrize(("count", "asked", "used", "last"), [
    (100, 100, 100, False),  # a full page
    (99, 100, 100, True),  # shorter than its limit
    (30, 100, 30, False),  # the server gave 30 a page, and says so
    (29, 100, 30, True),
    (100, 100, 500, False),  # an echo above what was asked changes nothing
    (50, 100, 500, True),
    (0, 100, 100, True),  # an empty page always ends the walk
    (0, 100, 0, True),
    (3, 100, 0, False),  # records under an echoed 0: read on, the offset moves by 3
])
def test_a_page_is_the_last_when_shorter_than_its_limit(
    count: int, asked: int, used: int, last: bool
) -> None:
    from txc_async._paging import is_last

    assert is_last([None] * count, asked, used) is last


@pytest.mark.parametrize("amount", ["1,5", "1.5,2", ",1", "1,", "", "-", "1.", ".5", "--1",
                                    "1e5", "NaN", " 1", "١"])
def test_an_amount_that_is_not_a_plain_decimal_goes_through_the_typed_decoder(
    amount: str
) -> None:
    """The page's amounts are checked in one match over them joined by commas: an amount with a
    comma inside, or anything else but a plain decimal, is read by the typed decoder (which
    writes it out or refuses the page), never kept as sent."""
    from txc_async._backfill.walk import WIRE_RECORDS

    plain = [_rec(f"acc_{i}", START) for i in range(3)]
    for position in range(3):
        records = list(plain)
        records[position] = _rec("acc_odd", START) | {"fee": amount}
        body = msgspec.json.encode({"offset": 0, "limit": 100, "data": records})
        try:
            page = WIRE_RECORDS.decode(body)
        except txc_async.AnswerFormatError:
            continue  # refused by the typed decoder
        odd = page[position]
        assert odd.fee != amount or amount == "", (amount, odd.fee)
        assert all(len(r.fee.split(",")) == 1 for r in page)


def test_a_page_of_plain_amounts_keeps_them_as_sent() -> None:
    from txc_async._backfill.walk import WIRE_RECORDS

    records = [_rec(f"acc_{i}", START, reward=f"-{i}.{i}0") for i in range(5)]
    page = WIRE_RECORDS.decode(msgspec.json.encode({"offset": 0, "limit": 100, "data": records}))
    assert [r.reward for r in page] == [f"-{i}.{i}0" for i in range(5)]


def test_the_digests_of_a_batch_are_each_record_s_digest() -> None:
    from txc_async._backfill.ledger import digests_of
    from txc_async._backfill.walk import WireReward

    records = [
        WireReward(f"acc_{i}", "1", "1", "0", "1", "1", START + i,
                   reward_currency=None if i % 3 == 0 else "BTC", status="pending")
        for i in range(7)
    ]
    assert digests_of(records) == b"".join(map(record_digest, records))
    assert digests_of([]) == b""
