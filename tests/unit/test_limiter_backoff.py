"""What a budget learns from refusals, on a clock given by hand: one burst is one backoff step,
Retry-After (seconds or HTTP date) within 1 s to 30 s, doubling with jitter, the streak's end, and
the lower limit (suspected on confirmation and refined upwards, kept until its window has passed,
learned only when the next window refuses one request more, checked again later)."""

from __future__ import annotations

import email.utils
import json
import logging
import math
import time

import pytest

from txc_async import InProcessLimiter, Outcome, RateLimit
from txc_async._answers.errors import NonceRefused, RateLimited, decode_answer, parse_retry_after
from txc_async._limiters.backoff import (
    LEARNED_LIMIT_WINDOWS,
    MAX_PAUSE,
    MIN_PAUSE,
    RefusalState,
    backoff_pause,
)
from txc_async.transports import RawResponse

LIMIT = RateLimit(10, 1)


def low() -> float:
    return 0.0


def high() -> float:
    return 0.999999


# -- the pause ---------------------------------------------------------------------------------



def four_accepted() -> RefusalState:
    """A budget's refusal state after four requests answered within 40 ms."""
    state = RefusalState("public")
    for i in range(4):
        state.on_accepted(0.0, 0.01 * (i + 1), LIMIT)
    return state

def test_the_pause_doubles_from_1_s_to_30_s_with_up_to_25_percent_of_jitter() -> None:
    assert (MIN_PAUSE, MAX_PAUSE) == (1.0, 30.0)
    assert [backoff_pause(n, None, low) for n in range(7)] == [1, 2, 4, 8, 16, 30, 30]
    assert [backoff_pause(n, None, high) for n in range(6)] == pytest.approx(
        [1.25, 2.5, 5.0, 10.0, 20.0, 30.0], rel=1e-5
    )
    assert backoff_pause(10**9, None, high) == 30.0  # a very long streak stays at the cap


def test_retry_after_sets_the_pause_within_1_s_and_30_s() -> None:
    assert backoff_pause(0, 7.0, high) == 7.0
    assert backoff_pause(3, 2.5, high) == 2.5  # the server's word, not the streak's
    assert backoff_pause(0, 0.0, high) == 1.0
    assert backoff_pause(0, 0.2, high) == 1.0
    assert backoff_pause(0, 10_000.0, high) == 30.0
    assert backoff_pause(0, math.inf, high) == 30.0
    assert backoff_pause(4, math.nan, low) == 16.0  # nonsense: the doubling instead


def test_retry_after_is_read_as_seconds_or_as_an_http_date_on_the_servers_clock() -> None:
    assert parse_retry_after({"Retry-After": "7"}) == 7.0
    assert parse_retry_after({"Retry-After": " 0 "}) == 0.0
    assert parse_retry_after({"Retry-After": "120.5"}) == 120.5
    assert parse_retry_after({}) is None
    for nonsense in ("-1", "nan", "inf", "soon", ""):
        assert parse_retry_after({"Retry-After": nonsense}) is None
    # An HTTP date counts from the answer's own Date header, whatever this machine's clock says.
    sent = 1_700_000_000
    date = email.utils.formatdate(sent, usegmt=True)
    later = email.utils.formatdate(sent + 12, usegmt=True)
    assert parse_retry_after({"Retry-After": later, "Date": date}) == 12.0
    assert parse_retry_after({"Retry-After": date, "Date": later}) == 0.0  # already past
    # Read by the one HTTP-date parser the clock reads Date with: the obsolete forms too, the
    # asctime one (which carries no zone) on GMT as RFC 9110 defines it.
    asctime = time.strftime("%a %b %e %H:%M:%S %Y", time.gmtime(sent + 30))
    assert parse_retry_after({"Retry-After": asctime, "Date": date}) == 30.0
    # Without a Date header, from this machine's clock.
    soon = email.utils.formatdate(time.time() + 5, usegmt=True)
    assert 3.5 <= (parse_retry_after({"Retry-After": soon}) or 0) <= 5.0


# -- what a refusal means ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "body", "meaning"),
    [
        (429, {"code": 0, "message": "Too many requests.", "errors": {}}, NonceRefused),
        (429, {"code": 0, "errors": {},
               "message": "Your nonce is more than 5 seconds lesser than the current nonce"},
         NonceRefused),
        (429, {"code": 0, "message": "Too Many Attempts.", "errors": {}}, RateLimited),
        (400, {"code": 0, "message": "Too Many Attempts.", "errors": {}}, RateLimited),
        (422, {"code": 0, "message": "Too Many Attempts.", "errors": {}}, RateLimited),
        (429, {"message": "Too Many Requests", "code": 429}, RateLimited),  # a gateway's words
        (429, {"code": 0, "message": "Slow down", "errors": {}}, RateLimited),
        (429, {"unexpected": True}, RateLimited),
        (429, None, RateLimited),  # not JSON
    ],
)
def test_refusals_are_classified_by_meaning(
    status: int, body: object, meaning: type[Exception]
) -> None:
    raw = RawResponse(status, {"Retry-After": "3"},
                      b"<html>429</html>" if body is None else json.dumps(body).encode())
    with pytest.raises(meaning) as caught:
        decode_answer(raw, lambda data: data)
    if isinstance(caught.value, RateLimited):
        assert caught.value.error.retry_after == 3.0


# -- one burst, one event ----------------------------------------------------------------------


def test_concurrent_refusals_of_one_burst_are_one_backoff_step() -> None:
    state = RefusalState("public")
    # Eight requests sent at 0, refused one after another as their answers come back.
    pauses = [state.on_refused(0.0, 0.01 * (i + 1), LIMIT, None, low) for i in range(8)]
    assert pauses[0] == 1.0
    assert pauses[1:] == pytest.approx([1.0 - 0.01 * i for i in range(1, 8)])
    assert state.streak == 1 and state.paused_until == pytest.approx(1.01)
    # A request sent after the pause began and refused again: the next step.
    assert state.on_refused(1.5, 1.6, LIMIT, None, low) == 2.0
    assert state.streak == 2
    # Refusals of requests sent before that second pause began belong to it.
    assert state.on_refused(1.55, 1.7, LIMIT, None, low) == pytest.approx(1.9)
    assert state.streak == 2


def test_a_longer_retry_after_within_the_burst_extends_the_pause_without_a_step() -> None:
    state = RefusalState("public")
    assert state.on_refused(0.0, 0.1, LIMIT, None, low) == 1.0
    assert state.on_refused(0.0, 0.2, LIMIT, 5.0, low) == 5.0  # until 5.2
    assert state.on_refused(0.0, 0.3, LIMIT, 2.0, low) == pytest.approx(4.9)  # not shortened
    assert state.on_refused(0.0, 0.4, LIMIT, 900.0, low) == 30.0  # capped as ever
    assert state.streak == 1


def test_a_request_sent_after_the_pause_and_accepted_ends_the_streak() -> None:
    state = RefusalState("public")
    state.on_refused(0.0, 0.1, LIMIT, None, low)
    state.on_refused(2.0, 2.1, LIMIT, None, low)
    assert state.streak == 2
    state.on_accepted(1.0, 2.2, LIMIT)  # sent before the second pause began: says nothing
    assert state.streak == 2
    state.on_accepted(2.1, 4.2, LIMIT)
    assert state.streak == 0
    assert state.on_refused(5.0, 5.1, LIMIT, None, low) == 1.0


def test_one_burst_through_the_limiter_pauses_the_scope_once() -> None:
    now = [0.0]
    limiter = InProcessLimiter(clock=lambda: now[0], random=low)
    limit = RateLimit(10, 1)
    sent = [limiter.try_acquire("k", "s", limit, 10) for _ in range(8)]
    pauses = []
    for index, admission in enumerate(sent):
        assert admission is not None
        now[0] = 0.02 + 0.001 * index
        pauses.append(limiter.conclude(admission, Outcome.RATE_LIMITED))
    assert pauses[0] == 1.0 and max(pauses) == 1.0  # all end together, at 1.02
    now[0] = 1.02 - 1e-6
    assert limiter.try_acquire("k", "s", limit, 10) is None
    now[0] = 1.02
    assert limiter.try_acquire("k", "s", limit, 10) is not None


# -- learned limits ----------------------------------------------------------------------------


def test_a_lone_refusal_only_pauses() -> None:
    state = four_accepted()
    state.on_refused(0.0, 0.05, LIMIT, None, low)
    assert state.learned is None and state.effective(LIMIT, 0.06) == LIMIT


def test_a_second_refusal_of_the_burst_keeps_to_what_the_server_accepted_until_the_window_passes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="txc_async")
    state = four_accepted()
    for i in range(6):
        state.on_refused(0.0, 0.05 + 0.001 * i, LIMIT, None, low)
    assert state.learned == 4 and not state.confirmed
    assert state.effective(LIMIT, 0.1) == RateLimit(4, 1)
    assert state.cap(LIMIT, 0.1) == 4
    # Suspected only: the window may hold traffic the process never saw.
    suspected = [r for r in caplog.records if "refused at 4 of the configured" in r.getMessage()]
    assert len(suspected) == 1 and suspected[0].levelno == logging.INFO
    assert "keeping to 4 until that window has passed" in suspected[0].getMessage()
    assert not any("refuses below the configured" in r.getMessage() for r in caplog.records)
    paused = [r for r in caplog.records if "rate limit refusal" in r.getMessage()]
    assert len(paused) == 1  # the burst is one event: one WARNING, not six
    # Once that window has passed, one request more checks it.
    assert state.cap(LIMIT, 0.05 + 1 - 1e-6) == 4
    assert state.cap(LIMIT, 0.055 + 1) == 5


def test_a_refused_check_learns_the_limit_without_a_pause(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="txc_async")
    state = four_accepted()
    state.on_refused(0.0, 0.05, LIMIT, None, low)
    state.on_refused(0.0, 0.06, LIMIT, None, low)
    # The next window, seen whole: four accepted, the fifth refused.
    for i in range(4):
        state.on_accepted(1.1, 1.11 + 0.001 * i, LIMIT)
    assert state.on_refused(1.1, 1.12, LIMIT, None, low) == 0.0  # answered by the limit: no pause
    assert state.learned == 4 and state.confirmed
    assert state.streak == 0  # no backoff event either
    learned = [r for r in caplog.records if "refuses below the configured" in r.getMessage()]
    assert len(learned) == 1 and learned[0].levelno == logging.WARNING
    assert "keeping to 4 per 1 s" in learned[0].getMessage()
    assert sum("rate limit refusal" in r.getMessage() for r in caplog.records) == 1
    # Held for LEARNED_LIMIT_WINDOWS windows, then checked again with one request more.
    assert LEARNED_LIMIT_WINDOWS == 30
    assert state.cap(LIMIT, 1.12 + 30 - 0.01) == 4
    assert state.cap(LIMIT, 1.12 + 30) == 5
    # Refused again: confirmed for as long again, quietly.
    for i in range(4):
        state.on_accepted(31.2, 31.21 + 0.001 * i, LIMIT)
    assert state.on_refused(31.2, 31.22, LIMIT, 3.0, low) == 3.0  # the server's word is kept
    assert state.learned == 4 and state.cap(LIMIT, 31.3) == 4
    assert sum("refuses below the configured" in r.getMessage() for r in caplog.records) == 2
    assert [r.levelno for r in caplog.records
            if "refuses below the configured" in r.getMessage()][-1] == logging.INFO


def test_a_refusal_from_a_window_spent_by_a_predecessor_is_not_learned() -> None:
    """A new process whose first window a predecessor had nearly spent: four accepted, then
    refusals. Once that window has passed the check goes through: back to the limit."""
    state = four_accepted()
    for i in range(6):
        state.on_refused(0.0, 0.05 + 0.001 * i, LIMIT, None, low)
    assert state.effective(LIMIT, 0.5) == RateLimit(4, 1)
    for i in range(5):  # the check: five accepted in a window the process saw whole
        state.on_accepted(1.1, 1.11 + 0.001 * i, LIMIT)
    assert state.learned is None
    assert state.effective(LIMIT, 1.2) == LIMIT and state.cap(LIMIT, 1.2) == 10


def test_a_neighbour_spending_one_window_lowers_nothing_for_long() -> None:
    """A process running for a while; a neighbour on the same address spends a window once: the
    process keeps to what it got for that window only."""
    state = RefusalState("public")
    for second in range(5):  # well within the limit, window after window
        for i in range(6):
            state.on_accepted(second + 0.1 * i, second + 0.1 * i + 0.01, LIMIT)
    state.on_refused(5.0, 5.01, LIMIT, None, low)
    state.on_refused(5.0, 5.02, LIMIT, None, low)
    assert state.learned is not None and state.learned < 10
    for i in range(state.learned + 1):  # the neighbour has gone: the check goes through
        state.on_accepted(6.1, 6.1 + 0.01 * (i + 1), LIMIT)
    assert state.learned is None and state.cap(LIMIT, 6.3) == 10


def test_the_learned_limit_is_refined_upwards_as_late_answers_come_in() -> None:
    state = RefusalState("public")
    state.on_accepted(0.0, 0.01, LIMIT)
    state.on_accepted(0.0, 0.02, LIMIT)
    state.on_refused(0.0, 0.03, LIMIT, None, low)
    state.on_refused(0.0, 0.04, LIMIT, None, low)
    assert state.learned == 2
    state.on_accepted(0.0, 0.05, LIMIT)  # accepted by the server, answered after refusals
    state.on_refused(0.0, 0.06, LIMIT, None, low)
    assert state.learned == 3
    state.on_accepted(0.0, 0.07, LIMIT)
    assert state.learned == 4
    # A late refusal of the same burst never lowers it.
    state.on_refused(0.0, 0.08, LIMIT, None, low)
    assert state.learned == 4
    # A later window with more accepted: the limit kept to is gone, never above the configured.
    for i in range(20):
        state.on_accepted(2.0, 2.0 + 0.01 * i, LIMIT)
    assert state.learned is None and state.cap(LIMIT, 2.5) == LIMIT.max_requests


def test_a_refusal_right_after_the_pause_confirms_a_limit() -> None:
    state = RefusalState("public")
    for i in range(3):
        state.on_accepted(0.0, 0.1 * (i + 1), LIMIT)
    state.on_refused(0.0, 0.35, LIMIT, None, low)  # alone: only a pause
    assert state.learned is None
    state.on_accepted(1.4, 1.41, LIMIT)  # sent after the pause, accepted: the streak ends
    state.on_accepted(1.4, 1.42, LIMIT)
    state.on_refused(1.4, 1.45, LIMIT, None, low)  # a new event, streak 1: only a pause
    assert state.learned is None
    state.on_accepted(1.44, 1.7, LIMIT)  # sent just before that pause, answered late
    state.on_accepted(1.44, 1.8, LIMIT)
    assert state.streak == 1
    state.on_refused(2.5, 2.6, LIMIT, None, low)  # refused again right after that pause
    assert state.learned == 2  # what was accepted in (1.6, 2.6]


def test_nothing_is_learned_from_refusals_with_nothing_accepted_or_at_the_full_limit() -> None:
    state = RefusalState("public")
    for i in range(3):
        state.on_refused(0.0, 0.01 * (i + 1), LIMIT, None, low)
    assert state.learned is None  # another client on the same address, say
    full = RefusalState("public")
    for i in range(10):
        full.on_accepted(0.0, 0.001 * (i + 1), LIMIT)
    full.on_refused(0.0, 0.02, LIMIT, None, low)
    full.on_refused(0.0, 0.03, LIMIT, None, low)
    assert full.learned is None  # refused at the configured limit: nothing below it


def test_a_lower_limit_is_worth_keeping_only_until_its_next_check() -> None:
    state = four_accepted()
    state.on_refused(0.0, 0.05, LIMIT, None, low)
    state.on_refused(0.0, 0.06, LIMIT, None, low)
    assert not state.idle(1.05)  # the pause is over, the suspected limit holds
    assert state.idle(1.06)  # due for its check: forgetting it costs nothing


def test_the_limiter_shows_the_learned_limit_and_admits_at_it() -> None:
    now = [0.0]
    limiter = InProcessLimiter(clock=lambda: now[0], random=low)
    limit = RateLimit(10, 1)
    admissions = [limiter.try_acquire("k", "s", limit, 10) for _ in range(10)]
    for index, admission in enumerate(admissions):
        assert admission is not None
        now[0] = 0.01 + 0.001 * index
        limiter.conclude(admission, Outcome.ANSWERED if index < 4 else Outcome.RATE_LIMITED)
    assert limiter.effective_limit("k", "s", limit) == RateLimit(4, 1)
    assert limiter.effective_limit("k", "other", limit) == limit
    now[0] = 1.1  # the pause and the window are over: four go and one to check, not ten
    assert sum(limiter.try_acquire("k", "s", limit, 10) is not None for _ in range(10)) == 5
