"""``sandbox`` and ``demo``: the embedded simulator served on 127.0.0.1, and a backfill of a
year from it with a summary.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from txc_async._client import Client
from txc_async._export.run import backfill_to_file, format_moment

from ._arguments import DAY
from ._backfill import Progress


async def _book_live(box: object, stop: asyncio.Event) -> None:
    """Book rewards while the sandbox serves: today's (dated 00:00 UTC today) and one at a
    random day of the range, each second."""
    from txc_async.sandbox import Sandbox

    assert isinstance(box, Sandbox)
    book = box.rewards
    chance = random.Random(box.seed)
    while not stop.is_set():
        today = int(time.time()) // DAY * DAY
        book.book(chance.choice(book.names), today)
        day = book.start + chance.randrange(max(1, book.count // book.per_day)) * DAY
        book.book(chance.choice(book.names), day)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 1.0)


async def run_sandbox(args: argparse.Namespace) -> int:
    """``sandbox``: serve the embedded simulator until interrupted."""
    from txc_async.sandbox import Sandbox

    pending_days = args.pending_days if args.pending_days is not None else (
        2 if args.live else 0)
    trade_balances = dict(args.trade_balance or ())
    async with Sandbox(port=args.port, mining_accounts=args.accounts,
                       rewards_days=args.days, pending_days=pending_days,
                       settle_after=args.settle_after, trade_balances=trade_balances) as box:
        print(f"sandbox serving on {box.url}: {args.accounts} mining accounts, {args.days} days "
              f"of rewards from {format_moment(box.rewards.start)}"
              + (", booking new rewards live" if args.live else "")
              + (f", the last {pending_days} days pending until {args.settle_after:g} s have "
                 "passed" if pending_days else ""))
        if trade_balances:
            print("trading balance of every key: " + ", ".join(
                f"{amount} {ticker}" for ticker, amount in trade_balances.items()))
        print(f"export TXC_BASE_URL={box.url}")
        print(f"export TXC_API_KEY={box.api_key}")
        print(f"export TXC_API_SECRET={box.api_secret}")
        # The sandbox's own OAuth application, so that `txc-async oauth refresh` works too.
        print(f"export TXC_OAUTH_CLIENT_ID={box.oauth_client_id}")
        print(f"export TXC_OAUTH_CLIENT_SECRET={box.oauth_client_secret}")
        print(f"export TXC_OAUTH_REFRESH_TOKEN={box.oauth_refresh_token}")
        print("press Ctrl-C to stop", flush=True)
        stop = asyncio.Event()
        booking = asyncio.create_task(_book_live(box, stop)) if args.live else None
        try:
            await asyncio.Event().wait()
        finally:
            stop.set()
            if booking is not None:
                await booking
    return 0


async def run_demo(year: int, accounts: int, concurrency: int) -> int:
    """``demo``: backfill a year from an embedded sandbox and print a summary."""
    from txc_async.sandbox import Sandbox

    start = int(datetime(year, 1, 1, tzinfo=UTC).timestamp())
    end = int(datetime(year, 12, 31, tzinfo=UTC).timestamp()) + DAY - 1
    async with Sandbox(mining_accounts=accounts) as box:
        async with Client(
            api_key=box.api_key, api_secret=box.api_secret, base_url=box.url
        ) as client:
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / f"rewards-{year}.jsonl"
                limit = client.rate_limits["mining_rewards"]
                print(
                    f"demo: the embedded sandbox serves {accounts} mining accounts on {box.url};\n"
                    f"      backfilling every reward of {year} ({format_moment(start)} to "
                    f"{format_moment(end, end=True)}) into {path}\n"
                    f"      with {concurrency} pieces at once, within the sandbox's rate limit "
                    f"of {limit.max_requests} requests per {limit.per_seconds:g} s "
                    "(progress on stderr)",
                    flush=True,
                )
                display = Progress(client, sys.stderr, label="demo")
                display.start()
                try:
                    summary = await backfill_to_file(
                        client, start=start, end=end, path=path, concurrency=concurrency,
                        on_progress=display,
                    )
                finally:
                    display.close()
                with path.open("rb") as handle:
                    lines = handle.read().splitlines()
                unique = len(set(lines))
        peak = box.stats.max_in_window("mining_rewards", limit.per_seconds)
        stats = box.stats
    print(f"backfill of every mining account of the sandbox, {year}, concurrency {concurrency}")
    print(f"  records        {summary.records_written:,} ({unique:,} distinct) "
          f"from {summary.accounts} accounts")
    print(f"  requests       {summary.requests:,}")
    print(f"  elapsed        {summary.elapsed:.2f} s "
          f"({summary.records_written / max(summary.elapsed, 1e-9):,.0f} records/s)")
    print(f"  rate limit     peak {peak} requests in any {limit.per_seconds:g} s "
          f"of {limit.max_requests} allowed ({peak / limit.max_requests:.0%})")
    print(f"  refusals       {stats.rate_limited} rate-limit 429s, "
          f"{stats.nonce_refused} nonce refusals, {stats.auth_failed} auth failures")
    ok = (
        unique == summary.records_written
        and stats.rate_limited == 0
        and stats.nonce_refused == 0
        and stats.auth_failed == 0
    )
    return 0 if ok else 1
