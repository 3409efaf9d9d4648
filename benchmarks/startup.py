"""How long ``txc-async --help`` takes to start, beside what any Python program and the package's
import take on the same machine in the same run: each command run in a fresh interpreter, the
commands taking turns in a shuffled order every round, the median of each printed with its
ratio to ``import aiohttp, msgspec``.

    python benchmarks/startup.py [--rounds N]
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import time

#: What is measured: a name and the interpreter's arguments.
COMMANDS: dict[str, list[str]] = {
    "python -c pass": ["-c", "pass"],
    "import aiohttp, msgspec": ["-c", "import aiohttp, msgspec"],
    "import txc_async": ["-c", "import txc_async"],
    "txc-async --help": ["-m", "txc_async", "--help"],
    "txc-async spot --help": ["-m", "txc_async", "spot", "--help"],
    "txc-async spot create-limit-order --help": [
        "-m", "txc_async", "spot", "create-limit-order", "--help"],
}
BASELINE = "import aiohttp, msgspec"


def _once(arguments: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, *arguments], stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30, help="runs of each command")
    rounds = parser.parse_args().rounds
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    order = list(COMMANDS)
    for _ in range(rounds):
        random.shuffle(order)
        for name in order:
            times[name].append(_once(COMMANDS[name]))
    base = statistics.median(times[BASELINE])
    print(f"{'command':44} {'median':>9} {'min':>9}  to {BASELINE}")
    for name, runs in times.items():
        median = statistics.median(runs)
        print(f"{name:44} {median * 1000:7.1f} ms {min(runs) * 1000:7.1f} ms  "
              f"{median / base:.2f}")


if __name__ == "__main__":
    main()
