"""The Redis limiter's Lua scripts, kept as ``.lua`` files in ``lua/`` beside this module.

A line ``--@include NAME key=value ...`` stands for the file ``NAME.lua`` with its ``{key}``
placeholders filled (the KEYS and ARGV positions it reads differ between scripts).
"""

from __future__ import annotations

import functools
import re
from importlib import resources

__all__ = ["lua_script"]

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
