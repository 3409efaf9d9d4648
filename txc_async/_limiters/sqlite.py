"""Budgets, pauses and nonce counters in one SQLite file, shared by every process of one machine.

Each budget is a set of anchors, one per request: the latest moment it could have reached the
server (its deadline while in flight, then its answer), on the wall clock (``time.time()``), which
every process of the machine shares. A short ``BEGIN IMMEDIATE`` transaction admits a request
while, in each budget it draws on (its scope's and its groups'), fewer than ``max_requests``
anchors lie in the last ``per_seconds``, anchors it in every one of them and draws the nonce from
its API key's counter, so a process started right after another continues within the same
windows.

The transactions run in a thread of the limiter's own (`txc_async._limiters.sqlite_file`), never
on an event loop: while another process holds the file's write lock, only the requests waiting
for budget wait. The limiter also keeps, in that thread, what this process wrote (its anchors
still in a window, its pauses, the nonces it drew), so that a file deleted in use is replaced by
one holding them (see `StoreFile`).
"""

from __future__ import annotations

import asyncio
import functools
import os
import sqlite3
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from .._nonces.sources import MAX_NONCE_LEAD_MS, known_ceiling
from .._validate import check_positive_seconds
from .backoff import MAX_PAUSE
from .base import Admission, Outcome
from .sqlite_file import StoreFile
from .stored import Admitted, Budget, Entry, Request, StoredLimiter, Verdict

__all__ = ["SQLiteLimiter"]

#: Anchors older than this (seconds) belong to no window any more; every 1,024 admissions, a
#: limiter removes them whatever their budget (a budget's own are removed at each admission).
_SWEEP_AFTER = 86_400.0


class _Anchor:
    """An anchor this process wrote: where it is in the file now, and what to write again."""

    __slots__ = ("at", "kept", "key_id", "row", "scope", "span")

    def __init__(
        self, key_id: str, scope: str, at: float, span: float, kept: float, row: int
    ) -> None:
        self.key_id = key_id
        self.scope = scope
        self.at = at
        self.span = span
        #: The window (seconds) the anchor counts in: it is gone from the file after it.
        self.kept = kept
        self.row = row


class _Written:
    """What this process keeps in the file: its anchors still in a window (by a number of its
    own: a file replaced gives them new row ids), its pauses, the last nonce it drew per API
    key, its longest windows. Touched only by the file's thread."""

    def __init__(self) -> None:
        self.anchors: dict[int, _Anchor] = {}
        self.next_anchor = 0
        self.pauses: dict[tuple[str, str], float] = {}
        self.nonces: dict[str, int] = {}
        self.windows: dict[tuple[str, str], tuple[float, float]] = {}

    def prune(self, now: float) -> None:
        """Forget what no window holds any more."""
        self.anchors = {n: a for n, a in self.anchors.items() if a.at + a.kept > now}
        self.pauses = {k: until for k, until in self.pauses.items() if until > now}
        self.windows = {k: w for k, w in self.windows.items() if w[1] > now}

    def keeps(self) -> bool:
        return bool(self.anchors or self.pauses)


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
    only ids (hashes) of servers and keys. Every statement runs in a thread of the limiter's own,
    never on an event loop: a file locked by another process holds up the requests waiting for
    budget, not the loop. ``busy_timeout`` bounds the wait for another process's transaction; past
    it, [`acquire`][txc_async.Limiter.acquire] raises
    [`txc_async.TransportError`][txc_async.TransportError] rather than let requests go out
    unlimited. A file deleted while in use is noticed (before every transaction, and within
    0.2 s while the limiter waits): the limiter opens the path again, creating the file when no
    other process did, and writes into it the budget this process spent, its pauses and its
    nonce counters.
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
        self._admissions = 0
        self._written = _Written()
        try:
            self._file = StoreFile(path, float(busy_timeout), self._rejoin, self._keeps)
        except (sqlite3.Error, OSError) as exc:
            raise ValueError(f"path: cannot open {str(path)!r} as a SQLite file: {exc}") from None

    def __repr__(self) -> str:
        return f"SQLiteLimiter({str(self._path)!r})"

    @property
    def path(self) -> Path:
        """The database file every process sharing these budgets opens."""
        return self._path

    async def _run(self, job: Callable[[sqlite3.Cursor], Any]) -> Any:
        """``job``'s result, its transaction run in the file's thread."""
        return await asyncio.wrap_future(self._file.submit(job))

    async def _admit(self, request: Request, caps: Sequence[int]) -> Admitted | Verdict:
        future = self._file.submit(functools.partial(self._admit_now, request, tuple(caps)))
        try:
            answer: Admitted | Verdict = await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            # Cancelled while the transaction ran: whatever it admitted is given back.
            future.add_done_callback(self._give_back)
            raise
        return answer

    def _give_back(self, future: Future[Admitted | Verdict]) -> None:
        if future.cancelled() or future.exception() is not None:
            return
        answer = future.result()
        if isinstance(answer, Admitted):
            assert isinstance(answer.ident, tuple)
            self._file.post(functools.partial(self._ended_now, answer.ident, Outcome.NOT_SENT,
                                              None, 0.0))

    # -- in the file's thread ---------------------------------------------------------------------

    def _admit_now(
        self, request: Request, caps: tuple[int, ...], cursor: sqlite3.Cursor
    ) -> Admitted | Verdict:
        budgets, limits, timeout = request.budgets, request.limits, request.timeout
        nonce_clock, nonce_key = request.nonce_clock, request.nonce_key
        key_id = budgets[0].key_id
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
            self._written.prune(now)
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

    def _anchor(
        self, cursor: sqlite3.Cursor, key_id: str, scope: str, per: float, kept: float,
        now: float, deadline: float, timeout: float,
    ) -> int:
        """Count the request in one budget until ``deadline``; this process's number for the
        anchor."""
        cursor.execute(
            "INSERT INTO anchors (key_id, scope, at, span) VALUES (?, ?, ?, ?)",
            (key_id, scope, deadline, timeout),
        )
        row = cursor.lastrowid
        assert row is not None
        written = self._written
        number = written.next_anchor
        written.next_anchor += 1
        written.anchors[number] = _Anchor(key_id, scope, deadline, timeout, kept, row)
        if kept == per:
            # This client's window is the longest kept: kept one window past this admission.
            self._set_window(cursor, key_id, scope, per, now + per)
        return number

    def _set_window(
        self, cursor: sqlite3.Cursor, key_id: str, scope: str, per: float, until: float
    ) -> None:
        cursor.execute(
            "INSERT INTO longest_windows (key_id, scope, per, until) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (key_id, scope) DO UPDATE SET per = excluded.per, "
            "until = excluded.until",
            (key_id, scope, per, until),
        )
        self._written.windows[key_id, scope] = (per, until)

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
        nonces = self._written.nonces
        if nonce > nonces.get(nonce_key, 0):
            nonces[nonce_key] = nonce
        return nonce

    async def redraw_nonce(
        self, admission: Admission, nonce_clock: Callable[[], int]
    ) -> int | None:
        """A new nonce for an admitted request whose nonce grew too old while it waited (for
        a connection), from its API key's counter; None when the counter is too far ahead to
        draw one now."""
        entry = admission.token
        nonce_key = entry.nonce_key if isinstance(entry, Entry) else admission.key_id
        drawn = await self._run(
            lambda cursor: self._draw_nonce(cursor, nonce_key, nonce_clock)
        )
        return None if isinstance(drawn, Verdict) else int(drawn)

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
        """Hand the file's thread how the request ended, and wake the heads of its budgets:
        what they ask the store next runs after it. Never waits."""
        entry = admission.token
        assert isinstance(entry, Entry) and isinstance(entry.ident, tuple)
        if outcome is not Outcome.NO_ANSWER or paused is not None:
            # Dropped when the thread is far behind: the anchors stay at their deadlines.
            self._file.post(functools.partial(
                self._ended_now, entry.ident, outcome,
                None if paused is None else (paused.key_id, paused.scope), pause,
            ))
        for budget in entry.budgets:
            budget.wake_head()

    def _ended_now(
        self, numbers: tuple[int, ...], outcome: Outcome, paused: tuple[str, str] | None,
        pause: float, cursor: sqlite3.Cursor,
    ) -> None:
        """In the file's thread: the anchors of a request that ended with ``outcome`` move to
        its answer (or go, when it was never sent; stay, when no answer came), and ``paused``
        pauses ``pause`` seconds."""
        now = time.time()
        anchors = self._written.anchors
        if outcome is not Outcome.NO_ANSWER:
            for number in numbers:
                anchor = anchors.get(number)
                if anchor is None:
                    continue  # out of every window already
                if outcome is Outcome.NOT_SENT:
                    cursor.execute("DELETE FROM anchors WHERE id = ?", (anchor.row,))
                    del anchors[number]
                elif anchor.at > now:
                    # It arrived before its answer: the latest moment it counts from.
                    cursor.execute(
                        "UPDATE anchors SET at = ? WHERE id = ? AND at > ?",
                        (now, anchor.row, now),
                    )
                    anchor.at = now
        if paused is not None:
            until = now + pause
            cursor.execute(
                "INSERT INTO pauses (key_id, scope, until) VALUES (?, ?, ?) "
                "ON CONFLICT (key_id, scope) DO UPDATE SET until = max(until, excluded.until)",
                (*paused, until),
            )
            pauses = self._written.pauses
            pauses[paused] = max(until, pauses.get(paused, until))

    def _keeps(self) -> bool:
        self._written.prune(time.time())
        return self._written.keeps()

    def _rejoin(self, cursor: sqlite3.Cursor) -> None:
        """In the file's thread, on a file that replaced the one this process used: write into
        it what this process spent there and still counts (its anchors, with new row ids), its
        pauses, its longest windows and the nonces it drew (a counter only ever goes up)."""
        now = time.time()
        written = self._written
        written.prune(now)
        for anchor in written.anchors.values():
            cursor.execute(
                "INSERT INTO anchors (key_id, scope, at, span) VALUES (?, ?, ?, ?)",
                (anchor.key_id, anchor.scope, anchor.at, anchor.span),
            )
            row = cursor.lastrowid
            assert row is not None
            anchor.row = row
        for (key_id, scope), until in written.pauses.items():
            cursor.execute(
                "INSERT INTO pauses (key_id, scope, until) VALUES (?, ?, ?) "
                "ON CONFLICT (key_id, scope) DO UPDATE SET until = max(until, excluded.until)",
                (key_id, scope, until),
            )
        for (key_id, scope), (per, until) in written.windows.items():
            cursor.execute(
                "INSERT INTO longest_windows (key_id, scope, per, until) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (key_id, scope) DO UPDATE SET per = max(per, excluded.per), "
                "until = max(until, excluded.until)",
                (key_id, scope, per, until),
            )
        for nonce_key, last in written.nonces.items():
            cursor.execute(
                "INSERT INTO nonces (key_id, last) VALUES (?, ?) "
                "ON CONFLICT (key_id) DO UPDATE SET last = max(last, excluded.last)",
                (nonce_key, last),
            )

    async def aclose(self) -> None:
        """Close the file once the answers and give-backs handed over have been written. Its
        budgets stay for the next process."""
        await asyncio.wrap_future(self._file.close())
