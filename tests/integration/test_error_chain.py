"""No error the library raises holds, anywhere in its chain, the API key, the secret, a
signature, a payload or an OAuth secret or token: every object reachable from the error
(``__cause__``, ``__context__``, attributes, aiohttp's ``request_info``) is searched. Messages
name the real cause."""

from __future__ import annotations

import asyncio
import json
import socket
import urllib.parse
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import aiohttp
import pytest

import txc_async
from txc_async import (
    AnswerFormatError,
    ApiError,
    AuthenticationError,
    RateLimitError,
    RequestTimeout,
    RetryPolicy,
    ServiceMaintenanceError,
    TransportError,
    TxcError,
    ValidationError,
)
from txc_async.sandbox import Sandbox
from txc_async.transports import MockRequest, RawResponse

from ..support.reachable import reachable_text
from ..support.transports import MemoryTransport
from .test_answers import ORDER_ARGS

KEY = "chain-key-Q7x9ZpL2"
SECRET = "chain-secret-W4m8Rk1Vt6"
ORDER = "/api/v4/order/collateral/stop-limit"
BALANCE = "/api/v4/main-account/balance"
OAUTH = "/oauth2/refresh_token"
NO_RETRY = RetryPolicy(max_retries=0, max_rate_limit_retries=0, max_nonce_retries=0,
                       backoff_base=0.0, max_retry_after=0.0)


@dataclass
class Sent:
    """What left this process: every signed header value and form body."""

    values: set[str] = field(default_factory=set)
    started: asyncio.Event = field(default_factory=asyncio.Event)

    async def on_request_start(self, session: Any, context: Any,
                               params: aiohttp.TraceRequestStartParams) -> None:
        for name in ("X-TXC-SIGNATURE", "X-TXC-PAYLOAD", "X-TXC-APIKEY"):
            if name in params.headers:
                self.values.add(params.headers[name])
        self.started.set()


@dataclass
class World:
    box: Sandbox
    sent: Sent
    session: aiohttp.ClientSession

    def secrets(self) -> set[str]:
        return {KEY, SECRET, self.box.oauth_client_secret, self.box.oauth_refresh_token,
                *self.sent.values}

    def client(self, **kwargs: Any) -> txc_async.Client:
        kwargs.setdefault("retry", NO_RETRY)
        kwargs.setdefault("limiter", txc_async.InProcessLimiter())
        kwargs.setdefault("session", self.session)
        return txc_async.Client(api_key=KEY, api_secret=SECRET, base_url=self.box.url, **kwargs)


@pytest.fixture
async def world() -> AsyncIterator[World]:
    async with Sandbox() as box:
        box.add_key(KEY, SECRET)
        sent = Sent()
        trace = aiohttp.TraceConfig()
        trace.on_request_start.append(sent.on_request_start)
        session = aiohttp.ClientSession(trace_configs=[trace])
        try:
            yield World(box, sent, session)
        finally:
            await session.close()


def assert_clean(err: BaseException, secrets: set[str]) -> None:
    assert secrets, "nothing to look for"
    text = reachable_text(err)
    for secret in secrets:
        assert secret not in text, f"{type(err).__name__} holds a secret: {secret[:12]}..."
    assert err.__context__ is None or not _aiohttp_in_chain(err)


def _aiohttp_in_chain(err: BaseException) -> bool:
    link: BaseException | None = err
    while link is not None:
        if type(link).__module__.startswith("aiohttp"):
            return True
        link = link.__cause__ or link.__context__
    return False


async def _raised(call: Callable[[], Any]) -> TxcError:
    with pytest.raises(TxcError) as caught:
        await call()
    return caught.value


async def test_connection_refused(world: World) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with txc_async.Client(
        api_key=KEY, api_secret=SECRET, base_url=f"http://127.0.0.1:{port}", retry=NO_RETRY,
        limiter=txc_async.InProcessLimiter(), session=world.session,
    ) as client:
        err = await _raised(client.main_balance)
    assert type(err) is TransportError and not err.may_have_reached_server
    assert str(err) == f"main_balance: connection refused by 127.0.0.1:{port}"
    assert_clean(err, {KEY, SECRET})


SANDBOX_CASES: list[tuple[str, str, int, type[TxcError], str]] = [
    # (path, fault kind, times, expected type, words the message holds)
    (ORDER, "reset", 1, TransportError, "127.0.0.1"),
    (ORDER, "malformed_http", 1, TransportError, "malformed HTTP answer"),
    (ORDER, "html_502", 1, TransportError, "server error"),
    (ORDER, "json_500", 1, TransportError, "Internal server error"),
    (ORDER, "text_503", 1, ServiceMaintenanceError, "under maintenance"),
    (ORDER, "malformed_json", 1, AnswerFormatError, "accepted the request"),
    (ORDER, "non_finite", 1, AnswerFormatError, "non-finite"),
    (ORDER, "oversized", 1, TransportError, "max_answer_bytes"),
    (ORDER, "rate_limit_429", 1, RateLimitError, "rate limit"),
    (ORDER, "nonce_429", 1, AuthenticationError, "nonce refused"),
    (ORDER, "throttle", 1, RateLimitError, "Too Many Attempts"),
    (ORDER, "error_200", 1, ApiError, "Service error"),
    (ORDER, "empty_404", 1, TransportError, "not JSON"),
]


@pytest.mark.parametrize(("path", "kind", "times", "expected", "words"), SANDBOX_CASES,
                         ids=[case[1] for case in SANDBOX_CASES])
async def test_sandbox_faults(world: World, path: str, kind: str, times: int,
                              expected: type[TxcError], words: str) -> None:
    world.box.faults.add(path, kind, times=times, size=2 << 20)
    async with world.client(max_answer_bytes=1 << 20) as client:
        err = await _raised(lambda: client.collateral_stop_limit_order(**ORDER_ARGS))
    assert isinstance(err, expected), repr(err)
    assert words in str(err)
    assert str(err).startswith("collateral_stop_limit_order: ")
    assert world.sent.values, "the request went out signed"
    assert_clean(err, world.secrets())


async def test_timeout(world: World) -> None:
    world.box.faults.add(BALANCE, "slow", delay=2.0)
    async with world.client(timeout=0.2) as client:
        err = await _raised(client.main_balance)
    assert isinstance(err, RequestTimeout)
    assert_clean(err, world.secrets())


async def test_api_refusals(world: World) -> None:
    async with world.client() as client:
        small = await _raised(lambda: client.collateral_stop_limit_order(
            **{**ORDER_ARGS, "amount": "0.00000001"}))
        assert isinstance(small, ValidationError)
        assert_clean(small, world.secrets())
        refused = await _raised(lambda: client.refresh_oauth_token(
            client_id=world.box.oauth_client_id, client_secret=world.box.oauth_client_secret,
            refresh_token="not-a-token-Zk3"))
        assert isinstance(refused, AuthenticationError)
        assert_clean(refused, world.secrets() | {"not-a-token-Zk3"})
    async with txc_async.Client(
        api_key=KEY, api_secret="wrong-secret-Pq5", base_url=world.box.url, retry=NO_RETRY,
        limiter=txc_async.InProcessLimiter(), session=world.session,
    ) as wrong:
        bad = await _raised(wrong.main_balance)
    assert isinstance(bad, AuthenticationError) and bad.status == 401
    assert_clean(bad, world.secrets() | {"wrong-secret-Pq5"})


async def test_closed_while_under_way(world: World) -> None:
    world.box.faults.add(BALANCE, "slow", delay=2.0)
    client = world.client()
    call = asyncio.ensure_future(client.main_balance())
    await world.sent.started.wait()
    await client.close()
    with pytest.raises(TransportError) as caught:
        await call
    assert_clean(caught.value, world.secrets())


async def test_unreadable_oauth_answer_and_refused_parameters() -> None:
    # The refresh token in an object: no token to read (a null expires_in alone would read).
    answer = json.dumps({"data": {"access_token": "AT-chain-Jx8",
                                  "refresh_token": {"value": "RT-chain-Hy2"},
                                  "expires_in": None, "scope": "a", "token_type": "Bearer"}})
    transport = MemoryTransport(RawResponse(200, {}, answer.encode()))
    client = txc_async.Client(api_key=KEY, api_secret=SECRET, base_url="https://api.test",
                              transport=transport, retry=NO_RETRY,
                              limiter=txc_async.InProcessLimiter())
    err = await _raised(lambda: client.refresh_oauth_token(
        client_id="cid", client_secret="CS-chain-Lm4", refresh_token="RT-old-chain-Bv7"))
    assert isinstance(err, AnswerFormatError)
    assert_clean(err, {KEY, SECRET, "AT-chain-Jx8", "RT-chain-Hy2", "CS-chain-Lm4",
                       "RT-old-chain-Bv7"})
    for bad in ("has space-Tt1", "x" * 2000):
        with pytest.raises(txc_async.InvalidParameterError) as caught:
            txc_async.Client(api_key=KEY, api_secret=bad)
        assert_clean(caught.value, {KEY, bad})


def test_the_walker_finds_what_aiohttp_keeps() -> None:
    """The search reaches request_info's headers through a chain, so the checks above can
    fail."""
    from multidict import CIMultiDict, CIMultiDictProxy
    from yarl import URL

    info = aiohttp.RequestInfo(
        URL("http://127.0.0.1/x"), "POST",
        CIMultiDictProxy(CIMultiDict({"X-TXC-SIGNATURE": "sig-Walker-9"})),
        URL("http://127.0.0.1/x"),
    )
    inner = aiohttp.ClientResponseError(info, (), status=400, message="Invalid header token")
    outer = TransportError("malformed HTTP answer")
    outer.__context__ = inner
    outer.__suppress_context__ = True  # what "raise ... from None" leaves behind
    assert "sig-Walker-9" in reachable_text(outer)
    nested = SimpleNamespace(deep=[{"k": (b"token-Bytes-3",)}])
    assert "token-Bytes-3" in reachable_text(TxcError(nested))


async def test_connection_reset(world: World) -> None:
    import struct

    async def reset(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        sock = writer.get_extra_info("socket")
        # Linger 0: closing sends a TCP reset instead of an orderly end.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()

    server = await asyncio.start_server(reset, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with txc_async.Client(
            api_key=KEY, api_secret=SECRET, base_url=f"http://127.0.0.1:{port}",
            retry=NO_RETRY, limiter=txc_async.InProcessLimiter(), session=world.session,
        ) as client:
            err = await _raised(client.main_balance)
    finally:
        server.close()
        await server.wait_closed()
    assert type(err) is TransportError and err.may_have_reached_server
    assert str(err) == f"main_balance: connection reset by 127.0.0.1:{port}"
    assert world.sent.values
    assert_clean(err, world.secrets())


@pytest.mark.parametrize("field", ["client_secret", "refresh_token"])
async def test_a_secret_refused_for_a_lone_surrogate_is_not_reachable_from_the_error(
    field: str,
) -> None:
    """The encoding error that finds a lone surrogate holds the whole value; the refusal
    raised for it keeps none of it, as context or otherwise."""
    secret = "Secret-Surrogate-7\ud800"
    arguments = {"client_id": "c", "client_secret": "s", "refresh_token": "t", field: secret}
    async with txc_async.Client(base_url="http://127.0.0.1:9") as client:
        with pytest.raises(txc_async.InvalidParameterError) as caught:
            await client.refresh_oauth_token(**arguments)
    assert caught.value.__context__ is None
    assert "Secret-Surrogate-7" not in reachable_text(caught.value)


def test_every_error_survives_pickling_whole() -> None:
    """An error crosses to another process (a worker of a process pool) with its message, its
    attributes and the operation it names."""
    import pickle

    errors: list[txc_async.TxcError] = [
        txc_async.TxcError("plain"),
        txc_async.ApiError("refused", status=400, code=30, errors={"amount": ["too small"]}),
        txc_async.ValidationError("Validation failed", status=422, code=30),
        txc_async.AuthenticationError("Invalid token.", status=401),
        txc_async.RateLimitError("Too Many Attempts.", status=429, retry_after=2.5),
        txc_async.TransportError("reset", may_have_reached_server=False),
        txc_async.RequestTimeout("no answer within 1 s"),
        txc_async.AnswerFormatError("not the expected shape", status=200, body=b"{}", write=True),
        txc_async.InvalidParameterError("amount", "must be greater than 0"),
    ]
    for error in errors:
        error._attach_operation("main_balance")
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is type(error)
        assert (str(copy), repr(copy), copy.args) == (str(error), repr(error), error.args)
        assert vars(copy) == vars(error)
    timeout = pickle.loads(pickle.dumps(txc_async.RequestTimeout("late")))
    assert isinstance(timeout, TimeoutError)


class EchoTransport(txc_async.MockTransport):
    """A server that quotes back, in its error answer, everything the request carried: the
    signing headers, the body and, for the OAuth form, each field as sent and decoded."""

    def __init__(self, status: int, shape: str) -> None:
        super().__init__(self._echo)
        self.status = status
        self.shape = shape
        #: The signatures and payloads it was sent.
        self.signed: set[str] = set()

    def _echo(self, request: MockRequest) -> RawResponse:
        url, headers, body = request.url, request.headers, request.body
        for name in ("X-TXC-SIGNATURE", "X-TXC-PAYLOAD"):
            if name in (headers or {}):
                self.signed.add((headers or {})[name])
        quoted = [body.decode() if body else "", *(headers or {}).values()]
        if url.path == OAUTH and body:
            quoted += [value for pair in urllib.parse.parse_qsl(body.decode())
                       for value in pair]
        text = " | ".join(quoted)
        answer: object
        if self.shape == "private":
            answer = {"code": 1, "message": f"refused {text}", "errors": {"token": [text]}}
        elif self.shape == "oauth":
            answer = {"data": {"token": [f"Invalid token {text}."]}}
        elif self.shape == "list":
            answer = {"error": [f"failed for {text}"]}
        else:  # a success answer that does not fit: kept in AnswerFormatError.body
            answer = {"unexpected": text}
        return RawResponse(self.status, {"Date": "Sun, 22 Nov 2026 10:00:00 GMT"},
                           json.dumps(answer).encode())


@pytest.mark.parametrize(("status", "shape"), [
    (400, "oauth"), (401, "private"), (422, "private"), (429, "private"), (500, "list"),
    (503, "list"), (200, "private"), (200, "unexpected"),
])
@pytest.mark.parametrize("operation", ["main_balance", "order", "oauth"])
async def test_what_a_server_quotes_back_from_the_request_is_masked(
    status: int, shape: str, operation: str
) -> None:
    # A secret with characters that form encoding and JSON escaping both change.
    client_secret, refresh_token = 'cs/Se+cr"et=&1', "rt-Refresh-Token-456"
    transport = EchoTransport(status, shape)
    sent: set[str] = {KEY, SECRET, client_secret, refresh_token}

    async with txc_async.Client(
        api_key=KEY, api_secret=SECRET, base_url="https://api.example.test",
        transport=transport, retry=NO_RETRY, limiter=txc_async.InProcessLimiter(),
    ) as client:
        calls: dict[str, Callable[[], Any]] = {
            "main_balance": client.main_balance,
            "order": lambda: client.collateral_stop_limit_order(**ORDER_ARGS),
            "oauth": lambda: client.refresh_oauth_token(
                client_id="app", client_secret=client_secret, refresh_token=refresh_token),
        }
        err = await _raised(calls[operation])
    spellings = set()
    for secret in sent | transport.signed:
        spellings |= {secret, urllib.parse.quote_plus(secret), json.dumps(secret)[1:-1]}
    assert_clean(err, spellings)
    assert "***" in reachable_text(err)  # the answer was quoted, with the secrets masked


@pytest.mark.parametrize("operation", ["order", "oauth"])
async def test_a_secret_cut_where_a_long_message_was_cut_is_masked_too(operation: str) -> None:
    # A message is kept to 300 characters: a long token (or payload) quoted at its end is cut
    # there, and its first characters are as secret as the rest.
    token = "eyJ" + "".join(f"{i:03d}Zq" for i in range(90))  # 453 characters
    transport = EchoTransport(401, "private")
    sent: set[str] = {token}
    async with txc_async.Client(
        api_key=KEY, api_secret=SECRET, base_url="https://api.example.test",
        transport=transport, retry=NO_RETRY, limiter=txc_async.InProcessLimiter(),
    ) as client:
        if operation == "oauth":
            err = await _raised(lambda: client.refresh_oauth_token(
                client_id="app", client_secret="cs-secret-1", refresh_token=token))
        else:
            err = await _raised(lambda: client.collateral_stop_limit_order(**ORDER_ARGS))
    text = reachable_text(err)
    for secret in sent | transport.signed:
        assert not any(secret[i:i + 12] in text for i in range(len(secret) - 12)), secret[:12]
