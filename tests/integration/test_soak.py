"""Soak: 20,000 mixed calls against the sandbox with faults sprinkled in. Every call ends in a
result or a TxcError, no nonce is refused, no limit is exceeded, and memory stays flat."""

from __future__ import annotations

import asyncio
import gc
import os
import random
import resource
from decimal import Decimal

import pytest

import txc_async
from txc_async import RateLimit, RetryPolicy, TxcError
from txc_async.sandbox import Sandbox

CALLS = int(os.environ.get("TXC_SOAK_CALLS", "20000"))
CONCURRENCY = 64
# Limits tight enough that the scheduler is at work the whole time, loose enough to finish soon.
LIMITS = {
    scope: RateLimit(1500, 1.0)
    for scope in ("public", "main_balance", "investments", "mining_rewards", "mining_hashrate",
                  "collateral_stop_limit_order", "create_mining_account")
} | {
    # The groups as tight as the scopes in them, for the sandbox and the client alike.
    "main_account": RateLimit(1500, 1.0),
    "default": RateLimit(3000, 1.0),
}
FAULTS = ("html_502", "json_503", "reset", "malformed_json", "json_500", "rate_limit_429",
          "nonce_429", "throttle")
SCOPE_PAUSING = ("rate_limit_429", "throttle")
PATHS = {
    "main_balance": "/api/v4/main-account/balance",
    "mining_rewards": "/api/v4/mining/rewards",
    "ping": "/api/v4/public/ping",
    "collateral_stop_limit_order": "/api/v4/order/collateral/stop-limit",
}


def rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * resource.getpagesize() / 2**20


@pytest.mark.slow
async def test_soak_mixed_calls_with_faults() -> None:
    rng = random.Random(7)
    outcomes = {"ok": 0, "error": 0}
    async with Sandbox(rate_limits=LIMITS) as box:
        account = box.mining_account_names[0]
        async with txc_async.Client(
            api_key=box.api_key, api_secret=box.api_secret, base_url=box.url,
            rate_limits=LIMITS, limiter=txc_async.InProcessLimiter(),
            retry=RetryPolicy(backoff_base=0.01, backoff_cap=0.05, max_retry_after=0.05),
        ) as client:

            async def one(i: int) -> None:
                choice = i % 10
                if rng.random() < 0.02:
                    path = PATHS[rng.choice(sorted(PATHS))]
                    kind = rng.choice(FAULTS)
                    if kind == "nonce_429" and path == PATHS["ping"]:
                        # ping carries no nonce: a JSON 429 to it is a rate-limit refusal.
                        kind = "json_503"
                    if kind in SCOPE_PAUSING and rng.random() > 0.1:
                        # A rate-limit refusal pauses its whole scope for at least 1 s: a few
                        # of them test that; hundreds would only make the run wait.
                        kind = "json_503"
                    box.faults.add(path, kind, retry_after=0.01 if kind == "rate_limit_429"
                                   else None)
                try:
                    if choice < 4:
                        await client.main_balance()
                    elif choice < 7:
                        await client.mining_rewards(account=account, limit=100,
                                                    offset=rng.randrange(0, 600))
                    elif choice < 9:
                        await client.ping()
                    else:
                        await client.collateral_stop_limit_order(
                            market="BTC_USDT", side="sell", amount=Decimal("0.001"),
                            price="50000", activation_price="49000",
                        )
                    outcomes["ok"] += 1
                except TxcError:
                    outcomes["error"] += 1

            queue = iter(range(CALLS))
            samples: list[float] = []

            async def worker() -> None:
                for i in queue:
                    await one(i)
                    if i % 2000 == 0:
                        gc.collect()
                        samples.append(rss_mb())

            await asyncio.wait_for(
                asyncio.gather(*(worker() for _ in range(CONCURRENCY))), timeout=240
            )
        stats = box.stats
        assert outcomes["ok"] + outcomes["error"] == CALLS
        assert outcomes["ok"] > CALLS * 0.9
        # Every refusal came from an injected fault, never from the client's own pacing or nonces.
        assert stats.rate_limited == 0
        assert stats.nonce_refused == 0
        assert stats.auth_failed == 0
        for scope, limit in LIMITS.items():
            assert stats.max_in_window(scope, limit.per_seconds) <= limit.max_requests, scope
    # Memory flat: the second half of the run grows by no more than a few MB.
    half = samples[len(samples) // 2 :]
    assert max(half) - min(half) < 15, samples
