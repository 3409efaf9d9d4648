"""How the command line shows what a server says and how its commands end: a server's strings
in a table are text, a write answered "Too Many Attempts." at 2xx and a write ended by SIGTERM
exit 3 as a lost answer does, and warnings reach stderr as one line each.

Commands run through ``main`` against a client bound to a memory transport, or as the console
script runs them (``python -m txc_async``, a real process and a real signal) against the
sandbox.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

import txc_async
from txc_async.cli import _execute, main
from txc_async.sandbox import Sandbox
from txc_async.transports import RawResponse

from ..support.common import KEY, SECRET, RecordingLimiter, fast_retry
from ..support.transports import MemoryTransport

# The commands run their own event loops.
pytestmark = pytest.mark.asyncio_only

ORDER_PATH = "/api/v4/order/collateral/stop-limit"
BALANCE_PATH = "/api/v4/main-account/balance"
ORDER = ["order", "stop-limit", "--market", "BTC_USDT", "--side", "sell", "--amount", "0.01",
         "--price", "59000", "--activation-price", "60000", "--client-order-id", "stop-7"]


class Terminal(io.StringIO):
    """Standard output that is a terminal: results are drawn as tables."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def answering(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """``answering(body, status=200)``: commands run by ``main`` reach a memory transport that
    answers ``body``; returns the transport."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for name in ("TXC_API_KEY", "TXC_API_SECRET", "TXC_BASE_URL", "TXC_LIMITER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TXC_API_KEY", KEY)
    monkeypatch.setenv("TXC_API_SECRET", SECRET)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))

    def bind(body: bytes, status: int = 200) -> MemoryTransport:
        transport = MemoryTransport(RawResponse(status, {}, body))

        def client(settings: Any, base_url: str) -> txc_async.Client:
            return txc_async.Client(KEY, SECRET, base_url="https://api.example.test",
                                    limiter=RecordingLimiter(), transport=transport,
                                    retry=fast_retry())

        monkeypatch.setattr(_execute, "_client", client)
        return transport

    return bind


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


# -- a server's strings in a table ---------------------------------------------------------------

HOSTILE = {
    "[/x]": "ends a markup tag that was never opened",
    "[link=https://evil.example]bc1q-your-address[/link]": "a disguised hyperlink",
    "[bold red]BTC[/]": "markup",
    ":warning:": "an emoji code",
    "\x1b]8;;https://evil.example\x1b\\bc1q\x1b]8;;\x1b\\": "a terminal's own hyperlink",
    "\u202eCTB": "a direction override",
}


def test_a_server_s_strings_are_printed_as_text_in_a_table(
    answering: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Tickers are the balance's keys: the server's strings, printed in the ticker column.
    answering(json.dumps({name: {"main_balance": "1.5"} for name in HOSTILE}).encode())
    screen = Terminal()
    monkeypatch.setattr(sys, "stdout", screen)
    code, _, err = run(capsys, "balance")
    table = screen.getvalue()
    assert code == 0 and "Traceback" not in err, err
    assert "\x1b]8;" not in table  # no hyperlink reaches the terminal
    assert "\u202e" not in table
    cells = " ".join(line.strip("│ ") for line in table.splitlines())
    for shown in ("[/x]", "[link=https://evil.example]bc1q-your-address[/link]",
                  "[bold red]BTC[/]", ":warning:", "\\x1b]8;;https://evil.example",
                  "\\u202eCTB"):
        assert shown in cells or shown in " ".join(cells.split()), shown


# -- writes that may have taken effect -----------------------------------------------------------


@pytest.mark.parametrize("status", [200, 201])
def test_a_write_answered_2xx_too_many_attempts_exits_3_and_is_not_sent_again(
    answering: Any, capsys: pytest.CaptureFixture[str], status: int
) -> None:
    transport = answering(b'{"code": 0, "message": "Too Many Attempts.", "errors": {}}', status)
    code, out, err = run(capsys, *ORDER, "--yes")
    assert code == 3 and out == ""
    assert "order stop-limit may have taken effect: " in err and "Too Many Attempts." in err
    assert "not sent again" in err and "client order id stop-7" in err
    assert len(transport.sent) == 1


def test_a_write_refused_too_many_attempts_at_4xx_exits_1(
    answering: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # Refused (a 4xx): nothing ran, and the client tries again within its budget for that.
    transport = answering(b'{"code": 0, "message": "Too Many Attempts.", "errors": {}}', 400)
    code, _, err = run(capsys, *ORDER, "--yes")
    assert code == 1 and "may have taken effect" not in err
    assert len(transport.sent) >= 1


def _environment(sandbox: Sandbox, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TXC_")}
    return env | {"TXC_BASE_URL": sandbox.url, "TXC_API_KEY": sandbox.api_key,
                  "TXC_API_SECRET": sandbox.api_secret, "XDG_CACHE_HOME": str(home),
                  "XDG_CONFIG_HOME": str(home), "PYTHONPATH": os.pathsep.join(sys.path)}


async def _command(sandbox: Sandbox, home: Path, *argv: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "txc_async", *argv, env=_environment(sandbox, home),
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def test_sigterm_while_a_write_is_under_way_exits_3_saying_it_may_have_taken_effect(
    tmp_path: Path,
) -> None:
    async with Sandbox() as sandbox:
        sandbox.faults.add(ORDER_PATH, "slow", delay=3.0, execute=True)
        process = await _command(sandbox, tmp_path, *ORDER, "--yes")
        for _ in range(400):
            if sandbox.stats.received[ORDER_PATH]:
                break
            await asyncio.sleep(0.05)
        assert sandbox.stats.received[ORDER_PATH] == 1, "the order never reached the sandbox"
        process.send_signal(signal.SIGTERM)
        out, err = await asyncio.wait_for(process.communicate(), 30)
        assert process.returncode == 3, err
        assert out == b""
        assert err.decode() == (
            "txc-async: error: terminated (SIGTERM) while order stop-limit was under way: it "
            "may have taken effect. Look for client order id stop-7 among the orders of "
            "BTC_USDT before placing it again.\n"
        )
        assert sandbox.stats.received[ORDER_PATH] == 1


async def test_sigterm_while_a_read_is_under_way_exits_143(tmp_path: Path) -> None:
    async with Sandbox() as sandbox:
        sandbox.faults.add(BALANCE_PATH, "slow", delay=3.0)
        process = await _command(sandbox, tmp_path, "balance")
        for _ in range(400):
            if sandbox.stats.received[BALANCE_PATH]:
                break
            await asyncio.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        out, err = await asyncio.wait_for(process.communicate(), 30)
        assert (process.returncode, out, err) == (143, b"", b"txc-async: terminated (SIGTERM)\n")


# -- warnings ------------------------------------------------------------------------------------


async def test_the_library_s_warnings_reach_stderr_as_one_line_each(tmp_path: Path) -> None:
    async with Sandbox() as sandbox:
        # A refusal the client waits out and tries again after: the library warns of it.
        sandbox.faults.add(BALANCE_PATH, "rate_limit_429", retry_after=0.2)
        process = await _command(sandbox, tmp_path, "balance", "--ticker", "BTC")
        out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err
    assert out.startswith(b"BTC\t")
    lines = err.decode().splitlines()
    assert lines, "no warning"
    assert all(line.startswith("txc-async: warning: ") for line in lines), lines
    assert any("rate limit refusal" in line for line in lines)
