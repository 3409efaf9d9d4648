"""The generated declarations and answer models are what generator/generate.py writes from
generator/facts.json and the overrides now, and the sandbox's own table of the operations what
generator/sandbox_table.py writes from the facts: a change of either without rerunning ``make
generate`` fails here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_generated_code_is_what_the_generator_writes() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "generator" / "generate.py"), "--check"],
        capture_output=True, text=True, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_sandbox_s_table_is_what_its_generator_writes() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "generator" / "sandbox_table.py"), "--check"],
        capture_output=True, text=True, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
