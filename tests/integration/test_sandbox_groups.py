"""The sandbox counts rate limits as the service does (whitebit-exchange/docs,
api-reference/rate-limits.mdx): per client IP address, shared by every API key, each request
against its endpoint's own limit and its group's. Spoken to with raw signed HTTP."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest

from txc_async import RateLimit
from txc_async.sandbox import PATH_GROUPS, PATH_SCOPES, Sandbox
from txc_async.sandbox._server import SERVICE_GROUP_LIMITS, SERVICE_RATE_LIMITS

from .test_sandbox_server import BALANCE, CREATE, INVEST, ORDER, ORDER_PARAMS, REWARDS, post

PING = "/api/v4/public/ping"
REFRESH = "/oauth2/refresh_token"
OTHER_IP = "127.0.0.2"

#: Windows of a minute: every request of a test falls in one window however slow the machine.
MINUTE = 60.0


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def ping(http: aiohttp.ClientSession, box: Sandbox) -> int:
    async with http.get(box.url + PING) as response:
        return response.status


async def refresh(http: aiohttp.ClientSession, box: Sandbox) -> int:
    form = {"client_id": box.oauth_client_id, "client_secret": box.oauth_client_secret,
            "token": box.oauth_refresh_token}
    async with http.post(box.url + REFRESH, data=form) as response:
        return response.status


SANDBOX_PATHS = (PING, BALANCE, INVEST, ORDER, CREATE, REWARDS, "/api/v4/mining/hashrate", REFRESH)


def test_the_groups_are_the_service_s() -> None:
    # whitebit-exchange/docs, api-reference/rate-limits.mdx: /api/v4/main-account/* 1,000 per
    # 10 s, /api/v4/trade-account/* 12,000, /api/v4/public/* 20,000, every other endpoint the
    # default 10,000.
    assert {name: (lim.max_requests, lim.per_seconds)
            for name, lim in SERVICE_GROUP_LIMITS.items()} == {
        "main_account": (1000, 10), "trade_account": (12000, 10), "public_group": (20000, 10),
        "default": (10000, 10)}
    # The paths the sandbox simulates (every other documented path has its group too).
    assert {path: PATH_GROUPS[path] for path in SANDBOX_PATHS} == {
        PING: "public_group",
        BALANCE: "main_account",
        INVEST: "main_account",
        ORDER: "default",
        CREATE: "default",
        REWARDS: "default",
        "/api/v4/mining/hashrate": "default",
        REFRESH: "default",
    }
    assert PATH_GROUPS.keys() == PATH_SCOPES.keys()
    # A group's name is never an endpoint's: one name, one budget.
    assert not SERVICE_GROUP_LIMITS.keys() & SERVICE_RATE_LIMITS.keys()


def test_rate_limits_override_groups_and_refuse_unknown_names() -> None:
    box = Sandbox(rate_limits={"main_account": RateLimit(100, 1.0),
                               "main_balance": RateLimit(7, 1.0)})
    assert box.rate_limits["main_account"] == RateLimit(100, 1.0)
    assert box.rate_limits["main_balance"] == RateLimit(7, 1.0)
    assert box.rate_limits["default"] == SERVICE_GROUP_LIMITS["default"]
    assert box.rate_limits["investments"] == SERVICE_RATE_LIMITS["investments"]
    with pytest.raises(ValueError, match="unknown main_acount; the names are") as raised:
        Sandbox(rate_limits={"main_acount": RateLimit(1, 1.0)})
    assert "main_account" in str(raised.value) and "main_balance" in str(raised.value)


async def test_balance_and_investments_share_the_main_account_group(
    http: aiohttp.ClientSession,
) -> None:
    # Each endpoint allows 4, the group 5: the sixth request is refused although neither
    # endpoint has reached its own limit.
    limits = {"main_account": RateLimit(5, MINUTE), "main_balance": RateLimit(4, MINUTE),
              "investments": RateLimit(4, MINUTE)}
    async with Sandbox(rate_limits=limits) as box:
        statuses = []
        for path in (BALANCE, INVEST) * 4:
            statuses.append((await post(http, box, path))[0])
        assert statuses == [200] * 5 + [429] * 3
        assert box.stats.executed[BALANCE] == 3 and box.stats.executed[INVEST] == 2
        assert box.stats.refused == {"main_account": 3}
        assert box.stats.rate_limited == 3
        # The other groups keep their budgets.
        assert (await post(http, box, ORDER, ORDER_PARAMS))[0] == 200
        assert await ping(http, box) == 200


async def test_a_refusal_uses_up_neither_budget(http: aiohttp.ClientSession) -> None:
    # The balance's own limit refuses its third request; the group, which that request did not
    # draw on, still has room for one investments request, and no more.
    limits = {"main_account": RateLimit(3, MINUTE), "main_balance": RateLimit(2, MINUTE)}
    async with Sandbox(rate_limits=limits) as box:
        statuses = [(await post(http, box, path))[0]
                    for path in (BALANCE, BALANCE, BALANCE, INVEST, INVEST)]
        assert statuses == [200, 200, 429, 200, 429]
        assert box.stats.refused == {"main_balance": 1, "main_account": 1}


async def test_two_keys_from_one_address_share_the_group_and_the_endpoint(
    http: aiohttp.ClientSession,
) -> None:
    async with Sandbox(rate_limits={"main_balance": RateLimit(3, MINUTE)}) as box:
        box.add_key("second-key", "second-secret")
        second: dict[str, Any] = {"key": "second-key", "secret": "second-secret"}
        statuses = [(await post(http, box, BALANCE))[0],
                    (await post(http, box, BALANCE, **second))[0],
                    (await post(http, box, BALANCE))[0],
                    (await post(http, box, BALANCE, **second))[0]]
        assert statuses == [200, 200, 200, 429]
        assert box.stats.refused == {"main_balance": 1}
    async with Sandbox(rate_limits={"main_account": RateLimit(3, MINUTE)}) as box:
        box.add_key("second-key", "second-secret")
        statuses = [(await post(http, box, BALANCE))[0],
                    (await post(http, box, INVEST, **second))[0],
                    (await post(http, box, INVEST))[0],
                    (await post(http, box, BALANCE, **second))[0]]
        assert statuses == [200, 200, 200, 429]
        assert box.stats.refused == {"main_account": 1}


async def test_the_default_group_binds_mining_orders_and_the_oauth_refresh_together(
    http: aiohttp.ClientSession,
) -> None:
    async with Sandbox(rate_limits={"default": RateLimit(4, MINUTE)}) as box:
        statuses = [(await post(http, box, REWARDS))[0],
                    (await post(http, box, ORDER, ORDER_PARAMS))[0],
                    (await post(http, box, REWARDS))[0],
                    (await post(http, box, ORDER, ORDER_PARAMS | {"clientOrderId": "b"}))[0],
                    (await post(http, box, CREATE, {"name": "fresh"}))[0],
                    await refresh(http, box)]
        assert statuses == [200] * 4 + [429] * 2
        assert box.stats.refused == {"default": 2}
        # The main-account group is another budget.
        assert (await post(http, box, BALANCE))[0] == 200


async def test_ping_counts_against_public_and_the_public_group(
    http: aiohttp.ClientSession,
) -> None:
    async with Sandbox(rate_limits={"public": RateLimit(3, MINUTE)}) as box:
        assert [await ping(http, box) for _ in range(4)] == [200, 200, 200, 429]
        assert box.stats.refused == {"public": 1}
    async with Sandbox(rate_limits={"public_group": RateLimit(3, MINUTE)}) as box:
        assert [await ping(http, box) for _ in range(4)] == [200, 200, 200, 429]
        assert box.stats.refused == {"public_group": 1}
        assert len(box.stats.arrivals["public"]) == len(box.stats.arrivals["public_group"]) == 4


def _can_bind(address: str) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind((address, 0))
        except OSError:
            return False
    return True


@pytest.mark.skipif(not _can_bind(OTHER_IP),
                    reason=f"this machine cannot bind a socket to {OTHER_IP}, another loopback "
                           "address, so no request can come from a second IP")
async def test_another_address_has_budgets_of_its_own(http: aiohttp.ClientSession) -> None:
    limits = {"main_account": RateLimit(3, MINUTE), "main_balance": RateLimit(2, MINUTE)}
    async with Sandbox(rate_limits=limits) as box, aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(local_addr=(OTHER_IP, 0))
    ) as elsewhere:
        here = [(await post(http, box, path))[0] for path in (BALANCE, BALANCE, BALANCE, INVEST)]
        there = [(await post(elsewhere, box, path))[0]
                 for path in (BALANCE, BALANCE, BALANCE, INVEST, INVEST)]
        # Each address: the balance's own 2, then the group's third request, then nothing.
        assert here == [200, 200, 429, 200]
        assert there == [200, 200, 429, 200, 429]
        assert box.stats.arrivals_by_ip == {"127.0.0.1": 4, OTHER_IP: 5}
        assert box.stats.refused == {"main_balance": 2, "main_account": 1}


async def test_enforce_limits_false_lifts_the_groups_too(http: aiohttp.ClientSession) -> None:
    limits = {"main_account": RateLimit(1, MINUTE), "default": RateLimit(1, MINUTE),
              "public_group": RateLimit(1, MINUTE)}
    async with Sandbox(rate_limits=limits, enforce_limits=False) as box:
        statuses = [(await post(http, box, path))[0] for path in (BALANCE, INVEST, REWARDS) * 2]
        statuses += [await ping(http, box) for _ in range(2)]
        assert statuses == [200] * 8
        assert box.stats.rate_limited == 0 and not box.stats.refused
        # Arrivals are still recorded, per group as well.
        assert len(box.stats.arrivals["main_account"]) == 4


def _clock_from(shift: list[float]) -> Callable[[], float]:
    """This machine's clock at the moment of the call, moved on by ``shift[0]`` seconds: the
    nonces (real time) stay within the service's 5-second window."""
    base = time.time()
    return lambda: base + shift[0]


async def test_a_group_s_busiest_window_is_measured_and_its_window_slides(
    http: aiohttp.ClientSession,
) -> None:
    shift = [0.0]
    limits = {"main_account": RateLimit(3, 1.0)}
    async with Sandbox(rate_limits=limits, clock=_clock_from(shift)) as box:
        at_start = [(await post(http, box, path))[0] for path in (BALANCE, INVEST, BALANCE)]
        shift[0] = 0.5
        half_way = (await post(http, box, INVEST))[0]
        # Strict sliding window: the three requests at 0 leave it once a second has passed.
        shift[0] = 1.001
        after = [(await post(http, box, path))[0] for path in (BALANCE, BALANCE, INVEST, INVEST)]
        assert at_start == [200, 200, 200] and half_way == 429
        assert after == [200, 200, 200, 429]
        stats = box.stats
        # Arrivals, refused ones included: 0, 0, 0, 0.5 share one second; so do 0.5 and the four
        # at 1.001.
        assert stats.max_in_window("main_account", 1.0) == 5
        assert stats.max_in_window("main_account", 2.0) == 8
        assert stats.max_in_window("main_balance", 1.0) == 2
        assert stats.max_in_window("investments", 1.0) == 3
        assert stats.refused == {"main_account": 2}
        stats.reset()
        assert not stats.refused and not stats.arrivals_by_ip and not stats.arrivals


async def test_concurrent_requests_never_pass_the_group(http: aiohttp.ClientSession) -> None:
    limits = {"main_account": RateLimit(10, MINUTE)}
    async with Sandbox(rate_limits=limits) as box:
        statuses = await asyncio.gather(*(post(http, box, path)
                                          for path in (BALANCE, INVEST) * 15))
        assert sorted(status for status, _ in statuses) == [200] * 10 + [429] * 20
        assert box.stats.max_in_window("main_account", MINUTE) == 30
        assert box.stats.refused == {"main_account": 20}
