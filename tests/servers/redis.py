"""Real redis-server processes on loopback: a single node and a 3-node Redis Cluster.

Each is started at most once per test session, in its own temporary directory, on free
127.0.0.1 ports, without persistence, and stopped at the end of the session. Nothing here
touches a system Redis service (Debian's package may run one on 6379). `.ci/run` installs
redis-server and redis-cli; `bench/link_routing.py` starts its node with `running_redis`.

tests/conftest.py registers this module as a plugin, so one instance of each serves the whole
session: take `redis_server` (runs the test on both), `redis_single` or `redis_cluster` as an
argument.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from trawl.cluster.redis_coord import ClusterKeys, connect

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator

    from trawl.cluster.redis_coord import RedisClient

HOST = "127.0.0.1"
START_TIMEOUT_S = 15.0
CLUSTER_BUS_OFFSET = 10_000  # a cluster node also listens on port + 10000


@dataclass(frozen=True, slots=True)
class RedisServer:
    """A running Redis: `url` names one node (any node, for a cluster)."""

    url: str
    is_cluster: bool
    ports: tuple[int, ...]


def _port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
        return True


def free_port(cluster: bool) -> int:
    """A free loopback port; for a cluster node, one whose bus port is free too."""
    while True:
        with socket.socket() as sock:
            sock.bind((HOST, 0))
            port = int(sock.getsockname()[1])
        if not cluster:
            return port
        if port + CLUSTER_BUS_OFFSET < 65536 and _port_is_free(port + CLUSTER_BUS_OFFSET):
            return port


def _command(*args: str) -> bytes:
    """One command in RESP, so readiness checks need neither redis-cli nor redis-py."""
    parts = [f"*{len(args)}\r\n".encode()]
    for arg in args:
        parts.append(f"${len(arg.encode())}\r\n{arg}\r\n".encode())
    return b"".join(parts)


def ask(port: int, *args: str) -> str:
    """Send one command and return the raw reply (good enough for PING and CLUSTER INFO)."""
    with socket.create_connection((HOST, port), timeout=2.0) as sock:
        sock.sendall(_command(*args))
        return sock.recv(65536).decode(errors="replace")


def _wait_until(check: str, port: int, *args: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        with contextlib.suppress(OSError):
            if check in ask(port, *args):
                return
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"redis on {HOST}:{port}: no {check!r} after {START_TIMEOUT_S} s"
                f" (see redis-{port}.log in its directory)"
            )
        time.sleep(0.05)


def _start_node(workdir: Path, port: int, cluster: bool) -> subprocess.Popen[bytes]:
    server = shutil.which("redis-server")
    if server is None:
        pytest.fail("redis-server not found: .ci/run installs it (apt-get install redis-server)")
    args = [server, "--port", str(port), "--bind", HOST, "--save", "", "--appendonly", "no"]
    args += ["--daemonize", "no", "--dir", str(workdir), "--logfile", f"redis-{port}.log"]
    if cluster:
        args += ["--cluster-enabled", "yes", "--cluster-config-file", f"nodes-{port}.conf"]
        args += ["--cluster-node-timeout", "5000"]
    quiet = subprocess.DEVNULL  # it logs to its --logfile
    return subprocess.Popen(args, cwd=workdir, stdout=quiet, stderr=quiet)


def _create_cluster(ports: list[int]) -> None:
    cli = shutil.which("redis-cli")
    if cli is None:
        pytest.fail("redis-cli not found: .ci/run installs it (apt-get install redis-server)")
    nodes = [f"{HOST}:{port}" for port in ports]
    args = [cli, "--cluster", "create", *nodes, "--cluster-replicas", "0", "--cluster-yes"]
    subprocess.run(args, check=True, capture_output=True, timeout=60)
    for port in ports:
        _wait_until("cluster_state:ok", port, "CLUSTER", "INFO")


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def running_redis(workdir: Path, cluster: bool) -> Iterator[RedisServer]:
    """Start one node, or three clustered nodes, under `workdir`; stop them on exit."""
    ports = [free_port(cluster) for _ in range(3 if cluster else 1)]
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for port in ports:
            processes.append(_start_node(workdir, port, cluster))
        for port in ports:
            _wait_until("PONG", port, "PING")
        if cluster:
            _create_cluster(ports)
        yield RedisServer(f"redis://{HOST}:{ports[0]}/0", cluster, tuple(ports))
    finally:
        _stop(processes)


@contextlib.contextmanager
def temporary_redis(cluster: bool) -> Iterator[RedisServer]:
    """`running_redis` in a fresh temporary directory (for scripts outside pytest)."""
    with (
        tempfile.TemporaryDirectory(prefix="trawl-redis-") as workdir,
        running_redis(Path(workdir), cluster) as server,
    ):
        yield server


@pytest.fixture(scope="session", name="redis_single")
def redis_single_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with running_redis(tmp_path_factory.mktemp("redis-single"), cluster=False) as server:
        yield server


@pytest.fixture(scope="session", name="redis_cluster")
def redis_cluster_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with running_redis(tmp_path_factory.mktemp("redis-cluster"), cluster=True) as server:
        yield server


@pytest.fixture(scope="session", name="redis_server", params=["single", "cluster"])
def redis_server_fixture(request: pytest.FixtureRequest) -> RedisServer:
    """Each test that takes it runs twice: on the single node and on the 3-node cluster."""
    server: RedisServer = request.getfixturevalue(f"redis_{request.param}")
    return server


def run_with_client(
    server: RedisServer, body: Callable[[RedisClient, ClusterKeys], Awaitable[None]]
) -> None:
    """Run `body` with a client of `server` and key names of a fresh cluster name, so tests
    share the servers without seeing each other's keys."""

    async def main() -> None:
        client = await connect(server.url, timeout_s=2.0)
        try:
            await body(client, ClusterKeys(f"t{uuid.uuid4().hex[:10]}"))
        finally:
            await client.aclose()

    asyncio.run(main())
