"""Helpers shared by the benchmarks: a sandbox in a separate process, timing, and RSS."""

from __future__ import annotations

import asyncio
import os
import platform
import resource
import statistics
import subprocess
import sys
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

#: Extra keys the benchmark sandbox accepts, one per contender, so that their nonce sources
#: never collide.
KEYS = {
    "baseline": ("bench-baseline-key", "bench-baseline-secret-0123456789abcdef"),
    "ccxt": ("bench-ccxt-key", "bench-ccxt-secret-0123456789abcdef"),
}

#: How many API keys each contender of a throughput run spreads its callers over. One key signs at
#: most about 1,000 requests per second (millisecond nonces, each used once, within 5 s of the
#: server's clock), which would cap a sustained run at that rate whatever the client.
KEYS_PER_CONTENDER = 16


def contender_keys(slot: str) -> list[tuple[str, str]]:
    """The API keys of one contender (``slot``), all accepted by the benchmark sandbox."""
    return [
        (f"bench-{slot}-{i}-key", f"bench-{slot}-{i}-secret-0123456789abcdef")
        for i in range(KEYS_PER_CONTENDER)
    ]


for _slot in ("txc", "lean", "lean2", "floor", "hand", "ccxt"):
    for _i, _pair in enumerate(contender_keys(_slot)):
        KEYS[f"{_slot}-{_i}"] = _pair

_SERVER = """
import asyncio, sys
from decimal import Decimal
from txc_async.sandbox import Sandbox

async def main():
    kwargs = eval(sys.argv[1])
    async with Sandbox(enforce_limits=False, **kwargs) as box:
        for key, secret in eval(sys.argv[2]).values():
            box.add_key(key, secret)
        print(box.url, box.api_key, box.api_secret, flush=True)
        await asyncio.Event().wait()

asyncio.run(main())
"""


@dataclass
class RemoteSandbox:
    """A sandbox served by another process, so its CPU time is not the client's."""

    url: str
    api_key: str
    api_secret: str
    process: asyncio.subprocess.Process

    async def close(self) -> None:
        self.process.terminate()
        await self.process.wait()


async def start_sandbox(**kwargs: Any) -> RemoteSandbox:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _SERVER, repr(kwargs), repr(KEYS),
        stdout=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), timeout=30)
    url, key, secret = line.decode().split()
    return RemoteSandbox(url, key, secret, process)


@dataclass
class SandboxProcess:
    """A sandbox served by another process, started without an event loop, so that benchmarks
    can run several event loops (asyncio's, uvloop's) against the same server."""

    url: str
    api_key: str
    api_secret: str
    process: subprocess.Popen[bytes]

    def close(self) -> None:
        self.process.terminate()
        self.process.wait()


def start_sandbox_process(**kwargs: Any) -> SandboxProcess:
    process = subprocess.Popen(
        [sys.executable, "-c", _SERVER, repr(kwargs), repr(KEYS)], stdout=subprocess.PIPE
    )
    assert process.stdout is not None
    url, key, secret = process.stdout.readline().decode().split()
    return SandboxProcess(url, key, secret, process)


T = TypeVar("T")

#: The event loops a benchmark can run on (``--loop``).
LOOPS = ("asyncio", "uvloop")


def run_on(loop: str, main: Coroutine[Any, Any, T]) -> T:
    """Runs ``main`` to its end on a new event loop of ``loop`` (one of :data:`LOOPS`), after
    printing which."""
    factory: Callable[[], asyncio.AbstractEventLoop] | None = None
    if loop == "uvloop":
        import uvloop

        factory = uvloop.new_event_loop
    print(f"event loop: {loop}")
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)


def load() -> str:
    """The machine's load averages now (other processes share its cores)."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f}"


def rss_mb() -> float:
    """Resident memory of this process now, in MB."""
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * resource.getpagesize() / 2**20


def peak_rss_mb() -> float:
    """The most resident memory this process has had, in MB (VmHWM: unlike ru_maxrss, it does
    not carry over the parent's peak through fork and exec)."""
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def median(values: list[float]) -> float:
    return statistics.median(values)


def machine() -> str:
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import aiohttp
    import msgspec

    return (f"{os.cpu_count()} cores, {model}, Python {platform.python_version()}, "
            f"aiohttp {aiohttp.__version__}, msgspec {msgspec.__version__}")


def ratio_line(label: str, ours: float, theirs: float, target: float | None,
               lower_is_better: bool = True, unit: str = "") -> str:
    ratio = ours / theirs if theirs else float("inf")
    verdict = ""
    if target is not None:
        met = ratio <= target if lower_is_better else ratio >= target
        sign = "<=" if lower_is_better else ">="
        verdict = f"  target {sign} {target:.2f}x: {'met' if met else 'MISSED'}"
    return f"  {label:44} {ratio:6.2f}x{verdict}"


def table(rows: list[tuple[str, ...]], header: tuple[str, ...],
          align: Callable[[int], str] = lambda i: "<" if i == 0 else ">") -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(f"{cell:{align(i)}{widths[i]}}" for i, cell in enumerate(header))]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append("  ".join(f"{cell:{align(i)}{widths[i]}}" for i, cell in enumerate(row)))
    return "\n".join(lines)
