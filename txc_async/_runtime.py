"""The state the clients of a process share, held by one `Runtime`: the default limiter, the
estimates of servers' clocks and the nonce sources of API keys. One is current at a time."""

from __future__ import annotations

import contextlib
import threading
from types import TracebackType

from ._errors import InvalidParameterError
from ._limiters.memory import InProcessLimiter
from ._nonces.clock import LocalClock, ServerClock
from ._nonces.registry import NonceSources, ServerClocks
from ._nonces.sources import NonceSource

__all__ = ["Runtime", "current_runtime", "use_runtime"]


class Runtime:
    """What the clients made while it is current share: the in-process limiter of those given
    no ``limiter`` (made on first use), one estimate of each server's clock (learnt from its
    answers by any of them), and one nonce source per API key and server.

    The package makes one when it is imported, and every client shares it unless another is made
    current with [`use_runtime`][txc_async.use_runtime]. Another runtime shares nothing with it:
    a test suite gives each test its own (as [the pytest plugin][txc_async.pytest_plugin] does),
    so that a server started on an address an earlier test's server used is met afresh, and
    budgets do not carry over. Clients of two runtimes that use one server keep to its limits
    together only through a limiter given to both (``limiter=``), as clients of two processes
    would; one runtime serves every event loop and thread of the process. A client takes its
    parts from the runtime current when it is made, and keeps them.

    Memory stays bounded however many servers and keys come and go: an estimate or a nonce
    source lives while a client holds it, and only the latest 64 estimates are kept after that.
    A nonce source let go leaves its last value behind, so that the next source of the same key
    at the same server never hands out a nonce again.
    """

    __slots__ = ("_limiter", "_lock", "_nonce_sources", "_server_clocks")

    def __init__(self) -> None:
        self._limiter: InProcessLimiter | None = None
        self._lock = threading.Lock()
        self._server_clocks = ServerClocks()
        self._nonce_sources = NonceSources()

    def __repr__(self) -> str:
        return f"Runtime(nonce_sources={len(self._nonce_sources)})"

    @property
    def limiter(self) -> InProcessLimiter:
        """The limiter of the clients made under this runtime with no ``limiter`` of their own,
        and what [`limiter_from_url("memory://")`][txc_async.limiter_from_url] gives while the
        runtime is current."""
        limiter = self._limiter
        if limiter is None:
            with self._lock:
                if self._limiter is None:
                    self._limiter = InProcessLimiter()
                limiter = self._limiter
        return limiter

    def _server_clock_for(self, origin: str, local: LocalClock) -> ServerClock:
        """The estimate of the clock of the server at ``origin`` read on ``local``."""
        return self._server_clocks.get(origin, local)

    def _nonce_source_for(self, api_key: str, clock: ServerClock) -> NonceSource:
        """The nonce source of ``api_key`` at the server whose clock is ``clock``."""
        return self._nonce_sources.get(api_key, clock)


class _Current:
    """The runtime clients are made under (an attribute, so that replacing it needs no
    ``global``)."""

    __slots__ = ("runtime",)

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime


_current = _Current(Runtime())


def current_runtime() -> Runtime:
    """The [`Runtime`][txc_async.Runtime] whose shared parts the clients made now take."""
    return _current.runtime


class _Restoring(contextlib.AbstractContextManager[Runtime]):
    """Gives the runtime made current, and at its end makes the one before it current again."""

    def __init__(self, runtime: Runtime, previous: Runtime) -> None:
        self._runtime = runtime
        self._previous = previous

    def __enter__(self) -> Runtime:
        return self._runtime

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        _current.runtime = self._previous


def use_runtime(runtime: Runtime) -> contextlib.AbstractContextManager[Runtime]:
    """Make ``runtime`` current, for the whole process: the clients made from now on take their
    shared parts from it (those made before keep theirs).

    In a ``with`` statement the runtime that was current before is made current again at the
    end of the block:

    ```python
    with txc_async.use_runtime(txc_async.Runtime()) as runtime:
        client = txc_async.Client(...)  # shares nothing with the clients made before
    ```
    """
    if not isinstance(runtime, Runtime):
        raise InvalidParameterError(
            "runtime", f"must be a txc_async.Runtime, not {type(runtime).__name__}"
        )
    previous = _current.runtime
    _current.runtime = runtime
    return _Restoring(runtime, previous)
