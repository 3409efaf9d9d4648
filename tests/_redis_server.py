"""A throwaway redis-server on a free loopback port, without persistence, for tests and
benchmarks."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

__all__ = [
    "RedisClusterServers", "RedisServer", "find_redis_server", "free_port", "require_redis_server",
]


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


def _free_cluster_port() -> int:
    """A port free together with its cluster bus port (port + 10000)."""
    for _ in range(100):
        port = free_port()
        if port + 10000 > 65535:
            continue
        with socket.socket() as bus:
            try:
                bus.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port pair for a cluster node")


def _cli(port: int, *args: str) -> str:
    return subprocess.run(
        ["redis-cli", "-p", str(port), *args], capture_output=True, text=True, timeout=30,
        check=True,
    ).stdout


class RedisClusterServers:
    """``with RedisClusterServers() as cluster: cluster.url`` runs a Redis Cluster of three
    masters (no replicas, no persistence) on 127.0.0.1 until the end of the block."""

    def __init__(self, binary: str | None = None, masters: int = 3) -> None:
        found = binary or find_redis_server()
        if found is None:
            raise FileNotFoundError("redis-server is not on PATH")
        self.binary = found
        self.masters = masters
        self.ports: list[int] = []
        self._processes: list[subprocess.Popen[bytes]] = []
        self._folder: tempfile.TemporaryDirectory[str] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    def start(self, timeout: float = 30.0) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="redis-cluster-")
        try:
            for _ in range(self.masters):
                port = _free_cluster_port()
                node_dir = Path(self._folder.name) / str(port)
                node_dir.mkdir()
                self._processes.append(subprocess.Popen(
                    [self.binary, "--port", str(port), "--bind", "127.0.0.1",
                     "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                     "--save", "", "--appendonly", "no", "--dir", str(node_dir)],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                ))
                self.ports.append(port)
            deadline = time.monotonic() + timeout
            for port, process in zip(self.ports, self._processes, strict=True):
                while not _is_ours(port, process.pid):
                    if process.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError("a cluster node did not start")
                    time.sleep(0.05)
            subprocess.run(
                ["redis-cli", "--cluster", "create", *(f"127.0.0.1:{p}" for p in self.ports),
                 "--cluster-replicas", "0", "--cluster-yes"],
                capture_output=True, timeout=timeout, check=True,
            )
            while not all("cluster_state:ok" in _cli(p, "CLUSTER", "INFO") for p in self.ports):
                if time.monotonic() > deadline:
                    raise RuntimeError("the cluster did not come up")
                time.sleep(0.1)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop every node and remove their folders."""
        processes, self._processes = self._processes, []
        for process in processes:
            if process.poll() is None:
                process.terminate()
        for process in processes:
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None

    def __enter__(self) -> RedisClusterServers:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
