"""What the check that decoded amounts are finite costs on a 100-record investments page, and what
a scan of the answer's bytes would cost instead, against msgspec's strict decoding of the page.

A byte scan must send every body that could hold a non-finite amount to the full check: every
spelling Decimal reads as NaN or an infinity holds "nan" or "inf" in any case, once underscores
(which Decimal ignores) are dropped, unless the JSON escapes it (a backslash). CPython has no fast
search for a short needle in any case, and an answer's keys are full of n, a, i and f: the scan
costs as much as the check it would skip.

    python benchmarks/finite.py
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import msgspec

from txc_async._operations import INVESTMENTS
from txc_async.sandbox._data import InvestmentBook

try:
    from benchmarks._common import machine
except ImportError:  # run as a script from the benchmarks folder
    from _common import machine  # type: ignore[no-redef]


def best(work: Callable[[], object], repeat: int) -> float:
    """The least seconds per run over five batches of ``repeat`` runs."""
    least = float("inf")
    for _ in range(5):
        began = time.perf_counter()
        for _ in range(repeat):
            work()
        least = min(least, (time.perf_counter() - began) / repeat)
    return least


def byte_scan(body: bytes) -> bool:
    """True when ``body`` could hold a non-finite amount (then the full check must run)."""
    if b"\\" in body:
        return True
    if b"_" in body:
        body = body.replace(b"_", b"")
    lowered = body.lower()
    return b"nan" in lowered or b"inf" in lowered


def main(repeat: int) -> dict[str, float]:
    body = msgspec.json.encode(
        {"offset": 0, "limit": 100, "records": InvestmentBook(seed=3).records[:100]}
    )
    decoder = INVESTMENTS.decode
    strict = msgspec.json.Decoder(type(decoder(body))).decode
    page = strict(body)
    finite = decoder._finite  # type: ignore[attr-defined]
    assert finite is not None and finite(page) and not byte_scan(body)
    figures = {
        "strict decoding (msgspec, Decimal money)": best(lambda: strict(body), repeat),
        "the finite check of the 700 amounts": best(lambda: finite(page), repeat),
        "the whole decoder (both)": best(lambda: decoder(body), repeat),
        "byte scan: lower() the body": best(body.lower, repeat),
        "byte scan: b'nan' in the lowered body": best(lambda: b"nan" in body.lower(), repeat),
        "byte scan: the whole scan": best(lambda: byte_scan(body), repeat),
        "memchr of one byte absent from the body (b'\\\\' in body)": best(
            lambda: b"\\" in body, repeat
        ),
    }
    print(f"the finite check of amounts, one 100-record investments page ({len(body):,} bytes); "
          f"{machine()}; least of 5 batches")
    for label, seconds in figures.items():
        print(f"  {label:58} {seconds * 1e6:7.1f} µs")
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=500)
    main(parser.parse_args().repeat)
