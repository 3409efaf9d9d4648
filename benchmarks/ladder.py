"""Where the client's cost over the lean typed client comes from: a ladder of clients built in
one process, each step adding one part of txc_async to the one before it, measured in
alternating rounds against the sandbox in another process.

    lean typed msgspec          the ceiling for typed answers (``percall.LeanTyped``)
    lean again (A/A)            a second lean client, its own keys: what the harness reads as a
                                difference between two identical clients (the noise floor)
    + methods and signing       ``Client.main_balance`` / ``investments_history``, their
                                argument checks, the shared nonce source, ``Signer.sign``;
                                aiohttp called directly, the lean client's decoders
    + answer decoding           the client's ``AnswerDecoder``: every amount checked finite,
                                the balance as ``dict[str, Decimal]``
    + transport                 ``AiohttpTransport.send``: the request written on a
                                connection of aiohttp's connector and the answer read by
                                aiohttp's parser (``_direct.py``; the steps before use
                                ``session.post``), the per-request deadline, the answer-size
                                limit, aiohttp's errors translated
    the whole client            + the exact rate-limit log, the server-clock estimate, the
                                call registry for ``close()``, counters, retries, records

Each step but the last replaces ``Pipeline.call`` of its own client with the code below; the
last is the library unchanged. The figures are CPU per call (sequential calls, the steps taking
turns call by call) and client CPU per call with 64 concurrent callers over 16 keys, medians of
the rounds, and each step's ratio to the lean client of the same round. The steps take turns all
together: each runs much of the code of the steps beside it (those above ``+ transport`` send
through ``session.post``, as the lean client does), and code another contender also runs reads
cheaper (``sharing.py``). The rows locate the cost; the targets' ratios come from
``percall.py``, where each contender takes turns with the lean client alone.

    python benchmarks/ladder.py [--quick] [--loop uvloop]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import aiohttp

import txc_async
from txc_async._answers.errors import decode_answer
from txc_async._operations import Operation
from txc_async._pipeline import Pipeline
from txc_async._retry import RetryPolicy

# Run as a script (python benchmarks/ladder.py) or imported by run_all.py: the repository's root
# makes ``benchmarks`` importable either way.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import (
    LOOPS,
    contender_keys,
    load,
    machine,
    median,
    run_on,
    start_sandbox_process,
)
from benchmarks.percall import (
    UNLIMITED,
    LeanTyped,
    _decode_balance,
    _decode_investments,
    concurrent,
    interleaved,
)

LEAN = "lean typed msgspec"
AGAIN = "lean again (A/A)"
STEPS = (LEAN, AGAIN, "+ methods and signing", "+ answer decoding", "+ transport",
         "the whole client")
_LEAN_DECODERS: dict[str, Callable[[bytes], Any]] = {
    "main_balance": _decode_balance,
    "investments_history": _decode_investments,
}

Call = Callable[[], Awaitable[Any]]
StepCall = Callable[[Pipeline, Operation[Any], Mapping[str, Any], float, RetryPolicy],
                    Awaitable[Any]]


async def _signed(pipeline: Pipeline, op: Operation[Any],
                  params: Mapping[str, Any]) -> tuple[bytes, dict[str, str]]:
    signer = pipeline.signer
    assert signer is not None
    nonce = signer.nonces.try_next()
    if nonce is None:
        nonce = await signer.nonces.next()
    return signer.sign(op.path, params, nonce)


async def _methods(pipeline: Pipeline, op: Operation[Any], params: Mapping[str, Any],
                   timeout: float, retry: RetryPolicy) -> Any:
    body, headers = await _signed(pipeline, op, params)
    session = pipeline.transport._session  # type: ignore[attr-defined]
    url = pipeline.requests.url(op)
    async with session.post(url, data=body, headers=headers) as response:
        return _LEAN_DECODERS[op.name](await response.read())


async def _decoding(pipeline: Pipeline, op: Operation[Any], params: Mapping[str, Any],
                    timeout: float, retry: RetryPolicy) -> Any:
    body, headers = await _signed(pipeline, op, params)
    session = pipeline.transport._session  # type: ignore[attr-defined]
    url = pipeline.requests.url(op)
    async with session.post(url, data=body, headers=headers) as response:
        return op.decode(await response.read())


async def _transport(pipeline: Pipeline, op: Operation[Any], params: Mapping[str, Any],
                     timeout: float, retry: RetryPolicy) -> Any:
    body, headers = await _signed(pipeline, op, params)
    raw = await pipeline.transport.send(
        op.method, pipeline.requests.url(op), headers=headers, body=body, timeout=timeout
    )
    return decode_answer(raw, op.decode)


_STEP_CALLS: dict[str, StepCall | None] = {
    STEPS[2]: _methods, STEPS[3]: _decoding, STEPS[4]: _transport, STEPS[5]: None,
}


async def _ladder(url: str, session: aiohttp.ClientSession) -> tuple[
        dict[str, dict[str, list[Call]]], list[txc_async.Client]]:
    calls: dict[str, dict[str, list[Call]]] = {}
    clients: list[txc_async.Client] = []
    lean = [LeanTyped(session, url, *pair) for pair in contender_keys("lean")]
    calls[LEAN] = {
        "main_balance": [c.main_balance for c in lean],
        "investments_history": [c.investments_history for c in lean],
    }
    again = [LeanTyped(session, url, *pair) for pair in contender_keys("lean2")]
    calls[AGAIN] = {
        "main_balance": [c.main_balance for c in again],
        "investments_history": [c.investments_history for c in again],
    }
    limiter = txc_async.InProcessLimiter()
    for step, replacement in _STEP_CALLS.items():
        # Every step signs with the same keys: the process's one nonce source per key serves
        # them all, as it serves every client of a key.
        # The steps that call aiohttp themselves share the lean client's session; the
        # transport's steps make their own, as a client does by default.
        own = replacement is None or replacement is _transport
        made = [
            txc_async.Client(api_key=key, api_secret=secret, base_url=url,
                             rate_limits=UNLIMITED, limiter=limiter,
                             session=None if own else session)
            for key, secret in contender_keys("txc")
        ]
        if replacement is not None:
            for client in made:
                pipeline = client._pipeline
                pipeline.call = replacement.__get__(pipeline)  # type: ignore[method-assign]
        clients.extend(made)
        calls[step] = {
            "main_balance": [c.main_balance for c in made],
            "investments_history": [
                lambda c=c: c.investments_history(limit=100) for c in made
            ],
        }
    return calls, clients


async def run(quick: bool) -> dict[str, dict[str, float]]:
    rounds, count = (4, 100) if quick else (12, 200)
    busy_rounds, each = (2, 10) if quick else (6, 40)
    server = start_sandbox_process()
    session = aiohttp.ClientSession()
    calls, clients = await _ladder(server.url, session)
    cpu: dict[tuple[str, str], list[float]] = {}
    ratios: dict[tuple[str, str], list[float]] = {}
    try:
        for per_op in calls.values():
            for per_key in per_op.values():
                for call in per_key:
                    for _ in range(3):
                        await call()
        for operation in ("main_balance", "investments_history", "busy"):
            for round_number in range(busy_rounds if operation == "busy" else rounds):
                shift = round_number % len(STEPS)
                figures = {}
                if operation == "busy":
                    for step in STEPS[shift:] + STEPS[:shift]:
                        figures[step] = (await concurrent(calls[step]["main_balance"], 64, each))[2]
                        await asyncio.sleep(0.05)
                else:
                    # The steps take turns call by call (see percall.interleaved).
                    taken = await interleaved(
                        {step: calls[step][operation][0] for step in STEPS}, count, shift
                    )
                    figures = {step: cpu_per_call for step, (cpu_per_call, _) in taken.items()}
                    await asyncio.sleep(0.05)
                for step, value in figures.items():
                    cpu.setdefault((operation, step), []).append(value)
                    ratios.setdefault((operation, step), []).append(value / figures[LEAN])
    finally:
        for client in clients:
            await client.close()
        await session.close()
        server.close()
    titles = {
        "main_balance": f"main_balance, {rounds} rounds of {count} sequential calls",
        "investments_history": f"investments_history (100 records), {rounds} rounds of {count} "
                               "sequential calls",
        "busy": f"main_balance, 64 concurrent callers over 16 keys, {busy_rounds} rounds of "
                f"{64 * each} calls (client CPU per call)",
    }
    print(f"the client built up part by part, in one process; {machine()}; {load()}")
    print("CPU per call, median of the rounds; ratio to the lean client, median of the rounds' "
          "ratios; step: what the part adds over the step above")
    result: dict[str, dict[str, float]] = {}
    for operation, title in titles.items():
        print(f"  {title}")
        before = 1.0
        for step in STEPS:
            mid = median(cpu[(operation, step)]) * 1e6
            ratio = median(ratios[(operation, step)])
            if step == AGAIN:
                # Two identical clients: the spread of their rounds' ratios is the harness's
                # resolution; the next step adds to the lean client, not to this row.
                spread = ratios[(operation, step)]
                added = f"  rounds {min(spread):.3f}-{max(spread):.3f}x"
            else:
                added = "" if step == LEAN else f"  step {100 * (ratio - before):+5.1f} %"
                before = ratio
            print(f"    {step:<24} {mid:7.0f} µs  {ratio:6.3f}x{added}")
            result.setdefault(operation, {})[step] = ratio
    return result


def main(quick: bool, loop: str = "asyncio") -> dict[str, dict[str, float]]:
    return run_on(loop, run(quick))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--loop", choices=LOOPS, default="asyncio")
    arguments = parser.parse_args()
    main(arguments.quick, arguments.loop)
