"""Why percall.py measures each ratio to the lean client in a pair: the CPU per call of a
contender depends on which other contenders take turns with it, because a contender whose code
another one also runs finds that code warmer in the CPU's caches.

One run, several sets of contenders taking turns call by call (``percall.interleaved``), the
sets alternating round by round; for each set, txc_async's CPU per call over the lean client's,
median of the rounds:

    pair          txc_async and the lean client alone (what percall.py measures)
    pair+floor    and the floor, which runs the lean client's aiohttp path (session.post)
    pair+lean2    and a second lean client (the same code as the lean client)
    pair+txc2     and a second txc_async client (the same code as txc_async)
    all           the five contenders of percall.py before pairs: txc_async, lean, floor,
                  hand-written json, ccxt (the last three all send through session.post)
    all+txc2      the five and a second txc_async client

A companion that runs one side's code lowers that side's figure: the lean client has three in
``all``, txc_async none.

    python benchmarks/sharing.py [--loop uvloop] [--operation main_balance] [--rounds 16]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import LOOPS, load, machine, median, run_on, start_sandbox_process
from benchmarks.percall import (
    CCXT,
    FLOOR,
    HAND,
    LEAN,
    OPERATIONS,
    OURS,
    contenders,
    interleaved,
)

OURS2, LEAN2 = "txc_async, a second client", "lean typed msgspec, a second client"
SETS = {
    "pair": [OURS, LEAN],
    "pair+floor": [OURS, LEAN, FLOOR],
    "pair+lean2": [OURS, LEAN, LEAN2],
    "pair+txc2": [OURS, OURS2, LEAN],
    "all": [OURS, LEAN, FLOOR, HAND, CCXT],
    "all+txc2": [OURS, OURS2, LEAN, FLOOR, HAND, CCXT],
}


async def run(operation: str, rounds: int, count: int) -> dict[str, float]:
    server = start_sandbox_process()
    calls, close = await contenders(server.url, with_ccxt=True)
    try:
        # The second clients: another client object (and key) of the same contender.
        chosen = {name: per_op[operation][0] for name, per_op in calls.items()}
        chosen[OURS2] = calls[OURS][operation][1]
        chosen[LEAN2] = calls[LEAN][operation][1]
        for call in chosen.values():
            for _ in range(5):
                await call()
        ratios: dict[str, list[float]] = {label: [] for label in SETS}
        labels = list(SETS)
        for round_number in range(rounds):
            for label in labels if round_number % 2 == 0 else labels[::-1]:
                figures = await interleaved(
                    {name: chosen[name] for name in SETS[label]}, count, round_number
                )
                ratios[label].append(figures[OURS][0] / figures[LEAN][0])
                await asyncio.sleep(0.05)
    finally:
        await close()
        server.close()
    print(f"txc_async's CPU per {operation} call over the lean client's, by the set of "
          f"contenders taking turns; {rounds} rounds of {count} turns; {machine()}; {load()}")
    result = {}
    for label, values in ratios.items():
        result[label] = median(values)
        print(f"  {label:11} {result[label]:6.3f}x   rounds {min(values):.3f}-{max(values):.3f}x")
    return result


def main(loop: str, operation: str, rounds: int, count: int) -> dict[str, float]:
    return run_on(loop, run(operation, rounds, count))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loop", choices=LOOPS, default="asyncio")
    parser.add_argument("--operation", choices=OPERATIONS, default="investments_history")
    parser.add_argument("--rounds", type=int, default=16)
    parser.add_argument("--count", type=int, default=100)
    arguments = parser.parse_args()
    main(arguments.loop, arguments.operation, arguments.rounds, arguments.count)
