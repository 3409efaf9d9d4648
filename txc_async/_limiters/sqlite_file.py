"""One SQLite file, worked on by a thread of its own: no statement on it ever runs on an event loop.

Every transaction runs in one dedicated thread, in the order asked. An admission hands its
transaction over and awaits the result (a future its event loop awaits, whatever loop that is); a
record of how a request ended is handed over and never waited for. While another process holds
the file's write lock, that thread waits for it (SQLite's busy timeout), and the event loops run
on. Records queue up to `MAX_QUEUED_RECORDS`; one that finds the queue full is dropped, which
leaves the store with the safer value (the request's anchor stays at its deadline).

Before every transaction, and every `IDLE_CHECK` seconds while the thread has nothing to do and
its owner keeps something in the file, the thread looks whether the path still leads to the file
it opened (same device and inode). When the file was deleted, or replaced (another process found
it missing and made a new one), the thread opens the path again, creating the file when missing,
and has its owner write into it what this process keeps in the store (``rejoin``): the processes
meet in one file again, with the budget each one spent. The old connection is closed: SQLite
neither checkpoints nor removes the WAL of a database whose path now leads elsewhere.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

from .._errors import TransportError

__all__ = ["IDLE_CHECK", "MAX_QUEUED_RECORDS", "SCHEMA", "StoreFile"]

logger = logging.getLogger("txc_async")

#: While it has nothing to do, the thread looks at the file's path this often (seconds), when
#: its owner keeps something in the file.
IDLE_CHECK = 0.2
#: Records of how requests ended waiting for the thread at most; more are dropped (their anchors
#: stay at their deadlines).
MAX_QUEUED_RECORDS = 4096

_T = TypeVar("_T")

# Budgets (anchors, pauses, longest windows) are keyed by ``key_id``, the server's id, and
# ``scope``, an operation's scope or a group's name; nonce counters by the API key's id. A file
# written when budgets belonged to one API key each still opens: the tables are the same, their
# rows under those old ids simply age out of every window (and the sweep removes them), and the
# nonce counters keep their API key's id.
SCHEMA = """
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
            db.executescript(SCHEMA)
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(0.01)


class _Close:
    """The last job: close the connection and end the thread."""


_CLOSE = _Close()

#: A job: what one transaction does, given its cursor.
Job = Callable[[sqlite3.Cursor], Any]


class StoreFile:
    """The connection to one SQLite file and the thread that runs every transaction on it.

    ``rejoin`` (run in that thread, in the first transaction on a file that replaced the one
    opened) writes what the owner keeps in the store; ``keeps`` (also in that thread) says whether
    it keeps anything, which is when the path is looked at while idle.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        busy_timeout: float,
        rejoin: Job,
        keeps: Callable[[], bool],
    ) -> None:
        self._path = Path(path)
        self._name = str(path)
        self._in_memory = self._name == ":memory:"
        self._busy_timeout = busy_timeout
        self._rejoin = rejoin
        self._keeps = keeps
        self._db = self._connect()
        self._identity = self._identity_now()
        self._jobs: deque[tuple[Job | _Close, Future[Any] | None]] = deque()
        self._records = 0
        self._wake = threading.Condition()
        self._closing = False
        self._shut_down: Future[None] = Future()
        # The thread holds the file weakly: a limiter dropped without being closed ends it.
        self._thread = threading.Thread(
            target=_serve, args=(weakref.ref(self), self._wake, self._jobs),
            name=f"txc-sqlite-limiter {self._name}", daemon=True,
        )
        self._thread.start()

    # -- the caller's side (any thread) ---------------------------------------------------------

    def submit(self, job: Callable[[sqlite3.Cursor], _T]) -> Future[_T]:
        """Run ``job`` in a transaction of its own, after every job handed over before: its
        result, or [`TransportError`][txc_async.TransportError] when the file failed or is
        closed. A future cancelled before the job began cancels the job."""
        future: Future[_T] = Future()
        with self._wake:
            if self._closing:
                future.set_exception(self._closed())
                return future
            self._jobs.append((job, future))
            self._wake.notify()
        return future

    def post(self, job: Job) -> bool:
        """Run ``job`` in a transaction of its own, after every job handed over before, without
        waiting for it (its failure keeps the file as it was); False when it was dropped (the
        queue is full, or the file closed)."""
        with self._wake:
            if self._closing or self._records >= MAX_QUEUED_RECORDS:
                return False
            self._records += 1
            self._jobs.append((job, None))
            self._wake.notify()
        return True

    def close(self) -> Future[None]:
        """Close the file once every job handed over before has run; a future done then."""
        with self._wake:
            if not self._closing:
                self._closing = True
                self._jobs.append((_CLOSE, self._shut_down))
                self._wake.notify()
        return self._shut_down

    def _closed(self) -> TransportError:
        return TransportError(
            f"rate-limit store closed: {self._name!r}", may_have_reached_server=False
        )

    def _fail(self, exc: BaseException) -> TransportError:
        return TransportError(
            f"rate-limit store failed: {self._name!r}: {type(exc).__name__}: {exc}",
            may_have_reached_server=False,
        )

    # -- the thread's side ------------------------------------------------------------------------

    def _step(self, item: tuple[Job | _Close, Future[Any] | None] | None) -> bool:
        """Run one job handed over (None: look at the file while idle); False once closed."""
        if item is None:
            self._look_while_idle()
            return True
        job, future = item
        if isinstance(job, _Close):
            self._shut()
            self._fail_the_rest()
            if future is not None and future.set_running_or_notify_cancel():
                future.set_result(None)
            return False
        if future is not None and not future.set_running_or_notify_cancel():
            return True  # cancelled before it began: nothing done
        try:
            result = self._transaction(job)
        except BaseException as exc:  # handed to whoever waits; the thread goes on
            if future is not None:
                future.set_exception(exc)
            return True
        if future is not None:
            future.set_result(result)
        return True

    def _fail_the_rest(self) -> None:
        with self._wake:
            left = list(self._jobs)
            self._jobs.clear()
        for _job, future in left:
            if future is not None and future.set_running_or_notify_cancel():
                future.set_exception(self._closed())

    def _transaction(self, job: Job) -> Any:
        """``job`` in one ``BEGIN IMMEDIATE`` transaction on the file the path leads to now,
        committed on success and rolled back on error; SQLite's and the file system's errors
        become [`TransportError`][txc_async.TransportError]."""
        try:
            self._follow()
            db = self._db
            cursor = db.execute("BEGIN IMMEDIATE")
            try:
                result = job(cursor)
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            return result
        except (sqlite3.Error, OSError) as exc:
            raise self._fail(exc) from None

    def _look_while_idle(self) -> None:
        if self._in_memory:
            return
        # A file deleted while this process waits: its budget goes into the new one now, before
        # another process starts spending there. A failure is met again by the next transaction.
        with contextlib.suppress(sqlite3.Error, OSError):
            if self._keeps():
                self._follow()

    def _connect(self) -> sqlite3.Connection:
        if not self._in_memory:
            self._path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(
            self._name, timeout=float(self._busy_timeout), isolation_level=None,
            check_same_thread=False,
        )
        try:
            _set_up(db, float(self._busy_timeout))
        except BaseException:
            db.close()
            raise
        return db

    def _identity_now(self) -> tuple[int, int] | None:
        """The device and inode the path leads to, or None when it leads nowhere."""
        if self._in_memory:
            return None
        try:
            found = os.stat(self._path)
        except FileNotFoundError:
            return None
        return found.st_dev, found.st_ino

    def _follow(self) -> None:
        """Open the path again when it no longer leads to the file opened, and rejoin."""
        if self._in_memory or self._identity_now() == self._identity:
            return
        db = self._connect()
        old, self._db = self._db, db
        self._identity = self._identity_now()
        with contextlib.suppress(sqlite3.Error):
            old.close()
        logger.warning(
            "rate-limit store %r was deleted or replaced; joined the file now at that path",
            self._name,
        )
        cursor = db.execute("BEGIN IMMEDIATE")
        try:
            self._rejoin(cursor)
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def _shut(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self._db.close()


def _serve(
    ref: weakref.ref[StoreFile],
    wake: threading.Condition,
    jobs: deque[tuple[Job | _Close, Future[Any] | None]],
) -> None:
    """The file's thread: its jobs in order, and a look at the file every `IDLE_CHECK` seconds
    while there are none; it ends when the file is closed, or dropped unclosed."""
    while True:
        with wake:
            if not jobs:
                wake.wait(IDLE_CHECK)
            file = ref()
            if file is None:
                return
            item = None
            if jobs:
                item = jobs.popleft()
                if item[1] is None:
                    file._records -= 1
        if not file._step(item):
            return
        del file, item
