"""The issue's cases against a sandbox that counts as the service does (per IP address, in groups,
shared by every key), with limits scaled to 100 per second: two keys on one machine, and balance
with investments at once. Measured at the server."""

from __future__ import annotations

import asyncio
import time

import txc_async
from txc_async import RateLimit, RetryPolicy
from txc_async.sandbox import Sandbox

SCALED = {
    "main_balance": RateLimit(100, 1.0),
    "investments": RateLimit(100, 1.0),
    "main_account": RateLimit(100, 1.0),
}
CALLS = 150


async def balance_and_investments(client: txc_async.Client, each: int) -> float:
    """``each`` balance and ``each`` investments calls at once: the seconds they took."""
    began = time.monotonic()
    await asyncio.gather(
        *(client.main_balance() for _ in range(each)),
        *(client.investments_history(limit=1) for _ in range(each)),
    )
    return time.monotonic() - began


def client_for(box: Sandbox, key: str, secret: str, limiter: txc_async.Limiter,
               limits: dict[str, RateLimit]) -> txc_async.Client:
    return txc_async.Client(
        key, secret, base_url=box.url, limiter=limiter, rate_limits=limits,
        retry=RetryPolicy(backoff_base=0.01, max_retry_after=1.0),
    )


async def test_two_keys_on_one_machine_share_the_server_s_budgets_and_are_never_refused() -> None:
    async with Sandbox(rate_limits=SCALED) as box:
        box.add_key("second-key", "second-secret-value")
        limiter = txc_async.InProcessLimiter()
        async with client_for(box, box.api_key, box.api_secret, limiter, SCALED) as first, \
                client_for(box, "second-key", "second-secret-value", limiter, SCALED) as second:
            began = time.monotonic()
            await asyncio.gather(*(c.main_balance() for c in (first, second) for _ in range(CALLS)))
            took = time.monotonic() - began
        assert box.stats.rate_limited == 0
        assert box.stats.max_in_window("main_account", 1.0) <= 100
        # 300 calls at 100 per second: three windows' worth, not the hour a collapsed limit took.
        assert took < 8.0, took
        assert first.rate_limits["main_balance"] == SCALED["main_balance"]


async def test_balance_and_investments_at_once_are_never_refused() -> None:
    async with Sandbox(rate_limits=SCALED) as box, client_for(
        box, box.api_key, box.api_secret, txc_async.InProcessLimiter(), SCALED
    ) as client:
        took = await balance_and_investments(client, CALLS)
        assert box.stats.rate_limited == 0
        assert box.stats.max_in_window("main_account", 1.0) <= 100
        assert took < 8.0, took


async def test_a_group_set_too_high_costs_a_few_refusals_then_runs_at_the_server_s_rate() -> None:
    """The client believes the group allows 1000 per second; the server allows 100. Balance and
    investments together: a bounded number of refusals, blamed on the group, which learns the
    server's limit; then full throughput, and neither operation's own limit lowered."""
    configured = SCALED | {"main_account": RateLimit(1000, 1.0)}
    async with Sandbox(rate_limits=SCALED) as box, client_for(
        box, box.api_key, box.api_secret, txc_async.InProcessLimiter(), configured
    ) as client:
        took = await balance_and_investments(client, 2 * CALLS)
        refused = box.stats.rate_limited
        learned = client.rate_limits
        assert 0 < refused <= 200, refused
        assert learned["main_account"].max_requests <= 100
        assert learned["main_balance"] == SCALED["main_balance"]
        assert learned["investments"] == SCALED["investments"]
        # Afterwards the server's rate: another 600 calls take about six windows, none refused.
        box.stats.reset()
        again = await balance_and_investments(client, 2 * CALLS)
        assert box.stats.rate_limited == 0
        assert again < 12.0, (took, again)
