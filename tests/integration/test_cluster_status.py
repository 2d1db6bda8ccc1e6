"""`trawl cluster status` (issue 7) against a real Redis and a real S3 server (SeaweedFS).

The state is written with the cluster modules themselves (heartbeats, leases, link batches,
checkpoint objects), then read back by the command in a subprocess, as an operator runs it.
Each test uses its own cluster name and bucket, so tests share the servers.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest
from tests.servers.redis import free_port

from trawl.cluster import checkpoint_keys
from trawl.cluster.partitions import assign
from trawl.cluster.redis_coord import ClusterKeys, connect, ensure_layout
from trawl.cluster.redis_leases import RedisLeases
from trawl.cluster.redis_links import RedisLinks, RoutedLink
from trawl.cluster.redis_members import RedisMembers
from trawl.cluster.status import ClusterStatus, MemberStatus, PartitionStatus, ranges, render
from trawl.store.blobs_s3 import S3BlobStore

if TYPE_CHECKING:
    from pathlib import Path

    from tests.servers.redis import RedisServer
    from tests.servers.s3 import S3Server

PARTITIONS = 16
LEASED = range(12)  # 12 and up have no lease
MEMBERS = ["node-a", "node-b"]


@dataclass(frozen=True, slots=True)
class Cluster:
    """A populated cluster: its file, and what the status must report."""

    path: Path
    name: str
    tokens: dict[int, int]  # partition → fencing token of its lease
    checkpoints: dict[int, str]  # partition → the key that must be reported as latest
    written_at: float


def write_file(path: Path, name: str, redis_url: str, s3: S3Server, bucket: str) -> Path:
    path.write_text(
        "[cluster]\n"
        f'name = "{name}"\nredis_url = "{redis_url}"\n'
        'postgres_dsn = "postgresql://trawl@127.0.0.1:1/unused"\n'
        f's3_endpoint = "{s3.endpoint}"\ns3_bucket = "{bucket}"\n'
        f"partitions = {PARTITIONS}\n"
        f'aws_access_key_id = "{s3.access_key_id}"\n'
        f'aws_secret_access_key = "{s3.secret_access_key}"\n'
    )
    return path


async def populate(redis_url: str, name: str) -> dict[int, int]:
    """Two live members and one gone, leases on 0..11 as assigned, links on 3 and 5."""
    client = await connect(redis_url, timeout_s=2.0)
    keys = ClusterKeys(name)
    try:
        await ensure_layout(client, keys, PARTITIONS)
        members = RedisMembers(client, keys)
        await members.heartbeat("node-gone", {"host": "c"}, ttl_s=0.05)
        for member in MEMBERS:
            await members.heartbeat(member, {"host": member[-1]}, ttl_s=60.0)
        owners = assign(PARTITIONS, MEMBERS)
        leases = RedisLeases(client, keys)
        tokens = {p: await leases.acquire(p, owners[p], ttl_s=60.0) for p in LEASED}
        links = RedisLinks(client, keys)
        batch = [RoutedLink("http://a.test/", "0" * 32, "a.test", 1, 0.5)]
        await links.send_many([(3, batch), (3, batch), (5, batch)])
        await asyncio.sleep(0.1)  # node-gone's registration expires
    finally:
        await client.aclose()
    return {p: t for p, t in tokens.items() if t is not None}


def put_checkpoints(store: S3BlobStore, tokens: dict[int, int], now: float) -> dict[int, str]:
    """Checkpoints of partitions 3 and 5, a stale owner's late write and a foreign object."""
    newest = checkpoint_keys.key_for(3, tokens[3], now - 100)
    stale_late = checkpoint_keys.key_for(3, tokens[3] - 1, now - 10)  # lower fence: loses
    other = checkpoint_keys.key_for(5, tokens[5], now - 30)
    for key in (newest, stale_late, other, "checkpoints/README"):
        store.put(key, b"checkpoint")
    return {3: newest, 5: other}


@pytest.fixture
def cluster(redis_single: RedisServer, s3_server: S3Server, tmp_path: Path) -> Cluster:
    name, bucket = f"t{uuid.uuid4().hex[:10]}", f"trawl-{uuid.uuid4().hex[:12]}"
    tokens = asyncio.run(populate(redis_single.url, name))
    now = time.time()
    with S3BlobStore(s3_server.bucket_named(bucket)) as store:
        checkpoints = put_checkpoints(store, tokens, now)
    path = write_file(tmp_path / "cluster.toml", name, redis_single.url, s3_server, bucket)
    return Cluster(path, name, tokens, checkpoints, now)


def trawl(*args: str) -> subprocess.CompletedProcess[str]:
    # No AWS_* variables: they would win over the file's key pair.
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    command = [sys.executable, "-m", "trawl", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)


def test_json_reports_members_leases_streams_and_checkpoints(cluster: Cluster) -> None:
    done = trawl("cluster", "status", "--cluster", str(cluster.path), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["cluster"], report["partitions"], report["layout_partitions"]) == (
        cluster.name,
        PARTITIONS,
        PARTITIONS,
    )
    members = {m["member_id"]: m for m in report["members"]}
    assert sorted(members) == ["node-a", "node-b", "node-gone"]
    assert [members[m]["is_live"] for m in sorted(members)] == [True, True, False]
    assert members["node-a"]["info"] == {"host": "a"}
    assert 50 < members["node-a"]["expires_in_s"] <= 60
    assert sum(members[m]["partitions_held"] for m in MEMBERS) == len(LEASED)
    parts = report["by_partition"]
    assert [p["partition"] for p in parts] == list(range(PARTITIONS))
    owners = assign(PARTITIONS, MEMBERS)
    assert [p["owner"] for p in parts] == [*owners[: len(LEASED)], None, None, None, None]
    assert [p["assigned_to"] for p in parts] == owners  # only live members are assigned
    assert {p["partition"]: p["fence"] for p in parts if p["fence"]} == cluster.tokens
    assert all(0 <= p["lease_age_s"] < 30 for p in parts[: len(LEASED)])
    assert {p["partition"]: p["stream_length"] for p in parts if p["stream_length"]} == {3: 2, 5: 1}
    assert {p["partition"]: p["checkpoint_key"] for p in parts if p["checkpoint_key"]} == (
        cluster.checkpoints
    )
    assert 99 < parts[3]["checkpoint_age_s"] < 130
    assert parts[3]["checkpoint_fence"] == cluster.tokens[3]


def test_the_human_view_mentions_every_member(cluster: Cluster) -> None:
    done = trawl("cluster", "status", "--cluster", str(cluster.path))
    assert done.returncode == 0, done.stderr
    for member in ["node-a", "node-b", "node-gone"]:
        assert member in done.stdout
    assert "unleased partitions (4): 12-15" in done.stdout
    assert "partitions without a checkpoint (14): 0-2, 4, 6-15" in done.stdout


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2
    assert done.stderr.startswith("trawl: error: ")
    assert done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr
    return done.stderr


def test_an_unreachable_redis_is_one_line_and_exit_2(s3_server: S3Server, tmp_path: Path) -> None:
    url = f"redis://:hunter2@127.0.0.1:{free_port(cluster=False)}/0"
    path = write_file(tmp_path / "c.toml", "t-down", url, s3_server, "trawl-down")
    err = one_line_error(trawl("cluster", "status", "--cluster", str(path)))
    assert "cannot read the cluster state: redis" in err
    assert "hunter2" not in err


def test_an_unreachable_s3_is_one_line_and_exit_2(
    redis_single: RedisServer,
    s3_server: S3Server,
    tmp_path: Path,
) -> None:
    down = s3_server._replace(endpoint=f"http://127.0.0.1:{free_port(cluster=False)}")
    path = write_file(tmp_path / "c.toml", "t-s3-down", redis_single.url, down, "trawl-down")
    err = one_line_error(trawl("cluster", "status", "--cluster", str(path)))
    assert "s3 http://127.0.0.1" in err


# -- the human view of a big cluster (pure: built by hand) -------------------------------------
def big_status(partitions: int = 1024) -> ClusterStatus:
    members = tuple(MemberStatus(f"node-{i}", True, 9.0, 0, {"host": f"h{i}"}) for i in range(8))
    parts = tuple(
        PartitionStatus(
            p, f"node-{p % 8}", None if p % 100 < 3 else f"node-{p % 8}", p, 1.0, 1.0, 9.0,
            p % 37, float(p % 37), *((None, None, None) if p % 5 == 0 else (f"k{p}", p, p / 2)),
        )
        for p in range(partitions)
    )  # fmt: skip
    return ClusterStatus("big", partitions, partitions, "redis://r", "s3", 0.0, members, parts)


def test_the_human_view_of_1024_partitions_stays_short() -> None:
    import io

    out = io.StringIO()
    render(big_status(), out)
    lines = out.getvalue().splitlines()
    assert len(lines) < 60
    assert all(len(line) < 200 for line in lines), max(lines, key=len)
    assert any(line.startswith("unleased partitions (33): 0-2, 100-102, ") for line in lines)


def test_ranges() -> None:
    assert ranges([7, 0, 1, 2, 3, 9, 10]) == "0-3, 7, 9-10"
    assert ranges([]) == "none"
    assert ranges(range(0, 100, 2), limit=3) == "0, 2, 4 and 47 more"


def test_issue_19_a_member_failing_on_a_store_is_shown_and_measured() -> None:
    import dataclasses
    import io

    from trawl.cluster.status_metrics import status_metrics
    from trawl.cluster.store_outages import Store, StoreOutages

    outages = StoreOutages()
    outages.note_failure(Store.POSTGRES, 1000.0, "connection refused")
    outages.note_backlog(7, 4096)
    failing = MemberStatus("node-1", True, 9.0, 0, {"host": "h1", **outages.member_info()})
    status = dataclasses.replace(
        big_status(8), generated_at=1012.0, members=(failing,), checkpoints_error="s3 down"
    )
    out = io.StringIO()
    render(status, out)
    text = out.getvalue()
    assert "WARNING: node-1: postgres failing for 12 s; holding 7 commit cuts" in text
    assert "fetches paused" in text
    assert "WARNING: checkpoints unknown: s3 down" in text
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in status_metrics(status)
        for s in family.samples
    }
    member = (("member", "node-1"),)
    assert (
        samples[("trawl_cluster_store_failing_since_seconds", (*member, ("store", "postgres")))]
        == 1000.0
    )
    assert samples[("trawl_cluster_backlog_cuts", member)] == 7
    assert samples[("trawl_cluster_fetches_paused", member)] == 1
    assert not any(name == "trawl_cluster_checkpoint_age_seconds_max" for name, _ in samples)
