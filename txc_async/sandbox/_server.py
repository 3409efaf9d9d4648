"""The sandbox server: every documented operation of the API on 127.0.0.1, routed, counted
against the service's rate limits, then authenticated (``_auth``), faulted on request
(``_faults``) and answered: by the simulations plugged in (``Sandbox(simulations=...)``), by the
eight operations the sandbox simulates itself (``_own``: rewards, hashrate, investments, balance,
the collateral stop-limit order, mining accounts, OAuth tokens, ping), by the simulated exchange
(``_exchange``), or with the operation's documented example."""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from aiohttp import web

from .._limiters.base import RateLimit
from ._auth import (
    ACCESS_TOKEN_LIFETIME,
    JWT_LIFETIME,
    NONCE_WINDOW_MS,
    REFRESH_TOKEN_LIFETIME,
    SIGNING,
    Credentials,
    Key,
)
from ._data import InvestmentBook, RewardBook, mix
from ._exchange import Exchange, ExchangeSimulation
from ._faults import (
    ANSWER_FAULTS,
    DECIMAL_FIELDS,
    FAULT_KINDS,
    FaultPlan,
    changed_answer,
    fault_answer,
)
from ._own import MARKETS, MIN_ORDER_AMOUNT, Dialect, OwnOperations
from ._simulation import UNHANDLED, Simulation, SimulationError
from ._stats import SandboxStats
from ._table import (
    DOCUMENTED,
    PATH_GROUPS,
    PATH_SCOPES,
    SERVICE_GROUP_LIMITS,
    SERVICE_RATE_LIMITS,
    Documented,
    Refusal,
)
from ._wire import HTML_429, TEXT, TEXT_FORM, json_response

# Sandbox and serve are this module's; the other names, the sandbox's other modules', are
# importable from here too.
__all__ = [
    "ACCESS_TOKEN_LIFETIME", "ANSWER_FAULTS", "DECIMAL_FIELDS", "FAULT_KINDS", "JWT_LIFETIME",
    "MARKETS", "MIN_ORDER_AMOUNT", "NONCE_WINDOW_MS", "PATH_GROUPS", "PATH_SCOPES",
    "REFRESH_TOKEN_LIFETIME", "SERVICE_GROUP_LIMITS", "SERVICE_RATE_LIMITS", "Dialect",
    "FaultPlan", "Sandbox", "SandboxStats", "serve",
]


def over_limit(window: deque[float], limit: RateLimit, now: float) -> bool:
    """A strict sliding window: whether a request arriving ``now`` is over ``limit``, given the
    arrival times in ``window`` that were not refused (the request is added when it is not)."""
    if _full(window, limit, now):
        return True
    window.append(now)
    return False


def _full(window: deque[float], limit: RateLimit, now: float) -> bool:
    """Whether ``window`` (admitted arrival times) holds ``limit``'s most at ``now``; times that
    have left the window are dropped, nothing is added."""
    while window and window[0] <= now - limit.per_seconds:
        window.popleft()
    return len(window) >= limit.max_requests


class Sandbox:
    """An embedded simulator of the API, served on 127.0.0.1 (an async context manager).

    ``url``, ``api_key`` and ``api_secret`` are what a client needs; ``faults`` injects faults,
    ``stats`` tells what arrived. With ``enforce_limits=False`` no rate limit is applied.

    Every operation the service documents is served at its documented method and path (the
    sandbox's own table, made from the documents; ``PATH_SCOPES`` lists the paths), authenticated
    as the service does (signed headers and nonces; the OAuth client's credentials; an OAuth
    access token the sandbox issued as a bearer header; for the card token, a JWT it issued) and
    its parameters checked against the documents (required, type, enum, bounds), refused in the
    operation's documented shape: ``{"code": 30, "message": "Validation failed", "errors":
    {field: [message]}}`` (with the code and status the operation documents), for the public
    market data ``{field: [message]}`` with 422. Then ``simulations`` (each a
    [`Simulation`][txc_async.sandbox.Simulation]) are asked in turn, with the parameters checked;
    the first that does not answer ``UNHANDLED`` answers. Otherwise the operations simulated
    here answer (with their own checks, in the ``dialect``'s shapes), and every other operation
    answers its documented success example, with the request's values where its shape has them
    (an order's ``market``).

    Rate limits are counted as the service counts them (whitebit-exchange/docs,
    api-reference/rate-limits.mdx): per client IP address, shared by every API key used from it,
    and twice for each request: against its endpoint's own limit (its scope, ``PATH_SCOPES``,
    limits ``SERVICE_RATE_LIMITS``) and against its group's (``PATH_GROUPS``, limits
    ``SERVICE_GROUP_LIMITS``): ``"main_account"`` for /api/v4/main-account/* (balance and
    investments together, 1,000 per 10 s), ``"public_group"`` for /api/v4/public/* (20,000) and
    ``"trade_account"`` for /api/v4/trade-account/* (12,000) and ``"default"`` for every other
    path (orders, the mining operations, OAuth: 10,000). An endpoint whose limit no page states
    is limited by its group alone.
    A request is refused with a non-JSON 429 when either window is full, and counted in neither.
    ``rate_limits`` overrides any of them by name, groups included
    (``{"main_account": RateLimit(100, 1.0)}``); an unknown name is a ``ValueError``.

    ``trade_balances`` is what every key's trading balance starts with, on the simulated
    exchange (``exchange``): orders, matching, balances, transfers, collateral positions and
    public market data (see the guide "Testing a trading service offline"). With
    ``exchange=False`` those operations answer their documented examples, as every operation
    the sandbox does not simulate does.

    ``clock_offset`` (seconds, settable while running) sets the simulated server's clock that
    far ahead of this machine's (negative: behind): its ``Date`` headers, its nonce window and
    the times in its answers follow that clock, as a real server's would.

    ``max_page`` (settable while running) is the most records one page of rewards or
    investments holds, whatever ``limit`` asks for; the answer's ``limit`` says what was used, as
    a server that caps its pages would.

    ``dialect`` says whose shapes it answers in: ``"live"`` (the default) as the live service
    documents them, ``"spec"`` as the API's first specification shows them. Live: the order reads
    ``clientOrderId`` (a ``client_order_id`` is ignored, as the service ignores it), takes
    ``reduceOnly`` and ``stp``, and answers in camelCase with a REST status (``FILLED``,
    ``PARTIALLY_FILLED``, ``CANCELED``, in turn); the balance takes ``ticker`` and answers one
    currency flat; the hashrate requires ``account``, refuses an unknown one, answers a disabled one
    ([`disable_mining_account`][txc_async.sandbox.Sandbox.disable_mining_account]) with empty data,
    and its points carry ``rejectRate``. Spec: the order reads ``client_order_id`` and answers in
    snake_case with status ``NEW``; the balance ignores ``ticker``; the hashrate takes any account
    or none.

    Rewards, live: each carries ``status``, ``rewardCurrency`` and the payout fields. With
    ``pending_days`` the rewards of the last ``pending_days`` days, and every reward booked while it
    runs (``rewards.book``), are ``pending`` at first and settle (``successful``, one in five
    ``canceled``, the payout filled in) once the sandbox's clock is ``settle_after`` seconds past
    the sandbox's making (or the booking), or at
    [`settle_rewards`][txc_async.sandbox.Sandbox.settle_rewards]; without ``settle_after``, only
    then. Spec: the seven fields of the API's first specification, as before.
    """

    def __init__(
        self,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        seed: int = 0,
        rate_limits: Mapping[str, RateLimit] | None = None,
        enforce_limits: bool = True,
        mining_accounts: int = 40,
        rewards_per_day: int = 1,
        rewards_start: int = 1704067200,
        rewards_days: int = 731,
        clock: Callable[[], float] = time.time,
        clock_offset: float = 0.0,
        max_page: int = 100,
        dialect: Dialect = "live",
        pending_days: int = 0,
        settle_after: float | None = None,
        simulations: Sequence[Simulation] = (),
        trade_balances: Mapping[str, Decimal] | None = None,
        exchange: bool = True,
    ) -> None:
        if dialect not in ("live", "spec"):
            raise ValueError(f"dialect must be 'live' or 'spec', not {dialect!r}")
        self.host = host
        self.port = port
        self.seed = seed
        self.enforce_limits = enforce_limits
        unknown = set(rate_limits or {}) - SERVICE_RATE_LIMITS.keys() - SERVICE_GROUP_LIMITS.keys()
        if unknown:
            # A misspelt name would otherwise leave the limit it meant at the service's figure.
            raise ValueError(
                f"rate_limits: unknown {', '.join(sorted(unknown))}; the names are the scopes "
                f"{', '.join(sorted(SERVICE_RATE_LIMITS))} and the groups "
                f"{', '.join(sorted(SERVICE_GROUP_LIMITS))}"
            )
        #: Every endpoint's and every group's limit, per IP address, overrides applied.
        self.rate_limits: dict[str, RateLimit] = {
            **SERVICE_RATE_LIMITS, **SERVICE_GROUP_LIMITS, **(rate_limits or {}),
        }
        self._clock = clock
        self.clock_offset = clock_offset
        page = _checked_page(max_page)
        self.stats = SandboxStats()
        #: The keys, the OAuth client and the tokens issued, and their checks.
        self._credentials = Credentials(seed, self.stats, self.server_time)
        self.api_key = self._credentials.api_key
        self.api_secret = self._credentials.api_secret
        self.simulations: tuple[Simulation, ...] = tuple(simulations)
        self.rewards = RewardBook(
            seed, mining_accounts, rewards_start, rewards_days, rewards_per_day,
            live=dialect == "live", pending_days=pending_days, settle_after=settle_after,
            clock=self.server_time,
        )
        self.mining_account_names = list(self.rewards.names)
        self.investments = InvestmentBook(seed)
        # ETH to the wei, 18 places: 24 significant digits, more than a float holds.
        self.balance = {
            ticker: {"main_balance": f"{mix(seed, i) % 10**6}."
                                     f"{mix(seed, i, 1) % 10**places:0{places}d}"}
            for i, (ticker, places) in enumerate(
                (("BTC", 8), ("ETH", 18), ("USDT", 8), ("SOL", 8), ("TXC", 8))
            )
        }
        #: The operations simulated here, with their state.
        self._own = OwnOperations(
            seed=seed, dialect=dialect, max_page=page, stats=self.stats,
            credentials=self._credentials, rewards=self.rewards, investments=self.investments,
            balance=self.balance,
        )
        #: The simulated exchange: trading balances (``trade_balances``: what every key's
        #: trading balance starts with), orders, trades, positions; transfers move the main
        #: balance above.
        self.exchange = Exchange(seed=seed, trade_balances=trade_balances,
                                 main_balances=self.balance, now=self.server_time())
        self._exchange_simulations: tuple[Simulation, ...] = (
            (ExchangeSimulation(self.exchange),) if exchange else ()
        )
        #: Admitted arrival times per (client IP address, scope or group): the service counts
        #: per IP, whichever key signed the request.
        self._windows: dict[tuple[str, str], deque[float]] = {}
        self.faults = FaultPlan()
        self._runner: web.AppRunner | None = None
        self.url = ""

    # -- life cycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Start serving; ``url`` and ``port`` then name the address (a free port unless
        ``port`` was given). ``async with Sandbox() as box`` calls this for you."""
        app = web.Application(client_max_size=1 << 20)
        app.on_response_prepare.append(self._stamp_date)
        for op in DOCUMENTED:
            app.router.add_route(op.method, op.path, self._handler(op))
        app.router.add_route("*", "/{tail:.*}", self._not_found)
        # Handlers still sleeping in a "slow" fault are not waited for at close.
        self._runner = web.AppRunner(
            app, access_log=None, handle_signals=False, shutdown_timeout=0.25
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, reuse_address=True)
        await site.start()
        # The runner reports the bound address whatever the event loop (asyncio's or uvloop's).
        self.port = int(self._runner.addresses[0][1])
        self.url = f"http://{self.host}:{self.port}"

    async def close(self) -> None:
        """Stop serving and close the connections (handlers still in a ``slow`` fault are not
        waited for)."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> Sandbox:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def add_key(self, api_key: str, api_secret: str, *, b2b: bool = True) -> None:
        """Another API key the sandbox accepts; ``b2b=False`` has no access to investments."""
        self._credentials.add_key(api_key, api_secret, b2b=b2b)

    def settle_rewards(self) -> None:
        """Settle every reward pending now, as if the time of each had come (for tests)."""
        self.rewards.settle()

    def disable_mining_account(self, name: str) -> None:
        """Disable mining account ``name``: the live dialect then answers its hashrate with
        empty data (HTTP 200), as the service answers an account it has disabled."""
        self._own.disabled_accounts.add(name)

    @property
    def oauth_client_id(self) -> str:
        """The OAuth client's id, which ``/oauth2/token`` and ``/oauth2/refresh`` take."""
        return self._credentials.oauth_client_id

    @oauth_client_id.setter
    def oauth_client_id(self, value: str) -> None:
        self._credentials.oauth_client_id = value

    @property
    def oauth_client_secret(self) -> str:
        """The OAuth client's secret."""
        return self._credentials.oauth_client_secret

    @oauth_client_secret.setter
    def oauth_client_secret(self, value: str) -> None:
        self._credentials.oauth_client_secret = value

    @property
    def oauth_refresh_token(self) -> str:
        """The refresh token issued last, which ``/oauth2/refresh`` takes once."""
        return self._credentials.oauth_refresh_token

    @oauth_refresh_token.setter
    def oauth_refresh_token(self, value: str) -> None:
        self._credentials.oauth_refresh_token = value

    @property
    def oauth_code(self) -> str:
        """The authorization code ``/oauth2/token`` takes next (a new one after each use), as
        the service's consent page would hand one to the application."""
        return self._credentials.oauth_code

    @oauth_code.setter
    def oauth_code(self, value: str) -> None:
        self._credentials.oauth_code = value

    def __repr__(self) -> str:
        return f"Sandbox(url={self.url!r})"

    # -- the request path -------------------------------------------------------------------

    def server_time(self) -> float:
        """The simulated server's clock: this machine's plus ``clock_offset``."""
        return self._clock() + float(self.clock_offset)

    async def _stamp_date(self, request: web.Request, response: web.StreamResponse) -> None:
        # Every answer is dated by the server's own clock, as the live service's are.
        response.headers["Date"] = email.utils.formatdate(self.server_time(), usegmt=True)

    async def _not_found(self, request: web.Request) -> web.Response:
        return web.Response(status=404)

    @property
    def max_page(self) -> int:
        """The most records a page of rewards or investments holds (settable while running)."""
        return self._own.max_page

    @max_page.setter
    def max_page(self, value: int) -> None:
        self._own.max_page = _checked_page(value)

    @property
    def dialect(self) -> Dialect:
        """Whose shapes the sandbox answers in: ``"live"`` or ``"spec"``."""
        return self._own.dialect

    @dialect.setter
    def dialect(self, value: Dialect) -> None:
        self._own.dialect = value

    def _over_limit(self, ip: str, names: tuple[str, ...], now: float) -> list[str]:
        """The budgets among ``names`` (a scope and its group) whose window from ``ip`` is full
        at ``now``. When none is, the request is admitted and recorded in every one; when one
        is, it is recorded in none, so a request refused by its group does not use up its
        endpoint's budget (or the other way round)."""
        if not self.enforce_limits:
            return []
        windows = []
        for name in names:
            window = self._windows.get((ip, name))
            if window is None:
                window = self._windows[ip, name] = deque()
            windows.append(window)
        full = [name for name, window in zip(names, windows, strict=True)
                if _full(window, self.rate_limits[name], now)]
        if not full:
            for window in windows:
                window.append(now)
        return full

    def _handler(self, op: Documented) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def handle(request: web.Request) -> web.StreamResponse:
            return await self._handle(op, request)

        return handle

    async def _handle(self, op: Documented, request: web.Request) -> web.StreamResponse:
        path = request.path
        scope, group = op.budget, op.group
        ip = request.remote or ""
        now = self._clock()
        stats = self.stats
        stats.received[path] += 1
        stats.arrivals_by_ip[ip] += 1
        for name in (scope, group):
            arrivals = stats.arrivals.get(name)
            if arrivals is None:
                arrivals = stats.arrivals[name] = []
            arrivals.append(now)
        full = self._over_limit(ip, (scope, group), now)
        if full:
            stats.rate_limited += 1
            stats.refused.update(full)
            return web.Response(status=429, body=HTML_429, content_type="text/html")
        body = await request.read()
        fault = self.faults.take(path, op.path)
        if fault is not None and fault.kind in ("slow", "late"):
            await asyncio.sleep(fault.delay)
            if fault.kind == "late":
                # Held on its way: judged (its nonce too) when it arrives, after requests sent
                # later, as on a slower connection.
                now = self._clock()
            fault = None
        if fault is not None and not fault.execute:
            stats.faults_served += 1
            return fault_answer(request, fault)
        answer: Any = None
        try:
            answer = self._operate(op, request, body, now + float(self.clock_offset))
        except Refusal as refusal:
            response = json_response(refusal.status, refusal.body)
        else:
            stats.executed[path] += 1
            response = self._answer(op, answer)
        if fault is not None:
            if fault.kind in ANSWER_FAULTS:
                if response.status >= 300:
                    return response
                stats.faults_served += 1
                return changed_answer(fault, answer, op.status)
            stats.faults_served += 1
            return fault_answer(request, fault)
        return response

    @staticmethod
    def _answer(op: Documented, answer: Any) -> web.Response:
        """A success answer with the operation's documented status (the documented example's
        bytes made once; no body where the documents give none)."""
        if answer is op.answer:
            if not op.answer_bytes:
                return web.Response(status=op.status)
            return web.Response(status=op.status, body=op.answer_bytes,
                                content_type="application/json")
        return json_response(op.status, answer)

    def _operate(self, op: Documented, request: web.Request, body: bytes, now: float) -> Any:
        """The answer to one request of ``op`` once admitted: authenticated, then answered by a
        simulation, by the sandbox's own simulation of the operation, or by its documented
        example; a refusal is raised."""
        key, params = self._credentials.authenticated(op, request, body, now)
        own = self._own.table.get(op.name)
        if self.simulations:
            op.check(params, TEXT_FORM if op.auth == "form" else TEXT)
            answer = self._simulated(self.simulations, op, key, params, now)
            if answer is not UNHANDLED:
                return answer
        elif own is None:
            op.check(params, TEXT_FORM if op.auth == "form" else TEXT)
        if own is not None:
            return own(key, params, body, now)
        # The exchange (trading, balances between accounts, market data), after the
        # operations simulated above, which keep their own shapes and checks.
        answer = self._simulated(self._exchange_simulations, op, key, params, now)
        if answer is not UNHANDLED:
            return answer
        return op.documented_answer(params)

    @staticmethod
    def _simulated(simulations: Sequence[Simulation], op: Documented, key: Key | None,
                   params: dict[str, Any], now: float) -> Any:
        """The first answer of ``simulations`` to a request of ``op`` (its parameters checked),
        or UNHANDLED; a simulation's refusal is raised as the sandbox's."""
        given = {name: value for name, value in params.items() if name not in SIGNING}
        account = key.name if key is not None else None
        for simulation in simulations:
            try:
                answer = simulation.answer(op.method, op.path, account, given, now)
            except SimulationError as refusal:
                raise Refusal(refusal.status, refusal.body) from None
            if answer is not UNHANDLED:
                return answer
        return UNHANDLED



def _checked_page(value: int) -> int:
    """``value`` as ``max_page``: a whole number of at least 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"max_page must be a whole number of at least 1, not {value!r}")
    return value


async def serve(port: int, host: str = "127.0.0.1", **kwargs: Any) -> None:
    """Run a sandbox until cancelled."""
    async with Sandbox(port=port, host=host, **kwargs):
        await asyncio.Event().wait()
