"""A throwaway redis-server on a free loopback port, without persistence, for tests and
benchmarks."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from types import TracebackType

__all__ = ["RedisServer", "find_redis_server", "free_port", "require_redis_server"]


def find_redis_server() -> str | None:
    """The path of the ``redis-server`` binary, or None when it is not installed."""
    return shutil.which("redis-server")


def require_redis_server() -> str:
    """The ``redis-server`` binary; without one the test is skipped, or fails when ``CI`` is set
    (CI must run the Redis tests)."""
    import pytest

    binary = find_redis_server()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is not on PATH; CI must install it (apt-get install "
                        "redis-server)")
        pytest.skip("redis-server is not on PATH")
    return binary


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _is_ours(port: int, pid: int) -> bool:
    """Whether the Redis on ``port`` answers and is the process ``pid`` (not another one that
    took the port first)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"INFO server\r\n")
            answer = b""
            while b"process_id:" not in answer or not answer.endswith(b"\r\n"):
                chunk = sock.recv(65536)
                if not chunk:
                    return False
                answer += chunk
            return f"process_id:{pid}\r\n".encode() in answer
    except OSError:
        return False


class RedisServer:
    """``with RedisServer() as server: server.url`` runs redis-server on 127.0.0.1 until the end
    of the block."""

    def __init__(self, binary: str | None = None) -> None:
        found = binary or find_redis_server()
        if found is None:
            raise FileNotFoundError("redis-server is not on PATH")
        self.binary = found
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._folder: tempfile.TemporaryDirectory[str] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="redis-")
        # The port is free when chosen but another process may take it before redis-server
        # binds it: try a few.
        for _ in range(5):
            self.port = free_port()
            self._process = subprocess.Popen(
                [self.binary, "--port", str(self.port), "--bind", "127.0.0.1",
                 "--save", "", "--appendonly", "no", "--dir", self._folder.name],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            deadline = time.monotonic() + timeout
            while self._process.poll() is None and time.monotonic() < deadline:
                if _is_ours(self.port, self._process.pid):
                    return
                time.sleep(0.02)
            self._stop_process()
        self.stop()
        raise RuntimeError("redis-server did not start")

    def restart_empty(self, timeout: float = 10.0) -> None:
        """Kill the server and start a fresh one on the same port: every key is lost, as in a
        restart without persistence."""
        process, self._process = self._process, None
        assert process is not None and self._folder is not None
        process.kill()
        process.wait()
        self._process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", self._folder.name],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while self._process.poll() is None and time.monotonic() < deadline:
            if _is_ours(self.port, self._process.pid):
                return
            time.sleep(0.01)
        raise RuntimeError("redis-server did not start again")

    def stop(self) -> None:
        """Stop the server and remove its folder."""
        self._stop_process()
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None

    def _stop_process(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def __enter__(self) -> RedisServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
