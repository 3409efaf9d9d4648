"""Getting started shows what ``txc-async sandbox`` prints: every ``export`` line, with the
values a sandbox started with the page's command gives (the refresh token aside, which is new at
every start)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "getting-started.md"
EXPORT = re.compile(r"^export (\w+)=(\S+)$", re.M)
#: Values that differ from one start of the sandbox to the next.
FRESH = {"TXC_OAUTH_REFRESH_TOKEN"}


def _printed_exports() -> dict[str, str]:
    """The ``export`` lines of a sandbox started from the command line, read until it says it
    is serving, then stopped."""
    process = subprocess.Popen(
        [sys.executable, "-c", "import sys; from txc_async.cli import main; sys.exit(main())",
         "sandbox", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )
    lines = []
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("press Ctrl-C"):
                break
            lines.append(line)
    finally:
        process.terminate()
        process.communicate(timeout=30)
    exports = dict(EXPORT.findall("".join(lines)))
    assert exports, f"the sandbox printed no export line: {lines}"
    return exports


def _page_exports() -> dict[str, str]:
    blocks = re.findall(r"```text\n(.*?)```", PAGE.read_text(), re.S)
    shown = [dict(EXPORT.findall(block)) for block in blocks if "export TXC_" in block]
    assert len(shown) == 1, "getting started shows the sandbox's export lines in one block"
    return shown[0]


def test_getting_started_shows_every_export_line_the_sandbox_prints() -> None:
    printed, shown = _printed_exports(), _page_exports()
    assert list(shown) == list(printed)
    port = re.search(r"sandbox --port (\d+)", PAGE.read_text())
    assert port is not None
    printed["TXC_BASE_URL"] = re.sub(r":\d+$", f":{port.group(1)}", printed["TXC_BASE_URL"])
    for name, value in printed.items():
        if name not in FRESH:
            assert shown[name] == value, name
