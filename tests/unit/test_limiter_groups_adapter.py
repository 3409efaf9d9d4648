"""A limiter is called the way it declares: one that takes groups (``BaseLimiter.takes_groups``)
gets each request's groups and the key's ``nonce_key``; one that does not is called with its
scope alone, through an adapter made once, when the client is made."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import txc_async
from txc_async import Admission, Outcome, RateLimit
from txc_async._limiters.base import BaseLimiter
from txc_async._pipeline.admission import taking_groups
from txc_async._transports.base import RawResponse
from txc_async._transports.mock import MockRequest

from ..support.common import KEY, SECRET

BASE = "https://api.example.test"
LOWER = RateLimit(7, 10.0)


def _answer(request: MockRequest) -> RawResponse:
    if request.url.path.endswith("/ping"):
        return RawResponse(200, {}, b'["pong"]')
    return RawResponse(200, {}, b'{"BTC": {"main_balance": "0.5"}}')


class ScopesOnly:
    """Keeps scopes only: its methods take no ``groups`` (a keyword they do not know would
    raise). Its first admission of each call waits (try_acquire says no), so both calls are
    seen; it records every call's arguments."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.outcomes: list[Outcome] = []
        self.closed = False

    def try_acquire(self, key_id: str, scope: str, limit: RateLimit,
                    timeout: float) -> Admission | None:
        self.calls.append(("try_acquire", (key_id, scope, limit, timeout)))
        return None

    async def acquire(self, key_id: str, scope: str, limit: RateLimit, timeout: float,
                      nonce_clock: Callable[[], int] | None = None) -> Admission:
        self.calls.append(("acquire", (key_id, scope, limit, timeout, nonce_clock is not None)))
        now = time.monotonic()
        return Admission(key_id, scope, limit, now, now + timeout)

    def conclude(self, admission: Admission, outcome: Outcome,
                 retry_after: float | None = None) -> float:
        self.outcomes.append(outcome)
        return 0.0

    def effective_limit(self, key_id: str, scope: str, limit: RateLimit) -> RateLimit:
        return LOWER if scope == "main_balance" else limit

    async def aclose(self) -> None:
        self.closed = True


class WithGroups(BaseLimiter):
    """Takes groups, as it declares; records the keywords of every admission."""

    takes_groups = True

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, dict[str, Any]]] = []

    def try_acquire(self, key_id: str, scope: str, limit: RateLimit, timeout: float, *,
                    groups: tuple[tuple[str, RateLimit], ...] = ()) -> Admission | None:
        self.calls.append(("try_acquire", scope, {"groups": groups}))
        return None

    async def acquire(self, key_id: str, scope: str, limit: RateLimit, timeout: float,
                      nonce_clock: Callable[[], int] | None = None, *,
                      groups: tuple[tuple[str, RateLimit], ...] = (),
                      nonce_key: str | None = None) -> Admission:
        self.calls.append(("acquire", scope, {"groups": groups, "nonce_key": nonce_key,
                                              "key_id": key_id}))
        now = time.monotonic()
        return Admission(key_id, scope, limit, now, now + timeout, groups=groups)

    def conclude(self, admission: Admission, outcome: Outcome,
                 retry_after: float | None = None) -> float:
        return 0.0

    def effective_limit(self, key_id: str, scope: str, limit: RateLimit) -> RateLimit:
        return limit

    async def aclose(self) -> None:
        pass


def _client(limiter: object) -> txc_async.Client:
    return txc_async.Client(
        api_key=KEY, api_secret=SECRET, base_url=BASE, timeout=5.0,
        limiter=limiter,  # type: ignore[arg-type]
        transport=txc_async.MockTransport(_answer),
    )


async def test_a_limiter_without_groups_is_called_with_its_scope_alone() -> None:
    limiter = ScopesOnly()
    client = _client(limiter)
    await client.ping()
    await client.main_balance()
    limit = txc_async.DEFAULT_RATE_LIMITS["main_balance"]
    key_id = client._pipeline.key_id
    assert limiter.calls[-2:] == [
        ("try_acquire", (key_id, "main_balance", limit, 5.0)),
        ("acquire", (key_id, "main_balance", limit, 5.0, True)),  # signed: a nonce clock
    ]
    assert ("acquire", (key_id, "public", txc_async.DEFAULT_RATE_LIMITS["public"], 5.0, False)) \
        in limiter.calls
    # What else the pipeline and the client ask of it reaches it unchanged.
    assert limiter.outcomes == [Outcome.ANSWERED, Outcome.ANSWERED]
    assert client.rate_limits["main_balance"] == LOWER
    await client.close()


async def test_a_limiter_with_groups_gets_them_and_the_keys_nonce_counter() -> None:
    limiter = WithGroups()
    client = _client(limiter)
    await client.ping()
    await client.main_balance()
    group = (("main_account", txc_async.DEFAULT_RATE_LIMITS["main_account"]),)
    acquired = [(scope, kwargs) for name, scope, kwargs in limiter.calls if name == "acquire"]
    tried = [(scope, kwargs) for name, scope, kwargs in limiter.calls if name == "try_acquire"]
    assert ("main_balance", {"groups": group}) in tried
    public = (("public_group", txc_async.DEFAULT_RATE_LIMITS["public_group"]),)
    assert ("public", {"groups": public}) in tried
    balance = next(kwargs for scope, kwargs in acquired if scope == "main_balance")
    assert balance["groups"] == group
    # The key's own counter, not the server's budgets.
    assert isinstance(balance["nonce_key"], str) and balance["nonce_key"] != balance["key_id"]
    await client.close()


async def test_the_adapter_is_made_once_and_only_for_a_limiter_without_groups() -> None:
    with_groups = WithGroups()
    assert taking_groups(with_groups) is with_groups
    assert taking_groups(txc_async.InProcessLimiter()).__class__ is txc_async.InProcessLimiter
    plain = ScopesOnly()
    # Not a Limiter to a type checker: its methods lack the groups the interface declares.
    adapted = taking_groups(plain)  # type: ignore[arg-type]
    assert adapted is not plain  # type: ignore[comparison-overlap]
    admission = adapted.try_acquire("k", "main_balance", LOWER, 1.0, groups=(("g", LOWER),))
    assert admission is None and plain.calls == [("try_acquire", ("k", "main_balance", LOWER, 1.0))]
    made = await adapted.acquire("k", "public", LOWER, 1.0, None, groups=(("g", LOWER),),
                                 nonce_key="n")
    assert made.groups == () and plain.calls[-1] == ("acquire", ("k", "public", LOWER, 1.0, False))
    assert adapted.conclude(made, Outcome.NOT_SENT) == 0.0 and plain.outcomes == [Outcome.NOT_SENT]
    await adapted.aclose()
    assert plain.closed
    client = _client(plain)
    # Adapted when the client was made; the client still shows the limiter it was given.
    assert client._pipeline.admitter.limiter is not plain  # type: ignore[comparison-overlap]
    assert client._pipeline.limiter is plain  # type: ignore[comparison-overlap]
    await client.close()
