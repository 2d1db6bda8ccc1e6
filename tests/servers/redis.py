"""Real redis-server processes on loopback: a single node, a 3-node Redis Cluster, and a
6-node one (3 primaries with a replica each) whose primaries a test may kill.

Each is started at most once per test session, in its own temporary directory, on free
127.0.0.1 ports, without persistence, and stopped at the end of the session. Nothing here
touches a system Redis service (Debian's package may run one on 6379). `.ci/run` installs
redis-server and redis-cli; `bench/link_routing.py` starts its node with `running_redis`.

tests/conftest.py registers this module as a plugin, so one instance of each serves the whole
session: take `redis_server` (runs the test on both), `redis_single` or `redis_cluster` as an
argument. `redis_replicated` is started for each test that takes it, since tests kill its nodes.
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


def free_port(cluster: bool, taken: frozenset[int] = frozenset()) -> int:
    """A free loopback port; for a cluster node, one whose bus port is free too. Neither
    is in `taken`: the ports and bus ports of the nodes picked before it."""
    while True:
        with socket.socket() as sock:
            sock.bind((HOST, 0))
            port = int(sock.getsockname()[1])
        if port in taken:
            continue
        if not cluster:
            return port
        bus = port + CLUSTER_BUS_OFFSET
        if bus < 65536 and bus not in taken and _port_is_free(bus):
            return port


def _with_buses(ports: list[int]) -> frozenset[int]:
    """The ports and the cluster bus ports of nodes on `ports`: none free for another."""
    return frozenset(p + d for p in ports for d in (0, CLUSTER_BUS_OFFSET))


def free_ports(count: int, cluster: bool) -> list[int]:
    """`count` free ports for the nodes of one server, none of them another's bus port:
    a node picked a port that an earlier one needed as its bus port, and that one exited
    with "bind: Address already in use" (a CI run's 6-node cluster, 2026-12-05)."""
    ports: list[int] = []
    for _ in range(count):
        ports.append(free_port(cluster, _with_buses(ports)))
    return ports


def _start_nodes(
    workdir: Path, count: int, cluster: bool, node_timeout_ms: int = 5000
) -> tuple[list[int], list[subprocess.Popen[bytes]]]:
    """Start `count` nodes and wait for each to answer PING. A port picked free can still be
    taken before redis binds it (by another test's server or client): a node that exits so
    is started again on other ports, up to 5 times."""
    ports = free_ports(count, cluster)
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for i in range(count):
            for attempt in range(5):
                process = _start_node(workdir, ports[i], cluster, node_timeout_ms)
                try:
                    _wait_until("PONG", ports[i], "PING", process=process)
                    break
                except RuntimeError:
                    if process.poll() is None or attempt == 4:
                        _stop([process])
                        raise
                ports[i] = free_port(cluster, _with_buses(ports))
            processes.append(process)
    except BaseException:
        _stop(processes)
        raise
    return ports, processes


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


def _wait_until(
    check: str, port: int, *args: str, process: subprocess.Popen[bytes] | None = None
) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        with contextlib.suppress(OSError):
            if check in ask(port, *args):
                return
        if process is not None and process.poll() is not None:
            raise RuntimeError(
                f"redis on {HOST}:{port} exited {process.returncode}"
                f" (see redis-{port}.log in its directory)"
            )
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"redis on {HOST}:{port}: no {check!r} after {START_TIMEOUT_S} s"
                f" (see redis-{port}.log in its directory)"
            )
        time.sleep(0.05)


def _start_node(
    workdir: Path, port: int, cluster: bool, node_timeout_ms: int = 5000
) -> subprocess.Popen[bytes]:
    server = shutil.which("redis-server")
    if server is None:
        pytest.fail("redis-server not found: .ci/run installs it (apt-get install redis-server)")
    args = [server, "--port", str(port), "--bind", HOST, "--save", "", "--appendonly", "no"]
    args += ["--daemonize", "no", "--dir", str(workdir), "--logfile", f"redis-{port}.log"]
    if cluster:
        args += ["--cluster-enabled", "yes", "--cluster-config-file", f"nodes-{port}.conf"]
        args += ["--cluster-node-timeout", str(node_timeout_ms)]
        args += ["--repl-diskless-sync-delay", "0"]  # a replica syncs at once, not after 5 s
    quiet = subprocess.DEVNULL  # it logs to its --logfile
    return subprocess.Popen(args, cwd=workdir, stdout=quiet, stderr=quiet)


def _create_cluster(ports: list[int], replicas: int = 0) -> None:
    cli = shutil.which("redis-cli")
    if cli is None:
        pytest.fail("redis-cli not found: .ci/run installs it (apt-get install redis-server)")
    nodes = [f"{HOST}:{port}" for port in ports]
    args = [cli, "--cluster", "create", *nodes, "--cluster-replicas", str(replicas)]
    args += ["--cluster-yes"]
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
    ports, processes = _start_nodes(workdir, 3 if cluster else 1, cluster)
    try:
        if cluster:
            _create_cluster(ports)
        yield RedisServer(f"redis://{HOST}:{ports[0]}/0", cluster, tuple(ports))
    finally:
        _stop(processes)


class ReplicatedCluster:
    """A Redis Cluster of 3 primaries with one replica each, for one test: `kill_primary`
    kills one with SIGKILL and `wait_promoted` waits until its replica serves its slots."""

    NODE_TIMEOUT_MS = 1000  # a dead primary is failed over about 1-3 s after its death

    def __init__(self, ports: list[int], processes: list[subprocess.Popen[bytes]]) -> None:
        self.ports = ports
        self.processes = dict(zip(ports, processes, strict=True))
        self.server = RedisServer(f"redis://{HOST}:{ports[0]}/0", True, tuple(ports))
        self.killed: list[int] = []

    def __repr__(self) -> str:
        return f"<ReplicatedCluster ports={self.ports} killed={self.killed}>"

    def live_ports(self) -> list[int]:
        return [port for port in self.ports if port not in self.killed]

    def nodes(self) -> list[list[str]]:
        """CLUSTER NODES rows as a live node sees them (id, addr, flags, master, ...)."""
        reply = ask(self.live_ports()[0], "CLUSTER", "NODES")
        return [line.split() for line in reply.splitlines() if "@" in line]

    def primary_ports(self) -> list[int]:
        rows = self.nodes()
        return sorted(_row_port(r) for r in rows if "master" in r[2] and "fail" not in r[2])

    def primary_of(self, key: str) -> int:
        """The port of the primary serving `key` now."""
        slot = int(ask(self.live_ports()[0], "CLUSTER", "KEYSLOT", key).strip().lstrip(":"))
        for row in self.nodes():
            if "master" not in row[2] or "fail" in row[2]:
                continue
            for span in row[8:]:
                low, _, high = span.partition("-")
                if low.isdigit() and int(low) <= slot <= int(high or low):
                    return _row_port(row)
        raise RuntimeError(f"no primary serves slot {slot} of {key!r}")

    def wait_replicated(self) -> None:
        """Wait until each primary has its replica connected and in sync, by each node's own
        account: another node's CLUSTER NODES can still show a new replica as a primary
        (gossip), and waiting for that one to gain a replica of its own timed out."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            with contextlib.suppress(OSError):
                roles = [ask(port, "INFO", "replication") for port in self.live_ports()]
                primaries = sum("role:master" in r and "connected_slaves:1" in r for r in roles)
                replicas = sum("role:slave" in r and "master_link_status:up" in r for r in roles)
                if primaries == replicas == len(roles) // 2:
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self!r}: not 3 primaries with a replica each in time")
            time.sleep(0.05)

    def kill_primary(self, port: int) -> None:
        """SIGKILL the primary on `port`: no shutdown, no last replication."""
        process = self.processes[port]
        process.kill()
        process.wait()
        self.killed.append(port)

    def wait_promoted(self, timeout_s: float = 20.0) -> float:
        """Wait until the live nodes flag every killed primary as failed, a replica serves
        its slots and every live node says the cluster is ok; returns the seconds waited."""
        started = time.monotonic()
        while time.monotonic() - started < timeout_s:
            with contextlib.suppress(OSError, IndexError, ValueError):
                if self._is_promoted():
                    return time.monotonic() - started
            time.sleep(0.05)
        raise RuntimeError(f"{self!r}: no promoted replica after {timeout_s} s")

    def _is_promoted(self) -> bool:
        rows = {_row_port(row): row for row in self.nodes()}
        if any("fail" not in rows[port][2].split(",") for port in self.killed):
            return False  # not flagged yet ("fail?" is only suspected)
        states = [ask(port, "CLUSTER", "INFO") for port in self.live_ports()]
        return all("cluster_state:ok" in state for state in states) and (
            len(self.primary_ports()) == 3
        )


def _row_port(row: list[str]) -> int:
    return int(row[1].split("@")[0].rsplit(":", 1)[1])


@contextlib.contextmanager
def running_replicated_cluster(workdir: Path) -> Iterator[ReplicatedCluster]:
    """Start 6 clustered nodes (3 primaries, 3 replicas, a short node timeout) under
    `workdir`; stop the ones still running on exit."""
    ports, processes = _start_nodes(
        workdir, 6, cluster=True, node_timeout_ms=ReplicatedCluster.NODE_TIMEOUT_MS
    )
    try:
        _create_cluster(ports, replicas=1)
        cluster = ReplicatedCluster(ports, processes)
        cluster.wait_replicated()
        yield cluster
    finally:
        _stop(processes)


@pytest.fixture(name="redis_replicated")
def redis_replicated_fixture(tmp_path: Path) -> Iterator[ReplicatedCluster]:
    """A private 6-node Redis Cluster per test: tests kill its primaries."""
    workdir = tmp_path / "redis-replicated"
    workdir.mkdir()
    with running_replicated_cluster(workdir) as cluster:
        yield cluster


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
    server: RedisServer,
    body: Callable[[RedisClient, ClusterKeys], Awaitable[None]],
    timeout_s: float = 2.0,
) -> None:
    """Run `body` with a client of `server` (`timeout_s` per reply) and key names of a fresh
    cluster name, so tests share the servers without seeing each other's keys."""

    async def main() -> None:
        client = await connect(server.url, timeout_s=timeout_s)
        try:
            await body(client, ClusterKeys(f"t{uuid.uuid4().hex[:10]}"))
        finally:
            await client.aclose()

    asyncio.run(main())
