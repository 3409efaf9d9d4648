"""What a command that calls an operation runs: the call (or the walk of every page), how its
result is shown, and the write it is, if it is one."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import txc_async

from ._render import Output
from ._writes import Write

__all__ = ["Call", "Invocation", "Show", "Walk"]

Call = Callable[[txc_async.Client], Awaitable[object]]
Walk = Callable[[txc_async.Client], AsyncIterator[object]]
#: Writes a command's result; returns the exit status.
Show = Callable[[Output, object], int]


@dataclass(frozen=True)
class Invocation:
    """One operation as a command runs it.

    ``parameters``: the client's parameters that come from flags, so that the client's refusal
    of one is a usage error naming its flag. ``walk``: every page (``--all``), else ``call``.
    ``confirm``: a write that asks before it is sent (on a terminal; else ``--yes``).
    """

    call: Call
    show: Show
    parameters: frozenset[str] = frozenset()
    walk: Walk | None = None
    title: str = ""
    write: Write | None = None
    notes: list[str] = field(default_factory=list)
    confirm: bool = False
