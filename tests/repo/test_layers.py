"""The package's layers import one way: a module imports only modules of its own layer or below,
type hints included, and no two modules import each other, however indirectly."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "txc_async"

#: Each layer may import the layers before it. A module not named here is refused (name it).
LAYERS: list[tuple[str, ...]] = [
    ("_version", "_secrets", "_errors", "_models", "_stats", "_validate", "_retry", "_httpdate",
     "_paging", "_models_generated"),
    ("_naming", "_nonces", "_transports", "_answers"),
    # _operations is a package: the declarations (declaration.py), one module per group of the
    # service's documentation, and the catalogue with the limits derived from it (__init__.py);
    # generated/ the declarations generator/generate.py writes, overrides.py its corrections,
    # answers.py the decoders that import a group's models (_models_generated/) when first used.
    ("_operations", "_limiters", "_signing", "_runtime"),
    ("_pipeline", "_backfill"),
    # _methods: the operations as the client's methods (hand.py, and one generated class per
    # documentation group, the client's ``spot``, ``market``, ...), over the client's calls.
    ("_export", "_methods", "_client"),
    ("__init__", "limiters", "transports"),
    # The sandbox serves the operations from its own table (sandbox/_documented.json) and is an
    # independent check of the client: of the package it imports only the limit type (see
    # SANDBOX_MAY_IMPORT), never the client's declarations, models or validation.
    ("sandbox", "pytest_plugin", "cli", "__main__"),
]
#: What the sandbox may import of the layers below its own.
SANDBOX_MAY_IMPORT = frozenset({"_limiters.base"})
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}


def _modules() -> dict[str, Path]:
    return {
        ".".join(path.relative_to(PACKAGE).with_suffix("").parts): path
        for path in PACKAGE.rglob("*.py")
    }


def _imports(dotted: str, path: Path) -> set[str]:
    """The package's modules that ``dotted`` imports (at any place, TYPE_CHECKING included)."""
    # The package holding the module ("sandbox.__init__" is in "sandbox", as "sandbox._data").
    package = dotted.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - node.level + 1]
            target = [*base, *(node.module.split(".") if node.module else [])]
            if node.module is None:
                found.update(".".join([*target, alias.name]) for alias in node.names)
            else:
                found.add(".".join(target))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("txc_async"):
            found.add(node.module.removeprefix("txc_async").lstrip("."))
    return {name for name in found if name}


def _top(dotted: str) -> str:
    return dotted.split(".")[0]


def test_every_module_has_a_layer() -> None:
    unplaced = sorted({_top(name) for name in _modules()} - set(RANK))
    assert unplaced == []


@pytest.mark.parametrize("module", sorted(_modules()))
def test_a_module_imports_only_its_layer_and_those_below(module: str) -> None:
    path = _modules()[module]
    rank = RANK[_top(module)]
    upward = sorted(
        name for name in _imports(module, path)
        if _top(name) in RANK and RANK[_top(name)] > rank
    )
    assert upward == [], f"{module} imports a layer above its own"


def test_no_module_imports_itself_through_others() -> None:
    modules = _modules()
    graph = {
        name: {target for target in _imports(name, path) if target in modules}
        for name, path in modules.items()
    }
    state: dict[str, int] = {}
    cycle: list[str] = []

    def visit(node: str, trail: list[str]) -> bool:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle.extend([*trail, node, nxt])
                return True
            if nxt not in state and visit(nxt, [*trail, node]):
                return True
        state[node] = 2
        return False

    for name in sorted(graph):
        if name not in state and visit(name, []):
            break
    assert cycle == []


def test_the_sandbox_imports_none_of_the_client_s_tables() -> None:
    below = {
        (module, name)
        for module, path in _modules().items() if _top(module) == "sandbox"
        for name in _imports(module, path) if _top(name) != "sandbox"
    }
    assert {name for _, name in below} <= SANDBOX_MAY_IMPORT, sorted(below)
    # And nothing by an absolute name either.
    for module, path in _modules().items():
        if _top(module) == "sandbox":
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    assert not any(a.name.startswith("txc_async") for a in node.names), module
