"""The API reference: every public name of every public module has a docstring, and the HTML
reference builds from them offline, with a page per public module (``make docs`` builds the same
modules)."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import pdoc
import pdoc.doc
import pdoc.render
import pytest

import txc_async

ROOT = Path(__file__).resolve().parent.parent


def _public_modules() -> list[str]:
    names = ["txc_async"]
    for info in pkgutil.walk_packages(txc_async.__path__, "txc_async."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return sorted(names)


def _load_every_name() -> None:
    """Resolve the names the package imports on first use (the client and the pipeline, which
    import aiohttp): the reference documents them, and pdoc reads a module's namespace."""
    for name in txc_async.__all__:
        getattr(txc_async, name)


_load_every_name()


def _undocumented(namespace: pdoc.doc.Namespace[object]) -> list[str]:
    missing: list[str] = []
    for name, member in namespace.members.items():
        if name.startswith("_"):
            continue
        # Fields of structs and members of enums are described by their class.
        if isinstance(namespace, pdoc.doc.Class) and isinstance(member, pdoc.doc.Variable):
            continue
        if not member.docstring.strip():
            missing.append(member.fullname)
        if isinstance(member, pdoc.doc.Class):
            missing += _undocumented(member)
    return missing


def test_the_public_modules_are_the_expected_ones() -> None:
    assert _public_modules() == [
        "txc_async", "txc_async.cli", "txc_async.pytest_plugin", "txc_async.sandbox",
    ]


@pytest.mark.parametrize("module", _public_modules())
def test_every_public_name_has_a_docstring(module: str) -> None:
    documented = pdoc.doc.Module(importlib.import_module(module))
    assert documented.docstring.strip(), module
    assert _undocumented(documented) == []


def test_every_name_of_all_is_in_the_reference() -> None:
    documented = pdoc.doc.Module(txc_async)
    assert sorted(documented.members) == sorted(txc_async.__all__)
    for name in ("closed", "base_url", "from_env", "rate_limits"):
        assert documented.get(f"Client.{name}") is not None, name


def test_the_reference_builds_offline(tmp_path: Path) -> None:
    pdoc.render.configure(docformat="restructuredtext")
    pdoc.pdoc(*_public_modules(), output_directory=tmp_path)
    client_page = (tmp_path / "txc_async.html").read_text()
    assert "Client.from_env" in client_page and "SideLiteral" in client_page
    for module in _public_modules()[1:]:
        assert (tmp_path / (module.replace(".", "/") + ".html")).is_file(), module
    recipe = re.search(r"^docs:.*?(?=^\S|\Z)", (ROOT / "Makefile").read_text(), re.M | re.S)
    assert recipe is not None
    for module in _public_modules():
        assert re.search(rf"\s{re.escape(module)}\s", recipe.group(0)), module
