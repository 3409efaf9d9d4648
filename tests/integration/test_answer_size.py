"""A 1 GiB answer, streamed by a local server and never held by it, is refused after
``max_answer_bytes`` and leaves the client process's peak memory under +50 MB."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from ..support.common import served

GIB = 1 << 30
_BLOCK = b" " * 65536

# Runs in its own process, so that its peak resident memory (VmHWM) is the client's alone.
_CLIENT = """
import asyncio, resource, sys
import txc_async

def status(field):
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024

# Were the limit broken, the process would fail here instead of exhausting the machine.
resource.setrlimit(resource.RLIMIT_AS, (status("VmSize") + (1 << 30), resource.RLIM_INFINITY))

async def main():
    async with txc_async.Client(base_url=sys.argv[1], retry=txc_async.RetryPolicy(max_retries=0)
                                ) as client:
        before = status("VmHWM")
        try:
            await client.ping()
        except txc_async.TransportError as exc:
            print(type(exc).__name__, exc.status, str(exc).replace(" ", "_"))
        else:
            print("no-error 0 -")
        print((status("VmHWM") - before) / 2**20)

asyncio.run(main())
"""


@pytest.fixture
async def huge_server() -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_get("/{declared}/api/v4/public/ping", _stream_by_path)
    async with served(app) as url:
        yield url


async def _stream_by_path(request: web.Request) -> web.StreamResponse:
    declared = request.match_info["declared"] == "declared"
    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    if declared:
        response.content_length = GIB
    else:
        response.enable_chunked_encoding()
    await response.prepare(request)
    try:
        for _ in range(GIB // len(_BLOCK)):
            await response.write(_BLOCK)
    except (ConnectionError, RuntimeError):
        pass  # the client stopped reading, as it should
    return response


@pytest.mark.parametrize("framing", ["declared", "chunked"])
async def test_a_gibibyte_answer_is_refused_within_bounded_memory(
    huge_server: str, framing: str
) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _CLIENT, f"{huge_server}/{framing}",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode == 0, err.decode()
    result, growth = out.decode().splitlines()
    kind, status, message = result.split()
    assert kind == "TransportError" and status == "200"
    assert "max_answer_bytes" in message
    assert float(growth) < 50, f"peak memory grew by {growth} MB"
