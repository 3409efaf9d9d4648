"""Running the command line in a test: an environment that no setting of this machine's user
reaches, a sandbox serving from a thread of its own (the commands run their own event loops),
and a command's exit status and output."""

from __future__ import annotations

import asyncio
import io
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from txc_async.cli import main
from txc_async.sandbox import Sandbox

#: Every variable through which a setting reaches the command line.
SETTINGS = ("TXC_API_KEY", "TXC_API_SECRET", "TXC_BASE_URL", "TXC_LIMITER", "TXC_OAUTH_CLIENT_ID",
            "TXC_OAUTH_CLIENT_SECRET", "TXC_OAUTH_REFRESH_TOKEN", "TXC_PROFILE")


def isolate(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *, columns: int = 0) -> None:
    """Budgets and profiles in ``tmp_path``, no credentials, nothing on stdin; a terminal of
    ``columns`` columns (and 40 lines) when given."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    if columns:
        monkeypatch.setenv("COLUMNS", str(columns))
        monkeypatch.setenv("LINES", "40")
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))


def serve_sandbox(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *, columns: int = 0, **options: Any
) -> Iterator[Sandbox]:
    """A sandbox serving from a thread, and an isolated environment pointing the command line
    at it (a fixture's body: ``yield from serve_sandbox(...)``)."""
    ready = threading.Event()
    held: dict[str, Any] = {}

    async def serve() -> None:
        async with Sandbox(**({"mining_accounts": 3, "rewards_days": 5} | options)) as sandbox:
            held["box"], held["loop"] = sandbox, asyncio.get_running_loop()
            held["stop"] = asyncio.Event()
            ready.set()
            await held["stop"].wait()

    thread = threading.Thread(target=lambda: asyncio.run(serve()), daemon=True)
    thread.start()
    assert ready.wait(30)
    sandbox: Sandbox = held["box"]
    isolate(monkeypatch, tmp_path, columns=columns)
    monkeypatch.setenv("TXC_BASE_URL", sandbox.url)
    monkeypatch.setenv("TXC_API_KEY", sandbox.api_key)
    monkeypatch.setenv("TXC_API_SECRET", sandbox.api_secret)
    yield sandbox
    held["loop"].call_soon_threadsafe(held["stop"].set)
    thread.join(30)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of ``txc-async ARGV``."""
    try:
        code = main(list(argv))
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out, err
