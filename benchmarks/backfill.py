"""Backfill throughput and memory: every reward of two years streamed from the sandbox (another
process, limits lifted) through txc_async.backfill_mining_rewards, at two sizes, and then written
to each output format (JSONL, CSV, Parquet, and JSON lines to a pipe), each run in a fresh
process so that its peak resident memory (RSS) is its own. Memory must stay under 150 MB: flat
but for the check that ends every walk, which keeps 24 bytes per record (its date and digest).
Exports decode the wire's strings (no Decimal), and build the check's ledger as they write.
The sandbox answers as the live service does: every record carries its status, currency and
payout fields, and every output writes them.

    python benchmarks/backfill.py [--quick] [--json PATH]

``--json PATH`` also writes the figures as JSON (``benchmarks/chart.py`` draws them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import txc_async
from txc_async import RateLimit

try:
    from benchmarks._common import machine, peak_rss_mb, rss_mb, start_sandbox
except ImportError:  # run as a script from the benchmarks folder
    from _common import machine, peak_rss_mb, rss_mb, start_sandbox  # type: ignore[no-redef]

START, DAYS = 1704067200, 730
UNLIMITED = {scope: RateLimit(10**9, 1.0) for scope in txc_async.DEFAULT_RATE_LIMITS}
RSS_LIMIT_MB = 150


async def _job(client: txc_async.Client, fmt: str | None, folder: Path,
               concurrency: int) -> int:
    """Run one backfill job (the iterator when ``fmt`` is None, else an export); the records
    it delivered."""
    end = START + DAYS * 86400 - 1
    if fmt is None:
        records = total = 0
        async for reward in txc_async.backfill_mining_rewards(
            client, start=START, end=end, concurrency=concurrency
        ):
            records += 1
            total += reward.date & 1
        return records
    # Imported here, so that the iterator's process holds only what the iterator needs.
    import msgspec

    from txc_async._export.run import backfill_to_file, backfill_to_stream

    if fmt == "jsonl-decimal":
        # The export as it was: typed records (Decimal amounts) encoded back to JSON.
        encode = msgspec.json.Encoder().encode
        records = 0
        with open(folder / "r.jsonl", "wb") as sink:  # noqa: ASYNC230
            async for reward in txc_async.backfill_mining_rewards(
                client, start=START, end=end, concurrency=concurrency
            ):
                sink.write(encode(reward) + b"\n")
                records += 1
        return records
    if fmt == "pipe":
        with open(os.devnull, "wb") as sink:  # noqa: ASYNC230
            summary = await backfill_to_stream(
                client, start=START, end=end, stream=sink, concurrency=concurrency)
        return summary.records_written
    out = folder / ("rewards" if fmt == "parquet" else f"rewards.{fmt}")
    summary = await backfill_to_file(
        client, start=START, end=end, path=out, fmt=fmt,  # type: ignore[arg-type]
        concurrency=concurrency)
    return summary.records_written


async def child(accounts: int, per_day: int, concurrency: int,
                fmt: str | None = None) -> dict[str, Any]:
    """One measured run in a process of its own: the sandbox, a client, one job."""
    server = await start_sandbox(mining_accounts=accounts, rewards_per_day=per_day,
                                 rewards_days=DAYS)
    try:
        before = rss_mb()
        async with txc_async.Client(
            api_key=server.api_key, api_secret=server.api_secret, base_url=server.url,
            rate_limits=UNLIMITED, limiter=txc_async.InProcessLimiter(),
        ) as client:
            with tempfile.TemporaryDirectory() as folder:
                began = time.perf_counter()
                cpu = time.process_time()
                records = await _job(client, fmt, Path(folder), concurrency)
                elapsed = time.perf_counter() - began
                cpu = time.process_time() - cpu
            requests = client.stats.requests
    finally:
        await server.close()
    return {
        "format": fmt, "records": records, "expected": accounts * per_day * DAYS,
        "requests": requests, "seconds": elapsed, "cpu": cpu, "rss_before": before,
        "peak_rss": peak_rss_mb(),
    }


async def run_size(accounts: int, per_day: int, concurrency: int,
                   fmt: str | None = None) -> dict[str, Any]:
    extra = ["--format", fmt] if fmt else []
    process = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--child", str(accounts), str(per_day), str(concurrency),
        *extra, stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await asyncio.wait_for(process.communicate(), timeout=900)
    if process.returncode:
        raise RuntimeError(f"the backfill process failed ({process.returncode})")
    result: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    return result


def as_json(results: list[dict[str, Any]], *, quick: bool, sizes: int,
            conditions: dict[str, str]) -> dict[str, Any]:
    """The run's figures in the shape ``benchmarks/chart.py`` reads: the iterator at each size,
    then each export of the larger size, each with its records per second, client CPU per
    record (µs) and peak resident memory (MB)."""

    def figures(result: dict[str, Any]) -> dict[str, Any]:
        return {
            "output": result["format"] or "iterator",
            "records": result["records"],
            "requests": result["requests"],
            "seconds": result["seconds"],
            "records_per_s": result["records"] / result["seconds"],
            "cpu_per_record_us": 1e6 * result["cpu"] / result["records"],
            "peak_rss_mb": result["peak_rss"],
            "rss_before_mb": result["rss_before"],
        }

    return {
        "benchmark": "backfill",
        "recorded": datetime.now(UTC).isoformat(timespec="seconds"),
        "mode": "quick" if quick else "full",
        **conditions,
        "txc_async": txc_async.__version__,
        "concurrency": 8,
        "days": DAYS,
        "iterator": [figures(result) for result in results[:sizes]],
        "exports": [figures(result) for result in results[sizes:]],
    }


def sizes_of(quick: bool) -> list[tuple[int, int]]:
    """The iterator's sizes: mining accounts and rewards per day."""
    return [(100, 1), (100, 4)] if quick else [(100, 3), (100, 14)]


async def main(quick: bool) -> list[dict[str, Any]]:
    sizes = sizes_of(quick)
    results = []
    print(f"backfill of two years of rewards from the sandbox (another process, limits lifted), "
          f"concurrency 8; {machine()}")
    for accounts, per_day in sizes:
        result = await run_size(accounts, per_day, 8)
        results.append(result)
        if result["records"] != result["expected"]:
            raise RuntimeError(f"{result['records']} records, expected {result['expected']}")
        flat = "under" if result["peak_rss"] < RSS_LIMIT_MB else "OVER"
        print(f"  {result['records']:>9,} records  {result['requests']:>6,} requests  "
              f"{result['seconds']:6.1f} s  {result['records'] / result['seconds']:>9,.0f} "
              f"records/s  client CPU {result['cpu']:5.1f} s  peak RSS "
              f"{result['peak_rss']:5.1f} MB ({flat} {RSS_LIMIT_MB} MB; "
              f"{result['rss_before']:.1f} MB before the backfill; "
              f"CPU {1e6 * result['cpu'] / result['records']:.1f} us/record with Decimal)")
    growth = results[-1]["peak_rss"] - results[0]["peak_rss"]
    ratio = results[-1]["records"] / results[0]["records"]
    print(f"  {ratio:.1f}x the records: peak RSS {growth:+.1f} MB")
    accounts, per_day = sizes[-1]
    print(f"export of the same {accounts * per_day * DAYS:,} records by format, from the wire's "
          "strings (no Decimal), against the iterator above; jsonl-decimal is the same JSONL "
          "written from typed records (Decimal amounts), as exports were before")
    base = results[-1]
    for fmt in ("jsonl-decimal", "jsonl", "csv", "parquet", "pipe"):
        result = await run_size(accounts, per_day, 8, fmt)
        results.append(result)
        if result["records"] != result["expected"]:
            raise RuntimeError(f"{fmt}: {result['records']} records, "
                               f"expected {result['expected']}")
        rate = result["records"] / result["seconds"]
        print(f"  {fmt:13} {rate:>9,.0f} records/s  "
              f"({rate / (base['records'] / base['seconds']):.2f}x the iterator)  "
              f"CPU {1e6 * result['cpu'] / result['records']:5.1f} us/record  "
              f"peak RSS {result['peak_rss']:5.1f} MB")
    return results


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        accounts, per_day, concurrency = map(int, sys.argv[2:5])
        fmt = sys.argv[6] if len(sys.argv) > 6 and sys.argv[5] == "--format" else None
        print(json.dumps(asyncio.run(child(accounts, per_day, concurrency, fmt))))
    else:
        parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
        parser.add_argument("--quick", action="store_true")
        parser.add_argument("--json", type=Path, metavar="PATH",
                            help="also write the figures as JSON to PATH")
        arguments = parser.parse_args()
        found = asyncio.run(main(arguments.quick))
        if arguments.json is not None:
            document = as_json(found, quick=arguments.quick, sizes=len(sizes_of(arguments.quick)),
                               conditions={"machine": machine()})
            arguments.json.write_text(json.dumps(document, indent=2) + "\n")
            print(f"figures written to {arguments.json}")
