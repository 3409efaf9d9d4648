"""Placements per second the sandbox's exchange accepts: one client process placing signed limit
orders (``create_limit_order``) against the sandbox in its own process on its own port, with a
book of 10,000 resting orders, beside the same client against a bare aiohttp server (another
process too) that answers every order with one fixed answer and checks nothing.

The server's CPU time per placement is printed too (read from /proc): what the server could
accept with a core of its own, whatever else the machine runs.

The client spreads its calls over 4 API keys (4 ``Client`` objects sharing one limiter, the
service's budgets lifted), since one key signs at most about 1,000 requests per second
(millisecond nonces). Every order rests: buys 10 % to 20 % under the price, at prices spread
over 2,000 steps, so the book keeps growing while it is measured.

    python benchmarks/sandbox_orders.py [--quick] [--orders N] [--concurrency N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from decimal import Decimal

import txc_async
from txc_async.limiters import RateLimit

try:
    from benchmarks._common import contender_keys, load, machine
except ImportError:  # run as a script from the benchmarks folder
    from _common import contender_keys, load, machine  # type: ignore[no-redef]

KEYS = contender_keys("txc")[:4]
RESTING = 10_000
TARGET = 2000.0
UNLIMITED = {scope: RateLimit(10**9, 1.0) for scope in txc_async.DEFAULT_RATE_LIMITS}

_SANDBOX = """
import asyncio, sys
from decimal import Decimal
from txc_async.sandbox import Sandbox

async def main():
    balances = {"USDT": Decimal("1000000000"), "BTC": Decimal("100000")}
    async with Sandbox(enforce_limits=False, trade_balances=balances) as box:
        for key, secret in eval(sys.argv[1]):
            box.add_key(key, secret)
        # The resting book: 10,000 orders of another account, each side of the price.
        for i in range(int(sys.argv[2])):
            side = "buy" if i % 2 else "sell"
            offset = Decimal(100 + i // 2) / 100
            price = Decimal(60000) - offset if side == "buy" else Decimal(60000) + offset
            box.exchange.place_limit("resting-book", "BTC_USDT", side, Decimal("0.001"), price)
        print(box.url, len(box.exchange.open), flush=True)
        await asyncio.Event().wait()

asyncio.run(main())
"""

_BARE = """
import asyncio
from aiohttp import web

ANSWER = (b'{"orderId":4180284841,"clientOrderId":"","market":"BTC_USDT","side":"buy",'
          b'"type":"limit","timestamp":1595792396.165973,"dealMoney":"0","dealStock":"0",'
          b'"amount":"0.001","left":"0.001","dealFee":"0","price":"50000","postOnly":false,'
          b'"ioc":false,"status":"NEW","stp":"no"}')

async def order(request):
    await request.read()
    return web.Response(body=ANSWER, content_type="application/json")

async def main():
    app = web.Application()
    app.router.add_post("/api/v4/order/new", order)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print(f"http://127.0.0.1:{runner.addresses[0][1]}", 0, flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


def cpu_seconds(pid: int) -> float:
    """User and system CPU time the process ``pid`` has used so far."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def serve(script: str, *args: str) -> tuple[subprocess.Popen[bytes], str, int]:
    process = subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE)
    assert process.stdout is not None
    url, resting = process.stdout.readline().decode().split()
    return process, url, int(resting)


async def place(url: str, orders: int, concurrency: int) -> float:
    """Placements per second of ``orders`` limit orders from ``concurrency`` callers."""
    limiter = txc_async.InProcessLimiter()
    clients = [txc_async.Client(api_key=key, api_secret=secret, base_url=url,
                                rate_limits=UNLIMITED, limiter=limiter) for key, secret in KEYS]
    counter = iter(range(orders))

    async def caller(index: int) -> None:
        client = clients[index % len(clients)]
        for n in counter:
            price = Decimal(50000) + Decimal(n % 2000) * Decimal("1.5")
            await client.call("create_limit_order", market="BTC_USDT", side="buy",
                              amount=Decimal("0.001"), price=price)

    try:
        # Warm up: connections opened, clocks read, caches filled.
        for client in clients:
            await client.call("create_limit_order", market="BTC_USDT", side="buy",
                              amount=Decimal("0.001"), price=Decimal("50000"))
        started = time.perf_counter()
        await asyncio.gather(*(caller(i) for i in range(concurrency)))
        return orders / (time.perf_counter() - started)
    finally:
        for client in clients:
            await client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer orders")
    parser.add_argument("--orders", type=int, default=None)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    orders = args.orders or (3000 if args.quick else 10000)
    print(machine())
    print(load())
    results: dict[str, float] = {}
    for name, script, extra in (("bare aiohttp server, fixed answer", _BARE, ()),
                                ("sandbox exchange", _SANDBOX, (repr(KEYS), str(RESTING)))):
        process, url, resting = serve(script, *extra)
        try:
            before = cpu_seconds(process.pid)
            rate = asyncio.run(place(url, orders, args.concurrency))
            server_cpu = (cpu_seconds(process.pid) - before) / (orders + len(KEYS))
        finally:
            process.terminate()
            process.wait()
        results[name] = rate
        book = f", {resting:,} resting orders at the start" if resting else ""
        print(f"  {name:36} {rate:8,.0f} placements/s ({orders:,} orders, "
              f"{args.concurrency} callers{book})")
        print(f"  {'':36} server CPU {server_cpu * 1e6:6.0f} us per placement: "
              f"{1 / server_cpu:8,.0f} placements/s per core of its own")
    sandbox, bare = results["sandbox exchange"], results["bare aiohttp server, fixed answer"]
    verdict = "met" if sandbox >= TARGET else "MISSED"
    print(f"  sandbox / bare server: {sandbox / bare:.2f}x; target >= {TARGET:,.0f} "
          f"placements/s: {verdict}")
    print(load())


if __name__ == "__main__":
    main()
