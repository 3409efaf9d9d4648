"""The client against the embedded sandbox over real HTTP: every operation, faults, and the
promises under faults (reads survive, writes are sent once, nothing leaks, nothing hangs)."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import socket
import time
from decimal import Decimal
from typing import Any

import pytest

import txc_async
from benchmarks.ratelimit import JitteryTransport
from txc_async import (
    AuthenticationError,
    RateLimit,
    RequestTimeout,
    RetryPolicy,
    TransportError,
    ValidationError,
)
from txc_async.sandbox import Sandbox

BALANCE = "/api/v4/main-account/balance"
ORDER = "/api/v4/order/collateral/stop-limit"
PING = "/api/v4/public/ping"
CREATE = "/api/v4/mining/accounts/create"
OAUTH = "/oauth2/refresh_token"
REWARDS = "/api/v4/mining/rewards"
START = 1704067200  # 2024-01-01
DAY = 86400

QUICK_RETRY = RetryPolicy(backoff_base=0.01, backoff_cap=0.05, max_retry_after=0.05)

# The plugin's txc_client, with quick retries for every test of this module.
pytestmark = pytest.mark.txc_client(retry=QUICK_RETRY)


@pytest.fixture
def sandbox(txc_sandbox: Sandbox) -> Sandbox:
    return txc_sandbox


def client_for(box: Sandbox, **kwargs: Any) -> txc_async.Client:
    kwargs.setdefault("retry", QUICK_RETRY)
    kwargs.setdefault("limiter", txc_async.InProcessLimiter())
    return txc_async.Client(
        api_key=box.api_key, api_secret=box.api_secret, base_url=box.url, **kwargs
    )


@pytest.fixture
def client(txc_client: txc_async.Client) -> txc_async.Client:
    return txc_client


ORDER_ARGS: dict[str, Any] = {
    "market": "BTC_USDT", "side": "buy", "amount": Decimal("0.01"), "price": "40000",
    "activation_price": "39950",
}


async def test_every_operation_round_trips(sandbox: Sandbox, client: txc_async.Client) -> None:
    assert await client.ping() is True
    balance = await client.main_balance()
    assert balance and all(isinstance(v, Decimal) and v > 0 for v in balance.values())
    # Every digit, including those of an amount no float holds (ETH to the wei).
    sent = {t: Decimal(v["main_balance"]) for t, v in sandbox.balance.items()}
    assert balance == sent and Decimal(float(sent["ETH"])) != sent["ETH"]
    assert await client.main_balance(ticker="ETH") == {"ETH": sent["ETH"]}
    assert await client.main_balance(ticker="DOGE") == {"DOGE": Decimal(0)}
    page = await client.investments_history(limit=10)
    assert len(page.records) == 10 and page.limit == 10
    everything = [r async for r in client.iter_investments_history()]
    assert len({r.id for r in everything}) == len(everything) > 100
    order = await client.collateral_stop_limit_order(
        **ORDER_ARGS, stop_loss="39000", take_profit="45000", client_order_id="it-1",
        position_side="LONG",
    )
    # The live service's first answer of the sandbox: filled, in camelCase.
    assert order.status is txc_async.OrderStatus.FILLED and order.amount == Decimal("0.01")
    assert order.deal_stock == Decimal("0.01") and order.left == 0
    assert order.oto is not None and order.oto.stop_loss == Decimal("39000")
    assert order.client_order_id == "it-1"
    account = await client.create_mining_account(name="integration_pool")
    assert account.name == "integration_pool"
    name = sandbox.mining_account_names[0]
    rewards = await client.mining_rewards(account=name, start=START, end=START + 9 * DAY,
                                          limit=100)
    assert len(rewards.data) == 10
    assert all(r.total_reward == r.reward + r.fee for r in rewards.data)
    series = await client.mining_hashrate(account=name, start=START, end=START + DAY,
                                          interval="1h")
    assert series.account == name and len(series.hashrate) >= 24
    assert all(isinstance(p.reject_rate, Decimal) for p in series.hashrate)
    token = await client.refresh_oauth_token(
        client_id=sandbox.oauth_client_id, client_secret=sandbox.oauth_client_secret,
        refresh_token=sandbox.oauth_refresh_token,
    )
    assert token.expires_in == 300 and token.token_type == "Bearer"
    assert sandbox.stats.nonce_refused == 0 and sandbox.stats.auth_failed == 0


async def test_server_side_refusals_map_to_the_error_tree(
    sandbox: Sandbox, client: txc_async.Client
) -> None:
    await client.create_mining_account(name="taken_name")
    with pytest.raises(ValidationError) as caught:
        await client.create_mining_account(name="taken_name")
    assert "name" in caught.value.errors
    old = sandbox.oauth_refresh_token
    await client.refresh_oauth_token(client_id=sandbox.oauth_client_id,
                                     client_secret=sandbox.oauth_client_secret,
                                     refresh_token=old)
    with pytest.raises(AuthenticationError) as refused:
        await client.refresh_oauth_token(client_id=sandbox.oauth_client_id,
                                         client_secret=sandbox.oauth_client_secret,
                                         refresh_token=old)
    assert refused.value.errors == {"token": ["Invalid token."]}
    sandbox.add_key("no-b2b-key", "no-b2b-secret-0123456789", b2b=False)
    async with txc_async.Client(api_key="no-b2b-key", api_secret="no-b2b-secret-0123456789",
                                base_url=sandbox.url) as other:
        with pytest.raises(AuthenticationError) as forbidden:
            await other.investments_history()
    assert forbidden.value.status == 403
    async with txc_async.Client(api_key=sandbox.api_key, api_secret="wrong-secret",
                                base_url=sandbox.url) as wrong:
        with pytest.raises(AuthenticationError) as bad:
            await wrong.main_balance()
    assert bad.value.status == 401


# -- reads survive faults -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fault", ["html_502", "json_503", "text_503", "json_500", "reset", "malformed_json"]
)
async def test_reads_survive_each_fault(
    request_path: str, sandbox: Sandbox, client: txc_async.Client, fault: str
) -> None:
    sandbox.faults.add(BALANCE, fault, times=2)
    assert await client.main_balance()
    assert sandbox.stats.received[BALANCE] == 3


async def test_reads_survive_an_answer_slower_than_the_timeout(
    request_path: str, sandbox: Sandbox
) -> None:
    sandbox.faults.add(BALANCE, "slow", delay=1.0)
    async with client_for(sandbox, timeout=0.2) as c:
        assert await c.main_balance()
    assert sandbox.stats.received[BALANCE] == 2


async def test_a_timeout_of_five_seconds_or_more_is_not_rounded_up(
    request_path: str, sandbox: Sandbox
) -> None:
    """aiohttp rounds a timeout of 5 s or more up to its loop clock's next whole second unless
    told otherwise: the request could then still leave up to a second after the deadline its
    budget counts it until. The transport's timeout ends when it says."""
    import math

    from yarl import URL

    from txc_async.transports import AiohttpTransport

    sandbox.faults.add("/api/v4/public/ping", "slow", delay=10.0)
    transport = AiohttpTransport()
    loop = asyncio.get_running_loop()
    # Just past a whole second of the loop's clock, where rounding up would add almost 1 s.
    timeout = round(5.0 + (math.ceil(loop.time()) - loop.time()) + 0.02, 3)
    began = loop.time()
    with pytest.raises(txc_async.RequestTimeout):
        await transport.send("GET", URL(sandbox.url + "/api/v4/public/ping"), headers=None,
                             body=None, timeout=timeout)
    assert loop.time() - began < timeout + 0.3
    await transport.aclose()


async def test_a_persistent_outage_ends_in_a_transport_error_in_bounded_time(
    sandbox: Sandbox, client: txc_async.Client
) -> None:
    sandbox.faults.add(BALANCE, "html_502", times=100)
    began = time.monotonic()
    with pytest.raises(TransportError) as caught:
        await client.main_balance()
    assert caught.value.status == 502
    assert sandbox.stats.received[BALANCE] == QUICK_RETRY.max_retries + 1
    assert time.monotonic() - began < 5


async def test_a_persistent_timeout_ends_in_request_timeout(
    request_path: str, sandbox: Sandbox
) -> None:
    sandbox.faults.add(BALANCE, "slow", delay=0.5, times=100)
    async with client_for(sandbox, timeout=0.1, retry=RetryPolicy(
        max_retries=2, backoff_base=0.01, backoff_cap=0.02)) as c:
        with pytest.raises(RequestTimeout):
            await c.main_balance()
    assert sandbox.stats.received[BALANCE] == 3


# -- writes are sent once --------------------------------------------------------------------------

WRITES: list[tuple[str, str, dict[str, Any]]] = [
    ("collateral_stop_limit_order", ORDER, ORDER_ARGS),
    ("create_mining_account", CREATE, {"name": "write_once"}),
]


@pytest.mark.parametrize("fault", ["html_502", "json_503", "json_500", "reset", "malformed_json"])
@pytest.mark.parametrize(("method", "path", "kwargs"), WRITES)
async def test_writes_hit_by_a_fault_are_sent_exactly_once(
    request_path: str, sandbox: Sandbox, client: txc_async.Client, fault: str, method: str,
    path: str,
    kwargs: dict[str, Any],
) -> None:
    sandbox.faults.add(path, fault, execute=True)
    with pytest.raises(TransportError) as caught:
        await getattr(client, method)(**kwargs)
    if fault != "reset":
        assert caught.value.status is not None
    assert sandbox.stats.received[path] == 1
    assert sandbox.stats.executed[path] == 1


async def test_oauth_refresh_hit_by_a_fault_is_sent_once(
    sandbox: Sandbox, client: txc_async.Client
) -> None:
    sandbox.faults.add(OAUTH, "html_502", execute=True)
    with pytest.raises(TransportError):
        await client.refresh_oauth_token(client_id=sandbox.oauth_client_id,
                                         client_secret=sandbox.oauth_client_secret,
                                         refresh_token=sandbox.oauth_refresh_token)
    assert sandbox.stats.received[OAUTH] == 1


async def test_a_slow_write_times_out_once(request_path: str, sandbox: Sandbox) -> None:
    sandbox.faults.add(ORDER, "slow", delay=1.0)
    async with client_for(sandbox, timeout=0.2) as c:
        with pytest.raises(RequestTimeout):
            await c.collateral_stop_limit_order(**ORDER_ARGS)
    await asyncio.sleep(1.0)
    assert sandbox.stats.received[ORDER] == 1


@pytest.mark.parametrize("refusal", ["rate_limit_429", "nonce_429", "throttle"])
async def test_refused_writes_are_re_sent_with_a_fresh_nonce(
    sandbox: Sandbox, client: txc_async.Client, refusal: str
) -> None:
    sandbox.faults.add(ORDER, refusal, retry_after=0.01 if refusal == "rate_limit_429" else None)
    order = await client.collateral_stop_limit_order(**ORDER_ARGS, client_order_id="again-1")
    assert order.client_order_id == "again-1"
    assert sandbox.stats.received[ORDER] == 2
    assert sandbox.stats.executed[ORDER] == 1
    assert len(sandbox.stats.orders) == 1


# -- cancellation and closing ---------------------------------------------------------------------


async def _cancel_a_slow_balance(box: Sandbox, client: txc_async.Client) -> bool:
    """A main_balance call cancelled while its answer is slow: True when it ended cancelled."""
    box.faults.add(BALANCE, "slow", delay=5.0)
    call = asyncio.create_task(client.main_balance())
    await asyncio.sleep(0.1)
    call.cancel()
    try:
        await call
    except asyncio.CancelledError:
        return True
    return False


async def test_a_call_cancelled_mid_flight_leaves_the_client_usable(
    request_path: str, sandbox: Sandbox, client: txc_async.Client
) -> None:
    assert await _cancel_a_slow_balance(sandbox, client)
    assert await client.main_balance()
    assert await client.ping()


async def test_closing_with_calls_in_flight_ends_them_without_a_hang(
    request_path: str, sandbox: Sandbox
) -> None:
    sandbox.faults.add(BALANCE, "slow", delay=10.0, times=10)
    c = client_for(sandbox, rate_limits={"main_balance": RateLimit(2, 60)})
    await c.ping()  # the server's clock is known: no signed request waits for a first answer
    calls = [asyncio.create_task(c.main_balance()) for _ in range(6)]  # 4 wait for budget
    await asyncio.sleep(0.2)
    async with asyncio.timeout(3):
        await c.close()
        results = await asyncio.gather(*calls, return_exceptions=True)
    assert all(isinstance(r, TransportError) for r in results), results
    assert all("closed" in str(r) for r in results)
    # What each says of its request is true: the two on their way may have reached the server
    # (they did); the four that waited for budget were not sent.
    assert sandbox.stats.received[BALANCE] == 2
    sent = [r for r in results if r.may_have_reached_server]  # type: ignore[union-attr]
    unsent = [r for r in results if not r.may_have_reached_server]  # type: ignore[union-attr]
    assert len(sent) == 2 and len(unsent) == 4
    assert all(str(r).endswith("; its request was not sent") for r in unsent)


@pytest.mark.parametrize("retries", [0, 2])
async def test_a_get_reset_after_it_was_read_arrives_once_per_request_the_budget_counts(
    request_path: str, sandbox: Sandbox, retries: int
) -> None:
    # aiohttp sends a GET again by itself after a reset; the client's connector stops that
    # second send, so that every arrival is one its budget admitted.
    sandbox.faults.add(PING, "reset", times=100)
    c = client_for(sandbox, retry=RetryPolicy(max_retries=retries, backoff_base=0.0))
    try:
        results = await asyncio.gather(*(c.ping() for _ in range(10)), return_exceptions=True)
    finally:
        await c.close()
    assert all(isinstance(r, TransportError) and r.may_have_reached_server for r in results)
    assert sandbox.stats.received[PING] == 10 * (1 + retries) == c.stats.by_scope["public"]


def _never_connecting() -> tuple[int, list[socket.socket]]:
    """A port on 127.0.0.1 whose connections never open: its listener's queue is full and never
    accepted from, so the kernel drops new connection attempts. The sockets, to close after."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    held = [listener]
    for _ in range(4):
        filler = socket.socket()
        filler.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            filler.connect(("127.0.0.1", port))
        held.append(filler)
    return port, held


def _queued_bytes(listener: socket.socket) -> int:
    """The bytes waiting on every connection the listener queued (what reached it)."""
    listener.setblocking(False)
    total = 0
    with contextlib.suppress(BlockingIOError):
        while True:
            connection, _ = listener.accept()
            with connection:
                connection.setblocking(False)
                with contextlib.suppress(BlockingIOError):
                    total += len(connection.recv(65536))
    return total


async def test_the_client_s_own_session_writes_on_its_connections_unless_told_not_to(
    sandbox: Sandbox,
) -> None:
    """A session the client makes writes its requests on aiohttp's connections, out of the
    sight of a mock of ``ClientSession.request`` (aioresponses); with ``direct=False`` every
    request goes through it, so that a user's mocked tests see every request of the client."""
    from aioresponses import aioresponses

    from txc_async._transports.direct import DIRECT
    from txc_async.transports import AiohttpTransport

    if not DIRECT:
        pytest.skip("this aiohttp's parts cannot make an exchange alone")
    direct = client_for(sandbox, retry=RetryPolicy(max_retries=0))
    mockable = client_for(
        sandbox, retry=RetryPolicy(max_retries=0), transport=AiohttpTransport(direct=False)
    )
    try:
        with aioresponses() as mocked:
            mocked.get(sandbox.url + PING, status=503, body="mocked", repeat=True)
            assert await direct.ping() is True  # the server's answer: the mock never saw it
            assert not mocked.requests
            with pytest.raises(TransportError) as caught:
                await mockable.ping()
            assert caught.value.status == 503 and len(mocked.requests) == 1
        assert sandbox.stats.received[PING] == 1  # the mocked request never left
        assert await mockable.ping() is True
        assert sandbox.stats.received[PING] == 2
        direct_transport: Any = direct._pipeline.transport
        mockable_transport: Any = mockable._pipeline.transport
        assert direct_transport._direct_exchange is not None
        assert mockable_transport._direct_exchange is None
    finally:
        await direct.close()
        await mockable.close()


async def test_no_connection_is_held_after_any_end_of_an_exchange(
    request_path: str, sandbox: Sandbox
) -> None:
    """Answered, refused, reset, timed out, too large, cancelled: every exchange gives its
    connection back (or closes it), and the next calls are answered."""
    c = client_for(sandbox, timeout=0.3, retry=RetryPolicy(max_retries=0),
                   max_answer_bytes=1024)
    try:
        assert await c.main_balance()
        for fault in ("html_502", "reset", "slow", "malformed_json"):
            sandbox.faults.add(BALANCE, fault, delay=1.0 if fault == "slow" else None)
            with pytest.raises(TransportError):
                await c.main_balance()
        # An answer over max_answer_bytes: the month of rewards of every account.
        with pytest.raises(TransportError, match="max_answer_bytes"):
            await c.mining_rewards(start=START, end=START + 30 * DAY, limit=100)
        assert await _cancel_a_slow_balance(sandbox, c)
        await asyncio.sleep(0.4)  # past every deadline of the exchanges above
        for _ in range(3):
            assert await c.main_balance()
        transport: Any = c._pipeline.transport
        assert not transport._session.connector._acquired
        assert (transport._direct_exchange is not None) is (request_path == "direct")
    finally:
        await c.close()


async def test_a_request_that_had_a_connection_is_never_connected_again_nor_unsent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """aiohttp sends a GET again on a new connection when the first closed before the answer:
    the first may have reached the server, so the connector refuses the second connection (the
    request ends as the first ended), and the request never counts as unsent."""
    import aiohttp

    from txc_async._transports.default import _Connector, _request_record
    from txc_async.transports import AiohttpTransport

    opened: list[int] = []

    class Open:
        """A connection whose transport is open (the connector looks before it hands it on)."""

        class transport:  # stands for the attribute
            @staticmethod
            def is_closing() -> bool:
                return False

            @staticmethod
            def get_extra_info(name: str) -> None:
                return None

    async def connect(self: Any, req: Any, traces: Any, timeout: Any) -> Any:
        opened.append(1)
        await asyncio.sleep(30 if len(opened) > 1 else 0)  # a first connection, or never one
        return Open()

    monkeypatch.setattr(aiohttp.TCPConnector, "connect", connect)
    transport = AiohttpTransport()

    async def request() -> bool:
        _request_record.set([asyncio.current_task(), 0])  # what send() does first
        connector = _Connector()
        await connector.connect(None, [], None)  # type: ignore[arg-type]
        with pytest.raises(aiohttp.ServerDisconnectedError):
            await connector.connect(None, [], None)  # type: ignore[arg-type]
        return transport.sent_nothing()  # as the pipeline asks, in the same task

    assert await request() is False
    assert len(opened) == 1  # the second connection was never asked of aiohttp

    # Cancelled during its first connection, it is unsent.
    async def cancelled_while_connecting() -> bool:
        said: list[bool] = []

        async def first() -> None:
            _request_record.set([asyncio.current_task(), 0])
            try:
                await _Connector().connect(None, [], None)  # type: ignore[arg-type]
            finally:
                said.append(transport.sent_nothing())

        opened[:] = [1]
        task = asyncio.create_task(first())
        await asyncio.sleep(0.05)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return said.pop()

    assert await cancelled_while_connecting() is True


async def test_calls_in_tasks_sharing_one_context_never_take_each_other_s_connection(
    request_path: str, sandbox: Sandbox,
) -> None:
    """Tasks may share one context (``create_task(..., context=ctx)``): a write that reached the
    server and timed out is not taken for unsent because another call in that context is still
    waiting for its connection."""
    sandbox.faults.add(CREATE, "slow", delay=3.0)
    port, held = _never_connecting()
    writer = client_for(sandbox, timeout=1.0)
    other = txc_async.Client(base_url=f"http://127.0.0.1:{port}", timeout=10.0)
    shared = contextvars.copy_context()
    loop = asyncio.get_running_loop()
    try:
        write = loop.create_task(writer.create_mining_account(name="shared_ctx"), context=shared)
        await asyncio.sleep(0.3)
        waiting = loop.create_task(other.ping(), context=shared)
        with pytest.raises(txc_async.RequestTimeout) as caught:
            await write
        waiting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiting
    finally:
        await writer.close()
        await other.close()
        for sock in held:
            sock.close()
    assert caught.value.may_have_reached_server is True
    assert sandbox.stats.received[CREATE] == 1
    assert writer.stats.requests == 1


async def test_a_fresh_process_finding_a_shared_counter_far_ahead_asks_the_server_s_time(
    sandbox: Sandbox, tmp_path: Any
) -> None:
    """A process whose clock ran an hour fast left the key's shared nonce counter an hour ahead
    and ended. A process that has seen no answer knows no bound of the server's clock, so it
    cannot bring the counter back: it asks the server's time (one ping) instead of waiting an
    hour, then draws within the service's window."""
    import sqlite3

    from txc_async._nonces.clock import SystemClock

    path = tmp_path / "limits.sqlite"
    # Its own local clock: an estimate of the sandbox's clock no other test has fed.
    c = client_for(sandbox, limiter=txc_async.SQLiteLimiter(path), timeout=3.0,
                   clock=SystemClock())
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO nonces (key_id, last) VALUES (?, ?)",
                   (c._pipeline.admitter.nonce_key, int(time.time() * 1000) + 3_600_000))
    async with asyncio.timeout(10):
        assert await c.main_balance()
    await c.close()
    assert sandbox.stats.received["/api/v4/public/ping"] == 1
    assert sandbox.stats.received[BALANCE] == 1
    assert sandbox.stats.nonce_refused == 0

    # Closed while it asks: the call ends at once, its own request never sent.
    sandbox.faults.add("/api/v4/public/ping", "slow", delay=5.0)
    c = client_for(sandbox, limiter=txc_async.SQLiteLimiter(path), clock=SystemClock())
    with sqlite3.connect(path) as db:
        db.execute("UPDATE nonces SET last = ? WHERE key_id = ?",
                   (int(time.time() * 1000) + 3_600_000, c._pipeline.admitter.nonce_key))
    call = asyncio.create_task(c.main_balance())
    await asyncio.sleep(0.3)
    async with asyncio.timeout(2):
        await c.close()
        with pytest.raises(TransportError) as caught:
            await call
    assert caught.value.may_have_reached_server is False
    assert sandbox.stats.received[BALANCE] == 1


async def test_a_write_whose_connection_never_opened_is_not_sent_and_goes_again(
    request_path: str,
) -> None:
    """The deadline of the whole exchange comes while the connection is still opening: the
    request never left, so the error says so and a write goes again (aiohttp reports it as any
    timeout)."""
    port, held = _never_connecting()
    try:
        await asyncio.sleep(0.1)
        records: list[txc_async.RequestRecord] = []
        async with txc_async.Client(
            api_key="k", api_secret="s" * 10, base_url=f"http://127.0.0.1:{port}", timeout=0.2,
            retry=txc_async.RetryPolicy(max_retries=2, backoff_base=0.01, backoff_cap=0.02),
            limiter=txc_async.InProcessLimiter(), on_request=records.append,
        ) as c:
            with pytest.raises(txc_async.RequestTimeout) as caught:
                await c.create_mining_account(name="a1")
            # Closed while it waits for a connection: not sent either.
            call = asyncio.create_task(c.with_options(timeout=5).create_mining_account(name="a2"))
            await asyncio.sleep(0.3)
        with pytest.raises(TransportError) as closed:
            await call
        assert _queued_bytes(held[0]) == 0
    finally:
        for sock in held:
            sock.close()
    error = caught.value
    assert error.may_have_reached_server is False
    assert str(error).startswith(
        f"create_mining_account: no connection to 127.0.0.1:{port} within 0.1"
    )
    assert [r.error for r in records[:3]] == ["timeout"] * 3
    assert closed.value.may_have_reached_server is False
    assert "its request was not sent" in str(closed.value)


async def test_workers_cancelled_then_the_client_closed_end_cancelled(sandbox: Sandbox) -> None:
    """The usual shutdown: cancel the workers, then close the client. Each worker's own
    cancellation goes through (it is not turned into the closed client's error, which a worker
    that retries on TxcError would take for a reason to go on)."""
    sandbox.faults.add(BALANCE, "slow", delay=10.0, times=10)
    c = client_for(sandbox, rate_limits={"main_balance": RateLimit(2, 60)})
    calls = [asyncio.create_task(c.main_balance()) for _ in range(4)]  # 2 wait for budget
    await asyncio.sleep(0.2)
    for call in calls:
        call.cancel()
    async with asyncio.timeout(3):
        await c.close()
        results = await asyncio.gather(*calls, return_exceptions=True)
    assert all(isinstance(r, asyncio.CancelledError) for r in results), results
    assert all(call.cancelled() for call in calls)


async def test_a_session_closed_by_its_owner_ends_calls_as_not_sent(
    request_path: str, sandbox: Sandbox
) -> None:
    """The application's own aiohttp session, closed under the client: every call, read or
    write, ends in a TransportError that says the session is closed and that nothing was sent;
    nothing reaches the server."""
    import aiohttp

    session = aiohttp.ClientSession()
    c = client_for(sandbox, session=session)
    assert await c.main_balance()
    arrived = sum(sandbox.stats.received.values())
    await session.close()
    for call in (c.main_balance, c.ping, lambda: c.collateral_stop_limit_order(**ORDER_ARGS)):
        with pytest.raises(TransportError) as caught:
            await call()
        assert "the HTTP session is closed" in str(caught.value)
        assert caught.value.may_have_reached_server is False
        assert caught.value.__cause__ is None and caught.value.__context__ is None
    assert sum(sandbox.stats.received.values()) == arrived
    await c.close()


# -- limits as the server sees them ------------------------------------------------------------


@pytest.mark.txc_sandbox(rate_limits={"main_balance": RateLimit(20, 1.0)})
@pytest.mark.txc_client(rate_limits={"main_balance": RateLimit(20, 1.0)})
async def test_a_burst_never_exceeds_the_limit_at_the_server(
    txc_sandbox: Sandbox, txc_client: txc_async.Client
) -> None:
    began = time.monotonic()
    await asyncio.gather(*(txc_client.main_balance() for _ in range(70)))
    elapsed = time.monotonic() - began
    assert txc_sandbox.stats.rate_limited == 0
    assert txc_sandbox.stats.max_in_window("main_balance", 1.0) <= 20
    assert elapsed < 3 * 1.0 * 1.2 + 0.5


@pytest.mark.parametrize("limit", [RateLimit(20, 0.5), RateLimit(5, 0.2)])
async def test_uneven_network_delays_never_push_a_window_over_the_limit(limit: RateLimit) -> None:
    count = 8 * limit.max_requests + 3
    async with Sandbox(rate_limits={"main_balance": limit}) as box:
        async with txc_async.Client(
            api_key=box.api_key, api_secret=box.api_secret, base_url=box.url,
            rate_limits={"main_balance": limit}, limiter=txc_async.InProcessLimiter(),
            transport=JitteryTransport(seed=limit.max_requests, max_delay=0.04),
        ) as c:
            await asyncio.gather(*(c.main_balance() for _ in range(count)))
        assert box.stats.rate_limited == 0
        assert box.stats.max_in_window("main_balance", limit.per_seconds) <= limit.max_requests
        arrivals = box.stats.arrivals["main_balance"]
        # Measured at the server, from the first arrival to the last.
        elapsed = max(arrivals) - min(arrivals)
    # A request counts from its answer, so each window costs at most one round trip more: the
    # network's delay (up to 40 ms here) plus the sandbox's own time.
    windows = -(-count // limit.max_requests) - 1
    assert elapsed <= windows * (limit.per_seconds + 0.04 + 0.03) + 0.3


@pytest.mark.txc_sandbox(rate_limits={"main_balance": RateLimit(1, 1.0)})
@pytest.mark.txc_client(timeout=0.3, rate_limits={"main_balance": RateLimit(1, 1.0)})
async def test_waiting_for_budget_does_not_count_against_the_timeout(
    txc_sandbox: Sandbox, txc_client: txc_async.Client
) -> None:
    began = time.monotonic()
    await asyncio.gather(txc_client.main_balance(), txc_client.main_balance())
    assert time.monotonic() - began >= 1.0  # the second waited a window for budget
    assert txc_sandbox.stats.rate_limited == 0


async def test_a_rate_limit_refusal_pauses_the_whole_scope(sandbox: Sandbox) -> None:
    sandbox.faults.add(BALANCE, "rate_limit_429", retry_after=0.5)
    async with client_for(sandbox) as c:
        first = asyncio.create_task(c.main_balance())
        await asyncio.sleep(0.1)  # the refusal has come back; the scope is paused
        began = time.monotonic()
        assert await c.ping()  # another scope is not paused
        assert time.monotonic() - began < 0.3
        await asyncio.gather(first, c.main_balance(), c.main_balance())
    arrivals = sorted(sandbox.stats.arrivals["main_balance"])
    assert len(arrivals) == 4
    assert arrivals[1] - arrivals[0] >= 0.45, "no request of the scope goes during the pause"


async def test_backfill_from_the_sandbox_across_the_offset_bound_is_exactly_once() -> None:
    # 60 accounts x 30 rewards a day: each 7-day slice holds 12,600 records, past the 10,100
    # that offsets reach, so every slice must move its end and go on.
    box = Sandbox(mining_accounts=60, rewards_per_day=30, enforce_limits=False)
    async with box, client_for(box) as c:
        end = START + 14 * DAY - 1
        got = [
            (r.mining_account_name, r.date)
            async for r in txc_async.backfill_mining_rewards(
                c, start=START, end=end, concurrency=4
            )
        ]
    expected = {
        (name, START + day * DAY + k * (DAY // 30))
        for name in box.mining_account_names for day in range(14) for k in range(30)
    }
    assert len(got) == len(set(got)) == len(expected) == 25_200
    assert set(got) == expected


async def test_a_nonce_too_old_after_a_wait_for_a_connection_is_never_sent(
    request_path: str,
) -> None:
    """A request that waited for a connection draws its nonce again; when none is to spare at
    that moment and the one drawn before has aged past MAX_NONCE_AGE_MS, it goes back to wait
    for the next one instead of sending the old one."""
    import aiohttp

    from txc_async._nonces.clock import MAX_NONCE_AGE_MS

    from ..support.common import nonce_lateness

    trace, late = nonce_lateness()

    class Scarce:
        """The key's nonce source, with none to spare at once once ``scarce`` is set."""

        def __init__(self, source: Any) -> None:
            self.source = source
            self.scarce = False

        def try_next(self) -> int | None:
            return None if self.scarce else self.source.try_next()

        async def next(self) -> int:
            return int(await self.source.next())

        def __getattr__(self, name: str) -> Any:
            return getattr(self.source, name)

    async with Sandbox() as box, aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=1), trace_configs=[trace]
    ) as session:
        client = txc_async.Client(api_key=box.api_key, api_secret=box.api_secret,
                                  base_url=box.url, session=session)
        await client.main_balance()  # an answer bounds the server's clock
        signer = client._pipeline.signer
        assert signer is not None
        nonces = Scarce(signer.nonces)
        signer.nonces = nonces  # type: ignore[assignment]
        late.clear()
        box.faults.add(BALANCE, "slow", delay=0.8, times=2)
        calls = [asyncio.ensure_future(client.main_balance()) for _ in range(3)]
        await asyncio.sleep(0.2)  # all three admitted, with their nonces drawn
        nonces.scarce = True
        await asyncio.gather(*calls)
        await client.close()
    assert len(late) == 3 and max(late) < MAX_NONCE_AGE_MS, late
    assert box.stats.nonce_refused == 0


async def test_the_order_refusal_spec_shows_is_a_validation_error_sent_once(
    sandbox: Sandbox, client: txc_async.Client
) -> None:
    path = "/api/v4/order/collateral/stop-limit"
    for status in (422, 400):
        sandbox.faults.add(path, "validation_failed", status=status)
        before = sandbox.stats.received[path]
        with pytest.raises(txc_async.ValidationError) as refused:
            await client.collateral_stop_limit_order(**ORDER_ARGS)
        assert refused.value.code == 30 and refused.value.errors == {}
        assert sandbox.stats.received[path] == before + 1


async def test_the_spec_dialect_round_trips_the_operations_that_differ() -> None:
    async with Sandbox(dialect="spec") as box, txc_async.Client(
        box.api_key, box.api_secret, base_url=box.url, limiter=txc_async.InProcessLimiter()
    ) as client:
        order = await client.collateral_stop_limit_order(**ORDER_ARGS, client_order_id="it-1")
        # The id reached the server under the first specification's name, and the answer's
        # spelling was read.
        assert order.client_order_id == "it-1" and order.status is txc_async.OrderStatus.NEW
        assert box.stats.orders[0]["order_id"] == order.order_id
        sent = {t: Decimal(v["main_balance"]) for t, v in box.balance.items()}
        # A server that does not filter by ticker answers every asset: the ticker's is kept.
        assert await client.main_balance(ticker="ETH") == {"ETH": sent["ETH"]}
        assert await client.main_balance(ticker="DOGE") == {"DOGE": Decimal(0)}
        series = await client.mining_hashrate(account="any-name", start=START, end=START + DAY)
        assert series.account == "any-name" and series.hashrate
        assert all(p.reject_rate is None for p in series.hashrate)
