"""What the command line shows on a terminal of 120 columns, against the sandbox: tables that
fit, the columns that matter, the record view when they cannot fit, never a number, an id or a
time split across lines or cut, times in ISO 8601 UTC, statuses by name, hashrates with their
unit (in JSON and TSV too), and answers without records said in words on stderr.

Each command runs through ``main`` with a stdout that says it is a terminal, its width given by
``COLUMNS`` as a real terminal's would be.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from rich.cells import cell_len

from tests.integration.test_cli_operations import box, loads  # noqa: F401 (a fixture)
from txc_async.cli import main
from txc_async.sandbox import Sandbox

pytestmark = pytest.mark.asyncio_only

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: A time as the tables showed it before: never again on a terminal.
_ZONELESS = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def shown(monkeypatch: pytest.MonkeyPatch, *argv: str, columns: int = 120,
          terminal: bool = True) -> tuple[int, list[str], str]:
    """Exit status, stdout's lines (colours removed) and stderr of ``txc-async ARGV`` on a
    terminal ``columns`` wide."""
    out, err = (_Terminal() if terminal else io.StringIO()), io.StringIO()
    monkeypatch.setenv("COLUMNS", str(columns))
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr("sys.stderr", err)
    try:
        code = main(list(argv))
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    return code, _ANSI.sub("", out.getvalue()).splitlines(), err.getvalue()


def json_of(monkeypatch: pytest.MonkeyPatch, *argv: str) -> Any:
    code, lines, _ = shown(monkeypatch, *argv, "--json", terminal=False)
    assert code == 0
    return loads("\n".join(lines))


def iso(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def assert_fits(lines: list[str], columns: int) -> None:
    assert lines, "nothing shown"
    assert max(cell_len(line) for line in lines) <= columns


def assert_whole(lines: list[str], values: Iterable[str]) -> None:
    """Every value is on one line, whole: none is split at a line break nor cut."""
    for value in values:
        assert any(value in line for line in lines), f"{value!r} is not shown whole"


def _cells_of(lines: list[str]) -> Iterator[str]:
    for line in lines:
        yield from (cell.strip() for cell in re.split(r"[│┃]", line))


# -- tables that fit ----------------------------------------------------------------------------


def test_investments_fit_120_columns_with_no_amount_id_or_time_split(
    box: Sandbox, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    page = json_of(monkeypatch, "investments", "--limit", "3")
    code, lines, err = shown(monkeypatch, "investments", "--limit", "3")
    assert code == 0
    assert_fits(lines, 120)
    header = " ".join(lines[1:5])
    for column in ("id", "ticker", "status", "amount", "interest", "payment", "created"):
        assert column in header
    records = page["records"]
    assert_whole(lines, [r["id"] for r in records] + [r["amount"] for r in records]
                 + [r["interest_paid"] for r in records]
                 + [iso(r["created"]) for r in records] + [iso(r["payment_time"]) for r in records])
    # Statuses by name, never as the bare numbers of the wire.
    names = {1: "active", 2: "closed"}
    assert_whole(lines, [names[r["status"]] for r in records])
    assert not {"1", "2"} & set(_cells_of(lines[5:]))
    assert not any(_ZONELESS.search(line) for line in lines)
    # One row per record: a line of the body holds a whole record's id.
    body = [line for line in lines if line.startswith("│")]
    assert len(body) == 3 and all(r["id"] in line for r, line in zip(records, body, strict=True))
    assert "--json shows every field" in err


def test_mining_rewards_fit_120_columns_with_no_amount_split(
    box: Sandbox, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    page = json_of(monkeypatch, "mining", "rewards", "--limit", "5")
    code, lines, _ = shown(monkeypatch, "mining", "rewards", "--limit", "5")
    assert code == 0
    assert_fits(lines, 120)
    rewards = page["data"]
    assert_whole(lines, [r["mining_account_name"] for r in rewards]
                 + [r["total_reward"] for r in rewards] + [r["reward"] for r in rewards]
                 + [r["fee"] for r in rewards] + [iso(r["date"]) for r in rewards]
                 + [r["status"] for r in rewards])
    body = [line for line in lines if line.startswith("│")]
    assert len(body) == 5
    # A hashrate is shown with its unit.
    assert all(re.search(r"\d [kMGTPE]?H/s", line) for line in body)


@pytest.mark.parametrize("columns", [200, 120, 80, 60])
def test_at_any_width_a_table_fits_or_the_record_view_keeps_every_value_whole(
    box: Sandbox, monkeypatch: pytest.MonkeyPatch, columns: int  # noqa: F811
) -> None:
    page = json_of(monkeypatch, "mining", "rewards", "--limit", "3")
    code, lines, _ = shown(monkeypatch, "mining", "rewards", "--limit", "3", columns=columns)
    assert code == 0
    assert_fits(lines, columns)
    assert_whole(lines, [r["total_reward"] for r in page["data"]]
                 + [iso(r["date"]) for r in page["data"]])


def test_a_wide_record_on_a_narrow_terminal_is_shown_as_a_record_view(
    box: Sandbox, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    record = json_of(monkeypatch, "investments", "--limit", "1")["records"][0]
    code, lines, err = shown(monkeypatch, "investments", "--limit", "1", columns=40)
    assert code == 0 and err == ""  # every field is in the record view: none left out
    assert lines[0] == "investments (limit 1): 1 of 1"
    assert_fits(lines, 40)
    plan = record["plan"]
    assert_whole(lines, [record["id"], record["amount"], record["interest_paid"],
                         iso(record["created"]), iso(record["updated"]),
                         iso(record["payment_time"]), plan["max_possible_investment"],
                         plan["id"], "plan.max_possible_investment", "interest_paid"])
    # Every field is there, each value under or beside its name.
    assert sum(1 for line in lines if line.strip() == "status" or line.startswith("status ")) == 1


def test_the_record_view_lines_values_up_beside_their_names_when_they_fit() -> None:
    from txc_async.cli._layout import draw_records

    rows = [{"id": "o-1", "amount": "123456789.123456789", "note": "a long note " * 4,
             "created": "2026-12-07T19:20:00Z"}]
    stream = io.StringIO()
    draw_records(stream, "orders", rows, width=32, terminal=False)
    lines = stream.getvalue().splitlines()
    assert_fits(lines, 32)
    assert lines[0] == "orders: 1 of 1"
    assert lines[1].split() == ["id", "o-1"]
    assert lines[2].split() == ["amount", "123456789.123456789"]
    # A text wraps under its value column; a time stays whole.
    assert lines[3].startswith("note ") and lines[4].startswith("         ")
    assert any(line.split() == ["created", "2026-12-07T19:20:00Z"] for line in lines)


def test_a_table_leaves_out_what_does_not_fit_and_never_cuts_a_number() -> None:
    from txc_async.cli._layout import layout

    rows = [{"id": "x-1", "amount": "1" * 30, "memo": "m" * 50, "price": "2.5"}]
    plan = layout(rows, ["id", "amount", "memo", "price"], ["id"], 50)
    assert plan.columns is not None
    widths = {column.name: column.width for column in plan.columns}
    # The amount whole (30), the memo cut to what is left, the price whole.
    assert widths["amount"] == 30 and widths["price"] == 5 and "memo" not in widths
    assert plan.left_out == ["memo"]
    assert 1 + sum(width + 3 for width in widths.values()) <= 50
    # An essential column that cannot fit: the record view.
    assert layout(rows, ["amount", "id"], ["amount"], 30).columns is None


def test_spare_width_is_shared_evenly_among_text_columns() -> None:
    from txc_async.cli._layout import layout

    rows = [{"a": "x" * 40, "b": "y" * 9, "c": "z" * 40}]
    plan = layout(rows, ["a", "b", "c"], ["a"], 61)
    assert plan.columns is not None
    # 61 - 1 - 3 * 3 = 51 cells: b gets its 9, a and c share the other 42.
    assert [column.width for column in plan.columns] == [21, 9, 21]


def test_generated_operations_tables_fit_with_every_number_whole(
    box: Sandbox, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    # A list of records, a mapping of records by market, a page of records: at 120 columns.
    markets = json_of(monkeypatch, "call", "markets")
    code, lines, err = shown(monkeypatch, "call", "markets")
    assert code == 0
    assert_fits(lines, 120)
    assert_whole(lines, [m["name"] for m in markets] + [m["min_amount"] for m in markets]
                 + [m["max_total"] for m in markets])
    tickers = json_of(monkeypatch, "call", "ticker")
    code, lines, _ = shown(monkeypatch, "call", "ticker")
    assert code == 0
    assert_fits(lines, 120)
    # Prices move between two answers of the sandbox: the markets are the keys, whole.
    assert_whole(lines, list(tickers))
    accounts = json_of(monkeypatch, "mining", "get-mining-accounts")
    code, lines, err = shown(monkeypatch, "mining", "get-mining-accounts")
    assert code == 0
    assert_fits(lines, 120)
    assert_whole(lines, [a["name"] for a in accounts["data"]]
                 + [iso(a["created_at"]) for a in accounts["data"]])
    assert "limit" in err  # the page's numbers, said beside the table


def test_one_record_has_its_fields_with_times_in_iso_utc(
    box: Sandbox, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    code, lines, _ = shown(monkeypatch, "order", "stop-limit", "--market", "BTC_USDT", "--side",
                           "sell", "--amount", "0.01", "--price", "59000",
                           "--activation-price", "60000", "--client-order-id", "out-1",
                           "--yes")
    assert code == 0
    assert_fits(lines, 120)
    stamp = next(cell for cell in _cells_of(lines) if cell.startswith("20"))
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z", stamp)


def test_a_hashrate_has_its_unit_in_json_and_tsv_and_its_table_in_iso_utc(
    box: Sandbox, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    name = box.mining_account_names[0]
    series = json_of(monkeypatch, "mining", "hashrate", "--account", name)
    point = series["hashrate"][0]
    # Added beside the hashrate: nothing renamed.
    assert list(point) == ["timestamp", "hashrate", "hashrate_unit", "reject_rate"]
    assert point["hashrate_unit"] == "H/s" and Decimal(point["hashrate"]) > 0
    code, lines, _ = shown(monkeypatch, "mining", "hashrate", "--account", name, terminal=False)
    assert code == 0 and lines[0].split("\t") == ["timestamp", "hashrate", "hashrate_unit",
                                                   "reject_rate"]
    assert lines[1].split("\t")[:3] == [str(point["timestamp"]), point["hashrate"], "H/s"]
    code, lines, _ = shown(monkeypatch, "mining", "hashrate", "--account", name)
    assert code == 0 and iso(point["timestamp"]) in "\n".join(lines)
    rewards = json_of(monkeypatch, "mining", "rewards", "--limit", "1")["data"]
    assert rewards[0]["hash_rate_unit"] in ("H/s", "kH/s", "MH/s", "GH/s", "TH/s", "PH/s")


# -- empty answers ------------------------------------------------------------------------------


def test_answers_without_records_are_said_on_stderr_and_leave_stdout_empty(
    box: Sandbox, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    for terminal in (True, False):
        code, lines, err = shown(monkeypatch, "mining", "rewards", "--account", "nope",
                                 terminal=terminal)
        assert (code, lines) == (0, [])
        assert err == "no records: mining rewards (account nope)\n"
        code, lines, err = shown(monkeypatch, "investments", "--ticker", "FOO",
                                 terminal=terminal)
        assert (code, lines) == (0, [])
        assert err == "no records: investments (ticker FOO)\n"
    code, lines, err = shown(monkeypatch, "investments", "--ticker", "FOO", "--all")
    assert (code, lines) == (0, []) and err.startswith("no records: investments (ticker FOO)\n")


def test_json_of_an_empty_answer_is_its_document_and_of_an_empty_walk_nothing(
    box: Sandbox, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    # One answer: one JSON document, its list empty.
    page = json_of(monkeypatch, "mining", "rewards", "--account", "nope")
    assert page["data"] == []
    assert json_of(monkeypatch, "investments", "--ticker", "FOO")["records"] == []
    # --all: JSON lines, one per record: none.
    code, lines, _ = shown(monkeypatch, "mining", "rewards", "--account", "nope", "--all",
                           "--json", terminal=False)
    assert (code, lines) == (0, [])


# -- the options' place ---------------------------------------------------------------------------


@pytest.mark.parametrize(("argv", "fixed"), [
    (["--json", "balance"], "txc-async balance --json"),
    (["--profile", "main", "--json", "mining", "rewards", "--all"],
     "txc-async --profile main mining rewards --all --json"),
    (["--dry-run", "--json", "ping"], "txc-async ping --dry-run --json"),
])
def test_an_option_given_before_the_command_is_refused_with_the_command_line_that_works(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], fixed: str
) -> None:
    code, lines, err = shown(monkeypatch, *argv)
    assert (code, lines) == (2, [])
    assert err.startswith("txc-async: error: --") and err.rstrip().endswith(f": {fixed}")
    assert "goes after the command's name" in err or "go after the command's name" in err


# -- progress -----------------------------------------------------------------------------------


async def test_a_plain_progress_line_says_the_real_wait_for_rate_limit_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Off a terminal a line is printed every 10 s, but the requests are sampled at every
    tick: ten requests sent at 0.5 s free the budget at 10.5 s, so a line printed at 10.1 s
    says less than a second is left (not ~10 s, as reckoned from the printed lines alone)."""
    import types

    from txc_async import Client, RateLimit
    from txc_async._export.run import BackfillProgress
    from txc_async.cli import _backfill
    from txc_async.cli._backfill import Progress

    clock = types.SimpleNamespace(now=1000.0)
    monkeypatch.setattr(_backfill, "time", types.SimpleNamespace(monotonic=lambda: clock.now))
    async with Client(base_url="http://127.0.0.1:9",
                      rate_limits={"mining_rewards": RateLimit(10, 10.0)}) as client:
        stream = io.StringIO()
        display = Progress(client, stream, terminal=False, plain_every=10.0)
        display(BackfillProgress(records=900, fraction=0.3, started=1000.0))
        for tick in range(1, 41):  # the ticker's 0.25 s, to 10.0 s
            clock.now = 1000.0 + tick * 0.25
            if tick == 2:
                client.stats.requests = 10
            display._draw()
        clock.now = 1010.1
        display._draw()
        display.close()
    line = stream.getvalue().splitlines()[-1]
    assert "waiting for rate-limit budget, less than 1 s" in line, line
