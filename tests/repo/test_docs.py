"""The documentation site: every public name of every public module has a docstring (read
statically by griffe, as mkdocstrings reads it), and the site builds with ``mkdocs build --strict``
(a broken link or reference fails it) with every public name in its API reference, as ``make docs``
builds it."""

from __future__ import annotations

import html
import importlib
import inspect
import pkgutil
import re
import tomllib
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


def _recipe(target: str) -> str:
    recipe = re.search(rf"^{re.escape(target)}:.*?(?=^\S|\Z)", (ROOT / "Makefile").read_text(),
                       re.M | re.S)
    assert recipe is not None, target
    return recipe.group(0)


def test_make_docs_builds_the_site_strictly_with_the_docs_extra_alone() -> None:
    recipe = _recipe("docs")
    assert "mkdocs build --strict" in recipe
    assert "$(DOCS_INSTALLED)" in recipe.splitlines()[0]
    assert "pip install -q -e '.[docs]'" in _recipe("$(DOCS_INSTALLED)")


def test_make_docs_serve_serves_the_site_on_the_loopback() -> None:
    recipe = _recipe("docs-serve")
    assert "mkdocs serve --dev-addr $(DOCS_ADDRESS)" in recipe
    assert re.search(r"^DOCS_ADDRESS \?= 127\.0\.0\.1:\d+$", (ROOT / "Makefile").read_text(), re.M)


def _extras() -> dict[str, list[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras: dict[str, list[str]] = project["optional-dependencies"]
    return extras


def test_the_docs_extra_is_what_the_site_needs_and_nothing_heavier() -> None:
    extras = _extras()
    names = {re.split(r"[\[<>=!~ ]", requirement)[0].lower() for requirement in extras["docs"]}
    assert names == {"mkdocs-material", "mkdocstrings", "ruff"}
    # The dev extra (make test, make lint) builds the site in the tests as make docs does.
    assert "txc_async[docs]" in extras["dev"]


def test_the_client_reference_shows_the_constructor_one_parameter_a_line(site: Path) -> None:
    page = (site / "reference" / "client" / "index.html").read_text()
    heading = page.index('id="txc_async.Client"')
    signature = re.search(r'<div class="doc-signature[^"]*">(.*?)</div>', page[heading:], re.S)
    assert signature is not None, "the Client page has no signature"
    lines = [line for line in html.unescape(re.sub(r"<[^>]+>", "", signature.group(1)))
             .splitlines() if line.strip()]
    assert lines[0] == "Client(" and lines[-1] == ")"
    # One parameter a line, four spaces in; a long annotation goes on below its parameter.
    shown = [found.group(1) for line in lines[1:-1]
             if (found := re.match(r"^    (\w+)(:| =)", line))]
    assert shown == list(inspect.signature(txc_async.Client).parameters)


def test_the_readme_and_the_home_page_say_how_to_view_the_built_site() -> None:
    for page in (ROOT / "README.md", ROOT / "docs" / "index.md"):
        text = page.read_text()
        assert "make docs-serve" in text, page
        assert "python3 -m http.server -d site" in text, page
