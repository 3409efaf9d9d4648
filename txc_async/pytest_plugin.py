"""Pytest fixtures that run your tests against the embedded sandbox.

Installing txc_async registers this plugin with pytest (entry point ``pytest11``), so every test
suite gets two fixtures, with nothing to import:

- ``txc_sandbox``: a running [`txc_async.sandbox.Sandbox`][txc_async.sandbox.Sandbox] on 127.0.0.1,
  new for each test; inject faults with ``txc_sandbox.faults.add(...)`` and see what arrived in
  ``txc_sandbox.stats``.
- ``txc_client``: a [`txc_async.Client`][txc_async.Client] signed with the sandbox's key and bound
  to its URL, with a limiter of its own (budgets do not carry over between tests); closed after the
  test.

Configure them per test, class or module with markers, whose keywords go to the constructors
(closer markers win over farther ones, keyword by keyword):

```python
@pytest.mark.txc_sandbox(enforce_limits=False, mining_accounts=3)
@pytest.mark.txc_client(timeout=2.0, retry=txc_async.RetryPolicy(backoff_base=0.01))
async def test_something(txc_client): ...
```

The sandbox is also an exchange (markets, order book, matching, balances, positions): give the
trading balance its keys start with, and trade against it.

```python
@pytest.mark.txc_sandbox(trade_balances={"USDT": Decimal("100000"), "BTC": Decimal("2")})
async def test_an_order_rests(txc_client): ...
```

Every test, with the fixtures or not, runs under a [`txc_async.Runtime`][txc_async.Runtime] of
its own (current for the test; the one before is current again after it): what the clients of
a process share, the estimates of servers' clocks (keyed by the server's address), the nonce
sources and the default limiter, starts afresh in each test. So a sandbox on a port an
earlier test's sandbox used (with another ``clock_offset``, say) is not taken for the same server,
and budgets do not carry over. A client kept across tests keeps the parts it was made with.

The fixtures are coroutines run by pytest-asyncio (``pip install pytest-asyncio``); they work in
its ``auto`` and ``strict`` modes (in strict mode mark the tests ``@pytest.mark.asyncio``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from ._client import Client
from ._limiters.memory import InProcessLimiter
from ._runtime import Runtime, use_runtime
from .sandbox import Sandbox

try:
    from pytest_asyncio import fixture as _async_fixture
except ImportError:  # pragma: no cover - then pytest says the async fixtures need a plugin
    _async_fixture = pytest.fixture  # type: ignore[assignment]

__all__ = ["txc_client", "txc_sandbox"]


def pytest_configure(config: pytest.Config) -> None:
    """Register the two markers, so that ``--strict-markers`` accepts them."""
    config.addinivalue_line(
        "markers",
        "txc_sandbox(**kwargs): keyword arguments of the Sandbox that the txc_sandbox fixture "
        "starts (e.g. enforce_limits=False, mining_accounts=3, rate_limits={...}, "
        "trade_balances={'USDT': Decimal('100000')})",
    )
    config.addinivalue_line(
        "markers",
        "txc_client(**kwargs): keyword arguments of the Client that the txc_client fixture "
        "makes (e.g. timeout=2.0, retry=RetryPolicy(...), limiter=...)",
    )


def _marker_options(request: pytest.FixtureRequest, name: str) -> dict[str, Any]:
    options: dict[str, Any] = {}
    # iter_markers yields the closest marker first: apply the farthest first, so closer ones win.
    for marker in reversed(list(request.node.iter_markers(name))):
        if marker.args:
            raise pytest.UsageError(
                f"@pytest.mark.{name} takes keyword arguments only, got {marker.args!r}"
            )
        options.update(marker.kwargs)
    return options


@pytest.fixture(autouse=True)
def _txc_fresh_runtime() -> Iterator[Runtime]:
    """Every test runs under a runtime of its own. Within a run, the process keeps one estimate
    of each server's clock per address for every client of it, as it should; but tests start
    servers on addresses earlier tests' servers used, and an estimate must not carry over
    between them (nor budgets of the default limiter)."""
    with use_runtime(Runtime()) as runtime:
        yield runtime


@_async_fixture
async def txc_sandbox(request: pytest.FixtureRequest) -> AsyncIterator[Sandbox]:
    """A running [`Sandbox`][txc_async.sandbox.Sandbox] on 127.0.0.1, closed after the test.

    ``@pytest.mark.txc_sandbox(**kwargs)`` passes keyword arguments to ``Sandbox``.
    """
    async with Sandbox(**_marker_options(request, "txc_sandbox")) as box:
        yield box


@_async_fixture
async def txc_client(
    request: pytest.FixtureRequest, txc_sandbox: Sandbox
) -> AsyncIterator[Client]:
    """A [`Client`][txc_async.Client] with the sandbox's key, bound to ``txc_sandbox``, closed
    after the test.

    It has an [`InProcessLimiter`][txc_async.InProcessLimiter] of its own unless the
    ``@pytest.mark.txc_client(**kwargs)`` marker gives a ``limiter``; the marker's other keyword
    arguments go to ``Client`` too (``retry``, ``timeout``, ``rate_limits``...).
    """
    options = _marker_options(request, "txc_client")
    if options.get("limiter") is None:
        options["limiter"] = InProcessLimiter()
    async with Client(
        api_key=txc_sandbox.api_key,
        api_secret=txc_sandbox.api_secret,
        base_url=txc_sandbox.url,
        **options,
    ) as client:
        yield client
