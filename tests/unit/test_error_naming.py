"""Every error of a call names its operation, with no coroutine added to the call for it: the
pipeline names the errors of an exchange, an operation's own argument checks name theirs."""

from __future__ import annotations

import sys
from decimal import Decimal
from types import FrameType
from typing import Any

import pytest

import txc_async
from txc_async import InvalidParameterError, TransportError, TxcError
from txc_async.transports import RawResponse

from ..support.transports import MemoryTransport, make_client

BALANCE = b'{"BTC":{"main_balance":"0.5"}}'
ORDER_ARGS: dict[str, Any] = {
    "market": "BTC_USDT", "side": "buy", "amount": Decimal("0.01"), "price": "40000",
    "activation_price": "39950",
}
#: One call of every coroutine operation, with arguments the client accepts.
CALLS: dict[str, dict[str, Any]] = {
    "ping": {},
    "main_balance": {},
    "investments_history": {"limit": 10},
    "collateral_stop_limit_order": ORDER_ARGS,
    "create_mining_account": {"name": "acc_1"},
    "mining_rewards": {"limit": 10},
    "mining_hashrate": {"account": "acc_1", "interval": "1h"},
    "refresh_oauth_token": {"client_id": "c", "client_secret": "s", "refresh_token": "t"},
}
#: One argument each operation refuses before sending.
BAD_ARGUMENTS: dict[str, dict[str, Any]] = {
    "investments_history": {"limit": 0},
    "collateral_stop_limit_order": {**ORDER_ARGS, "amount": "-1"},
    "create_mining_account": {"name": "no spaces"},
    "mining_rewards": {"offset": -1},
    "mining_hashrate": {"account": "acc_1", "interval": "2h"},
    "refresh_oauth_token": {"client_id": "", "client_secret": "s", "refresh_token": "t"},
}


def assert_named(error: TxcError, operation: str) -> None:
    assert error.operation == operation
    assert str(error).startswith(f"{operation}: ")
    assert f"operation={operation!r}" in repr(error) or not isinstance(
        error, txc_async.ApiError | TransportError
    )


@pytest.mark.parametrize("operation", sorted(BAD_ARGUMENTS))
async def test_argument_errors_name_the_operation(operation: str) -> None:
    client, transport = make_client(RawResponse(200, {}, BALANCE))
    with pytest.raises(InvalidParameterError) as caught:
        await getattr(client, operation)(**BAD_ARGUMENTS[operation])
    assert_named(caught.value, operation)
    assert not transport.sent


async def test_argument_errors_of_a_walk_name_the_walk() -> None:
    client, transport = make_client(RawResponse(200, {}, BALANCE))
    with pytest.raises(InvalidParameterError) as caught:
        async for _ in client.iter_investments_history(ticker="not a ticker"):
            pass
    assert_named(caught.value, "iter_investments_history")
    assert not transport.sent


@pytest.mark.parametrize("operation", sorted(CALLS))
async def test_server_errors_name_the_operation(operation: str) -> None:
    client, _ = make_client(RawResponse(503, {}, b"<html>down</html>"))
    client = client.with_options(retry=txc_async.RetryPolicy(max_retries=0))
    with pytest.raises(TransportError) as caught:
        await getattr(client, operation)(**CALLS[operation])
    assert_named(caught.value, operation)


@pytest.mark.parametrize("operation", sorted(CALLS))
async def test_calls_on_a_closed_client_name_the_operation(operation: str) -> None:
    client, transport = make_client(RawResponse(200, {}, BALANCE))
    derived = client.with_options(timeout=5)
    await derived.close()
    with pytest.raises(TransportError, match="closed") as caught:
        await getattr(derived, operation)(**CALLS[operation])
    assert_named(caught.value, operation)
    await client.close()
    with pytest.raises(TransportError, match="closed") as caught:
        await getattr(client, operation)(**CALLS[operation])
    assert_named(caught.value, operation)
    assert not transport.sent


async def test_private_operations_without_a_key_name_the_operation() -> None:
    client = txc_async.Client(
        base_url="https://api.example.test", transport=MemoryTransport(RawResponse(200, {}, b""))
    )
    with pytest.raises(InvalidParameterError, match="private operation") as caught:
        await client.main_balance()
    assert_named(caught.value, "main_balance")


async def test_an_argument_error_outside_an_operation_names_none() -> None:
    client, _ = make_client(RawResponse(200, {}, BALANCE))
    with pytest.raises(InvalidParameterError) as caught:
        txc_async.Client(base_url="https://api.example.test", timeout=0)
    assert caught.value.operation is None
    with pytest.raises(InvalidParameterError) as caught:
        client.with_options(timeout=-1)
    assert caught.value.operation is None
    assert str(caught.value).startswith("timeout: ")


class FrameRecordingTransport(MemoryTransport):
    """Records the names of the frames between the caller and the transport."""

    frames: list[str]

    async def send(self, *args: Any, **kwargs: Any) -> RawResponse:
        frame: FrameType | None = sys._getframe(1)
        self.frames = []
        while frame is not None and frame.f_code.co_name != "caller":
            self.frames.append(frame.f_code.co_name)
            frame = frame.f_back
        return await super().send(*args, **kwargs)


async def test_a_call_resumes_two_coroutines_above_the_transport() -> None:
    """Each coroutine between the caller and the transport is resumed at every wake-up of the
    exchange: the operation and the pipeline, nothing else."""
    transport = FrameRecordingTransport(RawResponse(200, {}, BALANCE))
    client = txc_async.Client(
        api_key="k", api_secret="s", base_url="https://api.example.test", transport=transport,
        limiter=txc_async.InProcessLimiter(),
    )

    async def caller() -> dict[str, Decimal]:
        return await client.main_balance()

    assert await caller() == {"BTC": Decimal("0.5")}
    assert transport.frames == ["call", "main_balance"]
    await client.close()
