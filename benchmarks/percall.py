"""Per-call cost: CPU time per call and median latency of main_balance (a small answer) and
investments_history (100 records), and throughput with 64 concurrent callers, for txc_async, a
hand-written aiohttp + json + hmac client (answers left as dicts), and ccxt's async client when it
is installed. The sandbox serves from another process with its limits lifted; contenders
alternate round by round, and medians are reported.

    python benchmarks/percall.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import hmac
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp

import txc_async
from txc_async import RateLimit

try:
    from benchmarks._common import KEYS, machine, median, start_sandbox, table
except ImportError:  # run as a script from the benchmarks folder
    from _common import KEYS, machine, median, start_sandbox, table  # type: ignore[no-redef]

BALANCE = "/api/v4/main-account/balance"
INVESTMENTS = "/api/v4/main-account/smart/investments"
UNLIMITED = {scope: RateLimit(10**9, 1.0) for scope in txc_async.DEFAULT_RATE_LIMITS}


class HandWritten:
    """What a careful user writes by hand: one session, compact JSON, base64, HMAC-SHA512."""

    def __init__(self, base_url: str, key: str, secret: str) -> None:
        self.base_url = base_url
        self.key = key
        self.secret = secret.encode()
        self.session = aiohttp.ClientSession()
        self.last_nonce = 0

    async def post(self, path: str, params: dict[str, Any]) -> Any:
        nonce = max(time.time_ns() // 1_000_000, self.last_nonce + 1)
        self.last_nonce = nonce
        body = json.dumps(
            {**params, "request": path, "nonce": str(nonce), "nonceWindow": True},
            separators=(",", ":"),
        ).encode()
        payload = base64.b64encode(body)
        headers = {
            "Content-Type": "application/json",
            "X-TXC-APIKEY": self.key,
            "X-TXC-PAYLOAD": payload.decode(),
            "X-TXC-SIGNATURE": hmac.new(self.secret, payload, hashlib.sha512).hexdigest(),
        }
        async with self.session.post(self.base_url + path, data=body, headers=headers) as resp:
            answer = json.loads(await resp.read())
            if resp.status != 200:
                raise RuntimeError(f"HTTP {resp.status}: {answer}")
            return answer

    async def close(self) -> None:
        await self.session.close()


Call = Callable[[], Awaitable[Any]]


async def contenders(url: str, key: str, secret: str) -> tuple[dict[str, dict[str, Call]], Any]:
    client = txc_async.Client(api_key=key, api_secret=secret, base_url=url,
                              rate_limits=UNLIMITED, limiter=txc_async.InProcessLimiter())
    hand = HandWritten(url, *KEYS["baseline"])
    calls: dict[str, dict[str, Call]] = {
        "txc_async": {
            "main_balance": client.main_balance,
            "investments_history": lambda: client.investments_history(limit=100),
        },
        "hand-written": {
            "main_balance": lambda: hand.post(BALANCE, {}),
            "investments_history": lambda: hand.post(INVESTMENTS, {"limit": 100}),
        },
    }
    closers: list[Callable[[], Awaitable[None]]] = [client.close, hand.close]
    try:
        import ccxt.async_support as ccxt_async
    except ImportError:
        print("ccxt is not installed (pip install 'txc_async[bench]'): its rows are skipped")
    else:
        # Its own rate limiter off, like the others; nonceWindow on, the setting ccxt documents
        # for concurrent requests (without it the server wants every nonce above the last one,
        # which concurrent requests on several connections break).
        exchange = ccxt_async.whitebit({
            "apiKey": KEYS["ccxt"][0], "secret": KEYS["ccxt"][1], "enableRateLimit": False,
            "options": {"nonceWindow": True},
        })
        exchange.urls["api"]["v4"] = {"public": url + "/api/v4/public", "private": url + "/api/v4"}
        calls["ccxt (whitebit)"] = {
            "main_balance": lambda: exchange.v4PrivatePostMainAccountBalance(),
            "investments_history": lambda: exchange.v4PrivatePostMainAccountSmartInvestments(
                {"limit": 100}
            ),
        }
        closers.append(exchange.close)

    async def close() -> None:
        for closer in closers:
            await closer()

    return calls, close


async def sequential(call: Call, count: int) -> tuple[float, float]:
    """CPU seconds per call and median latency of ``count`` calls one after another."""
    latencies = []
    cpu = time.process_time()
    for _ in range(count):
        began = time.perf_counter()
        await call()
        latencies.append(time.perf_counter() - began)
    return (time.process_time() - cpu) / count, median(latencies)


async def concurrent(call: Call, callers: int, each: int) -> tuple[float, int, float, float]:
    """Successful calls per second with ``callers`` coroutines each making ``each`` calls, how
    many calls failed, the client's CPU seconds per call, and the share of the wall time the
    client's process spent on the CPU (near 1.0: the client, not the server, sets the pace)."""
    failed = 0

    async def caller() -> None:
        nonlocal failed
        for _ in range(each):
            try:
                await call()
            except Exception:
                failed += 1

    began = time.perf_counter()
    cpu = time.process_time()
    await asyncio.gather(*(caller() for _ in range(callers)))
    cpu = time.process_time() - cpu
    wall = time.perf_counter() - began
    return (callers * each - failed) / wall, failed, cpu / (callers * each), cpu / wall


def answer_size(answer: Any) -> int:
    """Tickers of a balance or records of an investments page, whatever the contender's type."""
    if isinstance(answer, txc_async.InvestmentsPage):
        return len(answer.records)
    if isinstance(answer, dict) and "records" in answer:
        return len(answer["records"])
    return len(answer)


async def main(quick: bool) -> dict[str, Any]:
    rounds, count = (5, 100) if quick else (25, 200)
    callers, each = 64, (5 if quick else 15)
    server = await start_sandbox()
    calls, close = await contenders(server.url, server.api_key, server.api_secret)
    figures: dict[str, Any] = {}
    try:
        for name, ops in calls.items():  # warm up connections and caches
            for operation, call in ops.items():
                for _ in range(20):
                    answer = await call()
                # Every contender must get the same full answer: 5 tickers, 100 records.
                expected = 100 if operation == "investments_history" else 5
                if answer_size(answer) != expected:
                    raise RuntimeError(f"{name} {operation}: {answer_size(answer)} items, "
                                       f"expected {expected}")
        for operation in ("main_balance", "investments_history"):
            cpu: dict[str, list[float]] = {name: [] for name in calls}
            latency: dict[str, list[float]] = {name: [] for name in calls}
            order = list(calls)
            for round_number in range(rounds):
                # Alternate the order round by round, and let the server settle in between, so
                # that drift and the other process's work weigh on every contender alike.
                for name in order if round_number % 2 == 0 else order[::-1]:
                    c, lat = await sequential(calls[name][operation], count)
                    cpu[name].append(c)
                    latency[name].append(lat)
                    await asyncio.sleep(0.05)
            figures[operation] = {
                name: (median(cpu[name]), median(latency[name])) for name in calls
            }
        throughput: dict[str, list[float]] = {name: [] for name in calls}
        busy_cpu: dict[str, list[float]] = {name: [] for name in calls}
        busy_share: dict[str, list[float]] = {name: [] for name in calls}
        failures: dict[str, int] = dict.fromkeys(calls, 0)
        throughput_rounds = min(rounds, 11)
        order = list(calls)
        for round_number in range(throughput_rounds):
            for name in order if round_number % 2 == 0 else order[::-1]:
                rate, failed, cpu_per_call, share = await concurrent(
                    calls[name]["main_balance"], callers, each
                )
                throughput[name].append(rate)
                busy_cpu[name].append(cpu_per_call)
                busy_share[name].append(share)
                failures[name] += failed
                # Let the nonce counters come back to the clock between rounds.
                await asyncio.sleep(callers * each / 1000)
        figures["throughput"] = {name: median(v) for name, v in throughput.items()}
        figures["throughput_cpu"] = {name: median(v) for name, v in busy_cpu.items()}
        figures["throughput_busy"] = {name: median(v) for name, v in busy_share.items()}
        figures["failures"] = failures
    finally:
        await close()
        await server.close()

    print(f"per-call cost against the sandbox in another process; {machine()}")
    print(f"{rounds} rounds of {count} sequential calls, contenders alternating; medians")
    rows = []
    for operation in ("main_balance", "investments_history"):
        for name, (c, lat) in figures[operation].items():
            rows.append((operation, name, f"{c * 1e6:,.0f} µs", f"{lat * 1e3:.2f} ms"))
    print(table(rows, ("operation", "client", "CPU per call", "median latency"),
                lambda i: "<" if i < 2 else ">"))
    print(f"throughput, main_balance, {callers} concurrent callers, {throughput_rounds} rounds "
          f"of {callers * each:,} calls; medians (client CPU busy: client CPU time / wall time)")
    total = throughput_rounds * callers * each
    for name, value in figures["throughput"].items():
        failed = figures["failures"][name]
        note = f"  ({failed:,} of {total:,} calls refused)" if failed else ""
        print(f"  {name:20} {value:>10,.0f} successful calls/s  client CPU "
              f"{figures['throughput_cpu'][name] * 1e6:4.0f} µs per call, busy "
              f"{figures['throughput_busy'][name]:4.0%}{note}")
    hand_small = figures["main_balance"]["hand-written"][0]
    hand_big = figures["investments_history"]["hand-written"][0]
    ours_small = figures["main_balance"]["txc_async"][0]
    ours_big = figures["investments_history"]["txc_async"][0]
    print("ratios, txc_async to hand-written:")
    checks = [
        ("CPU per call, main_balance", ours_small / hand_small, 1.15, True),
        ("CPU per call, investments_history (100)", ours_big / hand_big, 1.0, True),
        ("throughput, 64 callers", figures["throughput"]["txc_async"]
         / figures["throughput"]["hand-written"], 0.9, False),
    ]
    for label, ratio, target, lower in checks:
        met = ratio <= target if lower else ratio >= target
        sign = "<=" if lower else ">="
        print(f"  {label:42} {ratio:5.2f}x  (target {sign} {target:.2f}x: "
              f"{'met' if met else 'MISSED'})")
    if "ccxt (whitebit)" in calls:
        print("ratios, txc_async to ccxt:")
        for operation in ("main_balance", "investments_history"):
            ratio = figures[operation]["txc_async"][0] / figures[operation]["ccxt (whitebit)"][0]
            print(f"  CPU per call, {operation:28} {ratio:5.2f}x")
        ratio = figures["throughput"]["txc_async"] / figures["throughput"]["ccxt (whitebit)"]
        print(f"  throughput, 64 callers{'':20} {ratio:5.2f}x")
    figures["checks"] = checks
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    asyncio.run(main(parser.parse_args().quick))
