"""Precise types: ``mypy --strict`` refuses a misspelt side, position side or interval, a float
amount, a misspelt keyword of ``Client.from_env`` and a misspelt model field, each at its line,
and accepts the same calls written correctly."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest

import txc_async
from txc_async import IntervalLiteral, PositionSide, PositionSideLiteral, Side, SideLiteral

ROOT = Path(__file__).resolve().parents[2]
MISTAKES = Path(__file__).resolve().parent / "typecheck" / "mistakes.py"
_MARK = re.compile(r"#\s*error:\s*(\S+)")
_REPORT = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): error: (?P<message>.*)$")


@pytest.mark.asyncio_only
def test_mypy_strict_reports_each_mistake_at_its_line(tmp_path: Path) -> None:
    expected = {
        number: match.group(1)
        for number, text in enumerate(MISTAKES.read_text().splitlines(), start=1)
        if (match := _MARK.search(text))
    }
    assert len(expected) == 7
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary",
         "--cache-dir", str(tmp_path / "mypy"), str(MISTAKES.relative_to(ROOT))],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    reported: dict[int, list[str]] = {}
    for line in run.stdout.splitlines():
        if found := _REPORT.match(line):
            reported.setdefault(int(found["line"]), []).append(found["message"])
    # Every mistake is reported at its own line, and nothing else is: the correct calls pass.
    assert sorted(reported) == sorted(expected), run.stdout
    for number, word in expected.items():
        assert any(word in message for message in reported[number]), (number, reported[number])


def test_literals_hold_the_enum_values() -> None:
    assert set(get_args(SideLiteral)) == {s.value for s in Side}
    assert set(get_args(PositionSideLiteral)) == {s.value for s in PositionSide}
    assert get_args(IntervalLiteral) == ("5m", "1h", "24h")


def test_from_env_takes_every_keyword_of_the_constructor() -> None:
    """Anything ``Client(...)`` accepts, ``Client.from_env(...)`` accepts with the same type: the
    four settings the environment supplies as its own keywords (defaulting to the environment),
    every other one through ``ClientOptions``, whose types are the constructor's."""
    from typing import get_type_hints

    from txc_async._client import ClientOptions

    init = inspect.signature(txc_async.Client.__init__).parameters
    init_types = get_type_hints(txc_async.Client.__init__)
    from_env = inspect.signature(txc_async.Client.from_env).parameters
    from_environment = ["api_key", "api_secret", "base_url", "limiter"]
    assert [name for name in from_env if name != "options"] == from_environment
    for name in from_environment:
        assert from_env[name].kind is inspect.Parameter.KEYWORD_ONLY, name
        assert from_env[name].default is None, name
    assert from_env["options"].kind is inspect.Parameter.VAR_KEYWORD
    options = get_type_hints(ClientOptions)
    assert set(options) == set(init) - {"self", *from_environment}
    for name, annotation in options.items():
        assert annotation == init_types[name], name
