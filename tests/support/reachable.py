"""Everything an error lets a caller reach, as text: what no secret may appear in."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from decimal import Decimal


def reachable_text(root: object, max_depth: int = 12) -> str:
    """repr and str of every object reachable from ``root`` through exception links, attributes
    (``__dict__`` and slots), mappings and collections; frames are not followed."""
    seen: set[int] = set()
    texts: list[str] = []

    def visit(obj: object, depth: int) -> None:
        if depth > max_depth or id(obj) in seen:
            return
        seen.add(id(obj))
        for render in (repr, str):
            with contextlib.suppress(Exception):  # a broken repr hides nothing
                texts.append(render(obj))
        if isinstance(obj, bytes | bytearray):
            texts.append(bytes(obj).decode("latin-1"))
            return
        if isinstance(obj, str | int | float | bool | Decimal) or obj is None:
            return
        if isinstance(obj, type) or (callable(obj) and not isinstance(obj, BaseException)):
            return
        if isinstance(obj, BaseException):
            visit(obj.__cause__, depth + 1)
            visit(obj.__context__, depth + 1)
            visit(obj.args, depth + 1)
        if isinstance(obj, Mapping):
            for key, value in list(obj.items()):
                visit(key, depth + 1)
                visit(value, depth + 1)
        elif isinstance(obj, list | tuple | set | frozenset):
            for value in obj:
                visit(value, depth + 1)
        names: set[str] = set(getattr(obj, "__dict__", {}))
        for klass in type(obj).__mro__:
            slots = klass.__dict__.get("__slots__", ())
            names.update([slots] if isinstance(slots, str) else slots)
        for name in sorted(names):
            if name in ("__traceback__", "__weakref__", "__dict__"):
                continue
            try:
                value = getattr(obj, name)
            except Exception:  # an unset slot
                continue
            visit(value, depth + 1)

    visit(root, 0)
    return "\n".join(texts)
