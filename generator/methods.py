"""Writes the client's typed methods: one class per documentation group
(``txc_async/_methods/<group>.py``), a method per operation and an ``iter_<name>`` per paged one,
and the mixin that gives the client a property per group (``txc_async/_methods/groups.py``).

Called by ``generate.py`` with what it knows of each operation (its facts, its declaration's
constant and result type, the rendered answer models). An operation declared by hand
(``overrides.ALIASES``) delegates to the client's hand-written method of the same operation,
whose signature is read from ``txc_async/_methods/hand.py`` by parsing it (nothing is imported).
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
METHODS = ROOT / "txc_async" / "_methods"
CLIENT = ROOT / "txc_async" / "_methods" / "hand.py"
WIDTH = 100

#: The Python type a parameter of each kind takes (what its check accepts).
TYPE_OF_KIND = {
    "text": "str",
    "integer": "int",
    "decimal": "Decimal | str | int",
    "time": "int | datetime",
    "boolean": "bool",
    "list": "list[Any] | tuple[Any, ...]",
    "object": "dict[str, Any]",
}
#: The documentation's groups in words, for the classes' and properties' docstrings.
TITLES = {
    "codes": "WhiteBIT codes: create, apply, list",
    "collateral": "Collateral (margin and futures) trading: orders, positions, leverage, funding",
    "convert": "Convert: estimate, confirm, history",
    "credit_line": "Credit line",
    "deposits": "Deposits: addresses, fiat deposit URLs",
    "fees": "Fees: trading and transfer fees",
    "jwt": "JWT: the websocket token",
    "lending": "Lending: fixed and flex plans and investments",
    "main_account": "Main account: balance, history, transfers between balances",
    "market": "Public market data: markets, tickers, order books, trades, assets, time",
    "mining": "Mining pool: accounts, rewards, hashrate, workers",
    "oauth": "OAuth: tokens and Fast API keys",
    "spot": "Spot trading: orders, cancels, history, deals, kill-switch, trading balance",
    "sub_accounts": "Sub-accounts: creation, balances, transfers, API keys",
    "transfers": "Transfers between balances and accounts",
    "travel_rule": "Travel rule: counterparty information",
    "withdrawals": "Withdrawals: crypto and fiat",
}
#: The field of a page that holds its records, in the order they are looked for.
_RECORD_FIELDS = ("records", "data")


def class_name(group: str) -> str:
    return "".join(part.title() for part in group.split("_")) + "Methods"


@dataclass
class Method:
    """One operation as the generator knows it, for its typed method."""

    name: str
    const: str  # the declaration's constant; "" for one declared by hand
    alias: str  # the client's hand-written method, for one declared by hand
    result: str  # the decoded result's type ("models.X", "schemas.Y", ...)
    params: list[tuple[str, str, bool, tuple[Any, ...], str]]  # name, kind, required, choices, help
    write: bool
    summary: str
    limit: tuple[int, float]
    paged: dict[str, int] | None  # the page's largest limit and deepest offset


# -- the hand-written methods, read from the client's source ----------------------------------


@dataclass
class HandMethod:
    signature: str  # "self, *, ticker: str | None = None"
    keywords: list[str]
    returns: str
    names: set[str]  # the names the annotations use


def hand_methods() -> tuple[dict[str, HandMethod], dict[str, str]]:
    """The client's hand-written methods by name, and where each name its annotations use is
    imported from (module, as ``hand.py`` imports it)."""
    tree = ast.parse(CLIENT.read_text())
    imported: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            for alias in node.names:
                imported[alias.asname or alias.name] = "." * node.level + node.module
    client = next(node for node in tree.body
                  if isinstance(node, ast.ClassDef) and node.name == "HandMethods")
    found: dict[str, HandMethod] = {}
    for node in client.body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        args = node.args
        parts = ["self"]
        names: set[str] = set()
        if args.kwonlyargs:
            parts.append("*")
        for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
            assert arg.annotation is not None
            names |= {n.id for n in ast.walk(arg.annotation) if isinstance(n, ast.Name)}
            text = f"{arg.arg}: {ast.unparse(arg.annotation)}"
            if default is not None:
                text += f" = {ast.unparse(default)}"
            parts.append(text)
        assert node.returns is not None
        names |= {n.id for n in ast.walk(node.returns) if isinstance(n, ast.Name)}
        found[node.name] = HandMethod(", ".join(parts), [a.arg for a in args.kwonlyargs],
                                      ast.unparse(node.returns), names)
    return found, imported


# -- the records of a page ----------------------------------------------------------------------


def records_of(result: str, model_text: Callable[[str], str]) -> tuple[str, str]:
    """Where a page's records are, and their type: ``""`` for a page that is a list, a field
    (``"records"``, ``"data.workers"``), ``"*"`` for a page keyed by market (each record with
    its market), ``"?"`` for an answer of no fixed shape."""
    if result == "Any":
        return "?", "Any"
    parts = [part.strip() for part in _split(result.replace(" | ", ","))]
    if len(parts) > 1:
        found = {records_of(part, model_text) for part in parts}
        if {path for path, _ in found} == {"", "*"}:
            return "?", " | ".join(sorted(item for _, item in found))
        raise SystemExit(f"{result}: a paged answer of shapes the generator cannot walk")
    listed = re.fullmatch(r"list\[(.+)\]", result)
    if listed:
        return "", listed.group(1)
    keyed = re.fullmatch(r"dict\[str, list\[(.+)\]\]", result)
    if keyed:
        return "*", f"tuple[str, {keyed.group(1)}]"
    path: list[str] = []
    current = result
    for _ in range(3):
        prefix, _, cls = current.rpartition(".")
        text = model_text(prefix)
        body = re.search(rf"^class {cls}\(.*?\n\n\n", text + "\n\n\n", re.M | re.S)
        assert body is not None, current
        for field in (*_RECORD_FIELDS, "workers"):
            found = re.search(rf"^    {field}: (.+?)(?: \| None)? = ", body.group(0), re.M)
            if not found:
                continue
            path.append(field)
            kind = found.group(1)
            listed = re.fullmatch(r"list\[(.+)\]", kind)
            if listed:
                item = listed.group(1)
                qualified = item if "." in item or item in ("str", "int", "Any") \
                    else f"{prefix}.{item}"
                return ".".join(path), qualified
            current = kind if "." in kind else f"{prefix}.{kind}"
            break
        else:
            break
    raise SystemExit(f"{result}: a paged answer whose records the generator cannot find")


# -- rendering ------------------------------------------------------------------------------


def _wrap_def(head: str, params: list[str], tail: str, indent: str = "    ") -> list[str]:
    one = f"{indent}{head}({', '.join(params)}){tail}"
    if len(one) <= WIDTH:
        return [one]
    lines = [f"{indent}{head}("]
    pad = indent + "    "
    for param in params:
        line = f"{pad}{param},"
        if len(line) > WIDTH and ": " in param:
            name, _, rest = param.partition(": ")
            annotation, eq, default = rest.rpartition(" = ") if " = " in rest else (rest, "", "")
            lines += [f"{pad}{name}: (", f"{pad}    {annotation}", f"{pad}){eq}{default},"]
        else:
            lines.append(line)
    return [*lines, f"{indent}){tail}"]


def _literal_choices(choices: tuple[Any, ...]) -> str:
    return "Literal[" + ", ".join(json.dumps(c) for c in choices) + "]"


def _param_type(kind: str, choices: tuple[Any, ...]) -> str:
    if kind == "choice":
        return _literal_choices(choices)
    return TYPE_OF_KIND[kind]


def _docstring(method: Method, extra: str, indent: str = "        ") -> list[str]:
    requests, seconds = method.limit
    first = f'{indent}"""``{method.summary}``: ``{method.name}``.'
    lines = [first, ""] if len(first) <= WIDTH else [
        f'{indent}"""``{method.summary}``:', f"{indent}``{method.name}``.", ""]
    said = (f"Rate limit: {requests} requests per {seconds:g} s, within its group's budget.")
    lines.append(f"{indent}{said}")
    if method.write:
        lines.append(f"{indent}A write: never sent again once it may have reached the server (a")
        lines.append(f"{indent}lost answer raises ``TransportError`` with "
                     "``may_have_reached_server``).")
    if extra:
        lines += textwrap.wrap(extra, WIDTH, initial_indent=indent, subsequent_indent=indent)
    if method.params:
        lines += ["", f"{indent}Args:"]
        for name, _, required, _, help_ in method.params:
            mark = " (required)" if required else ""
            text = f"{indent}    {name}: {help_}{mark}"
            lines.append(text if len(text) <= WIDTH else text[: WIDTH - 3] + "...")
    lines.append(f'{indent}"""')
    return lines


def _generated_method(method: Method) -> list[str]:
    params = ["self"]
    if method.params:
        params.append("*")
    for name, kind, required, choices, _ in method.params:
        kind_type = _param_type(kind, choices)
        params.append(f"{name}: {kind_type}" if required else f"{name}: {kind_type} | None = None")
    lines = _wrap_def(f"async def {method.name}", params, f" -> {method.result}:")
    lines += _docstring(method, "")
    keywords = ", ".join(f'"{n}": {n}' for n, *_ in method.params)
    call = f"        return await self._client._call(ops.{method.const}, {{{keywords}}})"
    if len(call) <= WIDTH:
        lines.append(call)
    else:
        lines.append(f"        return await self._client._call(ops.{method.const}, {{")
        line = "           "
        for name, *_ in method.params:
            piece = f' "{name}": {name},'
            if len(line) + len(piece) > WIDTH:
                lines.append(line)
                line = "           "
            line += piece
        lines.append(line)
        lines.append("        })")
    return lines


def _generated_walk(method: Method, path: str, item: str) -> list[str]:
    assert method.paged is not None
    filters = [p for p in method.params if p[0] not in ("limit", "offset")]
    params = ["self"]
    if filters:
        params.append("*")
    for name, kind, required, choices, _ in filters:
        kind_type = _param_type(kind, choices)
        params.append(f"{name}: {kind_type}" if required else f"{name}: {kind_type} | None = None")
    lines = _wrap_def(f"async def iter_{method.name}", params, f" -> AsyncIterator[{item}]:")
    shown = {"": "the page", "*": "the page's markets (each record with its market)",
             "?": "the page (a list, or lists by market)"}.get(path, f"``{path}``")
    limit, deepest = method.paged["limit"], method.paged["max_offset"]
    depth = f"offsets up to {deepest}" if deepest else "offsets without a documented bound"
    summary = Method(**{**method.__dict__, "params": filters, "write": False})
    lines += _docstring(summary, f"Every record of every page ({shown}), {limit} per request, "
                        f"{depth}.")
    keywords = ", ".join(f'"{n}": {n}' for n, *_ in filters)
    narrow = ", ".join(n for n, *_ in filters)
    args = [f"ops.{method.const}", "{" + keywords + "}", f"records={path!r}",
            f"limit={limit}", f"max_offset={deepest or 'None'}", f"narrow_by={narrow!r}"]
    head = "        async for record in walk_operation("
    lines.append(head)
    line = "           "
    line = "            self._client,"
    lines.append(line)
    for arg in args:
        line = f"            {arg},"
        if len(line) <= WIDTH or not arg.startswith("{"):
            lines.append(line)
            continue
        lines.append("            {")
        for name, *_ in filters:
            lines.append(f'                "{name}": {name},')
        lines.append("            },")
    lines.append("        ):")
    lines.append("            yield record")
    return lines


def _alias_method(method: Method, hand: HandMethod, name: str, target: str) -> list[str]:
    params = [p.strip() for p in _split(hand.signature)]
    is_iter = name.startswith("iter_")
    returns = hand.returns
    head = f"def {name}" if is_iter else f"async def {name}"
    lines = _wrap_def(head, params, f" -> {returns}:")
    extra = f"The same operation as ``Client.{target}``."
    summary = Method(**{**method.__dict__, "params": [], "write": method.write and not is_iter})
    lines += _docstring(summary, extra)
    call = ", ".join(f"{k}={k}" for k in hand.keywords)
    prefix = "return " if is_iter else "return await "
    text = f"        {prefix}self._client.{target}({call})"
    lines.append(text if len(text) <= WIDTH else f"        {prefix}self._client.{target}(")
    if len(text) > WIDTH:
        lines += [f"            {k}={k}," for k in hand.keywords] + ["        )"]
    return lines


def _split(signature: str) -> list[str]:
    """The parameters of a signature's text, split at the top-level commas."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(signature):
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(signature[start:i])
            start = i + 1
    parts.append(signature[start:])
    return parts


def render_group(group: str, methods: list[Method], model_text: Callable[[str], str],
                 hand: dict[str, HandMethod], imported: dict[str, str], header: str) -> str:
    body: list[str] = []
    typing_names = {"TYPE_CHECKING"}
    checking: dict[str, set[str]] = {}
    uses_ops = uses_walk = uses_iterator = False
    for method in methods:
        body.append("")
        if method.alias:
            target = hand[method.alias]
            for name in target.names:
                if name in imported:
                    checking.setdefault(imported[name], set()).add(name)
            body += _alias_method(method, target, method.name, method.alias)
            walker = f"iter_{method.alias}"
            if method.paged is not None and walker in hand:
                body.append("")
                for name in hand[walker].names:
                    if name in imported:
                        checking.setdefault(imported[name], set()).add(name)
                body += _alias_method(method, hand[walker], f"iter_{method.name}", walker)
            continue
        uses_ops = True
        body += _generated_method(method)
        if method.paged is not None:
            path, item = records_of(method.result, model_text)
            body.append("")
            body += _generated_walk(method, path, item)
            uses_walk = uses_iterator = True
    text = "\n".join(body)
    if "Literal[" in text:
        typing_names.add("Literal")
    if re.search(r"\bAny\b", text):
        typing_names.add("Any")
    lines = [f'"""The typed methods of the documentation\'s {group} group: ``client.{group}``.',
             "", header, '"""', "", "from __future__ import annotations", ""]
    if uses_iterator:
        checking.setdefault("collections.abc", set()).add("AsyncIterator")
    lines.append(f"from typing import {', '.join(sorted(typing_names, key=_isort))}")
    lines.append("")
    if uses_walk:
        lines.append("from .._naming import name_operations")
    if uses_ops:
        lines.append(f"from .._operations.generated import {group} as ops")
    lines.append("from .base import MethodGroup" + (", walk_operation" if uses_walk else ""))
    if "Decimal" in text:
        checking.setdefault("decimal", set()).add("Decimal")
    if re.search(r"\bdatetime\b", text):
        checking.setdefault("datetime", set()).add("datetime")
    lines += ["", "if TYPE_CHECKING:"]
    std = sorted(m for m in checking if not m.startswith("."))
    for module in std:
        lines.append(f"    from {module} import {', '.join(sorted(checking[module]))}")
    if std:
        lines.append("")
    local: list[tuple[str, str, list[str]]] = []
    if "schemas." in text:
        local.append((".._models_generated", "schemas",
                      ["    from .._models_generated import schemas"]))
    if "models." in text.replace("schemas.", ""):
        local.append((".._models_generated", group,
                      [f"    from .._models_generated import {group} as models"]))
    for module in (m for m in checking if m.startswith(".")):
        names = sorted(checking[module], key=_isort)
        line = f"    from {module} import {', '.join(names)}"
        block = [line] if len(line) <= WIDTH else (
            [f"    from {module} import ("] + [f"        {n}," for n in names] + ["    )"])
        local.append((module, names[0], block))
    for _, _, block in sorted(local, key=lambda item: (item[0], item[1])):
        lines += block
    lines += ["", f'__all__ = ["{class_name(group)}"]', "", ""]
    if uses_walk:
        lines.append("@name_operations")
    lines.append(f"class {class_name(group)}(MethodGroup):")
    lines.append(f'    """{TITLES.get(group, group)}.')
    lines.append("")
    lines.append("    One method per operation, named as ``txc_async.OPERATIONS`` names it, and")
    lines.append('    ``iter_<name>`` for every paged one."""')
    lines.append("")
    lines.append("    __slots__ = ()")
    return "\n".join(lines + body) + "\n"


def _isort(name: str) -> tuple[int, str]:
    """The order ruff's isort gives names of one import: constants, classes, the rest."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name.lower())


def render_groups(groups: list[str], header: str) -> str:
    lines = ['"""A property per documentation group, on the client: ``client.spot``, '
             "``client.market``, ...", "", header, '"""', "", "from __future__ import annotations",
             "", "from functools import cached_property", "from typing import TYPE_CHECKING",
             "", "if TYPE_CHECKING:"]
    for group in groups:
        lines.append(f"    from .{group} import {class_name(group)}")
    lines += ["", '__all__ = ["MethodGroups"]', "", "", "class MethodGroups:",
              '    """The client\'s typed methods of every operation, grouped as the '
              "documentation groups", "    them; each group's module loads on its first use, and "
              "the group is kept on the", "    client (a plain attribute from then on)."
              '"""']
    for group in groups:
        cls = class_name(group)
        lines += ["", "    @cached_property", f"    def {group}(self) -> {cls}:",
                  f'        """{TITLES.get(group, group)}."""',
                  f"        from .{group} import {cls}", "",
                  f"        return {cls}(self)  # type: ignore[arg-type]"]
    return "\n".join(lines) + "\n"


def render_reference(specs: dict[str, list[Method]], source: str) -> str:
    """The API reference's page of every operation, by group: a table, then the methods."""
    count = sum(len(methods) for methods in specs.values())
    lines = ["# Every operation", "",
             f"The {count} operations the service documents, as the documentation groups them "
             f"({source}, `openapi/`).",
             "Each is a typed method of its group on the client (`client.spot.create_limit_order"
             "(...)`), a name",
             "for `client.call(name, **params)` and for `txc-async call NAME key=value`, and an "
             "entry of",
             "[`txc_async.OPERATIONS`][txc_async.OPERATIONS]. A write is never sent again once it "
             "may have",
             "reached the server; a paged operation also has `iter_<name>`, which walks every page."
             " The limit",
             "is the operation's own, per 10 seconds unless said, within its group's budget "
             "([rate limits](../guides/rate-limits.md)).", "",
             "This page is written by `make generate` from the same facts as the code.", ""]
    for group, methods in sorted(specs.items()):
        cls = class_name(group)
        lines += [f"## `client.{group}`", "", f"{TITLES.get(group, group)}.", "",
                  "| operation | request | limit | write | pages |", "|---|---|---|---|---|"]
        for method in methods:
            requests, seconds = method.limit
            limit = f"{requests}" if seconds == 10 else f"{requests} per {seconds:g} s"
            lines.append(f"| `{method.name}` | `{method.summary}` | {limit} | "
                         f"{'yes' if method.write else ''} | "
                         f"{'`iter_' + method.name + '`' if method.paged else ''} |")
        lines += ["", f"::: txc_async._methods.{group}.{cls}", "    options:",
                  "      heading_level: 3", "      show_root_heading: false",
                  "      show_bases: false", ""]
    return "\n".join(lines)


def render(specs: dict[str, list[Method]], model_texts: dict[str, str],
           header: str) -> dict[Path, str]:
    hand, imported = hand_methods()
    files: dict[Path, str] = {}
    for group, methods in sorted(specs.items()):
        def model_text(prefix: str, group: str = group) -> str:
            return model_texts["schemas" if prefix == "schemas" else group]
        files[METHODS / f"{group}.py"] = render_group(group, methods, model_text, hand, imported,
                                                     header)
    files[METHODS / "groups.py"] = render_groups(sorted(specs), header)
    source = header.split("(")[1].split(")")[0]
    files[ROOT / "docs" / "reference" / "operations.md"] = render_reference(specs, source)
    return files
