"""tests/servers/redis.py: the ports picked for one cluster's nodes never overlap, and a node
whose port was taken before it could bind is started again elsewhere (real redis-server)."""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

from tests.servers import redis
from tests.servers.redis import CLUSTER_BUS_OFFSET, ask, free_port, free_ports

if TYPE_CHECKING:
    from pathlib import Path

    import pytest


def test_a_clusters_ports_and_bus_ports_are_all_distinct() -> None:
    for _ in range(20):
        ports = free_ports(6, cluster=True)
        every = ports + [port + CLUSTER_BUS_OFFSET for port in ports]
        assert len(set(every)) == len(every), ports


def test_a_port_never_comes_from_the_taken_set() -> None:
    taken = frozenset(free_ports(3, cluster=True))
    for _ in range(50):
        assert free_port(cluster=True, taken=taken) not in taken


def test_a_node_whose_port_is_taken_starts_on_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        monkeypatch.setattr(redis, "free_ports", lambda count, cluster: [taken])
        ports, processes = redis._start_nodes(tmp_path, 1, cluster=False)
        try:
            assert ports[0] != taken
            assert "PONG" in ask(ports[0], "PING")
            assert "Address already in use" in (tmp_path / f"redis-{taken}.log").read_text()
        finally:
            redis._stop(processes)
