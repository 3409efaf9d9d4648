"""The documentation site: every public name of every public module has a docstring (read
statically by griffe, as mkdocstrings reads it), and the site builds with ``mkdocs build --strict``
(a broken link or reference fails it) with every public name in its API reference, as ``make docs``
builds it."""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import txc_async

griffe = pytest.importorskip("griffe")

ROOT = Path(__file__).resolve().parents[2]


def _public_modules() -> list[str]:
    names = ["txc_async"]
    for info in pkgutil.walk_packages(txc_async.__path__, "txc_async."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return sorted(names)


def _public_names(module: str) -> list[str]:
    """The names a module exports (its ``__all__``), dunders left out."""
    exported: list[str] = importlib.import_module(module).__all__
    return [name for name in exported if not name.startswith("_")]


@pytest.fixture(scope="module")
def package() -> griffe.Module:
    loaded = griffe.load(
        "txc_async", search_paths=[str(ROOT)], resolve_aliases=True, resolve_external=False
    )
    assert isinstance(loaded, griffe.Module)
    return loaded


def _undocumented(obj: griffe.Object | griffe.Alias) -> list[str]:
    """The public methods and properties of a class (and its nested classes) without a
    docstring. Fields of structs and members of enums are described by their class."""
    missing: list[str] = []
    for name, member in obj.members.items():
        if name.startswith("_"):
            continue
        if member.is_class:
            if not member.has_docstring:
                missing.append(member.path)
            missing += _undocumented(member)
        elif (member.is_function or "property" in member.labels) and not member.has_docstring:
            missing.append(member.path)
    return missing


def test_the_public_modules_are_the_expected_ones() -> None:
    assert _public_modules() == [
        "txc_async", "txc_async.cli", "txc_async.limiters", "txc_async.pytest_plugin",
        "txc_async.sandbox", "txc_async.transports",
    ]


@pytest.mark.parametrize("module", _public_modules())
def test_every_public_name_has_a_docstring(module: str, package: griffe.Module) -> None:
    documented = package[module.removeprefix("txc_async.")] if module != "txc_async" else package
    assert documented.has_docstring, module
    missing: list[str] = []
    for name in _public_names(module):
        member = documented[name]
        if not member.has_docstring:
            missing.append(f"{module}.{name}")
        if member.is_class:
            missing += _undocumented(member)
    assert missing == []


def test_the_client_properties_are_documented(package: griffe.Module) -> None:
    client = package["Client"]
    properties = [name for name, member in client.members.items()
                  if "property" in member.labels and not name.startswith("_")]
    assert {"closed", "base_url", "clock_offset", "rate_limits", "stats"} <= set(properties)
    for name in properties:
        assert client[name].has_docstring, name


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built as ``make docs`` builds it, into a temporary directory."""
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert built.returncode == 0, f"mkdocs build --strict failed\n{built.stdout}\n{built.stderr}"
    return out


def test_the_site_builds_strictly_with_every_public_name_in_the_reference(site: Path) -> None:
    anchors = set()
    for page in (site / "reference").rglob("*.html"):
        anchors |= set(re.findall(r'id="(txc_async[\w.]*)"', page.read_text()))
    for module in _public_modules():
        # The package's names have reference pages of their own; each other module has one.
        assert module == "txc_async" or module in anchors, module
        for name in _public_names(module):
            assert f"{module}.{name}" in anchors, f"{module}.{name} is not in the API reference"
    assert "txc_async.Client.from_env" in anchors


def test_make_docs_builds_the_site_strictly() -> None:
    recipe = re.search(r"^docs:.*?(?=^\S|\Z)", (ROOT / "Makefile").read_text(), re.M | re.S)
    assert recipe is not None
    assert "mkdocs build --strict" in recipe.group(0)
    assert "$(DEV_INSTALLED)" in recipe.group(0).splitlines()[0]
