"""What the command line tells an operator, at 120 columns: missing credentials name the
variables, ``--profile`` and the configuration file; a write is summed up before it is
confirmed (declining sends nothing and exits 0); a rotated OAuth refresh token is saved to the
profile it came from; a hashrate series is read whole past the service's points per answer;
``--out DIR/`` writes inside the directory; progress lines fit the terminal.

The sandbox serves from a thread with its own event loop; each command runs through ``main``
as the console script does, with its own ``asyncio.run``.
"""

from __future__ import annotations

import io
import json
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from txc_async.sandbox import Sandbox

from ..support.cli import isolate as _isolate
from ..support.cli import run, serve_sandbox

pytestmark = pytest.mark.asyncio_only

ORDER_PATH = "/api/v4/order/collateral/stop-limit"
ACCOUNT_PATH = "/api/v4/mining/accounts/create"
ORDER = ["order", "stop-limit", "--market", "BTC_USDT", "--side", "sell", "--amount", "0.01",
         "--price", "59000", "--activation-price", "60000"]
WIDTH = 120


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No sandbox: only an isolated environment; returns the configuration file's path."""
    _isolate(monkeypatch, tmp_path, columns=WIDTH)
    return tmp_path / "config" / "txc-async" / "config.toml"


@pytest.fixture
def box(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Sandbox]:
    """A sandbox serving from a thread, and an environment pointing the command line at it."""
    yield from serve_sandbox(monkeypatch, tmp_path, columns=WIDTH)


def sent(box: Sandbox) -> int:
    return sum(box.stats.received.values())


def fits(text: str) -> bool:
    """Whether every line is within the terminal; the answer to a question ends its line
    (the terminal's echo, which a test's stdin does not make)."""
    return all(len(line) <= WIDTH for line in text.replace("[y/N] ", "[y/N]\n").splitlines())


def _config(path: Path, text: str, mode: int = 0o600) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


# -- missing credentials --------------------------------------------------------------------------


def test_no_credentials_names_the_variables_the_profile_flag_and_the_file(
    isolated: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TXC_BASE_URL", "http://127.0.0.1:9")
    code, out, err = run(capsys, "balance")
    assert (code, out) == (1, "")
    assert err.count("\n") == 1  # one line, as every error
    for part in ("balance needs an API key", "TXC_API_KEY", "TXC_API_SECRET",
                 "--profile NAME", str(isolated), "nothing was sent"):
        assert part in err
    assert "give api_key" not in err


def test_a_key_without_its_secret_says_which_is_missing(
    isolated: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TXC_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("TXC_API_KEY", "key-1234567890")
    code, _, err = run(capsys, "balance")
    assert code == 1 and "TXC_API_KEY is set but TXC_API_SECRET is not" in err
    assert "set TXC_API_SECRET as well" in err and "--profile NAME" in err
    assert "key-1234567890" not in err
    monkeypatch.delenv("TXC_API_KEY")
    monkeypatch.setenv("TXC_API_SECRET", "secret-1234567890")
    code, _, err = run(capsys, "ping")
    assert code == 1 and "TXC_API_SECRET is set but TXC_API_KEY is not" in err
    assert "secret-1234567890" not in err
    # A named profile without a secret: the profile and the file are named.
    _config(isolated, '[profiles.live]\napi_key = "key-1234567890"\n')
    monkeypatch.delenv("TXC_API_SECRET")
    code, _, err = run(capsys, "--profile", "live", "balance")
    assert code == 1 and f"[profiles.live] in {isolated} has api_key but no api_secret" in err
    _config(isolated, '[profiles.live]\nbase_url = "http://127.0.0.1:9"\n')
    code, _, err = run(capsys, "--profile", "live", "mining", "rewards")
    assert code == 1 and "[profiles.live]" in err and "has no api_key and api_secret" in err


def test_a_write_without_credentials_is_refused_before_it_is_asked(
    isolated: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TXC_BASE_URL", "http://127.0.0.1:9")
    code, _, err = run(capsys, *ORDER, "--yes")
    assert code == 1 and "order stop-limit needs an API key" in err and "TXC_API_KEY" in err


def test_a_backfill_without_credentials_names_the_fix_and_writes_nothing(
    isolated: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("TXC_BASE_URL", "http://127.0.0.1:9")
    out = tmp_path / "rewards.jsonl"
    code, _, err = run(capsys, "backfill-rewards", "--start", "2024-01-01", "--end",
                       "2024-01-02", "--out", str(out))
    assert code == 1 and "backfill-rewards needs an API key" in err and "--profile" in err
    assert not out.exists()


# -- the confirmation of a write ------------------------------------------------------------------


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_an_order_is_summed_up_before_it_is_confirmed_and_declining_exits_0(
    box: Sandbox, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", _Terminal("n\n"))
    code, out, err = run(capsys, *ORDER, "--stop-loss", "58000", "--take-profit", "61000",
                         "--client-order-id", "protect-9")
    assert (code, out) == (0, "")
    summary = err.splitlines()
    assert summary[0] == ("order stop-limit: place a stop-limit order on the collateral "
                          "market")
    rows = {line.split("  ", 2)[1].strip(): line.split("  ", 2)[2].strip()
            for line in summary[1:] if line.startswith("  ")}
    assert rows == {
        "market": "BTC_USDT", "side": "sell", "amount": "0.01", "price": "59000",
        "activation price": "60000", "stop loss": "58000", "take profit": "61000",
        "client order id": "protect-9",
        "sent to": f"POST {box.url}{ORDER_PATH}",
        "API key": f"{box.api_key[:4]}… ({len(box.api_key)} characters)",
    }
    # No HTTP dump: no header, no JSON body, the id under one name only.
    assert "X-TXC" not in err and "{" not in err and "clientOrderId" not in err
    assert err.count("protect-9") == 1 and box.api_secret not in err
    # (The answer's newline is the terminal's echo, which a test's stdin does not make.)
    assert summary[-1] == ("Place this order? [y/N] "
                           "txc-async: order stop-limit not confirmed: nothing was sent")
    assert fits(err)
    assert sent(box) == 0


def test_a_generated_write_is_summed_up_within_the_terminal_and_a_yes_places_it_once(
    box: Sandbox, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", _Terminal("y\n"))
    code, _, err = run(capsys, "collateral", "create-collateral-stop-limit-order",
                         "--market", "BTC_USDT", "--side", "buy", "--amount", "0.5",
                         "--price", "58000", "--activation-price", "57000")
    assert code == 0, err
    (placed,) = box.stats.orders
    order_id = str(placed.get("clientOrderId", placed.get("client_order_id")))
    assert err.startswith("collateral create-collateral-stop-limit-order: ")
    assert f"  client order id   {order_id}\n" in err and "  side              buy\n" in err
    assert "? [y/N] " in err and fits(err)


def test_a_long_value_is_wrapped_within_the_terminal() -> None:
    from txc_async._operations import OPERATIONS
    from txc_async.cli._dry_run import CapturedRequest
    from txc_async.cli._writes import Write, summarize

    op = OPERATIONS["create_collateral_bulk_order"]
    orders = [{"market": "BTC_USDT", "side": "buy", "amount": "0.01", "price": str(50000 + n)}
              for n in range(12)]
    body = ('{"orders":' + str(orders).replace("'", '"') + ',"request":"/x","nonce":"1"}')
    request = CapturedRequest("POST", "https://whitebit.com/api/v4/order/collateral/bulk",
                              {"X-TXC-APIKEY": "k"}, body.encode())
    text = summarize(Write("collateral bulk", "Send", "", operation=op), request, "key-123456789",
                     WIDTH)
    assert fits(text) and "50011" in text and "nonce" not in text
    assert text.splitlines()[1].startswith("  orders   [")
    assert all(line.startswith("           ") for line in text.splitlines()[2:-2])


def test_a_dry_run_still_prints_the_request(
    box: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, *ORDER, "--dry-run")
    assert code == 0 and out.startswith(f"POST {box.url}{ORDER_PATH}\n")
    assert "X-TXC-SIGNATURE" in out and "nothing was sent" in err


# -- OAuth refresh tokens -------------------------------------------------------------------------


def _oauth_profile(box: Sandbox, path: Path, name: str = "app") -> Path:
    return _config(path, (
        "# the exchange's OAuth application\n"
        f"[profiles.{name}]\n"
        f'base_url = "{box.url}"\n'
        'limiter = "memory://"\n'
        f'oauth_client_id = "{box.oauth_client_id}"\n'
        f'oauth_client_secret = "{box.oauth_client_secret}"\n'
        f'  oauth_refresh_token   =   "{box.oauth_refresh_token}"  # rotated by every refresh\n'
        "\n[profiles.other]\n"
        'api_key = "other-key-123456"\napi_secret = "other-secret-123456"\n'
    ))


def _no_oauth_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TXC_API_KEY", "TXC_API_SECRET", "TXC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("argv", [["oauth", "refresh"], ["oauth", "oauth2-refresh-token"]])
def test_a_rotated_refresh_token_is_saved_to_the_profile_it_came_from(
    box: Sandbox, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path, argv: list[str],
) -> None:
    path = _oauth_profile(box, tmp_path / "config" / "txc-async" / "config.toml")
    _no_oauth_environment(monkeypatch)
    if argv[1] == "oauth2-refresh-token":
        argv = [*argv, "--client-id", box.oauth_client_id]
    before = path.read_text()
    inode = path.stat().st_ino
    tokens = [box.oauth_refresh_token]
    for _ in range(3):  # each refresh uses the token the one before saved
        code, out, err = run(capsys, "--profile", "app", *argv, "--json")
        assert code == 0, err
        new = box.oauth_refresh_token
        assert new not in tokens and f'"{new}"' in out
        tokens.append(new)
        assert f"the new refresh token was saved to [profiles.app] in {path}" in err
        assert all(token not in err for token in tokens) and fits(err.replace(str(path), "P"))
    # Only that value changed, on its line; the mode is kept; the file was replaced whole.
    assert path.read_text() == before.replace(
        f'  oauth_refresh_token   =   "{tokens[0]}"  # rotated by every refresh\n',
        f'  oauth_refresh_token = "{tokens[-1]}"\n')
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.stat().st_ino != inode
    assert sorted(p.name for p in path.parent.iterdir()) == ["config.toml"]


def test_the_default_profile_s_token_is_saved_there_and_a_link_is_kept(
    box: Sandbox, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    real = _oauth_profile(box, tmp_path / "dotfiles" / "txc.toml", name="default")
    link = tmp_path / "config" / "txc-async" / "config.toml"
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    _no_oauth_environment(monkeypatch)
    for _ in range(2):
        code, _, err = run(capsys, "oauth", "refresh")
        assert code == 0, err
        assert "saved to [profiles.default]" in err
    assert link.is_symlink() and box.oauth_refresh_token in real.read_text()
    assert stat.S_IMODE(real.stat().st_mode) == 0o600


def test_a_token_from_the_environment_is_not_saved_and_its_refusal_says_what_to_do(
    box: Sandbox, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TXC_OAUTH_CLIENT_ID", box.oauth_client_id)
    monkeypatch.setenv("TXC_OAUTH_CLIENT_SECRET", box.oauth_client_secret)
    monkeypatch.setenv("TXC_OAUTH_REFRESH_TOKEN", box.oauth_refresh_token)
    code, _, err = run(capsys, "oauth", "refresh")
    assert code == 0, err
    assert "TXC_OAUTH_REFRESH_TOKEN cannot be changed from here: set it to the refresh_token " \
           "above" in err
    assert box.oauth_refresh_token not in err
    code, out, err = run(capsys, "oauth", "refresh")  # the used token again
    assert (code, out) == (1, "")
    line = err.splitlines()[-1]
    assert line.startswith("txc-async: error: oauth refresh: the refresh token "
                           "(TXC_OAUTH_REFRESH_TOKEN) was refused (Invalid token.): it was used "
                           "already")
    assert "Authorize the application again" in line


def test_a_profile_s_used_token_refused_names_the_profile(
    box: Sandbox, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    path = _oauth_profile(box, tmp_path / "config" / "txc-async" / "config.toml")
    _no_oauth_environment(monkeypatch)
    code, _, err = run(capsys, "oauth", "refresh", "--profile", "app")
    assert code == 0, err
    path.write_text(path.read_text().replace(box.oauth_refresh_token, "used-up-token"))
    code, _, err = run(capsys, "oauth", "refresh", "--profile", "app")
    assert code == 1
    assert f"(oauth_refresh_token of [profiles.app] in {path}) was refused" in err


def test_a_value_not_on_its_own_line_is_not_saved_and_the_file_is_left_as_it_was(
    tmp_path: Path,
) -> None:
    from txc_async.cli._profiles import ConfigError, save_value

    path = _config(tmp_path / "config.toml",
                   '[profiles]\napp.oauth_refresh_token = "old"\n')
    text = path.read_text()
    with pytest.raises(ConfigError, match="no line oauth_refresh_token") as caught:
        save_value(path, "app", "oauth_refresh_token", "new-token")
    assert "new-token" not in str(caught.value) and path.read_text() == text
    path.write_text('[profiles.app]\noauth_refresh_token = """old\n"""\n')
    with pytest.raises(ConfigError, match="cannot be saved"):
        save_value(path, "app", "oauth_refresh_token", "new-token")
    # A value with quotes and a backslash is written as TOML reads it back.
    path.write_text('[profiles."app"]\noauth_refresh_token = "old"\n')
    save_value(path, "app", "oauth_refresh_token", 'a"b\\c')
    import tomllib

    assert tomllib.loads(path.read_text())["profiles"]["app"]["oauth_refresh_token"] == 'a"b\\c'


# -- a hashrate series longer than an answer -------------------------------------------------------


def test_a_long_hashrate_series_is_read_whole_and_the_requests_are_said(
    box: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    name = box.mining_account_names[0]
    code, out, err = run(capsys, "mining", "hashrate", "--account", name, "--start",
                         "2020-01-01", "--end", "2024-01-01", "--json")
    assert code == 0, err
    moments = [point["timestamp"] for point in json.loads(out)["hashrate"]]
    # 2020-01-01 00:00 to 2024-01-01 23:00 UTC (an end day is the whole day).
    first, last = 1577836800, 1704067200 + 23 * 3600
    # Every hour of the range, once, in order: past the 2,000 points of one answer.
    assert moments == list(range(first, last + 1, 3600))
    requests = box.stats.received["/api/v4/mining/hashrate"]
    assert requests == -(-len(moments) // 2000) == 18
    assert err == (f"{len(moments):,} hashrate points read in 18 requests (the service "
                   "answered at most 2,000 points a request)\n")
    assert fits(err)


def test_a_series_one_answer_covers_takes_one_request_and_says_nothing(
    box: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    name = box.mining_account_names[0]
    code, out, err = run(capsys, "mining", "hashrate", "--account", name, "--start",
                         "2023-12-01", "--end", "2024-01-01", "--interval", "24h", "--json")
    assert code == 0 and err == ""
    assert len(json.loads(out)["hashrate"]) == 32
    assert box.stats.received["/api/v4/mining/hashrate"] == 1
    # Without an end the range ends now: the last answer reaches it, and no request follows.
    code, out, err = run(capsys, "mining", "hashrate", "--account", name, "--json")
    assert code == 0 and err == "" and box.stats.received["/api/v4/mining/hashrate"] == 2


# -- backfill outputs and progress -----------------------------------------------------------------


def _backfill(capsys: pytest.CaptureFixture[str], out: str, *more: str) -> tuple[int, str, str]:
    # The sandbox's rewards: 3 accounts, one a day from 2024-01-01, for 5 days.
    return run(capsys, "backfill-rewards", "--start", "2024-01-01", "--end", "2024-01-05",
               "--out", out, *more)


def test_out_ending_in_a_slash_is_a_directory(
    box: Sandbox, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # JSON lines asked for: a file of a fixed name in the new directory, which a rerun resumes.
    code, _, err = _backfill(capsys, f"{tmp_path}/rewards_dir/", "--format", "jsonl")
    written = tmp_path / "rewards_dir" / "rewards.jsonl"
    assert code == 0, err
    assert written.is_file() and len(written.read_text().splitlines()) == 15
    assert err.splitlines()[-1].startswith(f"{written}: 15 records written")
    code, _, err = _backfill(capsys, f"{tmp_path}/rewards_dir/", "--format", "jsonl")
    assert code == 0 and "already complete (15 records)" in err
    # CSV alike, beside it.
    code, _, err = _backfill(capsys, f"{tmp_path}/rewards_dir/", "--format", "csv")
    assert code == 0 and (tmp_path / "rewards_dir" / "rewards.csv").is_file()
    # No --format: a directory holds a Parquet dataset, as for an existing directory.
    pytest.importorskip("pyarrow")
    code, _, err = _backfill(capsys, f"{tmp_path}/dataset/")
    parts = sorted((tmp_path / "dataset").glob("part-*.parquet"))
    assert code == 0 and parts, err
    assert not (tmp_path / "dataset").is_file()


def test_out_ending_in_a_slash_that_names_a_file_is_refused(
    isolated: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("TXC_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("TXC_API_KEY", "key-1234567890")
    monkeypatch.setenv("TXC_API_SECRET", "secret-1234567890")
    (tmp_path / "rewards").write_text("")
    code, _, err = _backfill(capsys, f"{tmp_path}/rewards/", "--format", "jsonl")
    assert code == 2 and "ends with a slash (a directory) but" in err
    # Without pyarrow, a directory's Parquet dataset is refused saying how to get either.
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    code, _, err = _backfill(capsys, f"{tmp_path}/new_dir/")
    assert code == 2 and "needs pyarrow" in err and "--format jsonl" in err
    assert not (tmp_path / "new_dir").exists()


@pytest.mark.parametrize("terminal", [True, False])
async def test_progress_lines_fit_the_terminal_and_leave_out_whole_parts(
    terminal: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    import re
    import time

    from txc_async import Client, RateLimit
    from txc_async._export.run import BackfillProgress
    from txc_async.cli import Progress

    async with Client(base_url="http://127.0.0.1:9",
                      rate_limits={"mining_rewards": RateLimit(10, 10.0)}) as client:
        client.stats.requests = 12_345_678
        for columns, kept in ((WIDTH, "128,456,789 records, 12,345,678 requests"),
                              (80, "waiting for rate-limit budget, ~")):
            stream = io.StringIO()
            monkeypatch.setenv("COLUMNS", str(columns))  # the terminal's width
            display = Progress(client, stream, terminal=terminal, plain_every=0.0)
            progress = BackfillProgress(records=123_456_789, records_before=5_000_000,
                                        jobs_total=10, jobs_done=5, fraction=0.123,
                                        phase="settle")
            progress.started -= 36_000.0
            # Every request went out 5 s ago, none since: the run waits for budget, the
            # longest status there is (past 120 columns whole).
            display._samples.clear()
            display._samples.append((time.monotonic() - 5.0, 0))
            display(progress)
            display._draw()
            display.close()
            lines = [line for line in re.split(r"[\r\n]", stream.getvalue()) if line.strip()]
            assert lines and all(len(line.rstrip()) < columns for line in lines)
            line = lines[-1].rstrip()
            assert line.startswith("settling:  12.3%") and kept in line
            assert "records/s" not in line  # left out: it does not fit
            # A part is shown whole or not at all: the line ends with a whole one.
            assert re.search(r"(records|requests|~\d+ s)$", line), line


def test_the_generated_hashrate_command_and_call_read_the_whole_range_too(
    box: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    name = box.mining_account_names[0]
    for argv in (["mining", "get-mining-hashrate", "--account", name, "--start", "2023-01-01",
                  "--end", "2023-12-31"],
                 ["call", "mining_hashrate", f"account={name}", "start=2023-01-01",
                  "end=2023-12-31"]):
        code, out, err = run(capsys, *argv, "--json")
        assert code == 0, err
        assert len(json.loads(out)["hashrate"]) == 365 * 24
        assert err == ("8,760 hashrate points read in 5 requests (the service answered at most "
                       "2,000 points a request)\n")
