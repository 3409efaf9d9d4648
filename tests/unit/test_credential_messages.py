"""A client without its credentials says how to give them: ``Client(...)`` names its keywords,
``Client.from_env()`` its variables, a private operation both; a value is never quoted."""

from __future__ import annotations

import pytest

import txc_async
from txc_async import InvalidParameterError

from ..support.transports import MemoryTransport

KEY = "key-abcdefghijkl"
SECRET = "secret-abcdefghijkl"


def test_the_constructor_names_the_missing_keyword() -> None:
    with pytest.raises(InvalidParameterError) as caught:
        txc_async.Client(KEY)
    assert caught.value.parameter == "api_secret"
    assert "api_key was given without api_secret" in str(caught.value)
    assert "Client(api_key=..., api_secret=...)" in str(caught.value)
    with pytest.raises(InvalidParameterError) as caught:
        txc_async.Client(api_secret=SECRET)
    assert caught.value.parameter == "api_key" and SECRET not in str(caught.value)


def test_from_env_names_the_variable_that_is_not_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TXC_API_SECRET", raising=False)
    monkeypatch.setenv("TXC_API_KEY", KEY)
    with pytest.raises(InvalidParameterError) as caught:
        txc_async.Client.from_env()
    message = str(caught.value)
    assert caught.value.parameter == "TXC_API_SECRET"
    assert message.startswith("TXC_API_SECRET: TXC_API_KEY is set but TXC_API_SECRET is not")
    assert KEY not in message
    monkeypatch.delenv("TXC_API_KEY")
    with pytest.raises(InvalidParameterError) as caught:
        txc_async.Client.from_env(api_secret=SECRET)
    assert "api_secret= was given but TXC_API_KEY is not set" in str(caught.value)
    assert SECRET not in str(caught.value)


async def test_a_private_operation_without_a_key_names_both_ways(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TXC_API_KEY", raising=False)
    monkeypatch.delenv("TXC_API_SECRET", raising=False)
    from txc_async.transports import RawResponse

    async with txc_async.Client.from_env(
        base_url="https://api.example.test", transport=MemoryTransport(RawResponse(200, {}, b""))
    ) as client:
        with pytest.raises(InvalidParameterError) as caught:
            await client.main_balance()
    message = str(caught.value)
    assert "main_balance is a private operation" in message
    assert "TXC_API_KEY and TXC_API_SECRET" in message and "api_key=" in message
