"""`trawl cluster status`: members, partition owners, leases, stream lag and checkpoint ages.

How this works:
- Five round trips to Redis, however many partitions: the cluster probe of `connect`, the
  member list (one script), every partition's lease and every link stream (two pipelines,
  each one round trip per Redis Cluster node) and the recorded partition count; then one S3
  listing of `checkpoints/` (1,000 keys a page), whose greatest key per partition is its
  latest checkpoint.
  Nothing is written, so it is safe to run against a live cluster.
- Lease ages, member expiries and stream ages are the Redis server's own numbers (see
  redis_leases, redis_members, redis_links). Checkpoint ages compare the time in the key
  (the writer's clock) with this machine's clock, so they are as good as the two clocks' sync.
- A stream's length is its lag: entries stay until a checkpoint of the partition covers them.
- `cluster_status(settings)` returns everything as a JSON-ready dict (`--json`, and /metrics
  later); the human view summarises so that 1,024 partitions fit on a screen.
- A member's entry says which shared store it cannot reach since when, and the backlog it
  holds meanwhile (`failing`, `backlog_cuts`, `backlog_bytes`, `paused`: store_outages.py);
  the human view warns about each such member. For /metrics, an S3 listing that fails
  leaves the checkpoint columns unknown (`checkpoints_error`), not the whole status.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any, TextIO

from redis import exceptions as redis_errors

from trawl.cluster import checkpoint_keys
from trawl.cluster.cluster_file import load_cluster_file, redact
from trawl.cluster.partitions import assign
from trawl.cluster.redis_coord import (
    ClusterKeys,
    CoordinatorUnavailable,
    connect,
    unavailable_as_trawl_error,
)
from trawl.cluster.redis_leases import RedisLeases
from trawl.cluster.redis_links import RedisLinks
from trawl.cluster.redis_members import RedisMembers
from trawl.errors import DataError, UsageError
from trawl.store.blobs_s3 import S3BlobStore

if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterable, Mapping, Sequence

    from trawl.cluster.cluster_file import ClusterSettings
    from trawl.cluster.redis_coord import RedisClient
    from trawl.cluster.redis_leases import Holder
    from trawl.cluster.redis_links import StreamInfo
    from trawl.cluster.redis_members import Member
    from trawl.store.blobs_s3 import S3Bucket

TOP = 10  # rows of the "worst" tables in the human view


@dataclass(frozen=True, slots=True)
class MemberStatus:
    member_id: str
    is_live: bool
    expires_in_s: float  # negative: gone that long ago
    partitions_held: int
    info: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class PartitionStatus:
    partition: int
    assigned_to: str | None  # by rendezvous hashing over the live members
    owner: str | None  # the lease holder, None when no lease is held
    fence: int | None  # the lease's fencing token
    lease_age_s: float | None  # since acquired
    lease_renewed_age_s: float | None
    lease_remaining_s: float | None
    stream_length: int  # link batches no checkpoint covers yet: the partition's lag
    stream_oldest_age_s: float
    checkpoint_key: str | None
    checkpoint_fence: int | None
    checkpoint_age_s: float | None


@dataclass(frozen=True, slots=True)
class ClusterStatus:
    cluster: str
    partitions: int
    layout_partitions: int | None  # as recorded in Redis when the cluster was created
    redis: str  # the URL, password redacted
    s3: str
    generated_at: float
    members: tuple[MemberStatus, ...]
    by_partition: tuple[PartitionStatus, ...]
    checkpoints_error: str | None = None  # the S3 listing failed: checkpoint ages unknown


async def read_status(
    settings: ClusterSettings, *, now: float | None = None, s3_optional: bool = False
) -> ClusterStatus:
    """Read the cluster's state from Redis and S3 (`now`: epoch seconds for checkpoint ages).

    Raises CoordinatorUnavailable when Redis does not answer, DataError when S3 does not
    (with `s3_optional`, `checkpoints_error` says so instead: a node's /metrics must go on
    showing its members during an S3 outage), ConfigError when the S3 credentials are
    missing.
    """
    bucket = settings.bucket()  # credentials first: a config error before any connection
    client = await connect(settings.redis_url)
    try:
        reads = await _read_redis(client, settings)
    finally:
        await client.aclose()
    error = None
    try:
        latest = await asyncio.to_thread(_latest_checkpoints, bucket)
    except DataError as exc:
        if not s3_optional:
            raise
        latest, error = {}, str(exc)
    status = assemble(settings, reads, latest, now=time.time() if now is None else now)
    return replace(status, checkpoints_error=error) if error else status


async def cluster_status(settings: ClusterSettings, *, now: float | None = None) -> dict[str, Any]:
    """`read_status` as a JSON-ready dict (the `--json` output)."""
    status = await read_status(settings, now=now)
    return asdict(status)


@dataclass(frozen=True, slots=True)
class RedisReads:
    """What Redis said, partition lists in partition order."""

    members: Sequence[Member]
    holders: Sequence[Holder | None]
    streams: Sequence[StreamInfo]
    layout_partitions: int | None


async def _read_redis(client: RedisClient, settings: ClusterSettings) -> RedisReads:
    keys = ClusterKeys(settings.name)
    every = range(settings.partitions)
    members = await RedisMembers(client, keys).members()
    holders = await RedisLeases(client, keys).holders(every)
    streams = await RedisLinks(client, keys).streams(every)
    with unavailable_as_trawl_error("partition layout"):
        layout = await client.get(keys.layout())
    return RedisReads(members, holders, streams, None if layout is None else int(layout))


def _latest_checkpoints(bucket: S3Bucket) -> dict[int, checkpoint_keys.CheckpointKey]:
    # Few attempts and no bucket creation: a status read must neither wait long nor write.
    with S3BlobStore(bucket, max_attempts=2, create_bucket=False) as store:
        return checkpoint_keys.latest(store.iter_keys(checkpoint_keys.PREFIX))


def assemble(
    settings: ClusterSettings,
    reads: RedisReads,
    latest: Mapping[int, checkpoint_keys.CheckpointKey],
    *,
    now: float,
) -> ClusterStatus:
    """Join the reads into one status (pure: `now` is epoch seconds for checkpoint ages)."""
    live = [m.member_id for m in reads.members if m.is_live]
    assigned = assign(settings.partitions, live) if live else [None] * settings.partitions
    parts = tuple(
        _partition(p, assigned[p], holder, stream, latest.get(p), now)
        for p, (holder, stream) in enumerate(zip(reads.holders, reads.streams, strict=True))
    )
    held: dict[str, int] = {}
    for part in parts:
        if part.owner is not None:
            held[part.owner] = held.get(part.owner, 0) + 1
    members = tuple(
        MemberStatus(m.member_id, m.is_live, m.expires_in_s, held.get(m.member_id, 0), m.info)
        for m in reads.members
    )
    return ClusterStatus(
        cluster=settings.name,
        partitions=settings.partitions,
        layout_partitions=reads.layout_partitions,
        redis=redact(settings.redis_url),
        s3=f"{settings.s3_endpoint}/{settings.s3_bucket}",
        generated_at=now,
        members=members,
        by_partition=parts,
    )


def _partition(
    partition: int,
    assigned_to: str | None,
    holder: Holder | None,
    stream: StreamInfo,
    checkpoint: checkpoint_keys.CheckpointKey | None,
    now: float,
) -> PartitionStatus:
    return PartitionStatus(
        partition=partition,
        assigned_to=assigned_to,
        owner=holder.member if holder else None,
        fence=holder.token if holder else None,
        lease_age_s=holder.age_s if holder else None,
        lease_renewed_age_s=holder.renewed_age_s if holder else None,
        lease_remaining_s=holder.remaining_s if holder else None,
        stream_length=stream.length,
        stream_oldest_age_s=stream.oldest_age_s,
        checkpoint_key=checkpoint.key if checkpoint else None,
        checkpoint_fence=checkpoint.fence if checkpoint else None,
        checkpoint_age_s=round(now - checkpoint.at, 3) if checkpoint else None,
    )


def ranges(numbers: Iterable[int], limit: int = 24) -> str:
    """`0-3, 7, 9-10` for [0, 1, 2, 3, 7, 9, 10]; "none" when empty.

    At most `limit` spans are shown, then how many partitions the rest hold, so a line
    stays readable when every fifth of 1,024 partitions is listed.
    """
    spans: list[list[int]] = []
    for n in sorted(set(numbers)):
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    shown = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans[:limit]) or "none"
    rest = sum(b - a + 1 for a, b in spans[limit:])
    return f"{shown} and {rest} more" if rest else shown


def render(status: ClusterStatus, out: TextIO) -> None:
    """The human view: a summary, the members, then only the partitions worth a look."""
    parts = status.by_partition
    unowned = [p.partition for p in parts if p.owner is None]
    live = sum(m.is_live for m in status.members)
    out.write(
        f"cluster {status.cluster!r}: {status.partitions} partitions,"
        f" {len(status.members)} members ({live} live), {len(parts) - len(unowned)} leased,"
        f" {sum(p.stream_length for p in parts)} link batches in streams\n"
        f"redis {status.redis}  s3 {status.s3}\n"
    )
    if status.layout_partitions not in (None, status.partitions):
        out.write(f"WARNING: Redis says the cluster has {status.layout_partitions} partitions\n")
    if status.checkpoints_error:
        out.write(f"WARNING: checkpoints unknown: {status.checkpoints_error}\n")
    _render_members(status.members, out)
    _render_outages(status.members, status.generated_at, out)
    out.write(f"\nunleased partitions ({len(unowned)}): {ranges(unowned)}\n")
    moving = [p.partition for p in parts if p.owner and p.assigned_to != p.owner]
    if moving:
        out.write(f"held by a member other than the assigned one: {ranges(moving)}\n")
    _render_lags(parts, out)
    _render_checkpoints(parts, out)


def _render_members(members: Sequence[MemberStatus], out: TextIO) -> None:
    out.write(f"\n{'MEMBER':<24} {'LIVE':<4} {'EXPIRES_IN':>10} {'LEASES':>6}  INFO\n")
    for m in members:
        info = " ".join(f"{k}={v}" for k, v in sorted(m.info.items()))
        out.write(
            f"{m.member_id:<24} {'yes' if m.is_live else 'no':<4} {m.expires_in_s:>9.1f}s"
            f" {m.partitions_held:>6}  {info}\n"
        )
    if not members:
        out.write("(no members registered)\n")


def _render_outages(members: Sequence[MemberStatus], now: float, out: TextIO) -> None:
    """A line for each live member that cannot reach a store (issue 19)."""
    for m in members:
        failing = [o for o in m.info.get("failing", "-").split(",") if "@" in o]
        if not m.is_live or not (failing or m.info.get("paused") == "yes"):
            continue
        stores = ", ".join(
            f"{store} failing for {now - float(since):.0f} s"
            for store, since in (o.split("@", 1) for o in failing)
        )
        out.write(
            f"WARNING: {m.member_id}: {stores or 'backlog over its bound'};"
            f" holding {m.info.get('backlog_cuts', '?')} commit cuts"
            f" ({m.info.get('backlog_bytes', '?')} WARC bytes),"
            f" fetches {'paused' if m.info.get('paused') == 'yes' else 'going on'}\n"
        )


def _render_lags(parts: Sequence[PartitionStatus], out: TextIO) -> None:
    worst = sorted((p for p in parts if p.stream_length), key=lambda p: -p.stream_length)[:TOP]
    if not worst:
        out.write("\nlink streams: all empty\n")
        return
    out.write(f"\nlongest link streams (top {TOP}):\n")
    out.write(f"{'PARTITION':>9} {'OWNER':<24} {'BATCHES':>8} {'OLDEST':>9}\n")
    for p in worst:
        out.write(
            f"{p.partition:>9} {p.owner or '-':<24} {p.stream_length:>8}"
            f" {p.stream_oldest_age_s:>8.1f}s\n"
        )


def _render_checkpoints(parts: Sequence[PartitionStatus], out: TextIO) -> None:
    missing = [p.partition for p in parts if p.checkpoint_age_s is None]
    out.write(f"\npartitions without a checkpoint ({len(missing)}): {ranges(missing)}\n")
    aged = [p for p in parts if p.checkpoint_age_s is not None]
    oldest = sorted(aged, key=lambda p: -(p.checkpoint_age_s or 0.0))[:TOP]
    if not oldest:
        return
    out.write(f"oldest checkpoints (top {TOP}):\n")
    out.write(f"{'PARTITION':>9} {'OWNER':<24} {'FENCE':>14} {'AGE':>9}\n")
    for p in oldest:
        out.write(
            f"{p.partition:>9} {p.owner or '-':<24} {p.checkpoint_fence:>14}"
            f" {p.checkpoint_age_s:>8.1f}s\n"
        )


def cmd_status(args: argparse.Namespace) -> int:
    """`trawl cluster status --cluster FILE [--json]` (its parser is in cli.py).

    Unreachable servers are the operator's to fix: one line and exit 2, like bad config.
    An unreachable S3 still shows what Redis says (the members, and which store each one
    cannot reach: issue 19) before that line."""
    settings = load_cluster_file(args.cluster)
    try:
        status = asyncio.run(read_status(settings, s3_optional=True))
    except CoordinatorUnavailable as exc:
        # The message may quote the URL as given, password and all.
        message = str(exc).replace(settings.redis_url, redact(settings.redis_url))
        raise UsageError(f"cannot read the cluster state: {message}") from exc
    except redis_errors.RedisError as exc:  # say, a wrong password: not a bug of ours
        raise UsageError(f"redis {redact(settings.redis_url)}: {exc}") from exc
    if args.json:
        json.dump(asdict(status), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        render(status, sys.stdout)
    if status.checkpoints_error:
        sys.stdout.flush()
        raise UsageError(f"cannot read the checkpoints: {status.checkpoints_error}")
    return 0
