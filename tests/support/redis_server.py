"""A throwaway redis-server on a free loopback port, without persistence, for tests and
benchmarks; and a Redis Cluster of such servers."""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import tempfile
import time
from typing import Self

__all__ = [
    "RedisClusterServers", "RedisServer", "find_redis_server", "free_port", "fresh_namespace",
    "require_redis_server",
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


_namespaces = itertools.count()


def fresh_namespace(prefix: str = "t") -> str:
    """A limiter namespace no other test uses, so budgets never carry over."""
    return f"{prefix}{os.getpid()}n{next(_namespaces)}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


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


class _Running:
    """``with server:`` starts it and stops it at the end of the block."""

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class RedisServer(_Running):
    """``with RedisServer() as server: server.url`` runs redis-server on 127.0.0.1 until the end
    of the block; with ``cluster=True`` it is a node for :class:`RedisClusterServers`."""

    def __init__(self, binary: str | None = None, *, cluster: bool = False) -> None:
        found = binary or find_redis_server()
        if found is None:
            raise FileNotFoundError("redis-server is not on PATH")
        self.binary = found
        self.cluster = cluster
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
            self.port = _free_cluster_port() if self.cluster else free_port()
            if self._launch(timeout):
                return
        self.stop()
        raise RuntimeError("redis-server did not start")

    def restart_empty(self, timeout: float = 10.0) -> None:
        """Kill the server and start a fresh one on the same port: every key is lost, as in a
        restart without persistence."""
        assert self._process is not None
        self._process.kill()
        self._process.wait()
        if not self._launch(timeout):
            raise RuntimeError("redis-server did not start again")

    def _launch(self, timeout: float) -> bool:
        """Run redis-server on ``self.port``; whether it answers there within ``timeout``
        (if not, it is stopped)."""
        assert self._folder is not None
        node = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"]
        self._process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1",
             *(node if self.cluster else []),
             "--save", "", "--appendonly", "no", "--dir", self._folder.name],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while self._process.poll() is None and time.monotonic() < deadline:
            if _is_ours(self.port, self._process.pid):
                return True
            time.sleep(0.01)
        self._stop_process()
        return False

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


def _cli(port: int, *args: str) -> str:
    return subprocess.run(
        ["redis-cli", "-p", str(port), *args], capture_output=True, text=True, timeout=30,
        check=True,
    ).stdout


class RedisClusterServers(_Running):
    """``with RedisClusterServers() as cluster: cluster.url`` runs a Redis Cluster of three
    masters (no replicas, no persistence) on 127.0.0.1 until the end of the block."""

    def __init__(self, binary: str | None = None, masters: int = 3) -> None:
        self.nodes = [RedisServer(binary, cluster=True) for _ in range(masters)]

    @property
    def ports(self) -> list[int]:
        return [node.port for node in self.nodes]

    @property
    def url(self) -> str:
        return self.nodes[0].url

    def start(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        try:
            for node in self.nodes:
                node.start()
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
        for node in self.nodes:
            node.stop()
