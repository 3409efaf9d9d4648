"""The pytest plugin that installing txc_async registers: its fixtures in a user's own test
suite, in pytest-asyncio's strict mode and in auto mode, configured by markers."""

from __future__ import annotations

import importlib.metadata

import pytest

import txc_async
from txc_async.sandbox import Sandbox

pytest_plugins = ["pytester"]

INI = "[pytest]\nasyncio_mode = {mode}\nasyncio_default_fixture_loop_scope = function\n"

USER_TESTS = '''
from decimal import Decimal

import pytest

import txc_async

BALANCE = "/api/v4/main-account/balance"
seen = []


@pytest.mark.asyncio
async def test_reads_survive_a_502(txc_sandbox, txc_client):
    txc_sandbox.faults.add(BALANCE, "html_502")
    balance = await txc_client.main_balance()
    assert balance and txc_sandbox.stats.faults_served == 1
    assert txc_sandbox.stats.received[BALANCE] == 2
    seen.append(txc_client)


@pytest.mark.asyncio
async def test_the_client_of_the_last_test_was_closed(txc_client):
    assert seen and seen[0].closed and seen[0] is not txc_client
    assert not txc_client.closed


@pytest.mark.asyncio
@pytest.mark.txc_sandbox(mining_accounts=3, enforce_limits=False)
@pytest.mark.txc_client(retry=txc_async.RetryPolicy(max_retries=0))
async def test_markers_configure_both(txc_sandbox, txc_client):
    assert len(txc_sandbox.mining_account_names) == 3
    txc_sandbox.faults.add(BALANCE, "json_503")
    with pytest.raises(txc_async.TransportError):
        await txc_client.main_balance()


@pytest.mark.asyncio
@pytest.mark.txc_sandbox(trade_balances={"USDT": Decimal("1000")})
async def test_the_sandbox_starts_with_trading_balances(txc_client):
    balance = await txc_client.call("trade_account_balance", ticker="USDT")
    assert balance["USDT"].available == Decimal("1000")


@pytest.mark.txc_sandbox(seed=1)
class TestMarkersOfAClass:
    @pytest.mark.asyncio
    @pytest.mark.txc_sandbox(seed=2)
    async def test_the_closest_marker_wins(self, txc_sandbox):
        assert txc_sandbox.seed == 2

    @pytest.mark.asyncio
    async def test_the_class_marker_applies(self, txc_sandbox, txc_client):
        assert txc_sandbox.seed == 1
        assert await txc_client.ping()
'''


def test_the_plugin_is_registered_by_an_entry_point() -> None:
    found = [
        entry for entry in importlib.metadata.entry_points(group="pytest11")
        if entry.value == "txc_async.pytest_plugin"
    ]
    assert len(found) == 1


@pytest.mark.asyncio_only
@pytest.mark.parametrize("mode", ["strict", "auto"])
def test_a_user_suite_gets_the_fixtures(pytester: pytest.Pytester, mode: str) -> None:
    pytester.makeini(INI.format(mode=mode))
    pytester.makepyfile(test_user=USER_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--strict-markers")
    result.assert_outcomes(passed=6)


@pytest.mark.asyncio_only
def test_a_positional_marker_argument_is_refused(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI.format(mode="auto"))
    pytester.makepyfile(test_user='''
import pytest

@pytest.mark.txc_sandbox({"seed": 1})
async def test_it(txc_sandbox):
    pass
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*takes keyword arguments only*"])
    assert result.ret != 0


async def test_this_suite_uses_the_fixtures_too(
    txc_sandbox: Sandbox, txc_client: txc_async.Client
) -> None:
    assert txc_client.base_url == txc_sandbox.url
    assert await txc_client.main_balance()
    assert txc_sandbox.stats.executed


CLOCK_TESTS = '''
import socket

import pytest


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


PORT = _free_port()


@pytest.mark.txc_sandbox(port=PORT, clock_offset=3600.0)
async def test_a_server_an_hour_ahead(txc_client):
    await txc_client.main_balance()
    assert 3599.0 < txc_client.clock_offset < 3601.0


@pytest.mark.txc_sandbox(port=PORT)
async def test_the_next_server_on_that_port_is_met_afresh(txc_sandbox, txc_client):
    assert txc_sandbox.port == PORT
    assert txc_client.clock_offset == 0.0
    await txc_client.main_balance()
    assert abs(txc_client.clock_offset) < 1.0
'''


@pytest.mark.asyncio_only
def test_each_test_of_a_user_suite_meets_its_servers_afresh(pytester: pytest.Pytester) -> None:
    """Two tests start sandboxes on one port, the first an hour ahead: the second's client
    does not start from the first's estimate of that address's clock."""
    pytester.makeini(INI.format(mode="auto"))
    pytester.makepyfile(test_user=CLOCK_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_this_suite_meets_its_servers_afresh_through_the_plugin(
    request: pytest.FixtureRequest,
) -> None:
    """tests/conftest.py relies on the plugin for a runtime of its own in every test."""
    assert "_txc_fresh_runtime" in request.fixturenames
