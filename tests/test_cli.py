"""The ``txc-async`` command line: argument errors, credentials, and the backfill command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from txc_async.cli import main


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["backfill-rewards", "--start", "2024-13-01", "--end", "2024-12-31", "--out", "x"],
         "--start"),
        (["backfill-rewards", "--start", "yesterday", "--end", "2024-12-31", "--out", "x"],
         "not a date"),
        (["backfill-rewards", "--start", "2024-01-01T00:00:00", "--end", "2024-12-31",
          "--out", "x"], "no time zone"),
        (["backfill-rewards", "--start", "2024-01-01", "--out", "x"], "--end"),
        (["backfill-rewards", "--start", "2024-01-01", "--end", "2024-02-01", "--out", "x",
          "--concurrency", "0"], "from 1 to 256"),
        (["backfill-rewards", "--start", "2024-01-01", "--end", "2024-02-01", "--out", "x",
          "--format", "xml"], "--format"),
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
    assert code == 1
    assert err.startswith("txc-async: error: --start: must not be after --end")
    assert err.count("\n") == 1


def test_a_bad_account_name_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TXC_BASE_URL", "http://127.0.0.1:9")
    code = main(["backfill-rewards", "--start", "2024-01-01", "--end", "2024-01-02",
                 "--account", "bad name", "--out", str(tmp_path / "x.jsonl")])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("txc-async: error: --account: 'bad name'")
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
    assert code == 1 and err == "txc-async: error: ping: connection refused by 127.0.0.1:9\n"
    assert err.count("\n") == 1


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


def test_output_lines_are_json_with_wire_names(tmp_path: Path) -> None:
    from decimal import Decimal

    from txc_async import MiningReward
    from txc_async._export import _encode_rows

    record = MiningReward("acc", Decimal("0.10"), Decimal("0.09"), Decimal("0.01"),
                          Decimal("0.000001"), "1 TH/s", 1704067200)
    (line,) = _encode_rows([record], "jsonl").splitlines()
    assert json.loads(line) == {
        "miningAccountName": "acc", "totalReward": "0.10", "reward": "0.09", "fee": "0.01",
        "fppsRate": "0.000001", "hashRate": "1 TH/s", "date": 1704067200,
    }


# -- the backfill command against the sandbox, interrupted for real ------------------------------


async def _run_cli(box: Any, args: list[str], *, stop_after: float | None = None,
                   sig: int = 9) -> tuple[int, str, str]:
    import asyncio
    import os
    import sys

    env = os.environ | {"TXC_BASE_URL": box.url, "TXC_API_KEY": box.api_key,
                        "TXC_API_SECRET": box.api_secret}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "txc_async", *args, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    if stop_after is not None:
        await asyncio.sleep(stop_after)
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
        # Slow answers, so that the interruption lands in the middle of the run.
        box.faults.add("/api/v4/mining/rewards", "slow", delay=0.04, times=100_000)
        code, _, err = await _run_cli(box, args, stop_after=1.5, sig=sig)
        assert code != 0
        if sig == 2:
            assert "rerun the same command to resume" in err and "Traceback" not in err
        partial = out.read_bytes()
        assert partial
        box.faults.clear()
        code, stdout, err = await _run_cli(box, args)
        assert code == 0, err
        assert "kept from before" in stdout
        finished = out.read_bytes()
        assert finished.startswith(partial[: partial.rfind(b"\n") + 1])
        code, stdout, _ = await _run_cli(box, args)
        assert code == 0 and "already complete" in stdout
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


def test_progress_line_shows_records_requests_rate_and_time_left() -> None:
    import io

    from txc_async import Client
    from txc_async._export import BackfillProgress
    from txc_async.cli import _ProgressLine

    client = Client(base_url="http://127.0.0.1:9")
    client.stats.requests = 42
    stream = io.StringIO()
    line = _ProgressLine(client, stream)
    progress = BackfillProgress(records=1500, records_before=500, jobs_total=10, jobs_done=5,
                                fraction=0.5)
    progress.started -= 10.0
    line(progress)
    line.close()
    text = stream.getvalue()
    assert text.startswith("\r") and text.endswith("\n")
    assert "50.0%" in text and "2,000 records" in text and "42 requests" in text
    assert "150 records/s" in text and "10 s left" in text


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
