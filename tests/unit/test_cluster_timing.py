"""The cluster's timing settings check themselves together (cluster mode, issues 7 and 19)."""

from __future__ import annotations

import pytest

from trawl.cluster.ownership import LeaseTiming
from trawl.cluster.ownership_shell import ClusterTiming
from trawl.config import NodeSettings
from trawl.errors import ConfigError


def test_the_defaults_hold_together_and_feed_the_pure_core() -> None:
    timing = ClusterTiming()
    assert timing.lease_timing() == LeaseTiming(5.0, 1.5, 1.5, 0.5)
    assert timing.heartbeat_s == pytest.approx(4 / 3)


def test_the_config_defaults_are_the_timing_defaults() -> None:
    node, timing = NodeSettings(), ClusterTiming()
    assert (node.member_ttl_s, node.lease_ttl_s, node.margin_s) == (
        timing.member_ttl_s, timing.lease_ttl_s, timing.margin_s,
    )  # fmt: skip
    assert (node.renew_after_s, node.retry_s, node.request_timeout_s) == (
        timing.renew_after_s, timing.retry_s, timing.request_timeout_s,
    )  # fmt: skip


def test_a_crashed_members_partitions_are_free_within_seconds_by_default() -> None:
    # Issue 19: its sites fetched again within 10 s. The others want its partitions once
    # its entry expires (plus one member-list period at worst) and may take them once the
    # leases expire (plus one acquire retry); what is left of 10 s loads the checkpoint
    # and waits the sites' first politeness gap.
    timing = ClusterTiming()
    wanted_by = timing.member_ttl_s + timing.heartbeat_s
    free_by = timing.lease_ttl_s + timing.retry_s + timing.request_timeout_s
    assert max(wanted_by, free_by) <= 6.5


def test_short_test_timings_are_accepted() -> None:
    timing = ClusterTiming(1.0, 1.5, 0.5, 0.3, 0.2, 0.3)
    assert timing.heartbeat_s == pytest.approx(1 / 3)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"margin_s": 0.4}, r"cluster.margin_s=0.4 must be at least 0.5"),
        ({"margin_s": 5.0}, r"cluster: margin_s must be in"),
        ({"renew_after_s": 4.0}, r"cluster: renew_after_s must be in"),
        ({"retry_s": 0.0}, r"cluster: retry_s must be > 0"),
        ({"request_timeout_s": 0.0}, r"cluster.request_timeout_s=0.0 must be in \(0, .* = 1.5\]"),
        ({"request_timeout_s": 1.6}, r"request_timeout_s=1.6 must be in"),
        ({"member_ttl_s": 3.0}, r"cluster.member_ttl_s=3.0 must exceed 3 times"),
    ],
)
def test_timings_that_cannot_work_are_config_errors(
    changes: dict[str, float], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        ClusterTiming(**changes)
