"""A strict sliding-window server and a TCP proxy that delays new connections, for measuring the
client's rate limits where they count: at the server, over a network that delays unevenly.

``StrictServer`` answers ``ping``, ``main_balance`` and ``investments_history`` like the service and
refuses, with a 429 whose body is not JSON, every request past ``max_requests`` in any window of
``per_seconds`` (refused requests are not counted, as a server counting what it served does); a
``group`` limit counts balance and investments together, as the service's ``main_account`` group
does (whitebit-exchange/docs, ``api-reference/rate-limits.mdx``). Answers can be
scripted per path (refusals of every kind) ahead of the normal ones. ``DelayingProxy`` holds each
NEW connection ``delay`` seconds before forwarding it, as a TLS handshake far away does; a reused
connection passes at once.

Run as a program (``python -m tests.support.strict_server [--limit N SECONDS] [--group N SECONDS]
[--delay S] [--storm K]``) it serves ping under that limit, balance and investments under the
group's, behind the proxy when ``--delay`` is given, answers the first
``K`` pings with a 429, prints the URL to use and serves until stdin closes; ``GET /_arrivals``
answers every path's arrivals as JSON (``[moment, outcome]`` pairs).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType

from aiohttp import web

from txc_async import RateLimit
from txc_async.sandbox._server import _full, over_limit

__all__ = [
    "BALANCE", "INVESTMENTS", "MAIN_ACCOUNT", "PING", "Arrival", "DelayingProxy", "Scripted",
    "StrictServer",
]

PING = "/api/v4/public/ping"
BALANCE = "/api/v4/main-account/balance"
INVESTMENTS = "/api/v4/main-account/smart/investments"
#: The paths the ``main_account`` group counts together.
MAIN_ACCOUNT = frozenset({BALANCE, INVESTMENTS})
_SUCCESS = {
    PING: b'["pong"]',
    BALANCE: b'{"BTC": {"main_balance": "1.5"}}',
    INVESTMENTS: b'{"offset": 0, "limit": 1, "records": [{"id": "0d7b66ff", "plan": {"id": "8e66",'
                 b' "ticker": "USDT", "status": 1, "percent": "10", "duration": 14400, '
                 b'"interestTicker": "USDT", "interestRatio": "1", "minInvestment": "100", '
                 b'"maxInvestment": "10000", "maxPossibleInvestment": "3000"}, "status": 1, '
                 b'"created": 1646825196, "updated": 1646825196, "paymentTime": 1646839596, '
                 b'"amount": "100", "interestPaid": "0"}]}',
}
_HTML_429 = b"<html><head><title>429 Too Many Requests</title></head><body>429</body></html>"


@dataclass(frozen=True)
class Scripted:
    """One answer served instead of the normal one. ``headers`` may be a function called when
    the answer goes out (for a Date and an HTTP-date Retry-After taken at that moment)."""

    status: int
    body: bytes
    headers: Mapping[str, str] | Callable[[], Mapping[str, str]] = field(default_factory=dict)
    content_type: str = "application/json"


@dataclass(frozen=True)
class Arrival:
    """One request as the server saw it: when (``time.monotonic()``), whether it was served,
    refused for the rate limit, or given a scripted answer, and its body."""

    moment: float
    outcome: str  # "accepted", "refused" or "scripted"
    body: bytes


class StrictServer:
    """``async with StrictServer({PING: RateLimit(20, 1)}) as server:`` on 127.0.0.1;
    ``group`` is the ``main_account`` group's limit (balance and investments together)."""

    def __init__(self, limits: Mapping[str, RateLimit], group: RateLimit | None = None) -> None:
        self.limits = dict(limits)
        self.group = group
        self._group_window: deque[float] = deque()
        self.arrivals: dict[str, list[Arrival]] = {path: [] for path in _SUCCESS}
        self._windows: dict[str, deque[float]] = {path: deque() for path in _SUCCESS}
        self._scripts: dict[str, deque[Scripted]] = {path: deque() for path in _SUCCESS}
        self.port = 0
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def script(self, path: str, *answers: Scripted) -> None:
        """Serve ``answers`` to the next requests to ``path``, in order."""
        self._scripts[path].extend(answers)

    def accepted(self, path: str) -> list[float]:
        return [a.moment for a in self.arrivals[path] if a.outcome == "accepted"]

    def refused(self, path: str) -> int:
        return sum(a.outcome == "refused" for a in self.arrivals[path])

    def _over_limit(self, path: str, now: float) -> bool:
        limit = self.limits.get(path)
        grouped = self.group is not None and path in MAIN_ACCOUNT
        # Counted in both or in neither, as one request in both windows.
        if limit is not None and _full(self._windows[path], limit, now):
            return True
        if grouped and self.group is not None and _full(self._group_window, self.group, now):
            return True
        if limit is not None:
            over_limit(self._windows[path], limit, now)
        if grouped and self.group is not None:
            over_limit(self._group_window, self.group, now)
        return False

    async def _handle(self, request: web.Request) -> web.Response:
        now = time.monotonic()  # stamped first, before the body is read
        path = request.path
        body = await request.read()
        script = self._scripts[path]
        if script:
            answer = script.popleft()
            self.arrivals[path].append(Arrival(now, "scripted", body))
            headers = answer.headers() if callable(answer.headers) else answer.headers
            return web.Response(status=answer.status, body=answer.body, headers=headers,
                                content_type=answer.content_type)
        if self._over_limit(path, now):
            self.arrivals[path].append(Arrival(now, "refused", body))
            return web.Response(status=429, body=_HTML_429, content_type="text/html")
        self.arrivals[path].append(Arrival(now, "accepted", body))
        return web.Response(body=_SUCCESS[path], content_type="application/json")

    async def _list(self, request: web.Request) -> web.Response:
        return web.Response(
            body=json.dumps({
                path: [[a.moment, a.outcome] for a in arrivals]
                for path, arrivals in self.arrivals.items()
            }).encode(),
            content_type="application/json",
        )

    async def __aenter__(self) -> StrictServer:
        app = web.Application()
        app.router.add_get(PING, self._handle)
        app.router.add_post(BALANCE, self._handle)
        app.router.add_post(INVESTMENTS, self._handle)
        app.router.add_get("/_arrivals", self._list)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False,
                                     shutdown_timeout=0.25)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, traceback: TracebackType | None) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


class DelayingProxy:
    """``async with DelayingProxy(upstream_port, delay=0.3) as proxy:`` forwards
    ``proxy.url`` to the upstream port, holding each new connection ``delay`` seconds first;
    ``proxy.connections`` counts the connections made through it."""

    def __init__(self, upstream_port: int, delay: float) -> None:
        self.upstream_port = upstream_port
        self.delay = delay
        self.connections = 0
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def _connection(self, client_reader: asyncio.StreamReader,
                          client_writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.connections += 1
        try:
            await asyncio.sleep(self.delay)  # what a handshake far away costs, once
            upstream_reader, upstream_writer = await asyncio.open_connection(
                "127.0.0.1", self.upstream_port
            )
            await asyncio.gather(
                self._pipe(client_reader, upstream_writer),
                self._pipe(upstream_reader, client_writer),
            )
        except (OSError, asyncio.CancelledError):
            client_writer.close()
        finally:
            self._tasks.discard(task)

    async def __aenter__(self) -> DelayingProxy:
        self._server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, traceback: TracebackType | None) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            self._server = None


async def _serve_until_stdin_closes(limit: RateLimit | None, group: RateLimit | None,
                                    delay: float, storm: int) -> None:
    async with StrictServer({PING: limit} if limit is not None else {}, group) as server:
        server.script(PING, *[Scripted(429, _HTML_429, content_type="text/html")] * storm)
        async with contextlib.AsyncExitStack() as stack:
            url = server.url
            if delay > 0:
                url = (await stack.enter_async_context(DelayingProxy(server.port, delay))).url
            # The URL to send through, then the one to read arrivals from (never delayed).
            print(url, server.url, flush=True)
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", nargs=2, type=float, metavar=("N", "SECONDS"))
    parser.add_argument("--group", nargs=2, type=float, metavar=("N", "SECONDS"))
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--storm", type=int, default=0)
    options = parser.parse_args()
    chosen = RateLimit(int(options.limit[0]), options.limit[1]) if options.limit else None
    grouped = RateLimit(int(options.group[0]), options.group[1]) if options.group else None
    asyncio.run(_serve_until_stdin_closes(chosen, grouped, options.delay, options.storm))
