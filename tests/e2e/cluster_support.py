"""Shared by the cluster e2e tests: real Redis, PostgreSQL and S3 servers, the local test
web, and `trawl node` processes crawling it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import tomllib
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import psycopg
from tests.e2e.support import CONTACT

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from tests.servers.redis import RedisServer
    from tests.servers.s3 import S3Server

    from trawl.testweb.process import TestWebProcess

# Fast failover for tests: leases of 3 s, fetches of at most 1.5 s.
NODE_CONFIG = """
[fetch]
total_timeout_s = 1.5

[node]
member_ttl_s = 1.5
lease_ttl_s = 3.0
margin_s = 1.8
renew_after_s = 0.5
retry_s = 0.2
request_timeout_s = 0.4
checkpoint_interval_s = 2.0
"""


@dataclass
class Cluster:
    """A cluster file on real servers, the test web, and the node processes started."""

    tmp: Path
    web: TestWebProcess
    file: Path
    config: Path
    dsn: str
    env: dict[str, str]
    nodes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The cluster's name, as its file gives it (its Redis keys and S3 bucket carry it)."""
        return str(tomllib.loads(self.file.read_text())["cluster"]["name"])

    def start_node(
        self, node_id: str, *seeds: str, extra: tuple[str, ...] = (), new_session: bool = False
    ) -> subprocess.Popen[bytes]:
        """`new_session`: the node leads a process group of its own (its workers in it)."""
        command = [
            sys.executable, "-m", "trawl", "node", *seeds, "--cluster", str(self.file),
            "--node-id", node_id, "--work", str(self.tmp / f"work-{node_id}"),
            "--hosts-file", str(self.web.hosts_file), "--contact", CONTACT,
            "--config", str(self.config), *extra,
        ]  # fmt: skip
        with (self.tmp / f"{node_id}.log").open("ab") as log:  # the child keeps its own copy
            proc = subprocess.Popen(
                command, stdout=log, stderr=log, env=self.env, start_new_session=new_session
            )
        self.nodes[node_id] = proc
        return proc

    def log_of(self, node_id: str) -> str:
        return (self.tmp / f"{node_id}.log").read_text(errors="replace")

    def stop_all(self, timeout_s: float = 60) -> dict[str, int | None]:
        for proc in self.nodes.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        codes = {}
        for node_id, proc in self.nodes.items():
            try:
                codes[node_id] = proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                codes[node_id] = None
        return codes

    def query(self, sql: str) -> list[tuple[object, ...]]:
        with psycopg.connect(self.dsn) as conn:
            return conn.execute(sql).fetchall()

    def stored_pages(self) -> int:
        try:
            return int(str(self.query("SELECT count(*) FROM pages")[0][0]))
        except psycopg.errors.UndefinedTable:  # no node has connected yet
            return 0

    def wait_for(
        self, what: str, check: Callable[[], bool], timeout_s: float,
        detail: Callable[[], str] | None = None,
    ) -> None:  # fmt: skip
        """Until `check()`; on a timeout the error says what `detail()` tells and where
        each node's progress stood (so a failed CI run shows what was missing where)."""
        deadline = time.monotonic() + timeout_s
        while not check():
            for node_id, proc in self.nodes.items():
                code = proc.poll()
                if code is not None and code != -signal.SIGKILL:
                    tail = self.log_of(node_id)[-3000:]
                    raise AssertionError(f"{node_id} exited {code}:\n{tail}")
            if time.monotonic() > deadline:
                lines = [detail()] if detail is not None else []
                lines += [f"{n}: {self.last_progress(n)}" for n in self.nodes]
                raise AssertionError(f"timed out waiting for {what}\n" + "\n".join(lines))
            time.sleep(0.25)

    def last_progress(self, node_id: str) -> str:
        """The node's last progress line ("pages … queued … sites …"), if any."""
        lines = [line for line in self.log_of(node_id).splitlines() if "  pages " in line]
        return lines[-1].strip() if lines else "(no progress line)"


@contextlib.contextmanager
def running_cluster(
    tmp: Path, web: TestWebProcess, redis: RedisServer, s3: S3Server, dsn: str,
    partitions: int = 64, node_config: str = NODE_CONFIG,
) -> Iterator[Cluster]:  # fmt: skip
    name = f"t{uuid.uuid4().hex[:8]}"
    cluster_file = tmp / "cluster.toml"
    cluster_file.write_text(
        "[cluster]\n"
        f'name = "{name}"\n'
        f'redis_url = "{redis.url}"\n'
        f'postgres_dsn = "{dsn}"\n'
        f's3_endpoint = "{s3.endpoint}"\n'
        f's3_bucket = "{name}"\n'
        f"partitions = {partitions}\n"
    )
    config = tmp / "node.toml"
    config.write_text(node_config)
    env = dict(os.environ)
    env["AWS_ACCESS_KEY_ID"] = s3.access_key_id
    env["AWS_SECRET_ACCESS_KEY"] = s3.secret_access_key
    cluster = Cluster(tmp, web, cluster_file, config, dsn, env)
    try:
        yield cluster
    finally:
        for proc in cluster.nodes.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
