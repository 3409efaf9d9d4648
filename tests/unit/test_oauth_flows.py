"""OAuth: the refresh the service removes warns, citing the notice; the Fast API Key flow's
operations are sent with the caller's access token in a bearer header, and nowhere else."""

from __future__ import annotations

import json
import pickle
import warnings

import pytest

import txc_async
from txc_async import MockRequest, MockTransport, RawResponse

DATE = {"Date": "Sun, 22 Nov 2026 10:00:00 GMT", "Content-Type": "application/json"}
TOKEN = "oauth-access-token-0123456789"
KEY = "0b6a8e1c-3f4d-4a5b-9c7e-1d2f3a4b5c6d"


def client_of(status: int, body: bytes, seen: list[MockRequest]) -> txc_async.Client:
    def handler(request: MockRequest) -> RawResponse:
        seen.append(request)
        return RawResponse(status, DATE, body)

    return txc_async.Client(base_url="https://api.example.test", transport=MockTransport(handler),
                            limiter=txc_async.InProcessLimiter())


async def test_the_refresh_warns_that_the_service_removed_it_and_says_where() -> None:
    answer = {"data": {"access_token": "a", "refresh_token": "r", "expires_in": 300,
                       "token_type": "bearer", "scope": "general"}}
    seen: list[MockRequest] = []
    async with client_of(200, json.dumps(answer).encode(), seen) as client:
        for refresh in (client.refresh_oauth_token, client.oauth.oauth2_refresh_token):
            with pytest.warns(DeprecationWarning) as caught:
                await refresh(client_id="id", client_secret="s", refresh_token="t")
            (warning,) = caught
            text = str(warning.message)
            assert "2026-11-01" in text and "platform/oauth/overview.mdx" in text
            assert "Fast API Key" in text
            assert warning.filename == __file__  # said at the caller's line
        with pytest.warns(DeprecationWarning):
            await client.call("oauth2_refresh_token", client_id="id", client_secret="s",
                              refresh_token="t")
        # The Fast API Key flow's operations are not deprecated.
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)
            await client.oauth.oauth2_api_key_info(access_token=TOKEN)
    assert len(seen) == 4


async def test_a_bearer_operation_sends_its_token_in_the_header_only() -> None:
    seen: list[MockRequest] = []
    body = b'{"exists": true, "isEnabled": true, "externalId": "key-1"}'
    async with client_of(200, body, seen) as client:
        await client.oauth.oauth2_api_key_info(access_token=TOKEN)
    (request,) = seen
    assert request.method == "GET" and request.url.path == "/oauth2/api-key/info"
    assert request.headers is not None and request.headers["Authorization"] == f"Bearer {TOKEN}"
    assert TOKEN not in str(request.url) and request.body is None
    assert "X-TXC-SIGNATURE" not in request.headers


async def test_a_refused_bearer_call_keeps_the_token_out_of_the_error() -> None:
    seen: list[MockRequest] = []
    body = b'{"message": "Unauthenticated."}'
    async with client_of(401, body, seen) as client:
        with pytest.raises(txc_async.TxcError) as caught:
            await client.oauth.delete_oauth2_api_key(access_token=TOKEN, external_id=KEY)
    assert seen[0].method == "DELETE" and seen[0].url.path == f"/oauth2/api-key/{KEY}"
    error = caught.value
    for text in (str(error), repr(error), repr(error.__dict__), str(pickle.dumps(error))):
        assert TOKEN not in text


async def test_the_secret_is_asked_for_once_even_when_its_answer_is_lost() -> None:
    seen: list[MockRequest] = []

    def handler(request: MockRequest) -> RawResponse:
        seen.append(request)
        raise txc_async.TransportError("connection reset")

    async with txc_async.Client(
        base_url="https://api.example.test", transport=MockTransport(handler),
        limiter=txc_async.InProcessLimiter(),
    ) as client:
        with pytest.raises(txc_async.TransportError) as caught:
            await client.oauth.oauth2_api_key_secret(access_token=TOKEN, external_id=KEY)
    assert len(seen) == 1 and caught.value.may_have_reached_server
    assert not txc_async.OPERATIONS["oauth2_api_key_secret"].retry_safe


def test_the_token_exchange_takes_the_pkce_verifier_as_a_secret() -> None:
    op = txc_async.OPERATIONS["oauth2_token"]
    assert "code_verifier" in op.secret_params
    with pytest.raises(txc_async.InvalidParameterError, match="code_verifier"):
        op.wire_params({"client_id": "i", "client_secret": "s", "code": "c",
                        "code_verifier": "short"})
