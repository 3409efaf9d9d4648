"""Budgets, pauses and nonce counters in one SQLite file, shared by every process of one machine.

Each budget is a set of anchors, one per request: the latest moment it could have reached the
server (its deadline while in flight, then its answer), on the wall clock (``time.time()``), which
every process of the machine shares. A short ``BEGIN IMMEDIATE`` transaction admits a request
while, in each budget it draws on (its scope's and its groups'), fewer than ``max_requests``
anchors lie in the last ``per_seconds``, anchors it in every one of them and draws the nonce from
its API key's counter, so a process started right after another continues within the same
windows.

The calls run on the event loop's thread, without a worker thread. Measured on a 2-core
machine with a budget of 1,000 per 10 s filled to 999 anchors: an admission takes 0.14 ms
(median; WAL, ``synchronous=NORMAL``, so no disk flush per commit), a conclude 0.02 ms, while
handing a call to a thread and back costs 0.08 ms by itself; one call in a hundred takes a few
milliseconds (SQLite's automatic WAL checkpoint). Only when another process holds the write lock
does a call wait for it (the busy timeout), as long as that process's own short transaction.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from .._errors import TransportError
from .._nonces.sources import MAX_NONCE_LEAD_MS, known_ceiling
from .._validate import check_positive_seconds
from .backoff import MAX_PAUSE
from .base import Admission, Outcome
from .stored import Admitted, Budget, Entry, Request, StoredLimiter, Verdict

__all__ = ["SQLiteLimiter"]

#: Anchors older than this (seconds) belong to no window any more; every 1,024 admissions, a
#: limiter removes them whatever their budget (a budget's own are removed at each admission).
_SWEEP_AFTER = 86_400.0

# Budgets (anchors, pauses, longest windows) are keyed by ``key_id``, the server's id, and
# ``scope``, an operation's scope or a group's name; nonce counters by the API key's id. A file
# written when budgets belonged to one API key each still opens: the tables are the same, their
# rows under those old ids simply age out of every window (and the sweep removes them), and the
# nonce counters keep their API key's id.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS anchors (
    id INTEGER PRIMARY KEY,
    key_id TEXT NOT NULL,
    scope TEXT NOT NULL,
    at REAL NOT NULL,      -- deadline while in flight, then the answer time (time.time())
    span REAL NOT NULL     -- the request's timeout, seconds
);
CREATE INDEX IF NOT EXISTS anchors_by_budget ON anchors (key_id, scope, at);
CREATE TABLE IF NOT EXISTS pauses (
    key_id TEXT NOT NULL,
    scope TEXT NOT NULL,
    until REAL NOT NULL,
    PRIMARY KEY (key_id, scope)
);
CREATE TABLE IF NOT EXISTS longest_windows (
    key_id TEXT NOT NULL,
    scope TEXT NOT NULL,
    per REAL NOT NULL,     -- the longest window (seconds) a client counts the budget in
    until REAL NOT NULL,   -- its last admission plus that window: forgotten after
    PRIMARY KEY (key_id, scope)
);
CREATE TABLE IF NOT EXISTS nonces (
    key_id TEXT PRIMARY KEY,  -- the API key's id (a hash), whose requests draw from the counter
    last INTEGER NOT NULL  -- milliseconds on the server-aligned clock
);
"""


def _set_up(db: sqlite3.Connection, busy_timeout: float) -> None:
    """Put a new connection's file in WAL mode and create the tables, retried for up to
    ``busy_timeout`` seconds: two processes that open a new file at the same moment (backfills
    started together) may find it locked, and switching a file to WAL answers "database is
    locked" at once rather than waiting as the busy timeout makes other statements wait."""
    deadline = time.monotonic() + busy_timeout
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(0.01)


class SQLiteLimiter(StoredLimiter):
    """A [`txc_async.Limiter`][txc_async.Limiter] whose budgets live in one SQLite file, shared by
    every process of one machine that opens the same ``path``.

    Budgets belong to the server, as the service counts them (per IP address): every API key used
    with one server draws on the same budgets, its scopes' and its groups'. The processes together
    never let the server count more than a budget's limit in any window, whatever the network delays
    (each request is anchored at its deadline until its answer, as in
    [`txc_async.InProcessLimiter`][txc_async.InProcessLimiter]), and a process started right after
    another (a backfill interrupted and rerun) continues within the same windows. A request draws on
    its scope's budget and its groups' in one transaction: from every one of them, or, when one has
    no room, from none. Signed requests draw their nonces from one counter per API key in the file,
    on the server-aligned clock. The pause after a refusal is shared (for the budget the refusal is
    blamed on); a learned limit stays in the process that learned it.

    Time is the wall clock, which the machine's processes share. If it steps back, anchors then
    lying further ahead than a window plus their request's timeout are dropped (they cannot be
    real); if it steps forward, the windows it skips count as past. Waiters of one process are
    served first-in-first-out. The file is created (with its folder) if missing; it holds no secret,
    only ids (hashes) of servers and keys. ``busy_timeout`` bounds the wait for another process's
    transaction; past it, [`acquire`][txc_async.Limiter.acquire] raises
    [`txc_async.TransportError`][txc_async.TransportError] rather than let requests go out
    unlimited.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = 5.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        random: Callable[[], float] | None = None,
    ) -> None:
        check_positive_seconds("busy_timeout", busy_timeout)
        super().__init__(sleep=sleep, random=random)
        self._path = Path(path)
        self._lock = threading.Lock()
        self._admissions = 0
        try:
            if str(path) != ":memory:":
                self._path.parent.mkdir(parents=True, exist_ok=True)
            self._db: sqlite3.Connection | None = sqlite3.connect(
                str(path), timeout=float(busy_timeout), isolation_level=None,
                check_same_thread=False,
            )
            _set_up(self._db, float(busy_timeout))
        except (sqlite3.Error, OSError) as exc:
            raise ValueError(f"path: cannot open {str(path)!r} as a SQLite file: {exc}") from None

    def __repr__(self) -> str:
        return f"SQLiteLimiter({str(self._path)!r})"

    @property
    def path(self) -> Path:
        """The database file every process sharing these budgets opens."""
        return self._path

    def _transaction(self) -> _Transaction:
        return _Transaction(self)

    def _fail(self, exc: sqlite3.Error) -> TransportError:
        return TransportError(
            f"rate-limit store failed: {str(self._path)!r}: {type(exc).__name__}: {exc}",
            may_have_reached_server=False,
        )

    async def _admit(self, request: Request, caps: Sequence[int]) -> Admitted | Verdict:
        budgets, limits, timeout = request.budgets, request.limits, request.timeout
        nonce_clock, nonce_key = request.nonce_clock, request.nonce_key
        key_id = budgets[0].key_id
        with self._transaction() as cursor:
            now = time.time()
            kept: list[float] = []
            blocked: Verdict | None = None
            for index, (budget, limit, cap) in enumerate(zip(budgets, limits, caps, strict=True)):
                looked = self._look(cursor, key_id, budget.scope, limit.per_seconds, cap, now)
                if isinstance(looked, Verdict):
                    if index == 0:
                        # The scope first: a request its own scope holds waits on it alone.
                        return looked
                    if blocked is None or looked.wait > blocked.wait:
                        blocked = looked._replace(budget=index)
                else:
                    kept.append(looked)
            if blocked is not None:
                return blocked
            nonce: int | None = None
            if nonce_clock is not None:
                drawn = self._draw_nonce(cursor, nonce_key, nonce_clock)
                if isinstance(drawn, Verdict):
                    return drawn
                nonce = drawn
            deadline = now + timeout
            idents = tuple(
                self._anchor(cursor, key_id, budget.scope, limit.per_seconds, window, now,
                             deadline, timeout)
                for budget, limit, window in zip(budgets, limits, kept, strict=True)
            )
            self._admissions += 1
            if self._admissions % 1024 == 0:
                self._sweep(cursor, now)
        return Admitted(deadline, idents, nonce)

    @staticmethod
    def _look(
        cursor: sqlite3.Cursor, key_id: str, scope: str, per: float, cap: int, now: float
    ) -> float | Verdict:
        """Whether one budget has room at ``now`` (the store locked): the window its anchors are
        kept for when it has, else how long to wait."""
        # Anchors stay for the longest window a client of the budget counts in, and each
        # client counts those of its own: a shorter window never drops what a longer one
        # needs. A longer window is kept until one of its length has passed since its
        # client's last admission; after that, none of its client's anchors is in it.
        row = cursor.execute(
            "SELECT per, until FROM longest_windows WHERE key_id = ? AND scope = ?",
            (key_id, scope),
        ).fetchone()
        kept: float = row[0] if row is not None and row[0] > per and row[1] > now else per
        # Anchors out of every window go; so do anchors further ahead than any request
        # could have put them (the wall clock stepped back).
        cursor.execute(
            "DELETE FROM anchors WHERE key_id = ? AND scope = ? AND (at <= ? OR at > ? + span)",
            (key_id, scope, now - kept, now + per),
        )
        row = cursor.execute(
            "SELECT until FROM pauses WHERE key_id = ? AND scope = ?", (key_id, scope)
        ).fetchone()
        if row is not None:
            # A pause further ahead than any pause can be: the wall clock stepped back.
            if now < row[0] <= now + MAX_PAUSE + 1:
                return Verdict(row[0] - now, False)
            cursor.execute("DELETE FROM pauses WHERE key_id = ? AND scope = ?", (key_id, scope))
        row = cursor.execute(
            "SELECT at FROM anchors WHERE key_id = ? AND scope = ? "
            "ORDER BY at DESC LIMIT 1 OFFSET ?",
            (key_id, scope, cap - 1),
        ).fetchone()
        if row is not None and row[0] > now - per:
            # The cap-th latest anchor must leave the window first.
            at = row[0]
            return Verdict(max(at + per - now, 1e-6), at > now)
        return kept

    @staticmethod
    def _anchor(
        cursor: sqlite3.Cursor, key_id: str, scope: str, per: float, kept: float, now: float,
        deadline: float, timeout: float,
    ) -> int | None:
        """Count the request in one budget until ``deadline`` (the store locked); the anchor's
        row id."""
        cursor.execute(
            "INSERT INTO anchors (key_id, scope, at, span) VALUES (?, ?, ?, ?)",
            (key_id, scope, deadline, timeout),
        )
        ident = cursor.lastrowid
        if kept == per:
            # This client's window is the longest kept: kept one window past this admission.
            cursor.execute(
                "INSERT INTO longest_windows (key_id, scope, per, until) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (key_id, scope) DO UPDATE SET per = excluded.per, "
                "until = excluded.until",
                (key_id, scope, per, now + per),
            )
        return ident

    @staticmethod
    def _sweep(cursor: sqlite3.Cursor, now: float) -> None:
        """Budgets no longer used keep their last anchors until someone sweeps them: past a day
        and every window still kept, whatever their budget (the store locked)."""
        cursor.execute("DELETE FROM longest_windows WHERE until <= ?", (now,))
        (longest,) = cursor.execute(
            "SELECT coalesce(max(per), 0) FROM longest_windows"
        ).fetchone()
        cursor.execute("DELETE FROM anchors WHERE at <= ?", (now - max(_SWEEP_AFTER, longest),))
        cursor.execute("DELETE FROM pauses WHERE until <= ?", (now,))

    def _draw_nonce(
        self, cursor: sqlite3.Cursor, nonce_key: str, nonce_clock: Callable[[], int]
    ) -> int | Verdict:
        """The API key's next nonce from its counter (the store locked), or how long to wait
        while the counter is more than the lead ahead of ``nonce_clock``."""
        # Read with the store locked: while this process waited for the lock, another may have
        # drawn and used values up to its own clock.
        clock_ms = int(nonce_clock())
        ceiling = known_ceiling(nonce_clock)
        row = cursor.execute(
            "SELECT last FROM nonces WHERE key_id = ?", (nonce_key,)
        ).fetchone()
        last = 0 if row is None else int(row[0])
        if ceiling is not None and last > ceiling:
            # Far ahead of the clock (a clock stepped back, or it ran fast when those nonces
            # were drawn): come back to the highest value the service can have accepted. Every
            # nonce it ever accepted lay within the window of its clock, which has only moved
            # forward since, so none lies beyond that ceiling; values past it were refused and
            # never used. Without a ceiling (no answer yet bounds the server's clock) nothing is
            # lowered: the server may be ahead of this machine, and another process's values
            # with it.
            last = ceiling
            self._set_nonce(cursor, nonce_key, last)
        nonce = max(clock_ms, last + 1)
        if nonce - clock_ms > MAX_NONCE_LEAD_MS:
            return Verdict((nonce - clock_ms - MAX_NONCE_LEAD_MS) / 1000, False, True)
        self._set_nonce(cursor, nonce_key, nonce)
        return nonce

    async def redraw_nonce(
        self, admission: Admission, nonce_clock: Callable[[], int]
    ) -> int | None:
        """A new nonce for an admitted request whose nonce grew too old while it waited (for
        a connection), from its API key's counter; None when the counter is too far ahead to
        draw one now."""
        entry = admission.token
        nonce_key = entry.nonce_key if isinstance(entry, Entry) else admission.key_id
        with self._transaction() as cursor:
            drawn = self._draw_nonce(cursor, nonce_key, nonce_clock)
        return None if isinstance(drawn, Verdict) else drawn

    @staticmethod
    def _set_nonce(cursor: sqlite3.Cursor, nonce_key: str, value: int) -> None:
        cursor.execute(
            "INSERT INTO nonces (key_id, last) VALUES (?, ?) "
            "ON CONFLICT (key_id) DO UPDATE SET last = excluded.last",
            (nonce_key, value),
        )

    def _record(
        self, admission: Admission, outcome: Outcome, paused: Budget | None, pause: float
    ) -> None:
        if outcome is Outcome.NO_ANSWER:
            return  # it may still arrive until its deadlines, which stay
        entry = admission.token
        assert isinstance(entry, Entry) and isinstance(entry.ident, tuple)
        try:
            with self._transaction() as cursor:
                now = time.time()
                for ident in entry.ident:
                    if outcome is Outcome.NOT_SENT:
                        cursor.execute("DELETE FROM anchors WHERE id = ?", (ident,))
                    else:
                        # It arrived before its answer: the latest moment it counts from.
                        cursor.execute(
                            "UPDATE anchors SET at = ? WHERE id = ? AND at > ?",
                            (now, ident, now),
                        )
                if paused is not None:
                    cursor.execute(
                        "INSERT INTO pauses (key_id, scope, until) VALUES (?, ?, ?) "
                        "ON CONFLICT (key_id, scope) DO UPDATE SET until = "
                        "max(until, excluded.until)",
                        (paused.key_id, paused.scope, now + pause),
                    )
        except TransportError:
            # The store keeps the safer state: the anchors stay at their deadline.
            pass
        for budget in entry.budgets:
            budget.wake_head()

    async def aclose(self) -> None:
        """Close the file. Its budgets stay for the next process."""
        with self._lock:
            db, self._db = self._db, None
            if db is not None:
                db.close()


class _Transaction:
    """``with limiter._transaction() as cursor``: one ``BEGIN IMMEDIATE`` transaction, committed on
    success and rolled back on error; SQLite errors become
    [`TransportError`][txc_async.TransportError]."""

    __slots__ = ("_cursor", "_limiter")

    def __init__(self, limiter: SQLiteLimiter) -> None:
        self._limiter = limiter
        self._cursor: sqlite3.Cursor | None = None

    def __enter__(self) -> sqlite3.Cursor:
        limiter = self._limiter
        limiter._lock.acquire()
        try:
            db = limiter._db
            if db is None:
                raise TransportError(
                    f"rate-limit store closed: {str(limiter._path)!r}",
                    may_have_reached_server=False,
                )
            self._cursor = db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            limiter._lock.release()
            raise limiter._fail(exc) from None
        except BaseException:
            limiter._lock.release()
            raise
        return self._cursor

    def __exit__(self, exc_type: object, exc: BaseException | None, traceback: object) -> None:
        limiter = self._limiter
        db = limiter._db
        try:
            if db is not None:
                if exc is None:
                    db.execute("COMMIT")
                else:
                    db.execute("ROLLBACK")
        except sqlite3.Error as error:
            if exc is None:
                raise limiter._fail(error) from None
        finally:
            limiter._lock.release()
        if isinstance(exc, sqlite3.Error):
            raise limiter._fail(exc) from None
