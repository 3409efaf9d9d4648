"""The retry policy's decisions, one table each: whether another attempt follows one that ended
without an answer, with a failure answer, with a rate-limit refusal or a refused nonce, and how
long the call waits first. A write that may have reached the server is never sent again."""

from __future__ import annotations

import pytest

from txc_async import RetryPolicy

READ, WRITE = True, False
REACHED, NOT_REACHED = True, False


def whole() -> float:
    """The jitter at its top: each backoff is exactly ``backoff_base * 2**failures``."""
    return 0.999999999999


POLICY = RetryPolicy(
    max_retries=2, max_rate_limit_retries=2, max_nonce_retries=2,
    backoff_base=0.5, backoff_cap=8.0, max_retry_after=30.0, random=whole,
)
NEVER = RetryPolicy(max_retries=0, max_rate_limit_retries=0, max_nonce_retries=0)


@pytest.mark.parametrize(
    ("retry_safe", "reached", "failures", "expected"),
    [
        (READ, REACHED, 0, 0.5),
        (READ, REACHED, 1, 1.0),
        (READ, REACHED, 2, None),  # max_retries spent
        (READ, NOT_REACHED, 0, 0.5),
        (READ, NOT_REACHED, 2, None),
        (WRITE, NOT_REACHED, 0, 0.5),  # the connection was never made: safe to send
        (WRITE, NOT_REACHED, 1, 1.0),
        (WRITE, NOT_REACHED, 2, None),
        (WRITE, REACHED, 0, None),  # it may have run: never sent again
        (WRITE, REACHED, 1, None),
    ],
)
def test_after_no_answer(
    retry_safe: bool, reached: bool, failures: int, expected: float | None
) -> None:
    delay = POLICY.after_no_answer(retry_safe, reached, failures)
    assert delay == pytest.approx(expected) if expected is not None else delay is None


@pytest.mark.parametrize(
    ("retry_safe", "failures", "retry_after", "expected"),
    [
        (READ, 0, None, 0.5),
        (READ, 1, None, 1.0),
        (READ, 2, None, None),  # max_retries spent
        (READ, 0, 5.0, 5.0),  # the answer's Retry-After, longer than the backoff
        (READ, 1, 0.1, 1.0),  # a shorter one leaves the backoff
        (READ, 0, 3600.0, 30.0),  # honoured up to max_retry_after
        (READ, 2, 5.0, None),
        (WRITE, 0, None, None),  # the answer shows it reached the server
        (WRITE, 0, 5.0, None),
    ],
)
def test_after_error_answer(
    retry_safe: bool, failures: int, retry_after: float | None, expected: float | None
) -> None:
    delay = POLICY.after_error_answer(retry_safe, failures, retry_after)
    assert delay == pytest.approx(expected) if expected is not None else delay is None


@pytest.mark.parametrize(
    ("retry_safe", "refused", "refusals", "expected"),
    [
        (READ, True, 0, True),
        (READ, True, 1, True),
        (READ, True, 2, False),  # max_rate_limit_retries spent
        (WRITE, True, 0, True),  # refused: nothing was executed
        (WRITE, True, 1, True),
        (WRITE, True, 2, False),
        (READ, False, 0, True),  # a throttling message in a success answer
        (READ, False, 2, False),
        (WRITE, False, 0, False),  # it may have run
    ],
)
def test_after_rate_limit(retry_safe: bool, refused: bool, refusals: int, expected: bool) -> None:
    assert POLICY.after_rate_limit(retry_safe, refused, refusals) is expected


@pytest.mark.parametrize(("refusals", "expected"), [(0, True), (1, True), (2, False), (3, False)])
def test_after_nonce_refusal(refusals: int, expected: bool) -> None:
    assert POLICY.after_nonce_refusal(refusals) is expected


def test_a_policy_without_retries_ends_every_call_at_its_first_failure() -> None:
    assert NEVER.after_no_answer(READ, NOT_REACHED, 0) is None
    assert NEVER.after_error_answer(READ, 0, 1.0) is None
    assert NEVER.after_rate_limit(READ, True, 0) is False
    assert NEVER.after_nonce_refusal(0) is False


def test_the_backoff_doubles_up_to_its_cap_with_jitter_down_to_half() -> None:
    many = RetryPolicy(max_retries=10, backoff_base=0.5, backoff_cap=8.0, random=whole)
    delays = [many.after_no_answer(READ, REACHED, failures) for failures in range(7)]
    assert delays == pytest.approx([0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0])
    lowest = RetryPolicy(backoff_base=0.5, random=lambda: 0.0)
    assert lowest.after_no_answer(READ, REACHED, 1) == pytest.approx(0.5)
