"""Which operation's code is running: the code objects of the client's coroutine operations,
and a bounded look up the stack for one of them (what an argument error names)."""

from __future__ import annotations

import sys
from types import CodeType, FrameType

__all__ = ["OPERATION_CODE", "running_operation"]

#: The code of every coroutine operation, by the name it goes by.
OPERATION_CODE: dict[CodeType, str] = {}
#: How many frames up an argument error looks for its operation.
_MAX_DEPTH = 32


def running_operation() -> str | None:
    """The coroutine operation on whose behalf the caller runs, or None outside one."""
    frame: FrameType | None = sys._getframe(2)
    for _ in range(_MAX_DEPTH):
        if frame is None:
            return None
        name = OPERATION_CODE.get(frame.f_code)
        if name is not None:
            return name
        frame = frame.f_back
    return None
