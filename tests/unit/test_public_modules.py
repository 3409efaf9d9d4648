"""The public seams, ``txc_async.limiters`` and ``txc_async.transports``: the names each gives, the
same objects as the package's, and what importing each costs; and the transport's choice of its
request path (``AiohttpTransport(direct=...)``)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from aiohttp import web
from aioresponses import aioresponses
from yarl import URL

import txc_async
from txc_async import limiters, transports
from txc_async.transports import AiohttpTransport

from ..support.common import served

LIMITERS = {
    "Admission", "BaseLimiter", "Groups", "InProcessLimiter", "Limiter", "Outcome", "RateLimit",
    "RedisLimiter", "SQLiteLimiter", "limiter_from_url",
}
TRANSPORTS = {
    "AiohttpTransport", "BaseTransport", "ConnectionSlots", "MockRequest", "MockTransport",
    "RawResponse", "Transport",
}


@pytest.mark.parametrize(("module", "names"), [(limiters, LIMITERS), (transports, TRANSPORTS)])
def test_a_seam_gives_its_names_and_they_are_the_package_s(
    module: object, names: set[str]
) -> None:
    assert set(module.__all__) == names  # type: ignore[attr-defined]
    for name in names:
        assert hasattr(module, name), name
        # A name the package gives too is the same object there.
        if name in txc_async.__all__:
            assert getattr(module, name) is getattr(txc_async, name), name


def test_the_runtime_is_public() -> None:
    assert {"Runtime", "current_runtime", "use_runtime"} <= set(txc_async.__all__)


def test_the_client_s_default_transport_is_the_public_one() -> None:
    client = txc_async.Client()
    assert type(client._pipeline.transport) is AiohttpTransport
    assert isinstance(client._pipeline.transport, transports.BaseTransport)


@pytest.mark.asyncio_only
@pytest.mark.parametrize(("module", "imports_aiohttp"), [
    ("txc_async", False), ("txc_async.limiters", False), ("txc_async.transports", True),
])
def test_which_imports_bring_aiohttp(module: str, imports_aiohttp: bool) -> None:
    """``import txc_async`` stays light (the command line's help, the models, the errors): the
    client and its transport import aiohttp when first used."""
    code = f"import sys, {module}; print('aiohttp' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.strip() == str(imports_aiohttp)


def test_direct_must_be_true_or_false() -> None:
    with pytest.raises(txc_async.InvalidParameterError, match="direct"):
        AiohttpTransport(direct="no")  # type: ignore[arg-type]


async def test_with_the_direct_path_off_a_mock_of_the_session_sees_every_request() -> None:
    url = "https://api.example.test/api/v4/public/ping"
    transport = AiohttpTransport(direct=False)
    try:
        with aioresponses() as mocked:
            mocked.get(url, body=b'["pong"]', repeat=True)
            for _ in range(2):
                answer = await transport.send("GET", URL(url), headers=None, body=None,
                                              timeout=5.0)
                assert (answer.status, answer.body) == (200, b'["pong"]')
            assert len(mocked.requests[("GET", URL(url))]) == 2
        assert transport._direct_exchange is None
    finally:
        await transport.aclose()


async def test_with_the_direct_path_on_requests_are_written_on_aiohttp_s_connections() -> None:
    """The default: ``ClientSession.request`` is not used, so a mock of it sees nothing, and
    the server answers."""
    from txc_async._transports.direct import DIRECT

    if not DIRECT:
        pytest.skip("this aiohttp's parts cannot make an exchange alone")

    async def pong(request: web.Request) -> web.Response:
        return web.Response(body=b'["pong"]')

    app = web.Application()
    app.router.add_get("/ping", pong)
    async with served(app) as base:
        transport = AiohttpTransport()
        try:
            with aioresponses() as mocked:
                mocked.get(base + "/ping", status=503, repeat=True)
                answer = await transport.send("GET", URL(base + "/ping"), headers=None,
                                              body=None, timeout=5.0)
                assert (answer.status, answer.body) == (200, b'["pong"]')
                assert not mocked.requests
            assert transport._direct_exchange is not None
        finally:
            await transport.aclose()
