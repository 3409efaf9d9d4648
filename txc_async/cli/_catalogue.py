"""``txc-async operations``: every operation of the API, from its declaration: name, method,
path, rate limit, and whether it is a write (never sent again once it may have reached the
server)."""

from __future__ import annotations

from txc_async._operations import OPERATIONS

from ._render import Output, Plain


def catalogue() -> list[dict[str, Plain]]:
    """One record per operation, in the catalogue's order."""
    return [
        {
            "name": op.name,
            "method": op.method,
            "path": op.path,
            "limit": {
                "max_requests": op.rate_limit.max_requests,
                # Whole seconds as an integer: a float would be written as a string.
                "per_seconds": int(op.rate_limit.per_seconds)
                if op.rate_limit.per_seconds.is_integer() else str(op.rate_limit.per_seconds),
            },
            "write": not op.retry_safe,
            "summary": op.summary,
        }
        # Once each: an operation declared by hand is also listed under its generated name.
        for op in {id(op): op for op in OPERATIONS.values()}.values()
    ]


def print_catalogue(*, json_mode: bool) -> int:
    """Write the catalogue (JSON lines with ``--json``); returns the exit status."""
    Output(json_mode=json_mode).records(catalogue(), "operations")
    return 0
