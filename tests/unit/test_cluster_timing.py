"""The cluster's timing settings check themselves together (cluster mode, issue 7)."""

from __future__ import annotations

import pytest

from trawl.cluster.ownership import LeaseTiming
from trawl.cluster.ownership_shell import ClusterTiming
from trawl.errors import ConfigError


def test_the_defaults_hold_together_and_feed_the_pure_core() -> None:
    timing = ClusterTiming()
    assert timing.lease_timing() == LeaseTiming(30.0, 12.0, 6.0, 1.5)
    assert timing.heartbeat_s == 5.0


def test_short_test_timings_are_accepted() -> None:
    timing = ClusterTiming(1.0, 1.5, 0.5, 0.3, 0.2, 0.3, fetch_timeout_s=0.4)
    assert timing.heartbeat_s == pytest.approx(1 / 3)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"fetch_timeout_s": 12.0},
            r"cluster.margin_s=12.0 must exceed fetch.total_timeout_s=12.0",
        ),
        ({"margin_s": 30.0}, r"cluster: margin_s must be in"),
        ({"renew_after_s": 20.0}, r"cluster: renew_after_s must be in"),
        ({"retry_s": 0.0}, r"cluster: retry_s must be > 0"),
        ({"request_timeout_s": 0.0}, r"cluster.request_timeout_s=0.0 must be in \(0, .* = 10.5\]"),
        ({"request_timeout_s": 10.6}, r"request_timeout_s=10.6 must be in"),
        ({"member_ttl_s": 9.0}, r"cluster.member_ttl_s=9.0 must exceed 3 times"),
    ],
)
def test_timings_that_cannot_work_are_config_errors(
    changes: dict[str, float], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        ClusterTiming(**changes)
