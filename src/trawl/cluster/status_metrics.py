"""`trawl cluster status` as Prometheus metrics, for a node's `GET /metrics`.

A node with an API refreshes a `ClusterStatus` every STATUS_EVERY_S on its crawl loop (the
same reads as the command: Redis for members, leases and streams, one S3 listing for the
checkpoints); `/metrics` reports the latest one, with its timestamp, so a scrape never waits
on Redis or S3. Per-partition figures are summed or maxed: 1,024 series per scrape would
cost more than they tell. Each member's store outages and backlog (its member entry,
store_outages.py) are series by member; an S3 listing that failed leaves the checkpoint
series out rather than reporting every partition without one.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from prometheus_client.core import GaugeMetricFamily

from trawl.cluster.redis_coord import CoordinatorUnavailable
from trawl.cluster.status import read_status
from trawl.errors import DataError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator

    from prometheus_client.metrics_core import Metric

    from trawl.cluster.cluster_file import ClusterSettings
    from trawl.cluster.status import ClusterStatus

log = logging.getLogger(__name__)
STATUS_EVERY_S = 15.0


class StatusCache:
    """The latest cluster status, refreshed by `run` (on the crawl loop)."""

    def __init__(self, settings: ClusterSettings) -> None:
        self._settings = settings
        self.latest: ClusterStatus | None = None

    async def run(self, wait_stopped: Callable[[], Awaitable[None]]) -> None:
        """Refresh every STATUS_EVERY_S until `wait_stopped()` returns."""
        while True:
            try:
                self.latest = await read_status(self._settings, s3_optional=True)
            except (CoordinatorUnavailable, DataError) as exc:
                log.warning("cluster status for /metrics: %s", exc)
            try:
                async with asyncio.timeout(STATUS_EVERY_S):
                    await wait_stopped()
                return
            except TimeoutError:
                pass


def status_metrics(status: ClusterStatus) -> Iterator[Metric]:
    parts = status.by_partition
    live = [m for m in status.members if m.is_live]
    yield GaugeMetricFamily("trawl_cluster_members_live", "Live cluster members", len(live))
    held = GaugeMetricFamily(
        "trawl_cluster_partitions_held", "Partition leases held, by member", labels=["member"]
    )
    for member in status.members:
        held.add_metric([member.member_id], member.partitions_held)
    yield held
    yield GaugeMetricFamily(
        "trawl_cluster_partitions_unleased", "Partitions no member holds",
        sum(1 for p in parts if p.owner is None),
    )  # fmt: skip
    yield GaugeMetricFamily(
        "trawl_cluster_stream_batches", "Link batches no checkpoint covers yet (all partitions)",
        sum(p.stream_length for p in parts),
    )  # fmt: skip
    yield GaugeMetricFamily(
        "trawl_cluster_stream_oldest_age_seconds", "Age of the oldest uncovered link batch",
        max((p.stream_oldest_age_s for p in parts), default=0.0),
    )  # fmt: skip
    yield from _outage_metrics(status)
    if status.checkpoints_error:
        yield GaugeMetricFamily(
            "trawl_cluster_status_timestamp_seconds", "When the cluster status was read",
            status.generated_at,
        )  # fmt: skip
        return
    ages = [p.checkpoint_age_s for p in parts if p.checkpoint_age_s is not None]
    yield GaugeMetricFamily(
        "trawl_cluster_checkpoint_age_seconds_max", "Age of the oldest latest checkpoint",
        max(ages, default=0.0),
    )  # fmt: skip
    yield GaugeMetricFamily(
        "trawl_cluster_partitions_without_checkpoint", "Partitions never checkpointed",
        len(parts) - len(ages),
    )  # fmt: skip
    yield GaugeMetricFamily(
        "trawl_cluster_status_timestamp_seconds", "When the cluster status was read",
        status.generated_at,
    )  # fmt: skip


def _outage_metrics(status: ClusterStatus) -> Iterator[Metric]:
    failing = GaugeMetricFamily(
        "trawl_cluster_store_failing_since_seconds",
        "When a member's calls to a shared store started failing (epoch s), by member and store",
        labels=["member", "store"],
    )
    cuts = GaugeMetricFamily(
        "trawl_cluster_backlog_cuts", "Commit cuts a member holds unwritten", labels=["member"]
    )
    held = GaugeMetricFamily(
        "trawl_cluster_backlog_bytes", "WARC bytes a member holds unuploaded", labels=["member"]
    )
    paused = GaugeMetricFamily(
        "trawl_cluster_fetches_paused", "1 while a member's store outage or backlog pauses it",
        labels=["member"],
    )  # fmt: skip
    for m in status.members:
        if not m.is_live or "backlog_cuts" not in m.info:
            continue
        for outage in m.info.get("failing", "-").split(","):
            if "@" in outage:
                store, since = outage.split("@", 1)
                failing.add_metric([m.member_id, store], float(since))
        cuts.add_metric([m.member_id], float(m.info["backlog_cuts"]))
        held.add_metric([m.member_id], float(m.info.get("backlog_bytes", "0")))
        paused.add_metric([m.member_id], 1.0 if m.info.get("paused") == "yes" else 0.0)
    yield from (failing, cuts, held, paused)
