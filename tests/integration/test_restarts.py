"""A process started right after another spent the window (a rerun, a restart), or beside a
neighbour that spent it once: the refusals it meets come from traffic it never saw, and must not
slow it for longer than that window. Real processes against the sandbox, which counts per address
as the service does."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest

from txc_async import RateLimit
from txc_async.sandbox import Sandbox

from ..support.limit_worker import _ROOT, read_until, reaping

# The clients run in a subprocess, on asyncio's loop whatever loop this process runs: the
# uvloop pass leaves it out (see tests/conftest.py).
pytestmark = pytest.mark.asyncio_only

LIMIT = RateLimit(100, 2.0)


async def start(box: Sandbox, count: int, *extra: str) -> asyncio.subprocess.Process:
    env = {**os.environ, "TXC_TEST_API_KEY": box.api_key, "TXC_TEST_API_SECRET": box.api_secret}
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.support.balance_calls", box.url, str(count),
        str(LIMIT.max_requests), str(LIMIT.per_seconds), *extra,
        cwd=_ROOT, env=env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )


async def results(process: asyncio.subprocess.Process, within: float) -> tuple[float, RateLimit]:
    """What the process printed at its end: the seconds its calls took and the limit it kept."""
    assert process.stdout is not None
    took: float | None = None
    async with asyncio.timeout(within):
        while line := (await process.stdout.readline()).decode().strip():
            if line.startswith("took "):
                took = float(line.split()[1])
            elif line.startswith("limit "):
                _, n, per = line.split()
                assert took is not None
                assert await process.wait() == 0
                return took, RateLimit(int(n), float(per))
    raise AssertionError("the process ended without its results")


async def go(process: asyncio.subprocess.Process) -> None:
    assert process.stdin is not None
    process.stdin.write(b"go\n")
    await process.stdin.drain()


async def test_a_process_started_right_after_another_spent_the_window_keeps_its_speed() -> None:
    """96 calls of 100 per 2 s in one process; a new one sends 300 at once. It meets refusals
    (its predecessor's window) and keeps to what it got only until that window has passed: three
    more windows, not 4 calls per window (150 s) until it learned better an hour later."""
    async with Sandbox(rate_limits={"main_balance": LIMIT, "main_account": LIMIT}) as box:
        async with reaping() as processes:
            first = await start(box, 96, "--wait-go")
            second = await start(box, 300, "--wait-go")
            processes += [first, second]
            await read_until(first, b"ready")
            await read_until(second, b"ready")
            await go(first)
            await results(first, 30)
            await go(second)
            took, kept = await results(second, 40)
        refused = box.stats.rate_limited
    assert refused > 0  # the predecessor's window was met
    assert kept == LIMIT  # no lower limit from a window it did not see
    assert took < 20.0, took  # about three windows and the one it met (6.5 s): not 150 s
