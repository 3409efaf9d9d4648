"""Per-call cost: CPU time per call and median latency of main_balance (a small answer),
investments_history (100 records), create_limit_order (a signed write: a limit order that rests
on the sandbox's book) and orderbook (a public read of up to 100 levels a side), and throughput with
64 concurrent callers, for txc_async and four baselines measured in the same run:

- the leanest typed client a user could write: one aiohttp session, a msgspec encoder, cached
  msgspec ``Decoder``s of structs with ``Decimal`` money, no checks, no limiter, no retries (the
  ceiling for typed answers);
- the floor: the same signed aiohttp exchange with the answer left undecoded (bytes);
- a hand-written aiohttp + json + hmac client (answers left as dicts, money as strings);
- ccxt's async client, when it is installed.

The sandbox serves from another process with its limits lifted; each contender takes turns call
by call with the lean client alone (``paired``), the pairs following each other round by round,
and medians are reported. The whole run is made once on asyncio's event loop and once on
uvloop's, the passes alternating too.

    python benchmarks/percall.py [--quick] [--json PATH]

``--json PATH`` also writes the figures as JSON (``benchmarks/chart.py`` draws them).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import hmac
import json
import random
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any

import aiohttp
import msgspec
from yarl import URL

import txc_async
from txc_async import RateLimit
from txc_async._models_generated import schemas

try:
    from benchmarks._common import (
        KEYS_PER_CONTENDER,
        contender_keys,
        load,
        machine,
        median,
        start_sandbox_process,
        table,
    )
except ImportError:  # run as a script from the benchmarks folder
    from _common import (  # type: ignore[no-redef]
        KEYS_PER_CONTENDER,
        contender_keys,
        load,
        machine,
        median,
        start_sandbox_process,
        table,
    )

try:
    import uvloop
except ImportError:  # pragma: no cover - the dev extra installs it
    uvloop = None

BALANCE = "/api/v4/main-account/balance"
INVESTMENTS = "/api/v4/main-account/smart/investments"
ORDER = "/api/v4/order/new"
ORDERBOOK = "/api/v4/public/orderbook/BTC_USDT"
#: The order every contender places: a buy far under the sandbox's BTC price, so that it rests.
ORDER_PARAMS = {"market": "BTC_USDT", "side": "buy", "amount": "0.001", "price": "30000"}
#: Levels per side of the order book read.
DEPTH = 100
#: The trading balance every key starts with: enough for every order of a run to rest.
TRADE_BALANCES = {"USDT": Decimal("1000000000000"), "BTC": Decimal("1000000")}
UNLIMITED = {scope: RateLimit(10**9, 1.0) for scope in txc_async.DEFAULT_RATE_LIMITS}
OPERATIONS = ("main_balance", "investments_history", "create_limit_order", "orderbook")
OURS, LEAN, FLOOR, HAND, CCXT = (
    "txc_async", "lean typed msgspec", "floor: signed exchange, undecoded", "hand-written json",
    "ccxt (whitebit)",
)
#: Targets of the client against the lean typed code of the same run (ratio, lower is better).
TARGETS = {"main_balance": 1.03, "investments_history": 1.03, "create_limit_order": 1.03,
           "orderbook": 1.03, "throughput": 1.0}

Call = Callable[[], Awaitable[Any]]
#: Per operation, one call per API key of the contender.
Calls = dict[str, list[Call]]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class HandWritten:
    """What a careful user writes by hand: one session, compact JSON, base64, HMAC-SHA512."""

    def __init__(
        self, session: aiohttp.ClientSession, base_url: str, key: str, secret: str
    ) -> None:
        self.session = session
        self.base_url = base_url
        self.key = key
        self.secret = secret.encode()
        self.last_nonce = 0

    async def post(self, path: str, params: dict[str, Any]) -> Any:
        nonce = max(_now_ms(), self.last_nonce + 1)
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

    async def get(self, path: str, params: dict[str, str]) -> Any:
        async with self.session.get(self.base_url + path, params=params) as resp:
            answer = json.loads(await resp.read())
            if resp.status != 200:
                raise RuntimeError(f"HTTP {resp.status}: {answer}")
            return answer


class LeanBalance(msgspec.Struct):
    """One balance entry, as the lean client decodes it."""

    main_balance: Decimal


_encode = msgspec.json.Encoder().encode
_decode_balance = msgspec.json.Decoder(dict[str, LeanBalance]).decode
# The same page struct as the library's: the answers hold the same Decimals and records.
_decode_investments = msgspec.json.Decoder(txc_async.InvestmentsPage).decode
# The same answer structs as the library's generated ones (camelCase names, Decimal money).
_decode_order = msgspec.json.Decoder(schemas.OrderResponse).decode
_decode_orderbook = msgspec.json.Decoder(schemas.OrderbookResponse).decode


def _undecoded(body: bytes) -> bytes:
    return body


class LeanTyped:
    """The leanest typed client: one session, prebuilt URLs, a msgspec encoder and cached
    decoders; no checks, no limiter, no retries, no timeout of its own."""

    def __init__(self, session: aiohttp.ClientSession, base_url: str, key: str, secret: str,
                 *, decode: bool = True) -> None:
        self.session = session
        self.urls = {path: URL(base_url + path) for path in (BALANCE, INVESTMENTS, ORDER)}
        self.orderbook_url = URL(base_url + ORDERBOOK).with_query(limit=str(DEPTH))
        self.key = key
        self.secret = secret.encode()
        self.last_nonce = 0
        self.decode_balance = _decode_balance if decode else _undecoded
        self.decode_investments = _decode_investments if decode else _undecoded
        self.decode_order = _decode_order if decode else _undecoded
        self.decode_orderbook = _decode_orderbook if decode else _undecoded

    async def post(self, path: str, params: dict[str, Any], decode: Callable[[bytes], Any]) -> Any:
        now = _now_ms()
        nonce = self.last_nonce = now if now > self.last_nonce else self.last_nonce + 1
        body = _encode({**params, "request": path, "nonce": str(nonce), "nonceWindow": True})
        payload = base64.b64encode(body)
        headers = {
            "Content-Type": "application/json",
            "X-TXC-APIKEY": self.key,
            "X-TXC-PAYLOAD": payload.decode("ascii"),
            "X-TXC-SIGNATURE": hmac.new(self.secret, payload, hashlib.sha512).hexdigest(),
        }
        async with self.session.post(self.urls[path], data=body, headers=headers) as resp:
            return decode(await resp.read())

    def main_balance(self) -> Awaitable[Any]:
        return self.post(BALANCE, {}, self.decode_balance)

    def investments_history(self) -> Awaitable[Any]:
        return self.post(INVESTMENTS, {"limit": 100, "offset": 0}, self.decode_investments)

    def create_limit_order(self) -> Awaitable[Any]:
        return self.post(ORDER, ORDER_PARAMS, self.decode_order)

    async def orderbook(self) -> Any:
        async with self.session.get(self.orderbook_url) as resp:
            return self.decode_orderbook(await resp.read())


async def contenders(
    url: str, *, with_ccxt: bool
) -> tuple[dict[str, Calls], Callable[[], Awaitable[None]]]:
    """Every contender's calls, one per API key, and a function that closes them all."""
    closers: list[Callable[[], Awaitable[None]]] = []
    calls: dict[str, Calls] = {}

    # Every client object shares one limiter, as one application would, and makes its own HTTP
    # session, as the README's usage does (a session the client makes writes its requests on
    # aiohttp's connections; an injected one goes through ``ClientSession.request``).
    limiter = txc_async.InProcessLimiter()
    clients = [
        txc_async.Client(api_key=key, api_secret=secret, base_url=url, rate_limits=UNLIMITED,
                         limiter=limiter)
        for key, secret in contender_keys("txc")
    ]
    order = {**ORDER_PARAMS, "amount": Decimal(ORDER_PARAMS["amount"]),
             "price": Decimal(ORDER_PARAMS["price"])}
    calls[OURS] = {
        "main_balance": [client.main_balance for client in clients],
        "investments_history": [
            partial(client.investments_history, limit=100) for client in clients
        ],
        "create_limit_order": [partial(client.spot.create_limit_order, **order)
                               for client in clients],
        "orderbook": [partial(client.market.orderbook, market="BTC_USDT", limit=DEPTH)
                      for client in clients],
    }
    closers.extend(client.close for client in clients)

    lean_session = aiohttp.ClientSession()
    lean = [LeanTyped(lean_session, url, *pair) for pair in contender_keys("lean")]
    calls[LEAN] = {
        "main_balance": [c.main_balance for c in lean],
        "investments_history": [c.investments_history for c in lean],
        "create_limit_order": [c.create_limit_order for c in lean],
        "orderbook": [c.orderbook for c in lean],
    }
    closers.append(lean_session.close)

    floor_session = aiohttp.ClientSession()
    floor = [LeanTyped(floor_session, url, *pair, decode=False) for pair in contender_keys("floor")]
    calls[FLOOR] = {
        "main_balance": [c.main_balance for c in floor],
        "investments_history": [c.investments_history for c in floor],
        "create_limit_order": [c.create_limit_order for c in floor],
        "orderbook": [c.orderbook for c in floor],
    }
    closers.append(floor_session.close)

    hand_session = aiohttp.ClientSession()
    hand = [HandWritten(hand_session, url, *pair) for pair in contender_keys("hand")]
    calls[HAND] = {
        "main_balance": [partial(h.post, BALANCE, {}) for h in hand],
        "investments_history": [
            partial(h.post, INVESTMENTS, {"limit": 100, "offset": 0}) for h in hand
        ],
        "create_limit_order": [partial(h.post, ORDER, ORDER_PARAMS) for h in hand],
        "orderbook": [partial(h.get, ORDERBOOK, {"limit": str(DEPTH)}) for h in hand],
    }
    closers.append(hand_session.close)

    if with_ccxt:
        import ccxt.async_support as ccxt_async

        exchanges = []
        for key, secret in contender_keys("ccxt"):
            # Its own rate limiter off, like the others; nonceWindow on, the setting ccxt
            # documents for concurrent requests. ccxt keeps one HTTP session per instance.
            exchange = ccxt_async.whitebit({
                "apiKey": key, "secret": secret, "enableRateLimit": False,
                "options": {"nonceWindow": True},
            })
            exchange.urls["api"]["v4"] = {
                "public": url + "/api/v4/public", "private": url + "/api/v4",
            }
            exchanges.append(exchange)
            closers.append(exchange.close)
        calls[CCXT] = {
            "main_balance": [e.v4PrivatePostMainAccountBalance for e in exchanges],
            "investments_history": [
                partial(e.v4PrivatePostMainAccountSmartInvestments, {"limit": 100, "offset": 0})
                for e in exchanges
            ],
            "create_limit_order": [partial(e.v4PrivatePostOrderNew, ORDER_PARAMS)
                                   for e in exchanges],
            "orderbook": [
                partial(e.v4PublicGetOrderbookMarket, {"market": "BTC_USDT", "limit": DEPTH})
                for e in exchanges
            ],
        }

    async def close() -> None:
        for closer in closers:
            await closer()

    return calls, close


async def interleaved(calls: dict[str, Call], count: int,
                      seed: int = 0) -> dict[str, tuple[float, float]]:
    """CPU seconds per call and median latency of ``count`` sequential calls of each
    contender, the contenders taking turns call by call in an order shuffled every turn
    (``seed``): a slower spell of a shared host weighs on every contender alike, where rounds
    of one contender's calls after another's would each catch a different spell; and each
    contender follows every other about as often (a call after one of the same code finds the
    caches warmer)."""
    names = list(calls)
    shuffle = random.Random(seed).shuffle
    cpu = dict.fromkeys(names, 0.0)
    latencies: dict[str, list[float]] = {name: [] for name in names}
    clock = time.process_time
    wall = time.perf_counter
    for _ in range(count):
        shuffle(names)
        for name in names:
            began, used = wall(), clock()
            await calls[name]()
            cpu[name] += clock() - used
            latencies[name].append(wall() - began)
    return {name: (cpu[name] / count, median(latencies[name])) for name in calls}


async def paired(calls: dict[str, Calls], name: str, operation: str, count: int,
                 seed: int) -> dict[str, tuple[float, float]]:
    """``interleaved`` for two contenders: ``name`` and the lean client, with no other.

    Every ratio to the lean client is measured this way, each contender in its own pair,
    because which other contenders take turns changes the figures: a contender whose code
    another one also runs finds it warmer in the CPU's caches, and reads cheaper. The lean
    client shares aiohttp's ``session.post`` path with the floor, the hand-written client and
    ccxt; with all five taking turns, it read 2-4 % cheaper against txc_async than in a pair,
    and a second client running either side's code moved the ratio by 2-4 % towards that
    side (``benchmarks/sharing.py``). In a pair, each of the two follows the other as often as
    itself."""
    return await interleaved(
        {LEAN: calls[LEAN][operation][0], name: calls[name][operation][0]}, count, seed
    )


async def concurrent(calls: list[Call], callers: int, each: int) -> tuple[float, int, float, float]:
    """Successful calls per second with ``callers`` coroutines each making ``each`` calls, spread
    over the API keys of ``calls`` (caller i uses key i mod keys), how many calls failed, the
    client's CPU seconds per call, and the share of the wall time the client's process spent on
    the CPU (near 1.0: the client, not the server, sets the pace)."""
    failed = 0

    async def caller(call: Call) -> None:
        nonlocal failed
        for _ in range(each):
            try:
                await call()
            except Exception:
                failed += 1

    began = time.perf_counter()
    cpu = time.process_time()
    await asyncio.gather(*(caller(calls[i % len(calls)]) for i in range(callers)))
    cpu = time.process_time() - cpu
    wall = time.perf_counter() - began
    return (callers * each - failed) / wall, failed, cpu / (callers * each), cpu / wall


def answer_size(answer: Any) -> int:
    """Tickers of a balance, records of an investments page, levels of an order book's side, or
    1 for a placed order, whatever the contender's type."""
    if isinstance(answer, bytes):
        answer = json.loads(answer)
    if isinstance(answer, txc_async.InvestmentsPage):
        return len(answer.records)
    if isinstance(answer, schemas.OrderResponse):
        return 1
    if isinstance(answer, schemas.OrderbookResponse):
        return len(answer.asks or ())
    if isinstance(answer, dict) and "asks" in answer:
        return len(answer["asks"])
    if isinstance(answer, dict) and ("orderId" in answer or "order_id" in answer):
        return 1
    if isinstance(answer, dict) and "records" in answer:
        return len(answer["records"])
    return len(answer)


class Samples:
    """Every round's figures of one event loop, pooled across its passes."""

    def __init__(self) -> None:
        self.cpu: dict[tuple[str, str], list[float]] = {}
        self.latency: dict[tuple[str, str], list[float]] = {}
        self.rate: dict[str, list[float]] = {}
        self.busy_cpu: dict[str, list[float]] = {}
        self.busy_share: dict[str, list[float]] = {}
        self.failed: dict[str, int] = {}
        self.calls: dict[str, int] = {}
        self.bodies: dict[str, bytes] = {}
        #: Per operation and contender, its CPU per call over the lean client's in each of
        #: their pairs (see ``paired``).
        self.ratio: dict[tuple[str, str], list[float]] = {}


async def one_pass(url: str, samples: Samples, *, rounds: int, count: int, callers: int,
                   each: int, throughput_rounds: int, with_ccxt: bool) -> None:
    calls, close = await contenders(url, with_ccxt=with_ccxt)
    sizes: dict[str, int] = {}
    try:
        for name, ops in calls.items():  # warm up connections and caches
            for operation, per_key in ops.items():
                for call in per_key:
                    for _ in range(3):
                        answer = await call()
                    # Every contender must get the same full answer: 5 tickers, 100 records,
                    # an order, and as many levels as the first got (the book the sandbox's
                    # makers quote, up to DEPTH).
                    expected = {"investments_history": 100, "create_limit_order": 1,
                                "main_balance": 5}.get(operation) or sizes.setdefault(
                                    operation, answer_size(answer))
                    if answer_size(answer) != expected:
                        raise RuntimeError(f"{name} {operation}: {answer_size(answer)} items, "
                                           f"expected {expected}")
                    if name == FLOOR:
                        samples.bodies[operation] = answer
        order = list(calls)
        others = [name for name in order if name != LEAN]
        for operation in OPERATIONS:
            for round_number in range(rounds):
                # Each contender takes turns with the lean client alone, call by call (see
                # ``paired``); the pairs' order rotates round by round, so that drift and the
                # other processes' work weigh on every contender alike.
                shift = round_number % len(others)
                for name in others[shift:] + others[:shift]:
                    figures = await paired(calls, name, operation, count, round_number)
                    for who, (c, lat) in figures.items():
                        samples.cpu.setdefault((operation, who), []).append(c)
                        samples.latency.setdefault((operation, who), []).append(lat)
                    samples.ratio.setdefault((operation, name), []).append(
                        figures[name][0] / figures[LEAN][0]
                    )
                    await asyncio.sleep(0.05)
        for round_number in range(throughput_rounds):
            for name in order if round_number % 2 == 0 else order[::-1]:
                rate, failed, cpu_per_call, share = await concurrent(
                    calls[name]["main_balance"], callers, each
                )
                samples.rate.setdefault(name, []).append(rate)
                samples.busy_cpu.setdefault(name, []).append(cpu_per_call)
                samples.busy_share.setdefault(name, []).append(share)
                samples.failed[name] = samples.failed.get(name, 0) + failed
                samples.calls[name] = samples.calls.get(name, 0) + callers * each
                await asyncio.sleep(0.1)
    finally:
        await close()


class TextPlan(msgspec.Struct, rename="camel"):
    """A plan with its money left as the wire's decimal strings."""

    id: str
    ticker: str
    status: txc_async.PlanStatus
    percent: str
    duration: int
    interest_ticker: str
    interest_ratio: str
    min_investment: str
    max_investment: str
    max_possible_investment: str


class TextInvestment(msgspec.Struct, rename="camel"):
    """An investment with its money left as strings."""

    id: str
    plan: TextPlan
    status: txc_async.InvestmentStatus
    created: int
    updated: int
    payment_time: int
    amount: str
    interest_paid: str


class TextPage(msgspec.Struct):
    """A page of investments with the money left as strings."""

    offset: int
    limit: int
    records: list[TextInvestment]


def decode_costs(bodies: dict[str, bytes], repeat: int) -> dict[str, float]:
    """Seconds to decode each answer alone: as the typed structs, and as a twin with the money
    left as strings (the difference is building the Decimals)."""

    text_decode = msgspec.json.Decoder(TextPage).decode
    body = bodies["investments_history"]
    found = {}
    for label, decode in (("typed", _decode_investments), ("text", text_decode)):
        best = float("inf")
        for _ in range(5):
            began = time.process_time()
            for _ in range(repeat):
                decode(body)
            best = min(best, (time.process_time() - began) / repeat)
        found[label] = best
    return found


def report(loop: str, samples: Samples, names: list[str], rounds: int, count: int,
           callers: int, each: int, throughput_rounds: int) -> dict[str, Any]:
    figures: dict[str, Any] = {
        op: {n: (median(samples.cpu[op, n]), median(samples.latency[op, n])) for n in names}
        for op in OPERATIONS
    }
    figures["throughput"] = {n: median(samples.rate[n]) for n in names}
    figures["throughput_cpu"] = {n: median(samples.busy_cpu[n]) for n in names}
    # Every contender's CPU per call over the lean client's: the median of its pairs' ratios.
    figures["to_lean"] = {
        op: {n: median(samples.ratio[op, n]) for n in names if n != LEAN} for op in OPERATIONS
    }
    figures["to_other"] = {}
    print(f"\n-- event loop: {loop} --")
    print(f"{rounds} rounds of {count} sequential calls per contender, each contender taking "
          "turns call by call with the lean client alone (the lean client's figures pool its "
          "pairs); medians")
    rows = []
    for operation in OPERATIONS:
        for name in names:
            c, lat = figures[operation][name]
            rows.append((operation, name, f"{c * 1e6:,.0f} µs", f"{lat * 1e3:.2f} ms"))
    print(table(rows, ("operation", "client", "CPU per call", "median latency"),
                lambda i: "<" if i < 2 else ">"))
    print(f"throughput, main_balance, {callers} concurrent callers spread over "
          f"{KEYS_PER_CONTENDER} API keys per contender ({callers // KEYS_PER_CONTENDER} callers "
          f"per key; one key signs at most ~1,000 requests/s: millisecond nonces, each used "
          f"once, which would cap a sustained run on one key), {throughput_rounds} rounds of "
          f"{callers * each:,} calls; medians (busy: client CPU time / wall time)")
    for name in names:
        failed = samples.failed[name]
        note = f"  ({failed:,} of {samples.calls[name]:,} calls refused)" if failed else ""
        print(f"  {name:34} {figures['throughput'][name]:>8,.0f} successful calls/s  client CPU "
              f"{figures['throughput_cpu'][name] * 1e6:4.0f} µs per call, busy "
              f"{median(samples.busy_share[name]):4.0%}{note}")
    checks = []
    print(f"ratios, {OURS} to the lean typed client (the ceiling for typed answers):")
    for key, label in (("main_balance", "CPU per call, main_balance"),
                       ("investments_history", "CPU per call, investments_history (100)"),
                       ("create_limit_order", "CPU per call, create_limit_order"),
                       ("orderbook", f"CPU per call, orderbook ({DEPTH} levels)"),
                       ("throughput", f"throughput, {callers} callers")):
        if key == "throughput":
            ratio = figures[key][OURS] / figures[key][LEAN]
            met = ratio >= TARGETS[key]
            sign = ">="
        else:
            # The median of the rounds' ratios, each from one pair (see ``paired``).
            ratio = median(samples.ratio[key, OURS])
            met = ratio <= TARGETS[key]
            sign = "<="
        checks.append((loop, label, ratio, met))
        print(f"  {label:42} {ratio:5.3f}x  (target {sign} {TARGETS[key]:.2f}x: "
              f"{'met' if met else 'MISSED'})")
    ratio = figures["throughput_cpu"][OURS] / figures["throughput_cpu"][LEAN]
    print(f"  {'client CPU per call with ' + str(callers) + ' callers':42} {ratio:5.3f}x  "
          "(what sets the throughput once the client's process is busy)")
    for other in (HAND, CCXT):
        if other not in names:
            continue
        print(f"ratios, {OURS} to {other}:")
        to_other = figures["to_other"][other] = {}
        for operation in OPERATIONS:
            # Each against the lean client in its own pair, round by round.
            ratio = to_other[operation] = median([
                ours / theirs for ours, theirs in zip(
                    samples.ratio[operation, OURS], samples.ratio[operation, other], strict=True
                )
            ])
            print(f"  CPU per call, {operation:28} {ratio:5.2f}x")
        ratio = to_other["throughput"] = figures["throughput"][OURS] / figures["throughput"][other]
        print(f"  throughput, {callers} callers{'':19} {ratio:5.2f}x")
    print("what bounds the CPU per call (the floor of ClientSession.request: signing, "
          "aiohttp's exchange through session.post, reading bytes; txc_async's own session "
          "writes on aiohttp's connections, below that floor):")
    for operation in OPERATIONS:
        floor = figures[operation][FLOOR][0]
        lean = figures[operation][LEAN][0]
        ours = figures[operation][OURS][0]
        print(f"  {operation:20} floor {floor * 1e6:4.0f} µs, lean decoding "
              f"{(lean - floor) * 1e6:+4.0f} µs, txc_async "
              f"{(ours - lean) * 1e6:+4.0f} µs against lean "
              f"(floor = {floor / ours:.0%} of txc_async's CPU)")
    figures["checks"] = checks
    return figures


def as_json(figures: dict[str, Any], *, quick: bool, passes: int, rounds: int, count: int,
            callers: int, each: int, throughput_rounds: int, conditions: dict[str, str]
            ) -> dict[str, Any]:
    """The run's figures in the shape ``benchmarks/chart.py`` reads: per event loop, each
    contender's CPU per call (µs), median latency (ms) and throughput (calls/s), and the
    ratios measured in the run (txc_async's to each contender, and each contender's to the lean
    client)."""
    loops = {}
    for loop, found in figures.items():
        if loop == "decode":
            continue
        names = list(found["throughput"])
        loops[loop] = {
            "cpu_per_call_us": {
                op: {n: found[op][n][0] * 1e6 for n in names} for op in OPERATIONS
            },
            "median_latency_ms": {
                op: {n: found[op][n][1] * 1e3 for n in names} for op in OPERATIONS
            },
            "throughput_calls_per_s": found["throughput"],
            "throughput_cpu_per_call_us": {
                n: found["throughput_cpu"][n] * 1e6 for n in names
            },
            # CPU per call over the lean client's, each the median of its pairs' ratios;
            # throughput: the contender's calls per second over the lean client's.
            "to_lean": {
                n: {
                    **{op: found["to_lean"][op][n] for op in OPERATIONS},
                    "throughput": found["throughput"][n] / found["throughput"][LEAN],
                }
                for n in names if n != LEAN
            },
            "txc_async_to": found["to_other"],
            "targets": {
                label: {"ratio": ratio, "met": met} for _, label, ratio, met in found["checks"]
            },
        }
    return {
        "benchmark": "percall",
        "recorded": datetime.now(UTC).isoformat(timespec="seconds"),
        "mode": "quick" if quick else "full",
        **conditions,
        "txc_async": txc_async.__version__,
        "run": {
            "passes": passes, "rounds": rounds * passes, "sequential_calls_per_round": count,
            "callers": callers, "keys_per_contender": KEYS_PER_CONTENDER,
            "calls_per_throughput_round": callers * each,
            "throughput_rounds": throughput_rounds * passes,
        },
        "contenders": {"ours": OURS, "lean": LEAN, "floor": FLOOR, "hand": HAND, "ccxt": CCXT},
        "targets": TARGETS,
        "loops": loops,
        "decode_investments_us": {
            label: seconds * 1e6 for label, seconds in figures["decode"].items()
        },
    }


def main(quick: bool, json_path: Path | None = None) -> dict[str, Any]:
    passes, rounds, count = (1, 4, 100) if quick else (2, 8, 200)
    callers, each = 64, (10 if quick else 40)
    throughput_rounds = 2 if quick else 4
    try:
        import ccxt.async_support  # noqa: F401
    except ImportError:
        with_ccxt = False
        print("ccxt is not installed (pip install 'txc_async[bench]'): its rows are skipped")
    else:
        with_ccxt = True
    loops: list[tuple[str, Callable[[], asyncio.AbstractEventLoop]]] = [
        ("asyncio", asyncio.new_event_loop)
    ]
    if uvloop is not None:
        loops.append(("uvloop", uvloop.new_event_loop))
    else:
        print("uvloop is not installed (pip install 'txc_async[dev]'): its pass is skipped")
    samples = {name: Samples() for name, _ in loops}
    conditions = {"machine": machine(), "load_before": load()}
    print(f"per-call cost against the sandbox in another process; {conditions['machine']}; "
          f"{conditions['load_before']}")
    server = start_sandbox_process(trade_balances=TRADE_BALANCES)
    try:
        for number in range(passes):
            # The passes alternate between the loops too, so that drift weighs on both.
            for name, factory in loops if number % 2 == 0 else loops[::-1]:
                with asyncio.Runner(loop_factory=factory) as runner:
                    runner.run(one_pass(
                        server.url, samples[name], rounds=rounds, count=count, callers=callers,
                        each=each, throughput_rounds=throughput_rounds, with_ccxt=with_ccxt,
                    ))
    finally:
        server.close()
    names = [OURS, LEAN, FLOOR, HAND] + ([CCXT] if with_ccxt else [])
    figures = {
        loop: report(loop, samples[loop], names, rounds * passes, count, callers, each,
                     throughput_rounds * passes)
        for loop, _ in loops
    }
    if "uvloop" in figures:
        base, fast = figures["asyncio"], figures["uvloop"]
        print("\nuvloop against asyncio's loop, per contender (CPU per call: lower is better; "
              "throughput: higher is better; the passes alternate, each its own medians)")
        for name in names:
            cpu = "  ".join(
                f"{operation} {fast[operation][name][0] / base[operation][name][0]:4.2f}x"
                for operation in OPERATIONS
            )
            print(f"  {name:34} CPU {cpu}  throughput "
                  f"{fast['throughput'][name] / base['throughput'][name]:4.2f}x")
    costs = decode_costs(samples["asyncio"].bodies, 200 if quick else 1000)
    decimals = costs["typed"] - costs["text"]
    print(f"\ndecoding the 100-record investments answer alone: {costs['typed'] * 1e6:.0f} µs "
          f"typed with Decimal money, {costs['text'] * 1e6:.0f} µs with the money left as "
          f"strings: {decimals * 1e6:.0f} µs ({decimals / costs['typed']:.0%}) is building the "
          "Decimals, which no client returning Decimal can avoid")
    conditions["load_after"] = load()
    print(conditions["load_after"])
    figures["decode"] = costs
    if json_path is not None:
        document = as_json(
            figures, quick=quick, passes=passes, rounds=rounds, count=count, callers=callers,
            each=each, throughput_rounds=throughput_rounds, conditions=conditions,
        )
        json_path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
        print(f"figures written to {json_path}")
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path, metavar="PATH",
                        help="also write the figures as JSON to PATH")
    arguments = parser.parse_args()
    main(arguments.quick, arguments.json)
