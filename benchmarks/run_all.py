"""Run every benchmark, one after another, each printing its figures and ratios.

    python benchmarks/run_all.py [--quick]      (or: make bench)
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import backfill, decode, ladder, overhead, percall, ratelimit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller runs, about a minute")
    quick = parser.parse_args().quick
    began = time.monotonic()
    failed = []
    for title, run in (
        ("per-call cost", lambda: percall.main(quick)),
        ("where the cost over the lean client comes from", lambda: ladder.main(quick)),
        ("the client's own cost by part", lambda: overhead.main(quick)),
        ("decode throughput", lambda: decode.main(quick)),
        ("backfill throughput and memory", lambda: asyncio.run(backfill.main(quick))),
        ("rate limits", lambda: asyncio.run(ratelimit.main(quick))),
    ):
        print(f"\n== {title} ==", flush=True)
        # One broken benchmark must not hide the figures of the others.
        try:
            run()
        except Exception:
            traceback.print_exc()
            failed.append(title)
    print(f"\nall benchmarks: {time.monotonic() - began:.0f} s")
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
