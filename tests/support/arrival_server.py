"""A local HTTP server that records when each request arrives, so rate limits are checked where
they count: at the server. Used by the tests in-process and by the rate-limit benchmark.

``POST /hit/{budget}`` records the arrival time (the server's ``time.monotonic()``) under
``budget``; ``GET /arrivals`` answers every budget's times as JSON. Run as a program
(``python -m tests.support.arrival_server``), it prints its URL and serves until stdin closes.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections import defaultdict, deque
from types import TracebackType

from aiohttp import web

from txc_async import RateLimit

__all__ = ["ArrivalServer", "excess", "max_in_window", "strict_refusals"]


def max_in_window(times: list[float], span: float) -> int:
    """The most arrivals in any window ``(t - span, t]`` (a strict sliding window)."""
    ordered = sorted(times)
    best = first = 0
    for last, moment in enumerate(ordered):
        while ordered[first] <= moment - span:
            first += 1
        best = max(best, last - first + 1)
    return best


def strict_refusals(times: list[float], max_requests: int, span: float) -> int:
    """How many arrivals a server admitting at most ``max_requests`` in any window of ``span``
    would refuse (the 429s it would send; refused requests are not counted)."""
    window: deque[float] = deque()
    refused = 0
    for moment in sorted(times):
        while window and window[0] <= moment - span:
            window.popleft()
        if len(window) >= max_requests:
            refused += 1
        else:
            window.append(moment)
    return refused


def excess(times: list[float], limit: RateLimit) -> tuple[int, int]:
    """How far arrivals went past ``limit``: how many more than ``max_requests`` the fullest
    window holds, and how many a strict server would refuse; ``(0, 0)`` when they kept to it."""
    span = limit.per_seconds
    over = max(0, max_in_window(times, span) - limit.max_requests)
    return over, strict_refusals(times, limit.max_requests, span)


class ArrivalServer:
    """``async with ArrivalServer() as server:`` serves on 127.0.0.1 on a free port;
    ``server.arrivals[budget]`` lists the arrival times of ``server.hit_url(budget)``."""

    def __init__(self) -> None:
        self.arrivals: defaultdict[str, list[float]] = defaultdict(list)
        self.port = 0
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def hit_url(self, budget: str) -> str:
        return f"{self.url}/hit/{budget}"

    async def _hit(self, request: web.Request) -> web.Response:
        # Stamped first thing, before the body is read.
        self.arrivals[request.match_info["budget"]].append(time.monotonic())
        return web.Response(text="ok")

    async def _list(self, request: web.Request) -> web.Response:
        return web.json_response(self.arrivals)

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/hit/{budget}", self._hit)
        app.router.add_get("/arrivals", self._list)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> ArrivalServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()


async def _serve_until_stdin_closes() -> None:
    async with ArrivalServer() as server:
        print(server.url, flush=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)


if __name__ == "__main__":
    asyncio.run(_serve_until_stdin_closes())
