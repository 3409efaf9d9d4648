"""Group budgets in the in-process limiter: a request draws on its scope's budget and its group's,
all at once or none, first come first served, and a refusal is blamed on one of them."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import txc_async
from txc_async import Admission, InProcessLimiter, Outcome, RateLimit

from ..support.arrival_server import max_in_window
from .test_memory_limiter import FakeClock, anchors, limiter_on, quiet

TIMEOUT = 10.0
GROUP = RateLimit(5, 1.0)
OWN = RateLimit(4, 1.0)


def groups(limit: RateLimit = GROUP) -> tuple[tuple[str, RateLimit], ...]:
    return (("g", limit),)


# -- all or none ---------------------------------------------------------------------------------


async def test_a_request_takes_from_its_scope_and_its_group_at_once() -> None:
    clock = FakeClock()
    limiter = limiter_on(clock)
    admission = limiter.try_acquire("k", "a", OWN, TIMEOUT, groups=groups())
    assert admission is not None and admission.groups == groups()
    assert anchors(limiter, scope="a") == anchors(limiter, scope="g") == [1000.0 + TIMEOUT]
    limiter.conclude(admission, Outcome.ANSWERED)
    assert anchors(limiter, scope="a") == anchors(limiter, scope="g") == [1000.0]


async def test_a_full_group_admits_nothing_into_the_scope_and_a_full_scope_nothing_into_the_group(
) -> None:
    clock = FakeClock()
    limiter = limiter_on(clock)
    for scope in ("a", "a", "b", "b", "b"):  # the group's 5 (each scope within its own 4)
        assert limiter.try_acquire("k", scope, OWN, TIMEOUT, groups=groups()) is not None
    assert limiter.try_acquire("k", "a", OWN, TIMEOUT, groups=groups()) is None
    assert len(anchors(limiter, scope="a")) == 2  # nothing taken from the scope
    limiter2 = limiter_on(FakeClock())
    for _ in range(4):
        assert limiter2.try_acquire("k", "a", OWN, TIMEOUT, groups=groups()) is not None
    assert limiter2.try_acquire("k", "a", OWN, TIMEOUT, groups=groups()) is None
    assert len(anchors(limiter2, scope="g")) == 4  # nothing taken from the group


@settings(deadline=None, max_examples=40)
@given(seed=st.integers(0, 2**32 - 1))
def test_no_window_at_the_server_holds_more_than_any_budget_allows(seed: int) -> None:
    """Two operations of one group, each with its own limit, requests taking any time to
    arrive and come back: no window holds more than a scope's limit of its own requests nor more
    than the group's limit of both."""
    rng = random.Random(seed)
    clock = FakeClock(auto=False, start=0.0)
    limiter = limiter_on(clock)
    limits = {"a": RateLimit(3, 1.0), "b": RateLimit(4, 1.0)}
    group = RateLimit(5, 1.0)
    arrivals: dict[str, list[float]] = {"a": [], "b": []}
    conclusions: list[tuple[float, int, Admission, Outcome]] = []
    order = itertools.count()
    while sum(map(len, arrivals.values())) < 60 or conclusions:
        while conclusions and conclusions[0][0] <= clock.now:
            _, _, admission, outcome = heapq.heappop(conclusions)
            limiter.conclude(admission, outcome)
        for scope in rng.sample(["a", "b"], 2):
            admission = limiter.try_acquire("k", scope, limits[scope], 0.5, groups=(("g", group),))
            if admission is None or sum(map(len, arrivals.values())) >= 60:
                if admission is not None:
                    limiter.conclude(admission, Outcome.NOT_SENT)
                continue
            arrival = clock.now + rng.uniform(0, 0.5) * (rng.random() < 0.5)
            answer = arrival + rng.uniform(0, 0.25)
            arrivals[scope].append(arrival)
            outcome = Outcome.ANSWERED if answer <= admission.deadline else Outcome.NO_ANSWER
            heapq.heappush(conclusions, (min(answer, admission.deadline), next(order), admission,
                                     outcome))
        clock.now = round(clock.now + 0.01, 9)
    for scope, limit in limits.items():
        assert max_in_window(arrivals[scope], 1.0) <= limit.max_requests
    assert max_in_window(sorted(arrivals["a"] + arrivals["b"]), 1.0) <= group.max_requests


# -- first come, first served, and no one held up by another's scope -----------------------------


async def test_waiters_of_a_group_are_admitted_in_the_order_they_came() -> None:
    clock = FakeClock()
    limiter = limiter_on(clock)
    order: list[str] = []

    async def one(name: str, scope: str) -> None:
        await limiter.acquire("k", scope, RateLimit(100, 1.0), TIMEOUT, groups=groups())
        order.append(name)

    for _ in range(5):
        admission = limiter.try_acquire("k", "x", RateLimit(100, 1.0), 0.0, groups=groups())
        assert admission is not None
        limiter.conclude(admission, Outcome.ANSWERED)
    tasks = [asyncio.create_task(one(f"{scope}{i}", scope))
             for i, scope in enumerate(["a", "b", "a", "b", "a", "b"])]
    await asyncio.gather(*tasks)
    assert order == ["a0", "b1", "a2", "b3", "a4", "b5"]


async def test_a_request_held_by_its_own_scope_does_not_hold_up_its_group() -> None:
    """The OAuth refresh's 1 per second must not make orders wait: a request joins its group's
    queue only once its own scope has room."""
    clock = FakeClock(auto=False)
    limiter = limiter_on(clock)
    slow = RateLimit(1, 1.0)
    first = limiter.try_acquire("k", "slow", slow, 0.0, groups=groups(RateLimit(100, 1.0)))
    assert first is not None
    limiter.conclude(first, Outcome.ANSWERED)
    waiting = asyncio.create_task(
        limiter.acquire("k", "slow", slow, TIMEOUT, groups=groups(RateLimit(100, 1.0)))
    )
    await quiet()
    assert not waiting.done()
    fast = await asyncio.wait_for(
        limiter.acquire("k", "fast", RateLimit(100, 1.0), TIMEOUT,
                        groups=groups(RateLimit(100, 1.0))),
        1.0,
    )
    assert fast.scope == "fast" and not waiting.done()
    await clock.advance_to(clock.now + 1.0)
    assert (await waiting).scope == "slow"


async def test_a_waiter_cancelled_takes_nothing_from_any_budget() -> None:
    clock = FakeClock(auto=False)
    limiter = limiter_on(clock)
    for _ in range(5):
        assert limiter.try_acquire("k", "a", RateLimit(100, 1.0), TIMEOUT, groups=groups())
    waiting = asyncio.create_task(
        limiter.acquire("k", "b", RateLimit(100, 1.0), TIMEOUT, groups=groups())
    )
    await quiet()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert anchors(limiter, scope="b") == [] and len(anchors(limiter, scope="g")) == 5


# -- which budget a refusal is blamed on ---------------------------------------------------------


async def test_a_refusal_of_an_operation_alone_in_its_group_pauses_its_scope_only() -> None:
    clock = FakeClock()
    limiter = limiter_on(clock)
    for _ in range(3):
        admission = limiter.try_acquire("k", "a", OWN, TIMEOUT, groups=groups())
        assert admission is not None
        limiter.conclude(admission, Outcome.ANSWERED)
    refused = limiter.try_acquire("k", "a", OWN, TIMEOUT, groups=groups())
    assert refused is not None
    assert limiter.conclude(refused, Outcome.RATE_LIMITED) > 0
    # The group's other operation goes on at once; the scope waits for its pause.
    assert limiter.try_acquire("k", "b", OWN, TIMEOUT, groups=groups()) is not None
    assert limiter.try_acquire("k", "a", OWN, TIMEOUT, groups=groups()) is None


async def test_a_refusal_with_other_operations_answered_in_the_group_pauses_the_group() -> None:
    clock = FakeClock()
    limiter = limiter_on(clock)
    for scope in ("a", "b", "b"):
        admission = limiter.try_acquire("k", scope, OWN, TIMEOUT, groups=groups())
        assert admission is not None
        limiter.conclude(admission, Outcome.ANSWERED)
    refused = limiter.try_acquire("k", "a", OWN, TIMEOUT, groups=groups())
    assert refused is not None
    assert limiter.conclude(refused, Outcome.RATE_LIMITED) > 0
    # Another operation's traffic may be what the server refused: the whole group pauses, and
    # the scope's own limit is left as it was.
    assert limiter.try_acquire("k", "b", OWN, TIMEOUT, groups=groups()) is None
    assert limiter.effective_limit("k", "a", OWN) == OWN


async def test_a_group_set_too_high_is_learned_and_no_operation_s_own_limit_is_lowered() -> None:
    """Two operations, three requests each at once, round after round, against a group the
    server allows 4 of per second, configured at 10: the refusals are blamed on the group,
    which learns the server's limit, after which none is refused and no operation's own limit
    was lowered."""
    clock = FakeClock()
    limiter = limiter_on(clock)
    own = RateLimit(3, 1.0)
    configured = RateLimit(10, 1.0)
    server_group = 4
    accepted_at: list[float] = []
    refused_in_round: list[int] = []

    async def call(scope: str) -> bool:
        admission = await limiter.acquire("k", scope, own, TIMEOUT, groups=(("g", configured),))
        for _ in range(3):  # on the way: the others of the round are admitted meanwhile
            await asyncio.sleep(0)
        if len([t for t in accepted_at if t > clock.now - 1.0]) >= server_group:
            limiter.conclude(admission, Outcome.RATE_LIMITED)
            return False
        accepted_at.append(clock.now)
        limiter.conclude(admission, Outcome.ANSWERED)
        return True

    for _round in range(10):
        answers = await asyncio.gather(*(call(scope) for scope in ("a", "b") * 3))
        refused_in_round.append(answers.count(False))
    assert limiter.effective_limit("k", "g", configured).max_requests == server_group
    assert limiter.effective_limit("k", "a", own) == own
    assert limiter.effective_limit("k", "b", own) == own
    # A bounded number of refusals, then none: the group keeps to what the server accepts.
    assert refused_in_round[0] > 0 and sum(refused_in_round[3:]) == 0
    # Full throughput afterwards: the server's 4 per second.
    assert max_in_window(accepted_at, 1.0) == server_group


def test_the_client_shows_and_takes_the_groups() -> None:
    client = txc_async.Client("key", "secret-value", base_url="http://127.0.0.1:9",
                              rate_limits={"main_account": RateLimit(500, 10.0)},
                              limiter=InProcessLimiter())
    assert client.rate_limits["main_account"] == RateLimit(500, 10.0)
    assert client.rate_limits["default"] == RateLimit(10000, 10.0)
    with pytest.raises(txc_async.InvalidParameterError, match="unknown scope"):
        txc_async.Client(rate_limits={"mainaccount": RateLimit(1, 1.0)})
