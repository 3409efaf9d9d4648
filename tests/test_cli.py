"""The ``txc-async`` command line: argument errors, credentials, and the backfill command."""

from __future__ import annotations

import json
from pathlib import Path

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
    assert code == 1 and err.startswith("txc-async: error: could not connect")
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
