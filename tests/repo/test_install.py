"""The README's install steps work as written, in a fresh shell: its ``sh`` block of the
Install section, run line by line by ``sh`` in a copy of the project with no virtual
environment active, makes ``.venv`` and installs the ``txc-async`` command there."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def install_section() -> str:
    text = (ROOT / "README.md").read_text()
    found = re.search(r"^## Install\n(?P<body>.*?)^## ", text, re.M | re.S)
    assert found is not None, "README.md has no Install section"
    return found["body"]


def install_block() -> str:
    found = re.search(r"^```sh\n(?P<code>.*?)^```$", install_section(), re.M | re.S)
    assert found is not None, "the Install section has no sh block"
    return found["code"]


def test_the_install_steps_make_and_use_a_virtual_environment() -> None:
    lines = install_block().splitlines()
    assert lines[:3] == ["python3 -m venv .venv", ". .venv/bin/activate", "pip install ."]
    section = install_section()
    # Where the command is, after these steps and after `make demo`.
    assert "`.venv/bin/txc-async`" in section and "`make demo`" in section


def _fresh_environment() -> dict[str, str]:
    """This process's environment as a new shell has it: no virtual environment active, no
    PYTHONPATH."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    venv = Path(sys.prefix) / "bin"
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p and Path(p) != venv and ".venv" not in Path(p).parts)
    return env


@pytest.mark.slow
@pytest.mark.asyncio_only
def test_the_install_steps_work_as_written_in_a_fresh_shell(tmp_path: Path) -> None:
    if shutil.which("python3", path=_fresh_environment()["PATH"]) is None:
        pytest.skip("no python3 on the PATH of a fresh shell here")
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, checkout / name)
    shutil.copytree(ROOT / "txc_async", checkout / "txc_async",
                    ignore=shutil.ignore_patterns("__pycache__"))
    run = subprocess.run(["sh", "-e", "-c", install_block()], cwd=checkout,
                         env=_fresh_environment(), capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "\nusage: txc-async " in run.stdout  # after what pip printed
    assert (checkout / ".venv" / "bin" / "txc-async").is_file()
