"""An embedded simulator of the API on 127.0.0.1, for tests, benchmarks, demos and offline work.

It answers every operation the service documents, as the live service does
(``Sandbox(dialect="spec")``: in the shapes of the API's first specification), checks signatures,
payloads and nonces like the live service, validates parameters with its error shapes, enforces
the documented rate limits with strict sliding windows (per IP address, per endpoint and per
group), keeps state, serves deterministic synthetic data, injects faults on request, and takes
simulations of more of the exchange ([`Simulation`][txc_async.sandbox.Simulation]).
"""

from . import _server, _simulation
from ._server import FaultPlan, Sandbox, SandboxStats, serve
from ._simulation import Simulation, SimulationError

__all__ = [
    "FAULT_KINDS", "PATH_GROUPS", "PATH_SCOPES", "UNHANDLED", "Dialect", "FaultPlan", "Sandbox",
    "SandboxStats", "Simulation", "SimulationError", "serve",
]

Dialect = _server.Dialect
"""Whose shapes the sandbox answers in (``Sandbox(dialect=...)``): ``"live"`` as the live
service documents them (whitebit-exchange/docs, 2026), ``"spec"`` as the API's first
specification shows them."""
FAULT_KINDS = _server.FAULT_KINDS
"""The faults ``Sandbox.faults.add(path, kind)`` injects: ``html_502``, ``json_503``, ``text_503``,
``json_500`` (server errors), ``reset`` (the connection drops), ``malformed_json``, ``slow``
(answers after ``delay`` seconds), ``late`` (arrives ``delay`` seconds late and is judged then,
nonce included), ``rate_limit_429``, ``nonce_429``, ``throttle`` ("Too Many Attempts."),
``validation_failed`` (the order refusal the API's first specification shows: code 30, no field
errors), ``error_200`` (an error body with status 200), ``empty_404``, ``malformed_http`` (bytes
that are not HTTP, then the connection closes); and faults that change a success answer:
``oto_empty_leg`` (the order's OTO legs not given read ``value``), ``unlisted_status`` (a status
no enum lists), ``non_finite`` (every decimal amount reads ``value``, ``"NaN"`` by default) and
``oversized`` (the answer padded to ``size`` bytes, without a Content-Length). ``throttle`` and
``validation_failed`` take ``status=`` 400 or 422."""
PATH_SCOPES = _server.PATH_SCOPES
"""Every path the sandbox serves (every operation the service documents; ``{name}`` for a
parameter of the path), with the name of the budget its requests count against: the endpoint's own
limit, per IP address (``Sandbox.rate_limits`` holds each)."""
PATH_GROUPS = _server.PATH_GROUPS
"""Every path the sandbox serves, with the rate-limit group its requests also count against, per
IP address as the service counts (whitebit-exchange/docs, api-reference/rate-limits.mdx):
``"public_group"`` for /api/v4/public/* (20,000 per 10 s), ``"trade_account"`` for
/api/v4/trade-account/* (12,000), ``"main_account"`` for /api/v4/main-account/* (1,000),
``"default"`` for every other path (10,000)."""
UNHANDLED = _simulation.UNHANDLED
"""What [`Simulation.answer`][txc_async.sandbox.Simulation.answer] returns for an operation it does
not simulate: the next simulation is asked, then the operation's documented example answers."""
