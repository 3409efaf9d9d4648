"""Every operation from the command line: ``txc-async call NAME key=value`` and the generated
group and command of each, against the sandbox where it answers the operation, and as a dry run
for every operation this version can send; usage errors, the write rules and a lost answer;
``--help`` building no group.

The sandbox serves from a thread with its own event loop; each command runs through ``main``
as the console script does, with its own ``asyncio.run``.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import txc_async
from txc_async._operations import Param
from txc_async._operations.generated.index import WHERE
from txc_async._operations.overrides import UNSENDABLE
from txc_async.cli import build_parser
from txc_async.cli._arguments import Parser
from txc_async.cli._groups import GROUPS, command_of, group_of_tag, operation_names
from txc_async.cli._values import END_NAMES, START_NAMES, flag_of, read_value
from txc_async.sandbox import Sandbox

from ..support.cli import isolate as _isolate
from ..support.cli import run, serve_sandbox

# The commands run their own event loops (asyncio's, whatever loop this process's tests use).
pytestmark = pytest.mark.asyncio_only

STOP_LIMIT_PATH = "/api/v4/order/collateral/stop-limit"
ACCOUNT_PATH = "/api/v4/mining/accounts/create"
#: A generated write the sandbox answers today: the collateral stop-limit order, by its
#: generated command.
STOP_LIMIT = ["collateral", "create-collateral-stop-limit-order", "--market", "BTC_USDT",
              "--side", "sell", "--amount", "0.01", "--price", "59000",
              "--activation-price", "60000"]


@pytest.fixture
def box(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Sandbox]:
    """A sandbox serving from a thread, and an environment pointing the command line at it."""
    yield from serve_sandbox(monkeypatch, tmp_path)


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No server, no credentials, nothing of this machine's user: dry runs and usage errors."""
    _isolate(monkeypatch, tmp_path)


def _no_float(text: str) -> float:
    raise AssertionError(f"a JSON float: {text}")


def loads(text: str) -> Any:
    """JSON that must hold no float (amounts are strings)."""
    return json.loads(text, parse_float=_no_float)


def sent(box: Sandbox) -> int:
    return sum(box.stats.received.values())


# -- valid values for every required parameter ---------------------------------------------------

#: Values for the parameters whose rules a generic value does not meet (records' required
#: fields, patterns).
KNOWN: dict[tuple[str, str], str] = {
    ("cancel_bulk_orders", "orders"): '[{"market":"BTC_USDT","orderId":4000000001}]',
    ("create_mining_watcher_link", "permissions"): '["rewards"]',
    ("create_sub_account", "permissions"): '{"spotEnabled":true,"collateralEnabled":false}',
    ("edit_sub_account", "permissions"): '{"spotEnabled":true,"collateralEnabled":false}',
    ("submit_travel_rule_deposit_verification", "originator"):
        '{"type":"individual","residenceCountry":"DEU","walletAddress":"bc1q",'
        '"address":{"country":"DEU","city":"Berlin","addressLine1":"Street 1"}}',
}
#: Candidate values of each kind, the first one the parameter's own check takes is used.
CANDIDATES: dict[str, tuple[str, ...]] = {
    "text": ("BTC_USDT", "abc_1", "1", "a@b.co", "123e4567-e89b-12d3-a456-426614174000"),
    "decimal": ("0.01", "1"),
    "integer": ("1", "0", "100"),
    "time": ("2024-01-01",),
    "boolean": ("true",),
    "list": ("[]", '["BTC"]', '["abc_1"]', "[1]"),
    "object": ("{}",),
}


def _valid(op_name: str, param: Param) -> str:
    """A value of ``param`` that the operation's own check takes, as typed on the command line."""
    if (op_name, param.name) in KNOWN:
        return KNOWN[op_name, param.name]
    if param.choices and param.kind != "list":
        candidates: tuple[str, ...] = tuple(str(choice) for choice in param.choices)
    else:
        example = param.help.partition("e.g. ")[2].split(" ")[0].rstrip(",)")
        candidates = ((example,) if example else ()) + CANDIDATES[param.kind]
    for text in candidates:
        try:
            param.check(param.name, read_value(param, text))
        except (ValueError, txc_async.InvalidParameterError):
            continue
        return text
    # A record whose required fields a generic value does not fill: each field's own check
    # is reached by a value built from its name (reported here, to be added to KNOWN).
    raise AssertionError(f"no valid value for {op_name}.{param.name} ({param.help})")


def _required(op_name: str) -> list[tuple[Param, str]]:
    op = txc_async.OPERATIONS[op_name]
    return [(param, _valid(op_name, param)) for param in op.params
            if param.required and not param.secret]


SENDABLE = [name for name in WHERE if name not in UNSENDABLE]


def test_every_operation_has_a_group_and_a_command_with_a_flag_per_parameter() -> None:
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert set(GROUPS) == {txc_async.OPERATIONS[name].tag for name in WHERE}
    seen = 0
    for tag in GROUPS:
        group = commands.choices[group_of_tag(tag)]
        assert isinstance(group, Parser)
        group.complete()
        (kinds,) = [a for a in group._actions if isinstance(a, argparse._SubParsersAction)]
        for name in operation_names(tag):
            op = txc_async.OPERATIONS[name]
            command = kinds.choices[command_of(name)]
            flags = {action.option_strings[0]: action for action in command._actions
                     if action.option_strings}
            for param in op.params:
                if param.secret:
                    assert flag_of(param) not in flags, (name, param.name)
                    continue
                action = flags[flag_of(param)]
                assert action.required == param.required, (name, param.name)
                assert (action.help or "").startswith("required: ") == param.required
            assert ("--yes" in flags) == (not op.retry_safe), name
            seen += 1
    assert seen == len(WHERE) == 129


def test_every_time_parameter_is_a_start_or_an_end() -> None:
    """A bare day means the first second of a start and the last second of an end: every
    parameter holding a moment is one of the two."""
    for name in WHERE:
        for param in txc_async.OPERATIONS[name].params:
            if param.kind == "time":
                assert param.name in START_NAMES | END_NAMES, (name, param.name)
    moment = txc_async.OPERATIONS["get_order_history"]
    end = next(p for p in moment.params if p.name == "end_date")
    assert read_value(end, "2024-01-01") == 1704153599


@pytest.mark.parametrize("name", SENDABLE)
def test_every_operation_dry_runs_from_its_command_and_by_name(
    offline: None, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    op = txc_async.OPERATIONS[name]
    required = _required(name)
    flags = [word for param, value in required for word in (flag_of(param), value)]
    tag = group_of_tag(op.tag)
    code, out, err = run(capsys, tag, command_of(name), *flags, "--dry-run", "--json")
    assert code == 0, err
    request = loads(out)
    assert request["method"] == op.method
    path = re.sub(r"\\\{[^}]*\\\}", "[^/]+", re.escape(op.path))
    assert re.fullmatch(re.escape(txc_async.DEFAULT_BASE_URL) + path + r"(\?.*)?",
                        request["url"]), request["url"]
    assert "dry run: nothing was sent" in err
    pairs = [f"{param.name}={value}" for param, value in required]
    code, again, err = run(capsys, "call", name, *pairs, "--dry-run", "--json")
    assert code == 0, err
    assert _unnonced(loads(again)) == _unnonced(request)


def _unnonced(request: dict[str, Any]) -> dict[str, Any]:
    """A described request without what differs between two builds (a made-up id)."""
    body = request["body"]
    if isinstance(body, dict):
        body = {key: value for key, value in body.items() if key != "clientOrderId"}
    return request | {"body": body}


@pytest.mark.parametrize("name", sorted(UNSENDABLE))
def test_an_unsendable_operation_says_why_and_sends_nothing(
    offline: None, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    pairs = [f"{param.name}={value}" for param, value in _required(name)]
    code, out, err = run(capsys, "call", name, *pairs, "--dry-run")
    assert (code, out) == (1, "")
    assert "cannot be sent by this version" in err


# -- against the sandbox: what it answers today ---------------------------------------------------


def test_reads_by_name_and_by_command(box: Sandbox, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "call", "ping", "--json") == (0, "true\n", "")
    assert run(capsys, "market", "ping") == (0, "true\n", "")
    code, out, _ = run(capsys, "call", "get_main_balance", "--json")
    balances = loads(out)
    assert code == 0 and Decimal(balances["BTC"]) > 0
    code, out, _ = run(capsys, "main-account", "get-main-balance")
    assert code == 0 and dict(line.split("\t") for line in out.splitlines()) == balances
    code, out, err = run(capsys, "call", "get_fixed_investments_history", "limit=3",
                         "status=active")
    rows = out.splitlines()
    assert code == 0 and rows[0].startswith("id\t") and len(rows) == 4
    assert "limit 3" in err  # the page's numbers beside its table
    code, out, _ = run(capsys, "lending", "get-fixed-investments-history", "--limit", "3",
                       "--status", "closed", "--json")
    page = loads(out)
    assert code == 0 and {record["status"] for record in page["records"]} == {2}
    assert isinstance(page["records"][0]["amount"], str)
    code, out, _ = run(capsys, "mining", "get-mining-rewards", "--account",
                       box.mining_account_names[0], "--start", "2024-01-01", "--json")
    assert code == 0 and loads(out)["data"]


def test_the_hand_written_commands_keep_working_beside_the_generated_ones(
    box: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "mining", "rewards", "--account", box.mining_account_names[0],
                       "--json")
    assert code == 0 and loads(out)["data"]
    code, out, _ = run(capsys, "mining", "get-mining-accounts", "--help")
    assert code == 0 and "example:" in out
    assert run(capsys, "ping") == (0, "pong\n", "")


def test_a_generated_write_without_a_terminal_needs_yes_and_sends_nothing(
    box: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, *STOP_LIMIT)
    assert (code, out) == (2, "") and "--yes" in err and "nothing was sent" in err
    code, _, err = run(capsys, "call", "create_mining_account", "name=rig_01")
    assert code == 2 and "--yes" in err
    assert sent(box) == 0


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("answer", "placed"), [("y\n", True), ("n\n", False), ("", False)])
def test_a_generated_write_on_a_terminal_asks_first(
    box: Sandbox, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    answer: str, placed: bool,
) -> None:
    monkeypatch.setattr(sys, "stdin", _Terminal(answer))
    code, _, err = run(capsys, "mining", "create-mining-account", "--name", "rig_02")
    assert code == 0  # declining sends nothing and is not a failure
    assert "Send create_mining_account? [y/N]" in err
    assert "  name     rig_02\n" in err  # what is sent is summed up before the question
    assert box.stats.received[ACCOUNT_PATH] == (1 if placed else 0)
    assert ("not confirmed: nothing was sent" in err) is not placed


def test_a_generated_order_gets_a_client_order_id_and_is_placed_once(
    box: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, *STOP_LIMIT, "--yes", "--json")
    (placed,) = box.stats.orders
    order_id = placed.get("clientOrderId", placed.get("client_order_id"))
    assert code == 0 and str(order_id).startswith("txc-")
    assert f"client order id {order_id}" in err
    order = loads(out)
    assert order["client_order_id"] == order_id and order["amount"] == "0.01"
    code, out, _ = run(capsys, "call", "create_collateral_stop_limit_order", "market=BTC_USDT",
                       "side=buy", "amount=0.02", "price=41000", "activation_price=40000",
                       "clientOrderId=mine-7", "--yes")
    assert code == 0 and "client_order_id\tmine-7" in out.splitlines()
    assert box.stats.received[STOP_LIMIT_PATH] == 2


def test_a_lost_answer_of_a_generated_write_exits_3_and_is_not_sent_again(
    box: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    box.faults.add(STOP_LIMIT_PATH, "reset", execute=True)
    code, out, err = run(capsys, *STOP_LIMIT, "--client-order-id", "lost-1", "--yes")
    assert code == 3 and out == ""
    assert box.stats.received[STOP_LIMIT_PATH] == 1
    assert "Look for client order id lost-1 among the orders of BTC_USDT" in err
    assert "not sent again" in err
    box.faults.add(ACCOUNT_PATH, "malformed_json", execute=True)
    code, _, err = run(capsys, "call", "create_mining_account", "name=rig_03", "--yes")
    assert code == 3 and "txc-async mining --help" in err
    assert box.stats.received[ACCOUNT_PATH] == 1


# -- usage errors: exit 2, nothing sent -----------------------------------------------------------


@pytest.mark.parametrize(("argv", "fragment"), [
    (["call", "create_limit_ordr"], "did you mean create_limit_order"),
    (["call", "create_limit_order", "markt=BTC_USDT"], "markt: is not a parameter of "
     "create_limit_order; did you mean market?"),
    (["call", "create_limit_order", "market"], "'market': parameters are given as key=value"),
    (["call", "create_limit_order", "market=BTC_USDT", "market=ETH_USDT"], "market: given twice"),
    (["call", "create_limit_order", "market=BTC_USDT", "side=buy"], "amount: is required"),
    (["call", "create_limit_order", "market=BTC_USDT", "side=hold", "amount=1"],
     "side: must be one of buy, sell, not 'hold'"),
    (["call", "create_limit_order", "market=BTC_USDT", "side=buy", "amount=1e5"],
     "amount: must be a plain decimal number"),
    (["call", "create_limit_order", "market=BTC_USDT", "side=buy", "amount=1",
      "post_only=yes"], "post_only: must be true or false, not 'yes'"),
    (["call", "get_active_orders", "limit=ten"], "limit: 'ten' is not a whole number"),
    (["call", "get_active_orders", "limit=1000"], "limit: must be"),
    (["call", "get_order_history", "start_date=2024-13-01"], "start_date: '2024-13-01' is not"),
    (["call", "create_bulk_limit_order", "orders={}"], "orders: must be a JSON list"),
    (["call", "create_bulk_limit_order", "orders=[{"], "orders: must be a JSON list"),
    (["call", "create_bulk_limit_order", 'orders=[{"prize":"1"}]'],
     "orders: orders[0] has no field 'prize'"),
    (["call", "create_bulk_limit_order", 'orders=[{"market":"BTC_USDT","amount":0.1e-999}]'],
     "orders: orders[0].amount"),
    (["call", "apply_code", "code=WB-1"], "code: is a secret and never taken from the command "
     "line"),
    (["spot", "create-limit-order", "--market", "BTC_USDT", "--side", "buy", "--amount", "x"],
     "--amount: must be a plain decimal number"),
    (["spot", "create-limit-order", "--market", "BTC_USDT", "--side", "buy"],
     "the following arguments are required: --amount"),
    (["spot", "create-limit-order", "--market", "BTC_USDT", "--side", "hold", "--amount", "1"],
     "argument --side: must be one of buy, sell"),
    (["spot", "no-such-command"], "invalid choice: 'no-such-command'"),
])
def test_usage_errors_exit_2_name_the_key_and_the_rule_and_send_nothing(
    box: Sandbox, capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str
) -> None:
    code, out, err = run(capsys, *argv, "--yes")
    assert (code, out) == (2, ""), err
    assert err.startswith("txc-async: error: ") and fragment in err, err
    assert err.count("\n") == 1
    assert sent(box) == 0


def test_call_takes_its_options_before_between_and_after_the_pairs(
    offline: None, capsys: pytest.CaptureFixture[str]
) -> None:
    pairs = ["market=BTC_USDT", "side=buy", "amount=0.01", "price=40000", "client_order_id=a-1"]
    outs = set()
    for argv in (["call", "--dry-run", "create_limit_order", *pairs, "--json"],
                 ["call", "create_limit_order", *pairs[:2], "--json", *pairs[2:], "--dry-run"],
                 ["call", "create-limit-order", *pairs, "--dry-run", "--json"]):
        code, out, err = run(capsys, *argv)
        assert code == 0, err
        outs.add(out)
    assert len(outs) == 1 and loads(outs.pop())["body"]["side"] == "buy"


def test_an_amount_is_sent_as_typed_and_json_numbers_as_decimals(
    offline: None, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        capsys, "call", "create_bulk_limit_order",
        'orders=[{"market":"BTC_USDT","side":"buy","amount":0.1000000000000000055511,'
        '"price":"40000"}]', "--dry-run", "--json")
    assert code == 0, err
    (order,) = loads(out)["body"]["orders"]
    assert order["amount"] == "0.1000000000000000055511"  # never through a float
    code, out, _ = run(capsys, "spot", "create-limit-order", "--market", "BTC_USDT", "--side",
                       "buy", "--amount", "0.00000001", "--price", "40000.10", "--dry-run",
                       "--json")
    body = loads(out)["body"]
    assert (body["amount"], body["price"]) == ("0.00000001", "40000.1")


def test_a_secret_is_read_from_stdin_and_never_shown(
    box: Sandbox, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run(capsys, "codes", "apply-code", "--dry-run")
    assert code == 0 and '"code":"<secret: read when sent>"' in out
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code, _, err = run(capsys, "codes", "apply-code", "--yes")
    assert code == 2 and "code is a secret" in err and "nothing was sent" in err
    assert sent(box) == 0


def test_a_generated_token_exchange_takes_its_secrets_from_the_environment_or_stdin(
    box: Sandbox, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    refresh = ["oauth", "oauth2-refresh-token", "--client-id", box.oauth_client_id]
    old = box.oauth_refresh_token
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"{box.oauth_client_secret}\n{old}\n"))
    code, out, err = run(capsys, *refresh, "--json")
    assert code == 0, err
    first = loads(out)
    assert first["access_token"] and first["refresh_token"] != old
    assert box.oauth_client_secret not in err
    monkeypatch.setenv("TXC_OAUTH_CLIENT_SECRET", box.oauth_client_secret)
    monkeypatch.setenv("TXC_OAUTH_REFRESH_TOKEN", first["refresh_token"])
    code, out, err = run(capsys, *refresh, "--dry-run")
    assert code == 0 and f"client_id={box.oauth_client_id}&" in out
    assert box.oauth_client_secret not in out and first["refresh_token"] not in out
    code, out, err = run(capsys, *refresh, "--json")  # no question: a token exchange
    assert code == 0, err
    assert loads(out)["refresh_token"] != first["refresh_token"]


# -- help and speed ---------------------------------------------------------------------------


def _imported_by(argv: list[str]) -> set[str]:
    """The modules that running ``txc-async ARGV`` imports beyond ``import txc_async``."""
    code = ("import sys, txc_async\nbefore = set(sys.modules)\nfrom txc_async.cli import main\n"
            f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
            "print(' '.join(sorted(set(sys.modules) - before)))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, check=True)
    return set(result.stdout.splitlines()[-1].split())


def _group_modules(modules: set[str]) -> set[str]:
    return {m for m in modules if m.startswith(("txc_async._operations.generated.",
                                                "txc_async._models_generated"))}


def test_help_builds_no_group_and_imports_a_handful_of_modules() -> None:
    imported = _imported_by(["--help"])
    assert not _group_modules(imported)
    # The command line's own modules, argparse and a few of the standard library's: no group,
    # no model, no client, no HTTP library.
    ours = {m for m in imported if m.startswith("txc_async") and not m.startswith("txc_async.cli")}
    assert ours <= {"txc_async._secrets"}, sorted(ours)
    assert not {m for m in imported if m.split(".")[0] in ("aiohttp", "msgspec", "yarl")}
    assert len(imported) <= 32, sorted(imported)  # argparse, logging, signal, shlex and theirs
    spot = _imported_by(["spot", "--help"])
    assert _group_modules(spot) == {"txc_async._operations.generated.spot"}


def test_every_group_and_command_answers_help(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["call", "--help"], ["spot", "--help"], ["mining", "--help"],
                 ["spot", "create-limit-order", "--help"]):
        code, out, _ = run(capsys, *argv)
        assert code == 0 and "example:" in out
    code, out, _ = run(capsys, "spot", "create-limit-order", "--help")
    assert "--market TEXT         required: text" in out
    assert "txc-async spot create-limit-order --market BTC_USDT --side buy --amount" in out
    code, out, _ = run(capsys, "mining", "--help")
    assert {"create-account", "rewards", "hashrate", "get-mining-accounts"} <= set(out.split())


def test_the_reference_lists_every_group() -> None:
    page = (Path(__file__).parents[2] / "docs" / "reference" / "cli.md").read_text()
    listed = re.findall(r"^\| `([a-z-]+)` \|", page, flags=re.MULTILINE)
    assert listed == [group_of_tag(tag) for tag in GROUPS]
