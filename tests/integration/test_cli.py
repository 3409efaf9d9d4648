"""The ``txc-async`` command line: argument errors, credentials, and the backfill command."""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import txc_async
from txc_async.cli import main

from ..support.waiting import until

REWARDS = "/api/v4/mining/rewards"


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["backfill-rewards", "--start", "2024-13-01", "--end", "2024-12-31", "--out", "x"],
         "--start"),
        (["backfill-rewards", "--start", "yesterday", "--end", "2024-12-31", "--out", "x"],
         "not a date"),
        (["backfill-rewards", "--start", "2024-01-01T00:00:00", "--end", "2024-12-31",
          "--out", "x"], "no time zone"),
        (["backfill-rewards", "--start", "2024-01-01", "--out", "x", "--shard", "3/2"],
         "I must be from 1 to N"),
        (["backfill-rewards", "--start", "2024-01-01", "--out", "x", "--limiter", "ftp://h"],
         "unknown limiter URL ftp://"),
        (["backfill-rewards", "--start", "2024-01-01", "--out", "x", "--limiter",
          "sqlite://"], "sqlite:// needs a file"),
        (["backfill-rewards", "--start", "2024-01-01", "--end", "2024-02-01", "--out", "x",
          "--concurrency", "0"], "from 1 to 256"),
        (["backfill-rewards", "--start", "2024-01-01", "--end", "2024-02-01", "--out", "x",
          "--format", "xml"], "--format"),
        # Outside the API's range: a usage mistake, found before anything starts.
        (["backfill-rewards", "--start", "1969-12-31", "--end", "2024-01-01", "--out", "x"],
         "outside 1970-01-01 to 9999-12-31"),
        (["backfill-rewards", "--start", "2024-01-01", "--end", "10000-01-01T00:00:00+00:00",
          "--out", "x"], "--end"),
        (["backfill-rewards", "--start", "2024-01-01", "--end", "2024-01-02", "--out", ""],
         "--out: must name a file"),
        (["backfill-rewards", "--start", "2024-01-01", "--out", "x", "--limiter",
          "redis://127.0.0.1:notaport/0"], "takes a port from 1 to 65535"),
        (["demo", "--year", "1800"], "--year: must be from 1970 to 9999"),
        (["sandbox", "--port", "70000"], "65535"),
        (["nonsense"], "invalid choice"),
        ([], "required"),
    ],
)
def test_bad_arguments_get_one_line_and_exit_2(
    argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert fragment in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_start_after_end_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TXC_BASE_URL", "http://127.0.0.1:9")
    code = main(["backfill-rewards", "--start", "2024-02-01", "--end", "2024-01-01",
                 "--out", str(tmp_path / "x.jsonl")])
    err = capsys.readouterr().err
    assert code == 2
    assert err == "txc-async: error: --start 2024-02-01 is after --end 2024-01-01\n"
    assert not (tmp_path / "x.jsonl").exists()


def test_a_bad_account_name_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TXC_BASE_URL", "http://127.0.0.1:9")
    with pytest.raises(SystemExit) as caught:
        main(["backfill-rewards", "--start", "2024-01-01", "--end", "2024-01-02",
              "--account", "bad\tname", "--out", str(tmp_path / "x.jsonl")])
    err = capsys.readouterr().err
    assert caught.value.code == 2
    assert err.startswith("txc-async: error: argument --account: 'bad\\tname'")
    assert err.count("\n") == 1 and not (tmp_path / "x.jsonl").exists()


def test_missing_credentials_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("TXC_API_KEY", raising=False)
    monkeypatch.delenv("TXC_API_SECRET", raising=False)
    monkeypatch.setenv("TXC_BASE_URL", "http://127.0.0.1:9")
    code = main(["balance"])
    err = capsys.readouterr().err
    assert code == 1 and "api_key" in err and err.count("\n") == 1


def test_unreachable_server_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Port 9 (discard) on loopback has no listener here: the connection is refused at once.
    monkeypatch.setenv("TXC_BASE_URL", "http://127.0.0.1:9")
    code = main(["ping"])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("txc-async: error: ") and "127.0.0.1:9" in err
    assert "refused" in err.lower() and err.count("\n") == 1


def test_plain_http_to_a_remote_host_is_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TXC_BASE_URL", "http://api.example.com")
    assert main(["ping"]) == 1
    assert "base_url" in capsys.readouterr().err


def test_dates_mean_whole_utc_days() -> None:
    from txc_async.cli import _end, _start

    assert _start("2024-01-01") == 1704067200
    assert _end("2024-01-01") == 1704067200 + 86399
    assert _start("1704067200") == 1704067200
    assert _start("2024-01-01T02:00:00+02:00") == 1704067200
    # The last day the API takes has no next day to count back from.
    assert _end("9999-12-31") == 253402300799


def test_output_lines_are_json_with_wire_names(tmp_path: Path) -> None:
    from txc_async._backfill.walk import WireReward
    from txc_async._export.rowfile import encode_jsonl

    record = WireReward("acc", "0.10", "0.09", "0.01", "0.000001", "1 TH/s", 1704067200,
                        "successful", "BTC", "external_address", "ab" * 32, "bc1q", 1704070800)
    (line,) = encode_jsonl([record]).splitlines()
    assert json.loads(line) == {
        "miningAccountName": "acc", "totalReward": "0.10", "reward": "0.09", "fee": "0.01",
        "fppsRate": "0.000001", "hashRate": "1 TH/s", "date": 1704067200,
        "status": "successful", "rewardCurrency": "BTC",
        "payoutDestination": "external_address", "payoutTransactionHash": "ab" * 32,
        "payoutAddress": "bc1q", "payoutTime": 1704070800,
    }


# -- the backfill command against the sandbox, interrupted for real ------------------------------


async def _run_cli(box: Any, args: list[str], *, stop_when: Callable[[], bool] | None = None,
                   sig: int = 9) -> tuple[int, str, str]:
    """Run the command line against ``box``; with ``stop_when``, send it ``sig`` once that
    holds (looked at while it runs, however long it takes to start)."""
    import asyncio
    import os
    import sys

    env = os.environ | {"TXC_BASE_URL": box.url, "TXC_API_KEY": box.api_key,
                        "TXC_API_SECRET": box.api_secret}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "txc_async", *args, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    if stop_when is not None:
        await until(stop_when, f"{args[0]} got as far as the test stops it")
        process.send_signal(sig)
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


@pytest.mark.parametrize(("fmt", "sig"), [("jsonl", 9), ("csv", 2)])
async def test_backfill_command_killed_and_resumed_writes_every_row_once(
    tmp_path: Path, fmt: str, sig: int
) -> None:
    import csv

    from txc_async.sandbox import Sandbox

    out = tmp_path / f"rewards.{fmt}"
    args = ["backfill-rewards", "--start", "2024-01-01", "--end", "2024-12-31",
            "--out", str(out), "--concurrency", "4"]
    async with Sandbox(mining_accounts=60) as box:
        # Slow answers, so that the interruption lands in the middle of the run: once a row is
        # written (after the header of a CSV file), far from the last.
        box.faults.add("/api/v4/mining/rewards", "slow", delay=0.04, times=100_000)
        header_lines = 1 if fmt == "csv" else 0
        code, _, err = await _run_cli(
            box, args, sig=sig,
            stop_when=lambda: out.exists() and out.read_bytes().count(b"\n") > header_lines,
        )
        assert code != 0
        if sig == 2:
            assert "rerun the same command to resume" in err and "Traceback" not in err
        partial = out.read_bytes()
        assert partial
        box.faults.clear()
        code, stdout, err = await _run_cli(box, args)
        assert code == 0, err
        assert "kept from before" in err and stdout == ""
        finished = out.read_bytes()
        assert finished.startswith(partial[: partial.rfind(b"\n") + 1])
        code, stdout, err = await _run_cli(box, args)
        assert code == 0 and "already complete" in err and stdout == ""
        assert out.read_bytes() == finished
        expected = {(name, date) for name in box.mining_account_names
                    for date in range(1704067200, 1735689600, 86400)}
    if fmt == "jsonl":
        rows = [json.loads(line) for line in finished.decode().splitlines()]
    else:
        rows = list(csv.DictReader(finished.decode().splitlines()))
    keys = [(r["miningAccountName"], int(r["date"])) for r in rows]
    assert len(keys) == len(set(keys)) == len(expected) == 60 * 366
    assert set(keys) == expected


async def test_progress_on_a_non_terminal_prints_plain_lines_and_ends_at_100() -> None:
    import io

    from txc_async import Client
    from txc_async._export.run import BackfillProgress
    from txc_async.cli import Progress

    async with Client(base_url="http://127.0.0.1:9") as client:
        client.stats.requests = 42
        stream = io.StringIO()
        display = Progress(client, stream, terminal=False, plain_every=0.0)
        progress = BackfillProgress(records=1500, records_before=500, jobs_total=10,
                                    jobs_done=5, fraction=0.5)
        progress.started -= 10.0
        display(progress)
        display._draw()
        progress.finished = True
        display(progress)
        display.close()
    first, *_, last = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue()
    assert "50.0%" in first and "2,000 records" in first and "42 requests" in first
    assert "150 records/s" in first and "~10 s left" in first
    assert "100.0%" in last


async def test_progress_names_the_settling_phase() -> None:
    import io

    from txc_async import Client
    from txc_async._export.run import BackfillProgress
    from txc_async.cli import Progress

    async with Client(base_url="http://127.0.0.1:9") as client:
        stream = io.StringIO()
        display = Progress(client, stream, terminal=False, plain_every=0.0)
        done = BackfillProgress(records=100, jobs_total=1, jobs_done=1, fraction=1.0,
                                finished=True)
        display(done)
        display(BackfillProgress(records=30, jobs_total=4, jobs_done=1, fraction=0.25,
                                 phase="settle"))
        display._draw()
        display.close()
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("backfill: 100.0%")
    assert lines[-1].startswith("settling:  25.0%") and "30 records" in lines[-1]


async def test_progress_says_when_it_waits_for_rate_limit_budget() -> None:
    import time

    from txc_async import Client, RateLimit
    from txc_async._export.run import BackfillProgress
    from txc_async.cli import Progress

    async with Client(base_url="http://127.0.0.1:9",
                      rate_limits={"mining_rewards": RateLimit(10, 10.0)}) as client:
        display = Progress(client, io_stream(), terminal=False)
        display(BackfillProgress(records=900, fraction=0.3))
        # Ten requests go out at t0 + 1; nothing more for 3 s: the budget is spent until t0 + 11.
        t0 = time.monotonic()
        display.status(now=t0 + 0.5)
        client.stats.requests = 10
        display.status(now=t0 + 1.0)
        text = display.status(now=t0 + 4.0)
        assert text.startswith("waiting for rate-limit budget, ~7 s, ")
        # Nine requests in the window: not a budget wait, whatever else may be slow.
        client.stats.requests = 19
        display.status(now=t0 + 11.5)
        assert "budget" not in display.status(now=t0 + 14.0)
        display.close()


def io_stream() -> Any:
    import io

    return io.StringIO()


async def test_sandbox_command_serves_what_ping_and_balance_reach() -> None:
    import asyncio
    import os
    import sys

    server = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "txc_async", "sandbox", "--port", "0",
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert server.stdout is not None
        lines = [(await asyncio.wait_for(server.stdout.readline(), 30)).decode()
                 for _ in range(4)]
        assert lines[0].startswith("sandbox serving on http://127.0.0.1:")
        env = dict(os.environ)
        for line in lines[1:]:
            name, value = line.removeprefix("export ").strip().split("=", 1)
            env[name] = value
        for command, expected in (("ping", "pong"), ("balance", "BTC\t")):
            client = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "txc_async", command, env=env,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )
            out, err = await asyncio.wait_for(client.communicate(), 30)
            assert client.returncode == 0, err
            assert expected in out.decode()
    finally:
        server.terminate()
        await server.wait()


# -- polish: version, defaults in help, interruption hints, the sandbox command, the demo --------


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    import txc_async

    with pytest.raises(SystemExit) as caught:
        main(["--version"])
    assert caught.value.code == 0
    assert capsys.readouterr().out == f"txc-async {txc_async.__version__}\n"


def test_every_option_help_shows_its_default() -> None:
    import argparse

    from txc_async.cli import build_parser

    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    checked = 0
    for name, command in commands.choices.items():
        for action in command._actions:
            if not action.option_strings or action.required or action.dest in ("help", "live"):
                continue
            text = command.formatter_class(name)._get_help_string(action) or ""
            assert "default" in text, (name, action.option_strings, text)
            checked += 1
    assert checked >= 12


async def _interrupt(box: Any, args: list[str], env: dict[str, str]) -> str:
    import asyncio
    import os
    import signal
    import sys

    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "txc_async", *args, env=os.environ | env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )
    # Interrupted in the middle of its run: once its queries reach the server.
    before = box.stats.received[REWARDS]
    await until(lambda: box.stats.received[REWARDS] > before, "the backfill's first query")
    process.send_signal(signal.SIGINT)
    _, err = await asyncio.wait_for(process.communicate(), timeout=30)
    assert process.returncode == 130
    return err.decode()


async def test_the_resume_hint_only_where_resuming_exists(tmp_path: Path) -> None:
    from txc_async.sandbox import Sandbox

    async with Sandbox(mining_accounts=60) as box:
        box.faults.add("/api/v4/mining/rewards", "slow", delay=0.2, times=100_000)
        env = {"TXC_BASE_URL": box.url, "TXC_API_KEY": box.api_key,
               "TXC_API_SECRET": box.api_secret}
        base = ["backfill-rewards", "--start", "2024-01-01", "--end", "2024-12-31"]
        err = await _interrupt(box, [*base, "--out", str(tmp_path / "r.jsonl")], env)
        assert err.rstrip().endswith("interrupted; rerun the same command to resume")
        err = await _interrupt(box, [*base, "--out", "-"], env)
        assert err.rstrip().endswith("txc-async: interrupted") and "resume" not in err


async def test_sandbox_command_sizes_its_book_and_prints_the_oauth_credentials() -> None:
    import asyncio
    import os
    import sys

    server = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "txc_async", "sandbox", "--port", "0", "--accounts", "7",
        "--days", "10", "--live", stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert server.stdout is not None
        lines = [(await asyncio.wait_for(server.stdout.readline(), 30)).decode()
                 for _ in range(7)]
        assert "7 mining accounts, 10 days of rewards from 2024-01-01" in lines[0]
        assert "booking new rewards live" in lines[0]
        exported = dict(
            line.removeprefix("export ").strip().split("=", 1) for line in lines[1:]
        )
        assert set(exported) == {
            "TXC_BASE_URL", "TXC_API_KEY", "TXC_API_SECRET", "TXC_OAUTH_CLIENT_ID",
            "TXC_OAUTH_CLIENT_SECRET", "TXC_OAUTH_REFRESH_TOKEN",
        }
        assert exported["TXC_OAUTH_CLIENT_ID"] == "sandbox-client-0"
        # With what it printed, the command line's OAuth refresh works against it.
        refresh = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "txc_async", "oauth", "refresh", "--json",
            env={**os.environ, **exported}, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(refresh.communicate(), 60)
        assert refresh.returncode == 0, err
        assert b"access_token" in out
    finally:
        server.terminate()
        await server.wait()


async def test_sandbox_command_starts_trading_balances() -> None:
    import asyncio
    import sys

    server = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "txc_async", "sandbox", "--port", "0", "--accounts", "2",
        "--days", "2", "--trade-balance", "USDT=100000", "--trade-balance", "btc=2.5",
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert server.stdout is not None
        lines = [(await asyncio.wait_for(server.stdout.readline(), 30)).decode()
                 for _ in range(5)]
        assert lines[1] == "trading balance of every key: 100000 USDT, 2.5 BTC\n"
        exported = dict(line.removeprefix("export ").strip().split("=", 1)
                        for line in lines[2:5])
        async with txc_async.Client(api_key=exported["TXC_API_KEY"],
                                    api_secret=exported["TXC_API_SECRET"],
                                    base_url=exported["TXC_BASE_URL"]) as client:
            balance: Any = await client.call("trade_account_balance")
        assert balance["BTC"].available == Decimal("2.5")
        assert balance["USDT"].available == Decimal("100000")
    finally:
        server.terminate()
        await server.wait()


async def test_the_command_line_stays_exact_while_the_server_books_rewards(
    tmp_path: Path,
) -> None:
    from txc_async.sandbox import Sandbox

    out = tmp_path / "rewards.jsonl"
    async with Sandbox(mining_accounts=30, rewards_days=90, enforce_limits=False) as box:
        book = box.rewards
        answer = book.page
        calls = [0]

        def page(*args: Any) -> list[dict[str, Any]]:
            # Before every answer: a reward at the newest day (behind the walks) and one at a
            # day that moves through the range (before and after the walks' positions).
            calls[0] += 1
            book.book(book.names[calls[0] % 30], 1704067200 + 89 * 86400)
            book.book(book.names[(calls[0] * 7) % 30], 1704067200 + (calls[0] % 90) * 86400)
            return answer(*args)

        book.page = page  # type: ignore[method-assign]
        existing = {(r["miningAccountName"], r["date"], r["reward"])
                    for r in answer(None, None, None, 0, 10**9)}
        code, _, err = await _run_cli(box, ["backfill-rewards", "--start", "2024-01-01",
                                            "--end", "2024-03-30", "--out", str(out)])
        assert code == 0, err
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    keys = [(r["miningAccountName"], r["date"], r["reward"]) for r in rows]
    assert calls[0] > 20 and len(book.booked) == 2 * calls[0]
    assert len(keys) == len(set(keys)) and existing <= set(keys)


async def test_two_runs_racing_for_one_output_one_writes_the_other_exits(tmp_path: Path) -> None:
    import asyncio
    import os
    import sys

    from txc_async.sandbox import Sandbox

    out = tmp_path / "rewards.jsonl"
    args = ["-m", "txc_async", "backfill-rewards", "--start", "2024-01-01", "--end", "2024-06-30",
            "--out", str(out)]
    async with Sandbox(mining_accounts=40) as box:
        box.faults.add("/api/v4/mining/rewards", "slow", delay=0.3, times=100_000)
        env = os.environ | {"TXC_BASE_URL": box.url, "TXC_API_KEY": box.api_key,
                            "TXC_API_SECRET": box.api_secret}
        first = await asyncio.create_subprocess_exec(
            sys.executable, *args, env=env, stderr=asyncio.subprocess.PIPE)
        await asyncio.sleep(1.0)
        second = await asyncio.create_subprocess_exec(
            sys.executable, *args, env=env, stderr=asyncio.subprocess.PIPE)
        _, second_err = await asyncio.wait_for(second.communicate(), 30)
        _, first_err = await asyncio.wait_for(first.communicate(), 60)
    assert first.returncode == 0, first_err
    assert second.returncode == 1
    assert second_err.decode() == (
        f"txc-async: error: {out} is being written by process {first.pid} on "
        f"{os.uname().nodename} (since {second_err.decode().split('(since ')[1]}"
    )
    keys = [(r["miningAccountName"], r["date"]) for r in map(json.loads, out.open())]
    assert len(keys) == len(set(keys)) == 40 * 182


async def test_demo_says_what_it_will_do_before_it_starts() -> None:
    import asyncio
    import sys

    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "txc_async", "demo", "--accounts", "5",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    first = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err
    assert first.startswith("demo: the embedded sandbox serves 5 mining accounts on http://")
    assert "every reward of 2024 (2024-01-01 to 2024-12-31) into " in out.decode()
    assert "records        1,830 (1,830 distinct)" in out.decode()
    assert "100.0%" in err.decode()


async def test_progress_on_a_terminal_is_redrawn_while_no_page_arrives() -> None:
    import asyncio
    import io

    from txc_async import Client
    from txc_async._export.run import BackfillProgress
    from txc_async.cli import Progress

    async with Client(base_url="http://127.0.0.1:9") as client:
        stream = io.StringIO()
        display = Progress(client, stream, terminal=True)
        display.start()
        display(BackfillProgress(records=10, fraction=0.25))
        await asyncio.sleep(1.2)
        redraws = stream.getvalue().count("\r")
        finished = BackfillProgress(records=40, fraction=0.97)
        finished.finished = True
        display(finished)
        display.close()
    assert redraws >= 3
    assert "100.0%" in stream.getvalue().rsplit("\r", 1)[-1]


def test_the_default_end_is_the_last_second_of_yesterday_utc() -> None:
    from txc_async.cli import last_whole_day_end

    assert last_whole_day_end(1704067200 + 5 * 3600) == 1704067199  # 2024-01-01 05:00 UTC
    assert last_whole_day_end(1704067200) == 1704067199
    assert last_whole_day_end(1704067199) == 1704067200 - 86400 - 1


async def test_parquet_from_the_command_line_is_extended_and_read_by_duckdb(
    tmp_path: Path,
) -> None:
    import duckdb

    from txc_async.sandbox import Sandbox

    out = tmp_path / "rewards"
    async with Sandbox(mining_accounts=8, rewards_days=60, enforce_limits=False) as box:
        for end in ("2024-01-31", "2024-02-29", "2024-02-29"):
            code, _, err = await _run_cli(box, ["backfill-rewards", "--start", "2024-01-01",
                                                "--end", end, "--out", str(out),
                                                "--format", "parquet"])
            assert code == 0, err
    assert "already complete (480 records)" in err
    (rows, distinct, first, last), = duckdb.sql(
        "SELECT count(*), count(DISTINCT (mining_account_name, date)), epoch(min(date)), "
        "epoch(max(date)) "
        f"FROM read_parquet('{out}/*.parquet')").fetchall()
    assert rows == distinct == 8 * 60
    assert (first, last) == (1704067200, 1704067200 + 59 * 86400)


@pytest.mark.parametrize("value", ["-5", "nan", "inf", "soon"])
def test_a_bad_settle_after_is_a_usage_error(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["sandbox", "--settle-after", value])
    assert caught.value.code == 2
    assert "--settle-after" in capsys.readouterr().err
