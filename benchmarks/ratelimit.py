"""Rate-limit benchmark: bursts through each limiter to a local server that records arrivals.

A burst of several windows' budget goes through each contender; every request waits for its
limiter, then a random 0-30 ms (an uneven network), then reaches an arrival-counting server on
127.0.0.1 (another process). For each contender it prints the most arrivals the server saw in any
window against the limit, how many requests a strict server would have refused (its 429s), the
time from the first arrival to the last against the least the limit allows, and the sustained
rate. Contenders: txc_async's InProcessLimiter; aiolimiter.AsyncLimiter, the usual choice, as the
baseline; RedisLimiter from one process and from four processes sharing one budget (skipped when
redis-server is not installed). Then the cost of an admission when there is budget.

Then the whole client with its InProcessLimiter against a strict sliding-window server (another
process) in the scenarios that break limiters counting from the admission: loopback with 1 s and
10 s windows (efficiency), new connections held 300 ms by a proxy, a storm of concurrent refusals,
and a server tighter than the client's configured limit; for each, the most the server served in
any window against its limit, its refusals, the client's backoff steps and the efficiency.

A second part sends from separate processes through InProcessLimiter, SQLiteLimiter and
RedisLimiter: the restart case (a sender killed and another started at once on the same budget)
and a burst from two processes at once; ``--shared-only`` runs it (and the third) alone. A third
part sends two operations from two API keys that share one group budget, through each backend:
the group's peak and efficiency at the server, and the admission cost with a group.

    python benchmarks/ratelimit.py [--quick] [--shared-only]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import math
import os
import random
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
import aiolimiter  # noqa: E402
from yarl import URL  # noqa: E402

import txc_async  # noqa: E402
from tests.support.arrival_server import max_in_window, strict_refusals  # noqa: E402
from tests.support.redis_server import RedisServer, find_redis_server  # noqa: E402
from tests.support.strict_server import BALANCE, INVESTMENTS  # noqa: E402
from txc_async import InProcessLimiter, Limiter, Outcome, RateLimit, RedisLimiter  # noqa: E402
from txc_async._transports.base import RawResponse  # noqa: E402
from txc_async._transports.default import AiohttpTransport  # noqa: E402

MAX_NETWORK_DELAY = 0.03
#: The timeout each admitted request is counted with while in flight.
TIMEOUT = 10.0
THIS_PROGRAM = str(Path(__file__).resolve())


class JitteryTransport:
    """A client transport that sends each request after a random delay (0-30 ms by default),
    like an uneven network, so requests reach the server in another order than they were
    admitted. For runs of the whole client (the sandbox client tests use it)."""

    def __init__(self, seed: int, max_delay: float = MAX_NETWORK_DELAY) -> None:
        self._inner = AiohttpTransport()
        self._random = random.Random(seed)
        self._max_delay = max_delay

    async def send(self, method: str, url: URL, *, headers: Mapping[str, str] | None,
                   body: bytes | None, timeout: float) -> RawResponse:
        await asyncio.sleep(self._random.uniform(0, self._max_delay))
        return await self._inner.send(method, url, headers=headers, body=body, timeout=timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()


@dataclass
class Result:
    name: str
    limit: RateLimit
    arrivals: list[float]

    @property
    def requests(self) -> int:
        return len(self.arrivals)

    @property
    def peak(self) -> int:
        return max_in_window(self.arrivals, self.limit.per_seconds)

    @property
    def refused(self) -> int:
        return strict_refusals(self.arrivals, self.limit.max_requests, self.limit.per_seconds)

    @property
    def span(self) -> float:
        """First to last arrival at the server: start-up and the way back are not the
        limiter's doing."""
        return max(self.arrivals) - min(self.arrivals)

    @property
    def least(self) -> float:
        return (math.ceil(self.requests / self.limit.max_requests) - 1) * self.limit.per_seconds

    @property
    def rate(self) -> float:
        """Requests per second the server received after the first window's budget."""
        if self.span <= 0:
            return 0.0
        return (self.requests - self.limit.max_requests) / self.span


async def fire(hit_url: str, acquire: Callable[[], Awaitable[object]], count: int,
               seed: int, conclude: Callable[[Any], object] | None = None) -> None:
    """``count`` requests at once: each waits for ``acquire``, then the network delay, then
    reaches the server; ``conclude`` (a txc_async limiter's) is told of each answer."""
    rng = random.Random(seed)
    delays = [rng.uniform(0, MAX_NETWORK_DELAY) for _ in range(count)]
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

        async def one(delay: float) -> None:
            admission = await acquire()
            await asyncio.sleep(delay)
            async with session.post(hit_url) as answer:
                await answer.read()
            if conclude is not None:
                conclude(admission)

        await asyncio.gather(*(one(d) for d in delays))


def answered(limiter: Limiter) -> Callable[[Any], object]:
    """Tells ``limiter`` that an admitted request was answered."""
    return lambda admission: limiter.conclude(admission, Outcome.ANSWERED)


class ArrivalServerProcess:
    """The arrival-counting server in a process of its own, so the clients' work does not delay
    its clock readings."""

    def __init__(self) -> None:
        self.url = ""
        self._process: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> ArrivalServerProcess:
        self._process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.support.arrival_server", cwd=ROOT,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        )
        assert self._process.stdout is not None
        line = await asyncio.wait_for(self._process.stdout.readline(), 30)
        self.url = line.decode().strip()
        if not self.url.startswith("http://127.0.0.1:"):
            raise RuntimeError("the arrival server did not start")
        return self

    async def __aexit__(self, *exc: object) -> None:
        process = self._process
        if process is not None and process.stdin is not None:
            process.stdin.close()  # it serves until its stdin closes
            try:
                await asyncio.wait_for(process.wait(), 10)
            except TimeoutError:
                process.kill()
                await process.wait()

    def hit_url(self, budget: str) -> str:
        return f"{self.url}/hit/{budget}"

    async def arrivals(self, budget: str) -> list[float]:
        async with aiohttp.ClientSession() as session, session.get(
            f"{self.url}/arrivals"
        ) as answer:
            found: dict[str, list[float]] = json.loads(await answer.read())
        return found.get(budget, [])


async def in_process(server: ArrivalServerProcess, name: str, budget: str,
                     acquire: Callable[[], Awaitable[object]], limit: RateLimit,
                     count: int, conclude: Callable[[Any], object] | None = None) -> Result:
    await fire(server.hit_url(budget), acquire, count, seed=1, conclude=conclude)
    return Result(name, limit, await server.arrivals(budget))


async def redis_processes(server: ArrivalServerProcess, redis_url: str, limit: RateLimit,
                          count: int, processes: int) -> Result:
    """``count`` requests from ``processes`` worker processes, each with its own RedisLimiter on
    one budget; they start together once all are connected."""
    budget = f"redis{processes}"
    namespace = f"bench{os.getpid()}p{processes}"
    workers = [
        await asyncio.create_subprocess_exec(
            sys.executable, THIS_PROGRAM, "--worker", redis_url, namespace,
            server.hit_url(budget), str(count // processes), str(limit.max_requests),
            str(limit.per_seconds), str(seed),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        )
        for seed in range(processes)
    ]
    try:
        for worker in workers:
            assert worker.stdout is not None
            if await asyncio.wait_for(worker.stdout.readline(), 30) != b"ready\n":
                raise RuntimeError("a worker did not start")
        for worker in workers:
            assert worker.stdin is not None
            worker.stdin.write(b"go\n")
            await worker.stdin.drain()
        codes = await asyncio.wait_for(asyncio.gather(*(w.wait() for w in workers)), 120)
    finally:
        for worker in workers:
            if worker.returncode is None:
                worker.kill()
                await worker.wait()
    if any(codes):
        raise RuntimeError(f"a worker failed: exit codes {codes}")
    name = f"RedisLimiter, {processes} process" + ("es" if processes > 1 else "")
    return Result(name, limit, await server.arrivals(budget))


async def worker(redis_url: str, namespace: str, hit_url: str, count: int, limit: RateLimit,
                 seed: int) -> None:
    """One of the processes sharing a budget through Redis."""
    limiter = RedisLimiter(redis_url, namespace=namespace)
    try:
        warm = await limiter.acquire("warm-up", "public", RateLimit(10**6, 1), TIMEOUT)
        limiter.conclude(warm, Outcome.NOT_SENT)  # connected before go
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        await fire(hit_url, lambda: limiter.acquire("bench-key", "main_balance", limit, TIMEOUT),
                   count, seed, conclude=answered(limiter))
    finally:
        await limiter.aclose()


async def admission_cost(acquire: Callable[[], Awaitable[object]], rounds: int,
                         conclude: Callable[[Any], object] | None = None) -> float:
    """Microseconds per admission with budget to spare, awaited in a loop (and settled, for
    txc_async's limiters: an admission is not complete until its answer is recorded)."""
    began = time.perf_counter()
    for _ in range(rounds):
        admission = await acquire()
        if conclude is not None:
            conclude(admission)
    return (time.perf_counter() - began) / rounds * 1e6


# -- the client against a strict server: the in-process limiter's scenarios --------------------
#
# Each scenario runs the whole client (InProcessLimiter, the request pipeline, aiohttp) against a
# strict sliding-window server in another process, which refuses (429, not JSON) every ping past
# its limit in any window and counts only what it served; arrivals are read back from it.


class StrictServerProcess:
    """``tests.support.strict_server`` in a process of its own: ping under ``limit``, behind a proxy
    holding each new connection ``delay`` seconds, the first ``storm`` pings refused."""

    def __init__(self, limit: RateLimit, delay: float = 0.0, storm: int = 0,
                 group: RateLimit | None = None) -> None:
        self.args = ["--limit", str(limit.max_requests), str(limit.per_seconds),
                     "--delay", str(delay), "--storm", str(storm)]
        if group is not None:
            self.args += ["--group", str(group.max_requests), str(group.per_seconds)]
        self.url = self.direct_url = ""
        self._process: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> StrictServerProcess:
        self._process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.support.strict_server", *self.args, cwd=ROOT,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        )
        assert self._process.stdout is not None
        line = await asyncio.wait_for(self._process.stdout.readline(), 30)
        self.url, self.direct_url = line.decode().split()
        return self

    async def __aexit__(self, *exc: object) -> None:
        process = self._process
        if process is not None and process.stdin is not None:
            process.stdin.close()
            try:
                await asyncio.wait_for(process.wait(), 10)
            except TimeoutError:
                process.kill()
                await process.wait()

    async def arrivals(self, *paths: str) -> list[tuple[float, str]]:
        """The arrivals of ``paths`` (ping's by default), in the order they came."""
        async with aiohttp.ClientSession() as session, session.get(
            f"{self.direct_url}/_arrivals"
        ) as answer:
            found: dict[str, list[tuple[float, str]]] = json.loads(await answer.read())
        return sorted((moment, outcome) for path in paths or ("/api/v4/public/ping",)
                      for moment, outcome in found[path])


@dataclass
class Scenario:
    name: str
    server_limit: RateLimit
    configured: RateLimit
    calls: int
    accepted: list[float]
    refused: int
    failed: int
    events: int
    took: float
    learned: RateLimit

    @property
    def peak(self) -> int:
        return max_in_window(self.accepted, self.server_limit.per_seconds)

    @property
    def span(self) -> float:
        return max(self.accepted) - min(self.accepted) if self.accepted else 0.0

    @property
    def least(self) -> float:
        limit = self.server_limit
        return (math.ceil(len(self.accepted) / limit.max_requests) - 1) * limit.per_seconds

    @property
    def efficiency(self) -> float | None:
        """The least time the server's limit allows over the time taken (first to last served):
        the share of the limit's rate sustained."""
        if self.least <= 0 or self.span <= 0:
            return None
        return self.least / self.span


class _RefusalEvents(logging.Handler):
    """Counts the client's WARNINGs of a new refusal event (one per backoff step)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "rate limit refusal" in record.getMessage():
            self.count += 1


@contextlib.contextmanager
def counted_refusals() -> Iterator[_RefusalEvents]:
    """The client's refusal events, counted and not printed, while the block runs."""
    logger = logging.getLogger("txc_async")
    events = _RefusalEvents()
    logger.addHandler(events)
    propagate, logger.propagate = logger.propagate, False
    try:
        yield events
    finally:
        logger.removeHandler(events)
        logger.propagate = propagate


async def strict_scenario(name: str, server_limit: RateLimit, configured: RateLimit,
                          calls: int, *, delay: float = 0.0, storm: int = 0) -> Scenario:
    """``calls`` pings at once through a client configured with ``configured``."""
    with counted_refusals() as events:
        async with StrictServerProcess(server_limit, delay, storm) as server:
            async with txc_async.Client(
                base_url=server.url, limiter=InProcessLimiter(),
                rate_limits={"public": configured},
            ) as client:
                began = time.monotonic()
                outcomes = await asyncio.gather(
                    *(client.ping() for _ in range(calls)), return_exceptions=True
                )
                took = time.monotonic() - began
                learned = client.rate_limits["public"]
            arrivals = await server.arrivals()
    return Scenario(
        name, server_limit, configured, calls,
        accepted=[moment for moment, outcome in arrivals if outcome == "accepted"],
        refused=sum(outcome != "accepted" for _, outcome in arrivals),
        failed=sum(result is not True for result in outcomes),
        events=events.count, took=took, learned=learned,
    )


async def group_scenario(name: str, group: RateLimit, calls: int, *,
                         keys: int = 2, operations: int = 2) -> Scenario:
    """``calls`` signed calls at once, spread evenly over ``keys`` API keys sharing one limiter
    and over balance and (when ``operations`` is 2) investments, each operation allowed the
    whole group: the server counts the two operations in one group, as the service counts its
    ``main_account`` group. One key and one operation measure a scope alone, signed likewise."""
    limits = {"main_balance": group, "investments": group, "main_account": group}
    each = calls // (keys * operations)
    limiter = InProcessLimiter()
    with counted_refusals() as events:
        async with StrictServerProcess(RateLimit(10**6, 1.0), group=group) as server, \
                contextlib.AsyncExitStack() as stack:
            clients = [await stack.enter_async_context(txc_async.Client(
                f"key-{index}", f"secret-of-key-{index}", base_url=server.url, limiter=limiter,
                rate_limits=limits,
            )) for index in range(keys)]
            began = time.monotonic()
            outcomes = await asyncio.gather(*(
                call for client in clients for call in (
                    *(client.main_balance() for _ in range(each)),
                    *(client.investments_history(limit=1)
                      for _ in range(each if operations == 2 else 0)),
                )
            ), return_exceptions=True)
            took = time.monotonic() - began
            learned = clients[0].rate_limits["main_account"]
            await stack.aclose()
            arrivals = await server.arrivals(BALANCE, INVESTMENTS)
    return Scenario(
        name, group, group, len(outcomes),
        accepted=[moment for moment, outcome in arrivals if outcome == "accepted"],
        refused=sum(outcome != "accepted" for _, outcome in arrivals),
        failed=sum(isinstance(result, BaseException) for result in outcomes),
        events=events.count, took=took, learned=learned,
    )


async def strict_scenarios(quick: bool) -> list[Scenario]:
    one_second, ten_seconds = RateLimit(200, 1.0), RateLimit(1000, 10.0)
    slow, slow_calls = RateLimit(100, 10.0), 200
    tight, roomy, tight_calls = RateLimit(40, 10.0), RateLimit(100, 10.0), 120
    if quick:
        one_second, ten_seconds = RateLimit(100, 1.0), RateLimit(100, 10.0)
        slow, slow_calls = RateLimit(20, 1.0), 45
        tight, roomy, tight_calls = RateLimit(4, 1.0), RateLimit(10, 1.0), 12
    storm = RateLimit(100, 1.0)
    return [
        await strict_scenario("loopback, 1 s window", one_second, one_second,
                              5 * one_second.max_requests),
        await strict_scenario("loopback, 10 s windows", ten_seconds, ten_seconds,
                              (2 if quick else 3) * ten_seconds.max_requests),
        await strict_scenario("new connections held 300 ms", slow, slow, slow_calls,
                              delay=0.3),
        await strict_scenario("refusal storm: 50 concurrent 429s", storm, storm, 100,
                              storm=50),
        await strict_scenario(
            f"server {tight.max_requests} per {tight.per_seconds:g} s, client "
            f"{roomy.max_requests}", tight, roomy, tight_calls,
        ),
        *[await group_scenario(f"{label}, {limit.per_seconds:g} s", limit, calls,
                               keys=keys, operations=keys)
          for limit, calls in ((one_second, 5 * one_second.max_requests),
                               (ten_seconds, (2 if quick else 3) * ten_seconds.max_requests))
          for label, keys in (("signed, one key, one operation", 1),
                              ("group, 2 keys x 2 operations", 2))],
    ]


def print_scenarios(rows: list[Scenario]) -> None:
    print("\nthe whole client (InProcessLimiter) against a strict sliding-window server in "
          "another process;\npeak: most served in any window of the server's limit; refused: "
          "429s the server sent; events: backoff steps\nthe client took; took: the whole run at "
          "the client; span: first to last served;\nleast: the least span the limit allows; "
          "efficiency: least / span, the share of the limit's rate sustained")
    header = (f"{'scenario':36} {'calls':>5} {'limit':>10} {'peak':>5} {'refused':>7} "
              f"{'events':>6} {'failed':>6} {'took':>7} {'span':>7} {'least':>6} "
              f"{'efficiency':>10} {'learned':>10}")
    print(header)
    print("-" * len(header))
    for r in rows:
        limit = f"{r.server_limit.max_requests}/{r.server_limit.per_seconds:g}s"
        learned = ("-" if r.learned == r.configured
                   else f"{r.learned.max_requests}/{r.learned.per_seconds:g}s")
        efficiency = "-" if r.efficiency is None else f"{r.efficiency:.1%}"
        print(f"{r.name:36} {r.calls:>5} {limit:>10} {r.peak:>5} {r.refused:>7} {r.events:>6} "
              f"{r.failed:>6} {r.took:>6.2f}s {r.span:>6.2f}s {r.least:>5.1f}s {efficiency:>10} "
              f"{learned:>10}")
    # A scope's targets; a group's are the figures a single scope reaches on loopback.
    targets = [(r, (0.95, 0.97)) for r in rows[:2]] + [(r, (0.97, 0.99)) for r in rows[5:9]]
    for r, (short, long) in targets:
        target = short if r.server_limit.per_seconds < 10 else long
        met = r.efficiency is not None and r.efficiency >= target
        print(f"  efficiency, {r.name}: {r.efficiency or 0:.1%} (target >= {target:.0%}: "
              f"{'met' if met else 'MISSED'})")


async def main(quick: bool) -> list[Result]:
    limit = RateLimit(100, 1.0) if quick else RateLimit(200, 1.0)
    count = 300 if quick else 1000
    results: list[Result] = []
    async with ArrivalServerProcess() as server:
        ours = InProcessLimiter()
        results.append(await in_process(
            server, "InProcessLimiter", "ours", lambda: ours.acquire("k", "s", limit, TIMEOUT),
            limit, count, conclude=answered(ours),
        ))
        bucket = aiolimiter.AsyncLimiter(limit.max_requests, limit.per_seconds)
        results.append(await in_process(
            server, f"aiolimiter.AsyncLimiter({limit.max_requests}, {limit.per_seconds:g})",
            "aiolimiter", bucket.acquire, limit, count,
        ))
        skipped = ""
        if find_redis_server() is None:
            skipped = "redis-server not found: the RedisLimiter rows are skipped"
        else:
            with RedisServer() as redis:
                for processes in (1, 4):
                    results.append(
                        await redis_processes(server, redis.url, limit, count, processes)
                    )
    print(f"limit {limit.max_requests} per {limit.per_seconds:g} s; bursts of {count} requests; "
          f"0-{MAX_NETWORK_DELAY * 1000:.0f} ms network delay; {os.cpu_count()} cores")
    print("peak: most arrivals at the server in any window of the limit; 429s: requests a strict "
          "server would refuse;\nspan: first to last arrival; least: the least span the limit "
          "allows, (ceil(requests / limit) - 1) windows;\nefficiency: least / span; sustained: "
          "requests per second after the first window's budget, and its share of the limit")
    header = (f"{'limiter':34} {'peak':>5} {'limit':>6} {'429s':>5} {'span':>7} {'least':>6} "
              f"{'efficiency':>10} {'sustained':>16}")
    print(header)
    print("-" * len(header))
    allowed = limit.max_requests / limit.per_seconds
    for r in results:
        print(f"{r.name:34} {r.peak:>5} {limit.max_requests:>6} {r.refused:>5} {r.span:>6.2f}s "
              f"{r.least:>5.1f}s {r.least / r.span:>10.1%} {r.rate:>7.1f}/s "
              f"{r.rate / allowed:>6.1%}")
    if skipped:
        print(skipped)
    ours_row, theirs = results[0], results[1]
    print(f"aiolimiter let {theirs.peak} requests reach the server in one {limit.per_seconds:g} s "
          f"window ({theirs.peak / limit.max_requests:.2f}x the limit; InProcessLimiter: "
          f"{ours_row.peak}, {ours_row.peak / limit.max_requests:.2f}x)")

    rounds = 50_000 if quick else 200_000
    roomy = RateLimit(10**9, 1)
    fast = InProcessLimiter()
    ours_cost = await admission_cost(lambda: fast.acquire("k", "s", roomy, TIMEOUT), rounds,
                                     answered(fast))
    leaky = aiolimiter.AsyncLimiter(10**9, 1)
    theirs_cost = await admission_cost(leaky.acquire, rounds)
    print(f"admission with budget to spare: InProcessLimiter {ours_cost:.2f} µs, aiolimiter "
          f"{theirs_cost:.2f} µs ({ours_cost / theirs_cost:.2f}x)")

    # -- the in-process limiter's scenarios, the whole client at a strict server --
    print_scenarios(await strict_scenarios(quick))
    return results


# -- budgets shared between processes: SQLiteLimiter and RedisLimiter beside InProcessLimiter --


async def _sender(spec: str, hit_url: str, count: int, limit: RateLimit, seed: int,
                  *extra: str) -> asyncio.subprocess.Process:
    """A sender process (``tests/support/limit_worker.py``) on the limiter ``spec``."""
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.support.limit_worker", spec, hit_url, str(count),
        str(limit.max_requests), str(limit.per_seconds), str(seed), *extra,
        cwd=ROOT, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )


async def _until(process: asyncio.subprocess.Process, line: bytes) -> None:
    assert process.stdout is not None
    while True:
        got = await asyncio.wait_for(process.stdout.readline(), 120)
        if not got:
            raise RuntimeError(f"a sender ended before printing {line!r}")
        if got.strip() == line:
            return


async def _finish(processes: list[asyncio.subprocess.Process]) -> None:
    async def one(process: asyncio.subprocess.Process) -> int:
        assert process.stdout is not None
        while await process.stdout.readline():
            pass
        return await process.wait()

    try:
        codes = await asyncio.wait_for(asyncio.gather(*(one(p) for p in processes)), 300)
    finally:
        for process in processes:
            if process.returncode is None:
                process.kill()
                await process.wait()
    if any(codes):
        raise RuntimeError(f"a sender failed: exit codes {codes}")


async def _all_at_once(senders: list[asyncio.subprocess.Process]) -> None:
    """Start ``senders`` (waiting with ``--wait-go``) together, once all are ready, and wait
    for them to finish."""
    for sender in senders:
        await _until(sender, b"ready")
    for sender in senders:
        assert sender.stdin is not None
        sender.stdin.write(b"go\n")
        await sender.stdin.drain()
    await _finish(senders)


async def shared_burst(server: ArrivalServerProcess, name: str, spec: str, budget: str,
                       limit: RateLimit, count: int, processes: int) -> Result:
    """``count`` requests from ``processes`` sender processes at once, on one budget."""
    await _all_at_once([
        await _sender(spec, server.hit_url(budget), count // processes, limit, seed, "--wait-go")
        for seed in range(processes)
    ])
    return Result(name, limit, await server.arrivals(budget))


async def restart_case(server: ArrivalServerProcess, name: str, spec: str, budget: str,
                       limit: RateLimit, killed_after: int, rerun: int) -> Result:
    """A sender killed (SIGKILL) after ``killed_after`` answers and another started at once,
    like a backfill interrupted and rerun: does the rerun know the budget already spent?"""
    first = await _sender(spec, server.hit_url(budget), 10**6, limit, 1)
    await _until(first, f"sent {killed_after}".encode())
    first.kill()
    second = await _sender(spec, server.hit_url(budget), rerun, limit, 2)
    await first.wait()
    await _finish([second])
    return Result(name, limit, await server.arrivals(budget))


def print_shared(rows: list[tuple[str, Result]]) -> None:
    print("peak: most arrivals at the server in any window of the limit; 429s: requests a strict "
          "server would refuse;\nefficiency: the least span the limit allows, "
          "(ceil(requests / limit) - 1) windows, over the first-to-last arrival span (the "
          "restart rows include starting the rerun's interpreter)")
    header = (f"{'case':24} {'limiter':34} {'requests':>8} {'peak':>5} {'limit':>6} {'429s':>5} "
              f"{'span':>7} {'efficiency':>10}")
    print(header)
    print("-" * len(header))
    for case, r in rows:
        print(f"{case:24} {r.name:34} {r.requests:>8} {r.peak:>5} {r.limit.max_requests:>6} "
              f"{r.refused:>5} {r.span:>6.2f}s {r.least / r.span if r.span else 0:>10.1%}")


@contextlib.contextmanager
def backend_specs(name: str) -> Iterator[list[tuple[str, str]]]:
    """Every backend as a sender process's spec, named ``name`` in a SQLite file of a temporary
    folder and a Redis namespace (with a redis-server of its own while the block runs, when
    one is installed)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="txc-bench-") as folder:
        backends = [("InProcessLimiter", "memory:"),
                    ("SQLiteLimiter", f"sqlite:{folder}/{name}.sqlite")]
        redis = None
        if find_redis_server() is not None:
            redis = RedisServer()
            redis.start()
            backends.append(("RedisLimiter", f"redis:{redis.url}:{name}{os.getpid()}"))
        try:
            yield backends
        finally:
            if redis is not None:
                redis.stop()


async def shared_main(quick: bool) -> list[tuple[str, Result]]:
    """The restart case and a burst from several processes, through each backend."""
    limit = RateLimit(50, 1.0) if quick else RateLimit(200, 2.0)
    killed_after = limit.max_requests * 3 // 2  # into the second window
    rerun = limit.max_requests * 2
    burst = limit.max_requests * 4
    rows: list[tuple[str, Result]] = []
    with backend_specs("bench") as backends:
        async with ArrivalServerProcess() as server:
            for name, spec in backends:
                rows.append(("killed and rerun at once", await restart_case(
                    server, name, spec, f"restart-{name}", limit, killed_after, rerun,
                )))
            for name, spec in backends:
                processes = 1 if spec == "memory:" else 2
                label = f"burst, {processes} process" + ("es" if processes > 1 else "")
                rows.append((label, await shared_burst(
                    server, name, spec, f"burst-{name}", limit, burst, processes,
                )))
    print(f"limit {limit.max_requests} per {limit.per_seconds:g} s; sender processes with 50 "
          f"requests under way each, 0-20 ms network delay; killed after {killed_after} answers, "
          f"rerun with {rerun}; bursts of {burst}")
    print_shared(rows)
    if find_redis_server() is None:
        print("redis-server not found: the RedisLimiter rows are skipped")
    return rows


# -- a group shared by two operations and two API keys, through every backend ------------------


async def group_burst(server: ArrivalServerProcess, name: str, spec: str, budget: str,
                      group: RateLimit, count: int) -> Result:
    """``count`` requests of two operations (each allowed as many as the whole group) from two
    API keys at once, all drawing on one group: the server's arrivals of the group."""
    hit = server.hit_url(budget)
    group_flag = f"--group=g:{group.max_requests}:{group.per_seconds:g}"
    if spec == "memory:":
        # One process: the in-process limiter is not shared between processes.
        limiter = InProcessLimiter()
        groups = (("g", group),)

        def acquire(scope: str) -> Callable[[], Awaitable[object]]:
            return lambda: limiter.acquire("server", scope, group, TIMEOUT, groups=groups)

        await asyncio.gather(*(
            fire(hit, acquire(scope), count // 2, seed, conclude=answered(limiter))
            for seed, scope in enumerate(("a", "b"))
        ))
    else:
        await _all_at_once([
            await _sender(spec, hit, count // 2, group, seed, "--wait-go", f"--scope={scope}",
                          group_flag, f"--key=key-{scope}")
            for seed, scope in enumerate(("a", "b"))
        ])
    return Result(name, group, await server.arrivals(budget))


async def group_main(quick: bool) -> list[tuple[str, Result]]:
    """The group's efficiency through each backend, at 1 s windows (and 10 s ones), and what
    an admission costs with a group beside one without."""
    windows = [RateLimit(100, 1.0)] if quick else [RateLimit(200, 1.0), RateLimit(200, 10.0)]
    rows: list[tuple[str, Result]] = []
    with backend_specs("group") as backends:
        async with ArrivalServerProcess() as server:
            for group in windows:
                for name, spec in backends:
                    label = f"group {group.max_requests} per {group.per_seconds:g} s"
                    rows.append((label, await group_burst(
                        server, name, spec, f"group-{name}-{group.per_seconds:g}", group,
                        4 * group.max_requests,
                    )))
    print("two operations from two API keys, each allowed the whole group, drawing on one group "
          "at once (two sender processes for the shared backends)")
    print_shared(rows)
    rounds = 20_000 if quick else 100_000
    roomy = RateLimit(10**9, 1)
    fast = InProcessLimiter()
    alone = await admission_cost(lambda: fast.acquire("k", "s", roomy, TIMEOUT), rounds,
                                 answered(fast))
    grouped = await admission_cost(
        lambda: fast.acquire("k", "s", roomy, TIMEOUT, groups=(("g", roomy),)), rounds,
        answered(fast),
    )
    print(f"admission with budget to spare, InProcessLimiter: {alone:.2f} µs alone, "
          f"{grouped:.2f} µs with a group ({grouped / alone:.2f}x)")
    return rows


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        redis_url, namespace, hit_url, count, n, w, seed = sys.argv[2:9]
        asyncio.run(worker(redis_url, namespace, hit_url, int(count),
                           RateLimit(int(n), float(w)), int(seed)))
    else:
        parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
        parser.add_argument("--quick", action="store_true",
                            help="smaller bursts (100 per 1 s, 300 requests)")
        parser.add_argument("--shared-only", action="store_true",
                            help="only the SQLite and Redis backends' restart and burst cases")
        began = time.monotonic()
        arguments = parser.parse_args()
        if not arguments.shared_only:
            asyncio.run(main(arguments.quick))
        asyncio.run(shared_main(arguments.quick))
        asyncio.run(group_main(arguments.quick))
        print(f"benchmark time: {time.monotonic() - began:.0f} s")
