"""The distribution: a wheel that builds without a warning and carries the MIT license, the
``txc-async`` command, the pytest plugin and the type marker."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.asyncio_only
def test_the_wheel_builds_without_warnings_and_ships_the_license(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "txc_async", source / "txc_async",
                    ignore=shutil.ignore_patterns("__pycache__"))
    run = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir",
         str(tmp_path / "dist"), str(source)],
        capture_output=True, text=True, timeout=300,
        # Byte-compiling is the installer's job; a disabled one is reported as a warning.
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""},
    )
    assert run.returncode == 0, run.stdout + run.stderr
    output = (run.stdout + run.stderr).lower()
    assert "warning" not in output and "deprecat" not in output, run.stdout + run.stderr
    (wheel,) = (tmp_path / "dist").glob("txc_async-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = next(n for n in names if n.endswith(".dist-info/METADATA")).rsplit("/", 1)[0]
        metadata = archive.read(f"{info}/METADATA").decode()
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
        license_text = archive.read(f"{info}/licenses/LICENSE").decode()
    assert "License-Expression: MIT" in metadata.splitlines()
    assert license_text.startswith("MIT License")
    assert "[pytest11]\ntxc_async = txc_async.pytest_plugin" in entry_points
    assert "txc-async = txc_async.cli:main" in entry_points
    assert "txc_async/py.typed" in names
    # The sandbox's table of the documented operations, which it reads when imported.
    assert "txc_async/sandbox/_documented.json" in names
    # The Redis limiter's scripts travel as package data, each one the limiter loads.
    from pathlib import Path

    lua = sorted(Path(n).stem for n in names if n.startswith("txc_async/_limiters/lua/"))
    assert {"admit", "check", "draw", "reseed", "answered", "pause"} <= set(lua)
