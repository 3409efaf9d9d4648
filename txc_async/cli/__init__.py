"""The ``txc-async`` command line: every operation of the API, resumable backfills, the
sandbox and a demo.

``main`` is the entry point. The package imports only the standard library's argparse until a
command runs, so that ``txc-async --help`` starts fast; each command imports what it needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# Re-exported under the names the command line's tests and earlier callers use.
from ._app import describe as describe
from ._app import main
from ._arguments import end_time as _end  # noqa: F401
from ._arguments import last_whole_day_end as last_whole_day_end
from ._arguments import start_time as _start  # noqa: F401
from ._parser import build_parser as build_parser

if TYPE_CHECKING:
    from ._backfill import Progress as Progress

__all__ = ["main"]


def __getattr__(name: str) -> object:
    # The backfill's progress display imports tqdm: only when it is asked for.
    if name == "Progress":
        from ._backfill import Progress

        return Progress
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":  # pragma: no cover
    import sys

    sys.exit(main())
