"""A process making balance calls to the sandbox with a client as a user makes it (the default
in-process limiter), for the tests of what a process started after another meets.

    python -m tests.support.balance_calls URL COUNT MAX_REQUESTS PER_SECONDS [--wait-go]

The API key and secret come from the environment (``TXC_TEST_API_KEY``, ``TXC_TEST_API_SECRET``).
``MAX_REQUESTS`` per ``PER_SECONDS`` is configured for the balance's scope and its group. It
prints ``ready`` (with ``--wait-go`` it then waits for a line on stdin), makes ``COUNT`` calls, 32
at a time, and prints ``took SECONDS`` and ``limit MAX_REQUESTS PER_SECONDS``: the limit the
client keeps to for the balance at the end.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

import txc_async
from txc_async import RateLimit


async def main(argv: list[str]) -> None:
    url, count, n, per = argv[0], int(argv[1]), int(argv[2]), float(argv[3])
    limit = RateLimit(n, per)
    async with txc_async.Client(
        os.environ["TXC_TEST_API_KEY"], os.environ["TXC_TEST_API_SECRET"], base_url=url,
        rate_limits={"main_balance": limit, "main_account": limit},
    ) as client:
        print("ready", flush=True)
        if "--wait-go" in argv:
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        left = iter(range(count))

        async def caller() -> None:
            for _ in left:
                await client.main_balance()

        began = time.monotonic()
        await asyncio.gather(*(caller() for _ in range(32)))
        print(f"took {time.monotonic() - began:.3f}", flush=True)
        kept = client.rate_limits["main_balance"]
        print(f"limit {kept.max_requests} {kept.per_seconds}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
