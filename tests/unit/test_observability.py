"""What a client tells its user about each exchange: the DEBUG record, the on_request hook, the
User-Agent; and per-call options through with_options."""

from __future__ import annotations

import logging
import platform
from decimal import Decimal

import aiohttp
import pytest
from aioresponses import aioresponses

import txc_async
from txc_async import InvalidParameterError, RequestRecord, RequestTimeout, RetryPolicy
from txc_async.transports import AiohttpTransport

from ..support.common import BASE, KEY, SECRET, RecordingLimiter, fast_retry

BALANCE = BASE + "/api/v4/main-account/balance"
PING = BASE + "/api/v4/public/ping"


def make(records: list[RequestRecord] | None = None, **kwargs: object) -> txc_async.Client:
    settings: dict[str, object] = {
        "limiter": RecordingLimiter(), "retry": fast_retry(),
        "on_request": records.append if records is not None else None,
        "transport": AiohttpTransport(direct=False),  # so that aioresponses sees every request
    }
    settings.update(kwargs)
    return txc_async.Client(
        api_key=KEY, api_secret=SECRET, base_url=BASE, **settings,  # type: ignore[arg-type]
    )


async def test_every_exchange_gives_one_record_with_its_outcome(mocked: aioresponses) -> None:
    mocked.post(BALANCE, status=502, body=b"<html>bad gateway</html>")
    mocked.post(BALANCE, body=b'{"BTC":{"main_balance":"1.5"}}')
    records: list[RequestRecord] = []
    async with make(records) as client:
        assert await client.main_balance() == {"BTC": Decimal("1.5")}
    first, second = records
    assert (first.operation, first.scope, first.attempt) == ("main_balance", "main_balance", 1)
    assert first.status == 502 and first.error == "server_error"
    assert first.retried and not first.final
    assert (second.attempt, second.status, second.error) == (2, 200, None)
    assert second.final and not second.retried
    assert second.sent_bytes > 0 and second.received_bytes == len(b'{"BTC":{"main_balance":"1.5"}}')
    assert second.elapsed >= 0 and second.budget_wait == 0


async def test_a_timeout_is_recorded_without_a_status(mocked: aioresponses) -> None:
    mocked.post(BALANCE, exception=TimeoutError())
    records: list[RequestRecord] = []
    async with make(records, retry=fast_retry(max_retries=0)) as client:
        with pytest.raises(RequestTimeout):
            await client.main_balance()
    [record] = records
    assert record.status is None and record.error == "timeout" and record.final


async def test_a_failing_hook_never_breaks_the_call(
    mocked: aioresponses, caplog: pytest.LogCaptureFixture
) -> None:
    mocked.get(PING, payload=["pong"])

    def broken(record: RequestRecord) -> None:
        raise RuntimeError("metrics backend down")

    async with make(on_request=broken) as client:
        assert await client.ping() is True
    assert "on_request hook failed" in caplog.text


async def test_one_debug_record_per_exchange_and_no_secret(
    mocked: aioresponses, caplog: pytest.LogCaptureFixture
) -> None:
    mocked.post(BALANCE, payload={"BTC": {"main_balance": "1"}}, repeat=True)
    caplog.set_level(logging.DEBUG, logger="txc_async")
    async with make() as client:
        for _ in range(3):
            await client.main_balance()
    lines = [r.getMessage() for r in caplog.records if r.name == "txc_async"]
    exchanges = [line for line in lines if line.startswith("main_balance [main_balance]")]
    assert len(exchanges) == 3
    assert "attempt 1: HTTP 200 in" in exchanges[0] and "budget wait" in exchanges[0]
    assert all(KEY not in line and SECRET not in line for line in lines)


async def test_the_user_agent_names_the_library_and_the_callers_product(
    mocked: aioresponses,
) -> None:
    mocked.get(PING, payload=["pong"], repeat=True)
    python = ".".join(platform.python_version_tuple()[:2])
    aiohttp_version = ".".join(aiohttp.__version__.split(".")[:2])
    default = f"txc_async/{txc_async.__version__} (Python {python}; aiohttp {aiohttp_version})"
    async with make() as plain, make(user_agent="mybot/1.2") as named:
        assert plain.user_agent == default
        assert named.user_agent == "mybot/1.2 " + default
        await plain.ping()
        await named.ping()
    sent = [call.kwargs["headers"]["User-Agent"] for calls in mocked.requests.values()
            for call in calls]
    assert sent == [default, "mybot/1.2 " + default]


@pytest.mark.parametrize("bad", ["", "x" * 201, "bot\n1", 5])
def test_a_bad_user_agent_is_refused(bad: object) -> None:
    with pytest.raises(InvalidParameterError, match="user_agent"):
        txc_async.Client(user_agent=bad)  # type: ignore[arg-type]


def test_a_hook_that_is_not_callable_is_refused() -> None:
    with pytest.raises(InvalidParameterError, match="on_request"):
        txc_async.Client(on_request="print")  # type: ignore[arg-type]


async def test_with_options_shares_session_counters_and_hook(mocked: aioresponses) -> None:
    mocked.get(PING, payload=["pong"], repeat=True)
    records: list[RequestRecord] = []
    async with make(records) as client:
        quick = client.with_options(timeout=1.5, retry=RetryPolicy(max_retries=0))
        assert (quick.timeout, client.timeout) == (1.5, 10.0)
        assert quick.retry.max_retries == 0 and client.retry.max_retries == 3
        await quick.ping()
        await client.ping()
        assert client.stats.requests == quick.stats.requests == 2
        assert len(records) == 2
        await quick.close()  # ends only the derived client's use
        assert quick.closed and not client.closed
        with pytest.raises(txc_async.TransportError, match="closed"):
            await quick.ping()
        assert await client.ping()
    assert quick.closed  # closing the original closes what derives from it


async def test_with_options_checks_its_values() -> None:
    async with make() as client:
        with pytest.raises(InvalidParameterError, match="timeout"):
            client.with_options(timeout=0)
        with pytest.raises(InvalidParameterError, match="retry"):
            client.with_options(retry=3)  # type: ignore[arg-type]


async def test_with_options_timeout_applies_to_the_exchange(mocked: aioresponses) -> None:
    mocked.get(PING, payload=["pong"])
    seen: list[float] = []
    async with make() as client:
        transport = client._pipeline.transport
        send = transport.send

        async def spy(*args: object, timeout: float, **kwargs: object) -> object:
            seen.append(timeout)
            return await send(*args, timeout=timeout, **kwargs)  # type: ignore[arg-type]

        transport.send = spy  # type: ignore[method-assign]
        await client.with_options(timeout=0.5).ping()
    # The exchange gets what is left of its deadline: at most the call's timeout.
    assert 0.4 < seen[0] <= 0.5


async def test_from_env_reads_the_limiter_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TXC_LIMITER", "memory://")
    async with txc_async.Client.from_env(base_url=BASE) as client:
        assert client._pipeline.limiter is txc_async.current_runtime().limiter
    monkeypatch.setenv("TXC_LIMITER", "carrier-pigeon://coop")
    with pytest.raises(InvalidParameterError, match="TXC_LIMITER: unknown limiter URL"):
        txc_async.Client.from_env(base_url=BASE)
