"""Every operation from the command line, against the sandbox: outputs, exit statuses, what
reached the server (nothing for --dry-run or an unconfirmed write, exactly one order after a
lost answer), profiles, help and completion.

The sandbox serves from a thread with its own event loop; each command runs through ``main``
as the console script does, with its own ``asyncio.run``.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from txc_async.cli import main
from txc_async.sandbox import Sandbox

from ..support.cli import isolate as _isolate
from ..support.cli import run, serve_sandbox

# The commands run their own event loops (asyncio's, whatever loop this process's tests use).
pytestmark = pytest.mark.asyncio_only

ORDER_PATH = "/api/v4/order/collateral/stop-limit"
ACCOUNT_PATH = "/api/v4/mining/accounts/create"
ORDER = ["order", "stop-limit", "--market", "BTC_USDT", "--side", "sell", "--amount", "0.01",
         "--price", "59000", "--activation-price", "60000"]


@pytest.fixture
def box(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Sandbox]:
    """A sandbox serving from a thread, and an environment pointing the command line at it."""
    yield from serve_sandbox(monkeypatch, tmp_path)


def _no_float(text: str) -> float:
    raise AssertionError(f"a JSON float: {text}")


def loads(text: str) -> Any:
    """JSON that must hold no float (amounts are strings)."""
    return json.loads(text, parse_float=_no_float)


def client_order_id(order: dict[str, Any]) -> str:
    """The client order id of an order the sandbox placed (in either dialect's spelling)."""
    return str(order.get("clientOrderId", order.get("client_order_id")))


def sent(box: Sandbox) -> int:
    return sum(box.stats.received.values())


# -- reads --------------------------------------------------------------------------------------


def test_ping(box: Sandbox, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "ping") == (0, "pong\n", "")
    code, out, _ = run(capsys, "ping", "--json")
    assert code == 0 and loads(out) == {"pong": True}
    assert box.stats.received["/api/v4/public/ping"] == 2


def test_balance_all_and_one_ticker(box: Sandbox, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "balance")
    rows = dict(line.split("\t") for line in out.splitlines())
    assert code == 0 and {"BTC", "USDT"} <= set(rows)
    code, out, _ = run(capsys, "balance", "--ticker", "BTC", "--json")
    assert code == 0 and loads(out) == {"BTC": rows["BTC"]}
    assert Decimal(rows["BTC"]) > 0


def test_a_bad_flag_value_is_refused_by_the_clients_check_before_sending(
    box: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "balance", "--ticker", "B-C")
    assert (code, out) == (2, "")
    assert err.startswith("txc-async: error: --ticker: must be 1 to 20 letters or digits")
    code, _, err = run(capsys, "mining", "rewards", "--limit", "101")
    assert code == 2 and "--limit: " in err and "100" in err
    code, _, err = run(capsys, "investments", "--all", "--ticker", "B-C")
    assert code == 2 and err.startswith("txc-async: error: --ticker: ")
    assert sent(box) == 0


def test_investments_one_page_and_every_page(
    box: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "investments", "--limit", "5", "--offset", "3", "--json")
    page = loads(out)
    assert code == 0 and (page["offset"], page["limit"], len(page["records"])) == (3, 5, 5)
    assert isinstance(page["records"][0]["amount"], str)
    assert page["records"][0]["status"] in (1, 2)
    code, out, err = run(capsys, "investments", "--all", "--json")
    ids = [loads(line)["id"] for line in out.splitlines()]
    assert code == 0 and len(ids) == len(set(ids)) == 250 and "250 records" in err
    assert page["records"][0]["id"] == ids[3]
    code, out, _ = run(capsys, "investments", "--status", "active", "--all", "--json")
    assert {loads(line)["status"] for line in out.splitlines()} == {1}
    code, _, err = run(capsys, "investments", "--all", "--limit", "5")
    assert code == 2 and "--all walks every page" in err


def test_mining_rewards_page_and_walk(box: Sandbox, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "mining", "rewards", "--limit", "2", "--json")
    page = loads(out)
    assert code == 0 and len(page["data"]) == 2 and isinstance(page["data"][0]["reward"], str)
    code, out, _ = run(capsys, "mining", "rewards", "--all", "--json", "--start", "2024-01-01")
    keys = [(r["mining_account_name"], r["date"]) for r in map(loads, out.splitlines())]
    assert code == 0 and len(keys) == len(set(keys)) == 3 * 5
    name = box.mining_account_names[0]
    code, out, _ = run(capsys, "mining", "rewards", "--account", name, "--all", "--json")
    assert {loads(line)["mining_account_name"] for line in out.splitlines()} == {name}
    # Without --json and a terminal: a header line and tab-separated rows.
    code, out, _ = run(capsys, "mining", "rewards", "--account", name, "--limit", "3")
    header, *rows = out.splitlines()
    assert header.split("\t")[:3] == ["mining_account_name", "total_reward", "reward"]
    assert len(rows) == 3 and all(row.startswith(f"{name}\t") for row in rows)


def test_mining_hashrate_json_table_and_plot(
    box: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    name = box.mining_account_names[0]
    code, out, _ = run(capsys, "mining", "hashrate", "--account", name, "--json")
    series = loads(out)
    assert code == 0 and series["account"] == name and series["hashrate"]
    values = [Decimal(p["hashrate"]) for p in series["hashrate"]]
    code, out, _ = run(capsys, "mining", "hashrate", "--account", name, "--plot")
    assert code == 0 and f"hashrate of {name}" in out
    from txc_async.cli._hashrate import unit_for

    unit, _ = unit_for(values)
    assert f"({unit}, UTC)" in out and "\x1b[" not in out  # no colours off a terminal
    code, _, err = run(capsys, "mining", "hashrate", "--interval", "1h")
    assert code == 2 and "--account" in err
    code, _, err = run(capsys, "mining", "hashrate", "--account", name, "--plot", "--json")
    assert code == 2 and "--plot" in err


def test_hashrate_units() -> None:
    from txc_async.cli._hashrate import hashes_per_second, unit_for

    assert unit_for([Decimal("123000000000000")]) == ("TH/s", Decimal(10) ** 12)
    assert unit_for([Decimal("999")])[0] == "H/s"
    assert unit_for([Decimal("1000")])[0] == "kH/s"
    assert unit_for([Decimal("2.5e18"), Decimal(1)])[0] == "EH/s"
    assert unit_for([Decimal("1e24")])[0] == "EH/s"  # no larger unit
    assert hashes_per_second("393.88 TH/s") == Decimal("393.88e12")
    assert hashes_per_second("1500") == Decimal(1500)
    assert hashes_per_second("fast") is None


def test_hashrate_table_on_a_terminal_is_scaled() -> None:
    from txc_async import Hashrate, HashratePoint
    from txc_async.cli._hashrate import scaled_rows
    from txc_async.cli._render import Output

    series = Hashrate("pool", [HashratePoint(1704067200, "123000000000000", Decimal("0.01")),
                               HashratePoint(1704070800, "1500000000000000")])
    rows = scaled_rows(series)
    assert rows[0]["hashrate (PH/s)"] == "0.12" and rows[1]["hashrate (PH/s)"] == "1.50"
    stream = io.StringIO()
    Output(json_mode=False, stream=stream, terminal=True).rows(rows, "hashrate of pool")
    table = stream.getvalue()
    assert "hashrate of pool" in table and "2024-01-01T00:00:00Z" in table and "1.50" in table


# -- writes ---------------------------------------------------------------------------------------


def test_an_order_with_yes_is_placed_once_with_the_flags_given(
    box: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, *ORDER, "--client-order-id", "protect-1", "--stp", "cb",
                         "--position-side", "LONG", "--yes", "--json")
    order = loads(out)
    assert code == 0, err
    assert order["client_order_id"] == "protect-1" and order["market"] == "BTC_USDT"
    assert (order["amount"], order["price"], order["activation_price"]) == (
        "0.01", "59000", "60000")
    assert isinstance(order["timestamp"], str)  # a float on the wire: a string here
    (placed,) = box.stats.orders
    assert client_order_id(placed) == "protect-1" and placed["stp"] == "cb"


def test_an_order_without_a_client_order_id_gets_one_before_sending(
    box: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, *ORDER, "--yes")
    (placed,) = box.stats.orders
    order_id = client_order_id(placed)
    assert code == 0 and order_id.startswith("txc-")
    assert f"client order id {order_id}" in err
    assert f"client_order_id\t{order_id}" in out.splitlines()


def test_a_write_without_a_terminal_needs_yes_and_sends_nothing(
    box: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, *ORDER)
    assert (code, out) == (2, "") and "--yes" in err and "nothing was sent" in err
    code, _, err = run(capsys, "mining", "create-account", "--name", "rig_01")
    assert code == 2 and "--yes" in err
    assert sent(box) == 0


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("answer", "placed"), [("y\n", True), ("n\n", False), ("", False)])
def test_a_write_on_a_terminal_asks_first(
    box: Sandbox, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    answer: str, placed: bool,
) -> None:
    monkeypatch.setattr(sys, "stdin", _Terminal(answer))
    code, _, err = run(capsys, "mining", "create-account", "--name", "rig_02")
    # Declining is not a failure: the command asked, and sent nothing.
    assert code == 0
    assert "Create this mining account? [y/N]" in err
    assert "  name     rig_02\n" in err  # what is sent is summed up before the question
    assert box.stats.received[ACCOUNT_PATH] == (1 if placed else 0)
    assert ("not confirmed: nothing was sent" in err) is not placed


def test_bad_order_input_exits_2_naming_the_flag_and_sends_nothing(
    box: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    for flag, value, fragment in (("--amount", "1.5.5", "plain decimal"),
                                  ("--market", "btc-usdt", "BTC_USDT"),
                                  ("--client-order-id", "has space", "Latin letters")):
        argv = list(ORDER)
        if flag in argv:
            argv[argv.index(flag) + 1] = value
        else:
            argv += [flag, value]
        code, _, err = run(capsys, *argv, "--yes")
        assert code == 2 and err.startswith(f"txc-async: error: {flag}: ") and fragment in err
    code, _, err = run(capsys, *ORDER, "--reduce-only", "--stop-loss", "58000", "--yes")
    assert code == 2 and "--reduce-only: " in err
    assert sent(box) == 0


def test_a_lost_order_answer_exits_3_names_the_id_and_is_not_sent_again(
    box: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    box.faults.add(ORDER_PATH, "reset", execute=True)
    code, out, err = run(capsys, *ORDER, "--yes")
    (placed,) = box.stats.orders
    order_id = client_order_id(placed)
    assert code == 3 and out == ""
    assert box.stats.received[ORDER_PATH] == 1
    assert f"Look for client order id {order_id} among the orders of BTC_USDT" in err
    assert "not sent again" in err


def test_a_lost_account_answer_exits_3_and_says_how_to_check(
    box: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    box.faults.add(ACCOUNT_PATH, "malformed_json", execute=True)
    code, _, err = run(capsys, "mining", "create-account", "--name", "rig_03", "--yes")
    assert code == 3 and "mining hashrate --account rig_03" in err
    assert box.stats.received[ACCOUNT_PATH] == 1


def test_a_refused_write_exits_1(box: Sandbox, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, *ORDER[:-1], "0.01", "--amount", "0.0000001", "--yes")
    assert code == 1 and "amount" in err.lower()
    assert box.stats.received[ORDER_PATH] == 1 and not box.stats.orders


# -- dry runs -------------------------------------------------------------------------------------


def test_a_dry_run_prints_the_request_sends_nothing_and_spends_no_budget(
    box: Sandbox, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    budgets = tmp_path / "budgets.sqlite3"
    monkeypatch.setenv("TXC_LIMITER", f"sqlite:///{budgets}")
    code, out, err = run(capsys, *ORDER, "--stp", "co", "--dry-run", "--json")
    request = loads(out)
    assert code == 0 and "nothing was sent" in err
    assert request["method"] == "POST" and request["url"] == box.url + ORDER_PATH
    body = request["body"]
    assert {k: body[k] for k in ("market", "side", "amount", "price", "activation_price",
                                 "stp", "request", "nonceWindow")} == {
        "market": "BTC_USDT", "side": "sell", "amount": "0.01", "price": "59000",
        "activation_price": "60000", "stp": "co", "request": ORDER_PATH, "nonceWindow": True}
    assert body["nonce"].startswith("<nonce")
    headers = request["headers"]
    assert headers["X-TXC-APIKEY"] == f"{box.api_key[:4]}… ({len(box.api_key)} characters)"
    assert "made when sent" in headers["X-TXC-SIGNATURE"]
    assert box.api_key not in out and box.api_secret not in out
    # Nothing reached the server, no budget was drawn on: the shared file was never made.
    assert sent(box) == 0 and not budgets.exists()
    # A real call right after it is unaffected: one order, its nonce accepted at once.
    code, _, err = run(capsys, *ORDER, "--yes")
    assert code == 0, err
    assert len(box.stats.orders) == 1 and box.stats.nonce_refused == 0


@pytest.mark.parametrize("argv", [
    ["ping"], ["balance", "--ticker", "BTC"], ["investments", "--all"],
    ["mining", "rewards", "--all"], ["mining", "hashrate", "--account", "a"],
    ["mining", "create-account", "--name", "rig_04"],
])
def test_every_operation_has_a_dry_run(
    box: Sandbox, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, out, _ = run(capsys, *argv, "--dry-run")
    first = out.splitlines()[0]
    assert code == 0 and first.split()[0] in ("GET", "POST") and box.url in first
    assert sent(box) == 0


def test_a_dry_run_with_bad_input_still_exits_2(
    box: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, *ORDER, "--price", "-1", "--dry-run")
    assert code == 2 and "--price: " in err
    assert sent(box) == 0


# -- OAuth ----------------------------------------------------------------------------------------


def test_oauth_refresh_reads_its_secrets_from_the_environment_only(
    box: Sandbox, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = run(capsys, "oauth", "refresh")
    assert code == 1 and "TXC_OAUTH_CLIENT_ID" in err
    monkeypatch.setenv("TXC_OAUTH_CLIENT_ID", box.oauth_client_id)
    monkeypatch.setenv("TXC_OAUTH_CLIENT_SECRET", box.oauth_client_secret)
    monkeypatch.setenv("TXC_OAUTH_REFRESH_TOKEN", box.oauth_refresh_token)
    code, out, _ = run(capsys, "oauth", "refresh", "--dry-run")
    assert code == 0 and f"client_id={box.oauth_client_id}&" in out
    assert box.oauth_client_secret not in out and box.oauth_refresh_token not in out
    old = box.oauth_refresh_token
    code, out, err = run(capsys, "oauth", "refresh", "--json")
    token = loads(out)
    assert code == 0 and token["expires_in"] > 0 and token["refresh_token"] != old
    assert "no longer works" in err and "TXC_OAUTH_REFRESH_TOKEN cannot be changed" in err
    with pytest.raises(SystemExit):
        main(["oauth", "refresh", "--token", "x"])  # no flag takes a secret


# -- profiles -------------------------------------------------------------------------------------


def _config(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "config" / "txc-async" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


def test_a_named_profile_gives_the_credentials_and_wins_over_the_environment(
    box: Sandbox, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    _config(tmp_path, f'[profiles.sandbox]\napi_key = "{box.api_key}"\n'
                      f'api_secret = "{box.api_secret}"\nbase_url = "{box.url}"\n'
                      'limiter = "memory://"\n'
                      '[profiles.wrong]\napi_key = "wrong-key-1"\napi_secret = "wrong"\n'
                      f'base_url = "{box.url}"\n')
    for name in ("TXC_API_KEY", "TXC_API_SECRET", "TXC_BASE_URL"):
        monkeypatch.delenv(name)
    code, out, err = run(capsys, "--profile", "sandbox", "balance", "--ticker", "BTC")
    assert code == 0 and out.startswith("BTC\t"), err
    code, out, err = run(capsys, "balance", "--ticker", "BTC", "--profile", "sandbox")
    assert code == 0 and out.startswith("BTC\t"), err
    code, _, err = run(capsys, "--profile", "wrong", "balance")
    assert code == 1
    assert "ignored" not in err  # nothing in the environment to set aside
    # The environment's right key does not replace the named profile's: it is set aside, and
    # the command says so on stderr before it sends anything.
    monkeypatch.setenv("TXC_API_KEY", box.api_key)
    monkeypatch.setenv("TXC_API_SECRET", box.api_secret)
    code, _, err = run(capsys, "--profile", "wrong", "balance")
    assert code == 1
    note = err.splitlines()[0]
    assert note == ("txc-async: note: --profile wrong is used as it is: TXC_API_KEY, "
                    "TXC_API_SECRET set in the environment are ignored")
    assert box.api_secret not in err
    code, _, err = run(capsys, "--profile", "missing", "balance")
    assert code == 2 and "--profile missing" in err and "sandbox, wrong" in err


def test_a_named_profile_is_never_overridden_by_a_sandbox_s_exports(
    box: Sandbox, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    # The sandbox's export lines are still in the shell (the fixture's TXC_BASE_URL, key and
    # secret); the "prod" profile leaves base_url out: the service's own.
    _config(tmp_path, '[profiles.prod]\napi_key = "prod-key-123456"\n'
                      'api_secret = "prod-secret-123456"\nlimiter = "memory://"\n')
    code, out, err = run(capsys, "--profile", "prod", *ORDER, "--yes", "--dry-run")
    assert code == 0, err
    assert out.startswith(f"POST https://whitebit.com{ORDER_PATH}")
    assert "prod" in out and box.api_key[:4] not in out
    assert ("--profile prod is used as it is: TXC_API_KEY, TXC_API_SECRET, TXC_BASE_URL set "
            "in the environment are ignored") in err
    assert sent(box) == 0 and not box.stats.orders
    # Without --profile, the environment still wins over the default profile.
    _config(tmp_path, '[profiles.default]\napi_key = "prod-key-123456"\n'
                      'api_secret = "prod-secret-123456"\n')
    code, out, err = run(capsys, "balance", "--ticker", "BTC")
    assert code == 0 and out.startswith("BTC\t") and "ignored" not in err


def test_a_config_file_others_can_read_is_refused(
    box: Sandbox, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = _config(tmp_path, '[profiles.default]\napi_key = "k-123456789"\n'
                             'api_secret = "s3cret-value"\n', mode=0o644)
    code, out, err = run(capsys, "balance")
    assert code == 1 and out == ""
    assert f"chmod 600 {path}" in err and "s3cret-value" not in err
    assert sent(box) == 0
    path.chmod(0o600)
    code, _, err = run(capsys, "balance")
    assert code == 0, err  # the environment's key wins over the default profile's


@pytest.mark.parametrize("url", [
    "redis://:hunter2-pass@127.0.0.1:6379/0", "redis://ops:hunter2-pass@127.0.0.1:6379/0",
    "rediss://127.0.0.1:6379/0?password=hunter2-pass",
])
def test_a_readable_config_file_with_a_limiter_password_is_refused(
    box: Sandbox, capsys: pytest.CaptureFixture[str], tmp_path: Path, url: str
) -> None:
    path = _config(tmp_path, f'[profiles.default]\nlimiter = "{url}"\n', mode=0o644)
    code, out, err = run(capsys, "ping")
    assert code == 1 and out == ""
    assert f"chmod 600 {path}" in err and "hunter2" not in err
    assert sent(box) == 0


def test_a_config_file_without_secrets_may_be_readable(
    box: Sandbox, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _config(tmp_path, f'[profiles.default]\nbase_url = "{box.url}"\nlimiter = "memory://"\n',
            mode=0o644)
    assert run(capsys, "ping")[0] == 0


def test_a_mistyped_profile_key_is_named(
    box: Sandbox, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _config(tmp_path, '[profiles.default]\napi-secret = "x"\n')
    code, _, err = run(capsys, "ping")
    assert code == 1 and "unknown key 'api-secret'" in err


# -- help, completion, start-up -------------------------------------------------------------------


def _parsers() -> Iterator[tuple[str, Any]]:
    import argparse

    from txc_async.cli import build_parser

    todo = [("txc-async", build_parser())]
    while todo:
        name, parser = todo.pop()
        yield name, parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo += [(f"{name} {sub}", p) for sub, p in action.choices.items()]


def test_every_command_has_help_with_an_example_and_every_option_a_default() -> None:
    commands = 0
    for name, parser in _parsers():
        if parser._subparsers is not None and name != "txc-async":
            continue  # a group (order, mining, oauth): its commands have the examples
        text = parser.format_help()
        assert "example:" in text, name
        assert f"  {name.split()[0]} " in text.split("example:")[1], name
        commands += 1
        for action in parser._actions:
            if action.option_strings and not action.required and action.dest not in (
                    "help", "live", "version"):
                help_text = parser.formatter_class(name)._get_help_string(action) or ""
                assert "default" in help_text, (name, action.option_strings)
    assert commands >= 13


def test_every_command_answers_help(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--help"], ["order", "stop-limit", "--help"], ["mining", "hashrate", "--help"],
                 ["oauth", "refresh", "--help"]):
        code, out, _ = run(capsys, *argv)
        assert code == 0 and "example:" in out


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts(capsys: pytest.CaptureFixture[str], shell: str) -> None:
    code, out, _ = run(capsys, "completion", shell)
    assert code == 0 and "txc-async" in out
    assert ("complete" in out) if shell != "zsh" else ("compdef" in out)


def _complete(line: str, env: dict[str, str]) -> list[str]:
    """What the shell gets for ``line`` (argcomplete's protocol, as its own tests use it)."""
    out = Path(env["HOME"]) / "completions"
    subprocess.run(
        [sys.executable, "-m", "txc_async"], check=False, timeout=60,
        env=os.environ | env | {"_ARGCOMPLETE": "1", "_ARGCOMPLETE_IFS": "\n",
                                "COMP_LINE": line, "COMP_POINT": str(len(line)),
                                "_ARGCOMPLETE_STDOUT_FILENAME": str(out)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    # A single match comes with a trailing space (the word is complete), several without.
    return [word.strip() for word in out.read_text().split("\n")]


def test_completion_of_commands_flags_and_profiles(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    assert _complete("txc-async mi", env) == ["mining"]
    assert {"create-account", "rewards", "hashrate"} <= set(_complete("txc-async mining ", env))
    assert _complete("txc-async order stop-limit --act", env) == ["--activation-price"]
    _config(tmp_path, '[profiles.main]\n[profiles.test]\n')
    assert set(_complete("txc-async --profile ", env)) == {"main", "test"}


def test_help_imports_no_table_plot_or_completion_library() -> None:
    code = ("import sys\nfrom txc_async.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "heavy = {'rich', 'plotext', 'argcomplete', 'tqdm'}\n"
            "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, check=True)
    assert result.stdout.splitlines()[-1] == "[]"


def test_the_parsers_formats_are_the_backfills(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from txc_async._export.run import FORMATS
    from txc_async.cli._parser import FORMATS as PARSER_FORMATS

    assert PARSER_FORMATS == FORMATS
    # The --limiter default is worked out when used, and checked as a given value is.
    _isolate(monkeypatch, tmp_path)
    monkeypatch.setenv("TXC_LIMITER", "ftp://h")
    code, _, err = run(capsys, "backfill-rewards", "--start", "2024-01-01", "--end",
                       "2024-01-02", "--out", str(tmp_path / "r.jsonl"))
    assert code == 2 and err.startswith("txc-async: error: argument --limiter: unknown limiter")
    monkeypatch.setenv("TXC_LIMITER", "memory://")
    code, out, _ = run(capsys, "backfill-rewards", "--help")
    assert code == 0 and "(default: memory://)" in out


def test_a_limiter_password_is_never_shown_by_help_nor_taken_as_an_argument(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _isolate(monkeypatch, tmp_path)
    monkeypatch.setenv("TXC_LIMITER", "redis://:hunter2-pass@127.0.0.1:6379/0")
    code, out, _ = run(capsys, "backfill-rewards", "--help")
    assert code == 0 and "hunter2" not in out
    assert "(default: redis://:***@127.0.0.1:6379/0)" in " ".join(out.split())
    for url in ("redis://:hunter2-pass@127.0.0.1:6379/0", "redis://hunter2-pass@127.0.0.1",
                "redis://127.0.0.1:6379/0?password=hunter2-pass"):
        code, _, err = run(capsys, "backfill-rewards", "--start", "2024-01-01", "--end",
                           "2024-01-02", "--out", str(tmp_path / "r.jsonl"), "--limiter", url)
        assert code == 2 and "hunter2" not in err and err.count("\n") == 1
        assert err.startswith("txc-async: error: argument --limiter: ")
        assert "set TXC_LIMITER, or a profile's limiter, instead" in err
        assert not (tmp_path / "r.jsonl").exists()


async def test_an_order_interrupted_while_under_way_exits_3_and_names_its_id(
    tmp_path: Path,
) -> None:
    import signal

    async with Sandbox() as sandbox:
        sandbox.faults.add(ORDER_PATH, "slow", delay=3.0, execute=True)
        env = os.environ | {"TXC_BASE_URL": sandbox.url, "TXC_API_KEY": sandbox.api_key,
                            "TXC_API_SECRET": sandbox.api_secret,
                            "XDG_CACHE_HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path)}
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "txc_async", *ORDER, "--client-order-id", "stop-7", "--yes",
            env=env, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for _ in range(200):
            if sandbox.stats.received[ORDER_PATH]:
                break
            await asyncio.sleep(0.05)
        process.send_signal(signal.SIGINT)
        out, err = await asyncio.wait_for(process.communicate(), 30)
        assert process.returncode == 3 and out == b""
        assert b"may have taken effect" in err and b"client order id stop-7" in err
        assert sandbox.stats.received[ORDER_PATH] == 1


# -- the declarations: flags and the catalogue ---------------------------------------------------

#: Each operation command, and the operation whose parameters are its flags.
COMMAND_OPERATIONS = {
    "balance": "main_balance", "investments": "investments_history",
    "order stop-limit": "collateral_stop_limit_order",
    "mining create-account": "create_mining_account", "mining rewards": "mining_rewards",
    "mining hashrate": "mining_hashrate", "oauth refresh": "refresh_oauth_token",
}


def test_an_operation_command_s_flags_are_its_parameters() -> None:
    import txc_async
    from txc_async._operations import BALANCE_OF_TICKER

    parsers = {name.removeprefix("txc-async "): parser for name, parser in _parsers()}
    for command, operation in COMMAND_OPERATIONS.items():
        op = txc_async.OPERATIONS[operation] if operation != "main_balance" else BALANCE_OF_TICKER
        actions = {action.dest: action for action in parsers[command]._actions}
        for param in op.params:
            if param.secret or command == "oauth refresh":
                # Secrets, and the OAuth application's values, come from the environment.
                assert param.name not in actions, (command, param.name)
                continue
            action = actions[param.name]
            assert action.option_strings == ["--" + param.name.replace("_", "-")]
            assert action.required == param.required, (command, param.name)
            assert action.help and "\n" not in action.help
            if param.choices:
                assert action.choices is not None and len(tuple(action.choices)) == len(
                    param.choices)


def test_the_operations_command_lists_the_catalogue(capsys: pytest.CaptureFixture[str]) -> None:
    import txc_async

    code, out, _ = run(capsys, "operations", "--json")
    assert code == 0
    rows = [loads(line) for line in out.splitlines()]
    # Each operation once: one declared by hand is also in the catalogue under its generated name.
    unique = list({id(op): op.name for op in txc_async.OPERATIONS.values()}.values())
    assert [row["name"] for row in rows] == unique and len(rows) == 129
    hashrate = rows[unique.index("mining_hashrate")]
    assert hashrate == {
        "name": "mining_hashrate", "method": "POST", "path": "/api/v4/mining/hashrate",
        "limit": {"max_requests": 1000, "per_seconds": 10}, "write": False,
        "summary": txc_async.OPERATIONS["mining_hashrate"].summary,
    }
    assert {row["name"] for row in rows if row["write"]} == {
        op.name for op in txc_async.OPERATIONS.values() if not op.retry_safe}
    assert {"collateral_stop_limit_order", "create_mining_account", "refresh_oauth_token",
            "create_limit_order"} <= {row["name"] for row in rows if row["write"]}
    code, out, _ = run(capsys, "operations")
    assert code == 0 and out.splitlines()[0].split("\t")[:3] == ["name", "method", "path"]
