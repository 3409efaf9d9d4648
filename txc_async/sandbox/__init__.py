"""An embedded simulator of the API on 127.0.0.1, for tests, benchmarks, demos and offline work.

It checks signatures, payloads and nonces like the live service, validates parameters with its
error shapes, enforces the documented rate limits with strict sliding windows, keeps state, serves
deterministic synthetic data, and injects faults on request.
"""

from ._server import FAULT_KINDS, PATH_SCOPES, FaultPlan, Sandbox, SandboxStats, serve

__all__ = ["FAULT_KINDS", "PATH_SCOPES", "FaultPlan", "Sandbox", "SandboxStats", "serve"]
