"""The catalogue of operations by name: the ones declared by hand at once, the generated ones
loaded a group at a time, the first time one of the group is looked up."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Any

from .declaration import Operation

__all__ = ["Catalogue"]


class Catalogue(Mapping[str, Operation[Any]]):
    """A read-only mapping of every operation by its name.

    ``hand``: the operations declared by hand, by name. ``where``: every generated name, in
    order, with the module of ``generated/`` and the constant that declares it, or ``("",
    name)`` for the generated name of an operation declared by hand (the same object). Looking
    up a name, or walking the values, imports what it needs: importing the package does not
    build the declarations of every group.
    """

    __slots__ = ("_loaded", "_names", "_where")

    def __init__(
        self, hand: Mapping[str, Operation[Any]], where: Mapping[str, tuple[str, str]]
    ) -> None:
        self._loaded: dict[str, Operation[Any]] = dict(hand)
        self._where = dict(where)
        self._names = (*hand, *(name for name in where if name not in hand))

    def __getitem__(self, name: str) -> Operation[Any]:
        found = self._loaded.get(name)
        if found is not None:
            return found
        module, constant = self._where[name]  # KeyError: no such operation
        if not module:
            found = self._loaded[constant]
        else:
            group = importlib.import_module(f"{__package__}.generated.{module}")
            found = getattr(group, constant)
        # Two threads looking up one name at once store the same object.
        self._loaded[name] = found
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._loaded or name in self._where

    def __repr__(self) -> str:
        return f"<catalogue of {len(self._names)} operation names>"
