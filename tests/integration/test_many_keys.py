"""Memory per API key: nonce sources of keys no longer used go away (and budgets, the server's
and shared by every key, stay few), so a process serving many keys over time does not grow."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

PROGRAM = textwrap.dedent(
    """
    import asyncio, gc, resource, sys, time

    import txc_async
    from txc_async.transports import RawResponse

    KEYS = int(sys.argv[1])
    ANSWER = RawResponse(200, {"Date": "Sun, 22 Nov 2026 12:00:00 GMT"},
                         b'{"BTC":{"main_balance":"1.5"}}')
    # Budgets are the server's, shared by every key: wide enough that no call waits.
    LIMITS = {"main_balance": txc_async.RateLimit(100000, 0.2),
              "main_account": txc_async.RateLimit(100000, 0.2)}


    def answer(request: object) -> RawResponse:
        return ANSWER


    def rss_mb() -> float:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * resource.getpagesize() / 2**20


    async def one(i: int) -> None:
        client = txc_async.Client(
            api_key=f"key-{i:07d}", api_secret="secret", base_url="http://127.0.0.1:9",
            rate_limits=LIMITS, transport=txc_async.MockTransport(answer),
        )
        await client.main_balance()
        await client.close()


    async def main() -> None:
        for i in range(2000):
            await one(i)
        gc.collect()
        before = rss_mb()
        for i in range(2000, KEYS):
            await one(i)
        time.sleep(0.5)  # every window has passed
        await one(KEYS)  # a new key looks for budgets to drop
        gc.collect()
        runtime = txc_async.current_runtime()
        budgets = len(runtime.limiter._budgets)
        sources = len(runtime._nonce_sources)
        print(rss_mb() - before, budgets, sources)


    asyncio.run(main())
    """
)


@pytest.mark.slow
@pytest.mark.asyncio_only
def test_a_hundred_thousand_keys_leave_no_lasting_memory() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, "100000"], capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    growth, budgets, sources = done.stdout.split()
    assert int(budgets) < 100 and int(sources) < 100, done.stdout
    assert float(growth) < 30, done.stdout


def test_a_floor_written_while_passed_floors_are_dropped_stays() -> None:
    """A nonce source's finalizer records its floor whenever the garbage collector frees it,
    including while passed floors are being dropped: the floor it writes is kept."""
    from txc_async._nonces.registry import NonceSources

    class Finalizing:
        """A clock whose reading lets a finalizer run, as an allocation may."""

        def now_ms(self) -> int:
            # Another source of the same key freed meanwhile, its counter far ahead.
            floors[key] = 10**15
            return 2_000

    key = ("fingerprint", Finalizing())
    sources = NonceSources()
    floors = sources._floors
    floors[key] = 1_000  # type: ignore[index]
    sources._forget_passed_floors()
    assert floors == {key: 10**15}
