"""The state the clients of a process share, held by a ``txc_async.Runtime``: what clients of one
runtime share and clients of two do not, the runtime made current and restored, the package's
own runtime, and the pytest plugin's runtime per test."""

from __future__ import annotations

import email.utils
import gc
import subprocess
import sys
import textwrap
import time

import pytest

import txc_async
from txc_async import (
    Client,
    InvalidParameterError,
    Runtime,
    current_runtime,
    limiter_from_url,
    use_runtime,
)
from txc_async.transports import MockRequest, MockTransport, RawResponse

from ..support.clocks import ManualClock
from ..support.common import BASE, KEY, SECRET

pytest_plugins = ["pytester"]


def _server_ahead(seconds: float) -> MockTransport:
    """The service, its clock ``seconds`` ahead of this machine's, answering every ping."""

    def answer(request: MockRequest) -> RawResponse:
        date = email.utils.formatdate(time.time() + seconds, usegmt=True)
        return RawResponse(200, {"Date": date}, b'["pong"]')

    return MockTransport(answer)


async def test_two_runtimes_keep_two_estimates_of_one_server_s_clock() -> None:
    with use_runtime(Runtime()):
        learner = Client(base_url=BASE, transport=_server_ahead(30.0))
        neighbour = Client(base_url=BASE, transport=_server_ahead(30.0))
    with use_runtime(Runtime()):
        stranger = Client(base_url=BASE, transport=_server_ahead(30.0))
    async with learner, neighbour, stranger:
        assert await learner.ping() is True
        assert 29.0 < learner.clock_offset < 31.0
        # What one client learns, every client of its runtime knows; another runtime's don't.
        assert abs(neighbour.clock_offset - learner.clock_offset) < 0.01
        assert stranger.clock_offset == 0.0
        assert await stranger.ping() is True
        assert 29.0 < stranger.clock_offset < 31.0


async def test_clients_of_one_runtime_share_its_parts_and_clients_of_two_share_none() -> None:
    mine, other = Runtime(), Runtime()
    with use_runtime(mine):
        first = Client(KEY, SECRET, base_url=BASE, transport=_server_ahead(0.0))
        second = Client(KEY, SECRET, base_url=BASE, transport=_server_ahead(0.0))
        assert limiter_from_url("memory://") is mine.limiter
    with use_runtime(other):
        stranger = Client(KEY, SECRET, base_url=BASE, transport=_server_ahead(0.0))
    parts = [
        (c._pipeline.server_clock, c._pipeline.signer, c._pipeline.limiter)
        for c in (first, second, stranger)
    ]
    (clock_1, signer_1, limiter_1), (clock_2, signer_2, limiter_2), (clock_3, signer_3,
                                                                     limiter_3) = parts
    assert signer_1 is not None and signer_2 is not None and signer_3 is not None
    assert clock_1 is clock_2 and signer_1.nonces is signer_2.nonces
    assert limiter_1 is limiter_2 is mine.limiter
    assert clock_3 is not clock_1 and signer_3.nonces is not signer_1.nonces
    assert limiter_3 is other.limiter and limiter_3 is not limiter_1
    for client in (first, second, stranger):
        await client.close()


def test_a_runtime_makes_its_limiter_once() -> None:
    runtime = Runtime()
    assert runtime.limiter is runtime.limiter
    assert isinstance(runtime.limiter, txc_async.InProcessLimiter)


def test_a_nonce_source_let_go_leaves_its_last_value_to_the_next_of_its_key() -> None:
    runtime = Runtime()
    clock = runtime._server_clock_for(BASE, ManualClock())  # stands still
    source = runtime._nonce_source_for(KEY, clock)
    burst = [source.try_next() for _ in range(100)]  # 99 ms ahead of the clock
    assert None not in burst
    del source
    gc.collect()
    again = runtime._nonce_source_for(KEY, clock)
    assert again.try_next() == burst[-1] + 1  # not the clock's value, handed out already


def test_use_runtime_makes_a_runtime_current_and_its_block_restores_the_one_before() -> None:
    before = current_runtime()
    mine, inner = Runtime(), Runtime()
    with use_runtime(mine) as entered:
        assert entered is mine and current_runtime() is mine
        with use_runtime(inner):
            assert current_runtime() is inner
        assert current_runtime() is mine
    assert current_runtime() is before
    with pytest.raises(ZeroDivisionError), use_runtime(Runtime()):
        1 / 0  # noqa: B018
    assert current_runtime() is before


async def test_use_runtime_called_alone_keeps_the_runtime_current() -> None:
    before = current_runtime()
    mine = Runtime()
    restore = use_runtime(mine)
    try:
        assert current_runtime() is mine
        async with Client(base_url=BASE, transport=_server_ahead(0.0)) as client:
            assert client._pipeline.limiter is mine.limiter
    finally:
        restore.__exit__(None, None, None)
    assert current_runtime() is before


def test_use_runtime_refuses_anything_but_a_runtime() -> None:
    before = current_runtime()
    with pytest.raises(InvalidParameterError, match="runtime"):
        use_runtime(object())  # type: ignore[arg-type]
    assert current_runtime() is before


def test_the_package_s_own_runtime_is_shared_by_every_client_of_the_process() -> None:
    """Without the pytest plugin: the runtime the package made when imported."""
    program = textwrap.dedent(f"""
        import txc_async
        from txc_async import Client, current_runtime

        runtime = current_runtime()
        a = Client({KEY!r}, {SECRET!r}, base_url={BASE!r})
        b = Client({KEY!r}, {SECRET!r}, base_url={BASE!r})
        assert current_runtime() is runtime
        assert a._pipeline.server_clock is b._pipeline.server_clock
        assert a._pipeline.signer.nonces is b._pipeline.signer.nonces
        assert a._pipeline.limiter is b._pipeline.limiter is runtime.limiter
        assert txc_async.limiter_from_url("memory://") is runtime.limiter
        print("shared")
    """)
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.strip() == "shared", done.stderr[-2000:]


def test_this_test_runs_under_the_runtime_the_plugin_made_for_it(
    _txc_fresh_runtime: Runtime,
) -> None:
    assert current_runtime() is _txc_fresh_runtime


USER_CONFTEST = '''
import txc_async

BEFORE = txc_async.current_runtime()


def pytest_unconfigure(config):
    print("restored:", txc_async.current_runtime() is BEFORE)
'''

USER_TESTS = '''
import txc_async

from conftest import BEFORE

seen = []


def test_first():
    seen.append(txc_async.current_runtime())
    assert seen[0] is not BEFORE


def test_second():
    seen.append(txc_async.current_runtime())
    assert seen[1] is not BEFORE and seen[1] is not seen[0]
'''


@pytest.mark.asyncio_only
def test_the_plugin_gives_each_test_a_runtime_of_its_own(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(USER_CONFTEST)
    pytester.makepyfile(test_user=USER_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*restored: True*"])
