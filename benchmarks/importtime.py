"""Start-up cost: the time to ``import txc_async`` and reach ``txc_async.Client``, and the time of
``txc-async --help``, against ``import aiohttp, msgspec`` (what the package cannot do without)
measured in the same run.

Each command runs in a fresh interpreter, the commands taking turns run by run so that a load
on the machine falls on all of them alike; the figure of each is its fastest run (the least
disturbed), and the ratios are printed beside the bounds the package keeps to: the client at
most 1.6 times the baseline, the command line's help under 0.2 s.

    python benchmarks/importtime.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

COMMANDS = {
    "import aiohttp, msgspec (baseline)": [sys.executable, "-c", "import aiohttp, msgspec"],
    "import txc_async; txc_async.Client": [
        sys.executable, "-c", "import txc_async; txc_async.Client"],
    "import txc_async": [sys.executable, "-c", "import txc_async"],
    "txc-async --help": [sys.executable, "-m", "txc_async", "--help"],
}
BASELINE = "import aiohttp, msgspec (baseline)"
BOUNDS = {"import txc_async; txc_async.Client": ("ratio", 1.6), "txc-async --help": ("s", 0.2)}


def timed(command: list[str]) -> float:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    began = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - began


def main(runs: int) -> dict[str, float]:
    for command in COMMANDS.values():  # compiled and cached once before measuring
        timed(command)
    best = dict.fromkeys(COMMANDS, float("inf"))
    for _ in range(runs):
        for name, command in COMMANDS.items():
            best[name] = min(best[name], timed(command))
    base = best[BASELINE]
    print(f"start-up, fastest of {runs} runs each (load {os.getloadavg()[0]:.2f})")
    for name, seconds in best.items():
        line = f"  {name:40} {seconds * 1e3:7.1f} ms  {seconds / base:5.2f}x baseline"
        kind, bound = BOUNDS.get(name, ("", 0.0))
        if kind == "ratio":
            line += f"  (bound {bound}x: {'kept' if seconds / base <= bound else 'EXCEEDED'})"
        elif kind == "s":
            line += f"  (bound {bound} s: {'kept' if seconds <= bound else 'EXCEEDED'})"
        print(line)
    return best


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    main(parser.parse_args().runs)
