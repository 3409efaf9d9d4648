"""One writer per output: an exclusive OS lock held for a whole run, released by the OS when the
process ends, however it ends."""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path
from types import TracebackType

from .._errors import TxcError

__all__ = ["OutputLock", "OutputLockedError"]


class OutputLockedError(TxcError):
    """Another process is writing the same output."""


def _lock_exclusively(fd: int) -> None:
    """Lock ``fd`` for this process or raise ``BlockingIOError`` (``PermissionError`` on
    Windows) at once; the OS drops the lock when the descriptor closes or the process ends."""
    if sys.platform == "win32":
        import msvcrt

        # A byte far past any holder's text, so that reading who holds the lock still works.
        os.lseek(fd, 1 << 20, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
    else:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


class OutputLock:
    """An exclusive ``flock`` on ``lock_path`` naming its holder, and one on the output file
    itself (made if new; a regular file only): the file, whatever name leads to it, a hard link
    too; a context manager.

    The lock file is never removed: removing it would let a third process lock a new file while
    the second still holds the old one.
    """

    def __init__(self, lock_path: Path, output: Path) -> None:
        self.lock_path = lock_path
        self.output = output
        self._fd: int | None = None
        self._output_fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            _lock_exclusively(fd)
        except (BlockingIOError, PermissionError):
            holder = os.pread(fd, 512, 0).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise OutputLockedError(
                f"{self.output} is being written by {holder}; wait for it to finish "
                "or stop it, then rerun"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"process {os.getpid()} on {socket.gethostname()} "
                      f"(since {started})\n".encode(), 0)
        self._fd = fd
        if sys.platform != "win32" and (self.output.is_file() or not self.output.exists()):
            try:
                self._output_fd = self._lock_output()
            except BaseException:
                self.release()
                raise

    def _lock_output(self) -> int:
        """The output file's own lock: a run that reached it by another name (a hard link)
        holds another lock file, but the same file. A new output is made here, empty, so that
        it is locked from the start (a link may be made to it while the run writes)."""
        # Never blocks: a regular file (or a new one) only; a pipe is not an output to resume.
        fd = os.open(self.output, os.O_RDONLY | os.O_CREAT | os.O_NONBLOCK, 0o644)
        try:
            _lock_exclusively(fd)
        except BlockingIOError:
            os.close(fd)
            raise OutputLockedError(
                f"{self.output} is being written by another process, through another name "
                "(a link to the same file); wait for it to finish or stop it, then rerun"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        return fd

    def release(self) -> None:
        if self._output_fd is not None:
            output_fd, self._output_fd = self._output_fd, None
            os.close(output_fd)
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.ftruncate(fd, 0)
            os.close(fd)  # closing the descriptor releases the lock

    def __enter__(self) -> OutputLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
