"""The Redis limiter's Lua scripts, kept as ``.lua`` files in ``lua/`` beside this module.

A line ``--@include NAME key=value ...`` stands for the file ``NAME.lua`` with its ``{key}``
placeholders filled (the KEYS and ARGV positions it reads differ between scripts).
"""

from __future__ import annotations

import enum
import functools
import re
from importlib import resources
from typing import Any, NamedTuple

__all__ = ["AdmitAnswer", "DrawStatus", "ScriptStatus", "lua_script"]

_INCLUDE = re.compile(r"^--@include (\w+)((?: \w+=\w+)*)$", re.MULTILINE)


@functools.cache
def _source(name: str) -> str:
    return resources.files(__package__).joinpath("lua", f"{name}.lua").read_text("utf-8")


def lua_script(name: str) -> str:
    """The script ``NAME.lua`` with its includes expanded."""

    def expand(found: re.Match[str]) -> str:
        fragment = lua_script(found.group(1))
        settings = dict(pair.split("=", 1) for pair in found.group(2).split())
        return fragment.format(**settings) if settings else fragment

    return _INCLUDE.sub(expand, _source(name))


class ScriptStatus(enum.IntEnum):
    """The first value of what ``admit.lua`` answers: how the admission went."""

    #: Admitted: ``value`` is the store's clock (us), ``extra`` the nonce drawn (or -1).
    ADMITTED = 0
    #: Not now: wait ``value`` us; ``extra`` is 1 when a request in flight blocks,
    #: ``blocking`` the budget that holds it (0: the scope's).
    WAIT = 1
    #: The store's generation is not the one this process knows (the store lost its data, or
    #: another process reseeded it): write the process's anchors back first. ``value``: the
    #: store's clock (us).
    RESEED = 2
    #: The API key's nonce counter is too far ahead of the clock given: wait ``value`` us.
    NONCE_AHEAD = 3


class DrawStatus(enum.IntEnum):
    """The first value of what ``draw.lua`` answers."""

    #: A nonce was drawn (the second value).
    DRAWN = 0
    #: The store's generation is not the one this process knows: nothing drawn.
    STALE = 2
    #: The counter is too far ahead of the clock given (the second value: by how many ms).
    NONCE_AHEAD = 3


class AdmitAnswer(NamedTuple):
    """``admit.lua``'s answer, decoded."""

    status: ScriptStatus
    value: int
    extra: int
    generation: str
    blocking: int

    @classmethod
    def of(cls, raw: Any) -> AdmitAnswer:
        """Decode the script's five values (Redis answers integers and bytes)."""
        status, value, extra, generation, blocking = raw
        if isinstance(generation, bytes):
            generation = generation.decode()
        return cls(ScriptStatus(int(status)), int(value), int(extra), str(generation),
                   int(blocking))
