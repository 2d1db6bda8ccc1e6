"""The site clock on fake times: the hard politeness rule."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trawl.errors import ConfigError, DataError
from trawl.politeness.site_clock import (
    DEFAULT_POLICY,
    ClockPolicy,
    FetchOutcome,
    SiteClock,
    SiteClockStats,
    classify_status,
)

T0 = 1_000.0
OK = FetchOutcome.OK
THROTTLED = FetchOutcome.THROTTLED
POLICY = DEFAULT_POLICY


def fetch(
    clock: SiteClock,
    at: float,
    response_s: float,
    outcome: FetchOutcome = OK,
    retry_after_s: float | None = None,
    policy: ClockPolicy = POLICY,
) -> float:
    """Start at `at`, finish `response_s` later; return the gap the clock chose."""
    clock.start(at)
    end = at + response_s
    clock.finish(end, response_s, outcome, policy=policy, retry_after_s=retry_after_s)
    return clock.next_allowed_at - end


def test_fresh_clock_is_ready() -> None:
    clock = SiteClock()
    assert clock.is_ready(T0) is True
    assert clock.gap_s(POLICY) == 1.0


def test_fast_site_gets_one_second_gap() -> None:
    clock = SiteClock()
    assert fetch(clock, T0, 0.0625) == 1.0
    assert clock.next_allowed_at == T0 + 0.0625 + 1.0
    assert clock.is_ready(T0 + 1.0) is False
    assert clock.is_ready(T0 + 1.0625) is True


def test_one_request_in_flight() -> None:
    clock = SiteClock()
    clock.start(T0)
    assert clock.in_flight is True
    assert clock.is_ready(T0 + 100.0) is False
    with pytest.raises(RuntimeError, match="politeness violated"):
        clock.start(T0 + 100.0)


def test_start_before_next_allowed_raises() -> None:
    clock = SiteClock()
    fetch(clock, T0, 0.0)
    with pytest.raises(RuntimeError, match="politeness violated"):
        clock.start(T0 + 0.999)
    clock.start(T0 + 1.0)
    assert clock.in_flight is True


def test_finish_without_start_raises() -> None:
    with pytest.raises(RuntimeError, match="finish without start"):
        SiteClock().finish(T0, 0.1, OK, policy=POLICY)


def test_non_finite_response_time_raises() -> None:
    clock = SiteClock()
    clock.start(T0)
    with pytest.raises(ValueError, match="finite"):
        clock.finish(T0, float("nan"), OK, policy=POLICY)


def test_crawl_delay_widens_gap() -> None:
    clock = SiteClock(crawl_delay_s=5.0)
    assert fetch(clock, T0, 0.125) == 5.0


def test_slow_site_gets_ten_times_response_time() -> None:
    clock = SiteClock(crawl_delay_s=5.0)
    assert fetch(clock, T0, 0.75) == 7.5
    assert clock.last_response_s == 0.75
    # A quick answer later shrinks the gap back to the crawl delay.
    assert fetch(clock, clock.next_allowed_at, 0.25) == 5.0


def test_override_replaces_the_configured_gap_above_the_hard_floor() -> None:
    assert fetch(SiteClock(override_delay_s=30.0), T0, 0.125) == 30.0
    assert fetch(SiteClock(override_delay_s=0.1), T0, 0.0) == 1.0  # never under 1 s
    slow_config = ClockPolicy(min_delay_s=5.0)
    assert fetch(SiteClock(override_delay_s=2.0), T0, 0.0, policy=slow_config) == 2.0
    # The site's own Crawl-delay and its response time still apply under an override.
    assert fetch(SiteClock(override_delay_s=2.0, crawl_delay_s=4.0), T0, 0.0) == 4.0
    assert fetch(SiteClock(override_delay_s=2.0), T0, 0.5) == 5.0
    test_config = ClockPolicy(min_delay_s=0.05, backoff_max_s=1.0)
    gap = fetch(SiteClock(override_delay_s=0.02), T0, 0.0, policy=test_config)
    assert gap == pytest.approx(0.05)


def test_regap_applies_a_new_gap_to_the_very_next_request() -> None:
    clock = SiteClock()
    fetch(clock, T0, 0.0)
    end = T0
    assert clock.next_allowed_at == end + 1.0
    clock.override_delay_s = 10.0
    clock.regap(POLICY)
    assert clock.next_allowed_at == end + 10.0
    clock.override_delay_s = 3.0  # speeding up shortens the current wait too
    clock.regap(POLICY)
    assert clock.next_allowed_at == end + 3.0
    clock.regap(POLICY, restarted_at=end + 2.0)  # a restarted crawl waits a gap from its start
    assert clock.next_allowed_at == end + 5.0


def test_regap_never_shortens_a_backoff_and_needs_a_past_request() -> None:
    fresh = SiteClock(override_delay_s=30.0)
    fresh.regap(POLICY)
    assert fresh.next_allowed_at == 0.0  # nothing fetched yet: the first gap starts later
    clock = SiteClock()
    gap = fetch(clock, T0, 0.0, THROTTLED, retry_after_s=600.0)
    assert gap == 600.0
    clock.override_delay_s = 2.0
    clock.regap(POLICY)
    assert clock.next_allowed_at == T0 + 600.0
    clock.override_delay_s = 900.0
    clock.regap(POLICY)
    assert clock.next_allowed_at == T0 + 900.0


def test_starts_are_at_least_gap_apart() -> None:
    clock = SiteClock(crawl_delay_s=2.0)
    starts = []
    now = T0
    for response_s in (0.1, 0.5, 0.05, 0.3, 0.0):
        while not clock.is_ready(now):
            now += 0.01
        starts.append(now)
        clock.start(now)
        now += response_s
        clock.finish(now, response_s, OK, policy=POLICY)
    assert all(b >= a + 2.0 for a, b in itertools.pairwise(starts))


def test_backoff_doubles_and_caps() -> None:
    clock = SiteClock()
    gaps = []
    now = T0
    for _ in range(14):
        gaps.append(fetch(clock, now, 0.0, THROTTLED))
        now = clock.next_allowed_at
    assert gaps[:11] == [2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0]
    assert gaps[11:] == [3600.0, 3600.0, 3600.0]


def test_backoff_builds_on_normal_gap() -> None:
    clock = SiteClock(crawl_delay_s=10.0)
    assert fetch(clock, T0, 0.0, FetchOutcome.SERVER_ERROR) == 20.0
    assert fetch(clock, clock.next_allowed_at, 0.0, FetchOutcome.NETWORK_ERROR) == 40.0
    assert clock.consecutive_failures == 2
    assert clock.error_count == 2


def test_crawl_delay_above_backoff_cap_is_kept() -> None:
    clock = SiteClock(crawl_delay_s=7200.0)
    assert fetch(clock, T0, 0.0, THROTTLED) == 7200.0


def test_success_resets_backoff() -> None:
    clock = SiteClock()
    for _ in range(3):
        fetch(clock, clock.next_allowed_at or T0, 0.0, THROTTLED)
    assert clock.consecutive_failures == 3
    assert fetch(clock, clock.next_allowed_at, 0.0, OK) == 1.0
    assert clock.consecutive_failures == 0
    assert clock.error_count == 3  # the history stays for the host record


def test_retry_after_is_obeyed_exactly() -> None:
    clock = SiteClock()
    assert fetch(clock, T0, 0.0, THROTTLED, retry_after_s=120.0) == 120.0
    # A Retry-After shorter than the backoff does not shorten it.
    assert fetch(clock, clock.next_allowed_at, 0.0, THROTTLED, retry_after_s=0.5) == 4.0
    # Retry-After beyond the backoff cap is still obeyed.
    assert fetch(clock, clock.next_allowed_at, 0.0, THROTTLED, retry_after_s=7200.0) == 7200.0


def test_retry_after_on_ok_answer_is_obeyed() -> None:
    clock = SiteClock()
    assert fetch(clock, T0, 0.0, OK, retry_after_s=30.0) == 30.0


def test_parked_after_twenty_failures() -> None:
    clock = SiteClock()
    now = T0
    for _ in range(19):
        fetch(clock, now, 0.0, FetchOutcome.NETWORK_ERROR)
        now = clock.next_allowed_at
    assert clock.stats().parked_until is None  # via stats(): keeps mypy from narrowing
    end = now + 1.0
    clock.start(now)
    clock.finish(end, 1.0, FetchOutcome.NETWORK_ERROR, policy=POLICY)
    assert clock.parked_until == end + 6 * 3600.0
    assert clock.next_allowed_at == end + 6 * 3600.0
    assert clock.is_ready(end + 6 * 3600.0 - 1.0) is False
    assert clock.is_ready(end + 6 * 3600.0) is True
    # The probe after parking fails: parked again at once.
    probe = end + 6 * 3600.0
    fetch(clock, probe, 0.0, FetchOutcome.NETWORK_ERROR)
    assert clock.parked_until == probe + 6 * 3600.0
    # A probe that succeeds unparks the site and the gap shrinks back.
    assert fetch(clock, clock.next_allowed_at, 0.0, OK) == 1.0
    assert clock.parked_until is None


def test_parked_until_blocks_even_if_next_allowed_passed() -> None:
    clock = SiteClock(next_allowed_at=T0, parked_until=T0 + 50.0)
    assert clock.is_ready(T0 + 10.0) is False
    assert clock.is_ready(T0 + 50.0) is True


def test_custom_policy() -> None:
    policy = ClockPolicy(
        min_delay_s=2.0, slow_factor=5.0, backoff_max_s=10.0, park_after_failures=4, park_s=100.0
    )
    clock = SiteClock()
    assert fetch(clock, T0, 1.0, OK, policy=policy) == 5.0
    gaps = [fetch(clock, clock.next_allowed_at, 0.0, THROTTLED, policy=policy) for _ in range(4)]
    assert gaps == [4.0, 8.0, 10.0, 100.0]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"min_delay_s": 0.0},
        {"min_delay_s": float("nan")},
        {"slow_factor": -1.0},
        {"backoff_factor": 0.5},
        {"backoff_factor": 100.0},
        {"backoff_max_s": 0.5},
        {"park_after_failures": 0},
        {"park_s": float("inf")},
    ],
)
def test_bad_policy_is_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ConfigError, match="out of range"):
        ClockPolicy(**kwargs)  # type: ignore[arg-type]  # mixed int/float kwargs


def test_avg_response_is_ewma_in_ms() -> None:
    clock = SiteClock()
    fetch(clock, T0, 0.1)
    assert clock.avg_response_ms == pytest.approx(100.0)
    fetch(clock, clock.next_allowed_at, 0.6)
    assert clock.avg_response_ms == pytest.approx(200.0)


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        (None, FetchOutcome.NETWORK_ERROR),
        (0, FetchOutcome.NETWORK_ERROR),
        (200, OK),
        (301, OK),
        (304, OK),
        (403, OK),
        (404, OK),
        (429, THROTTLED),
        (503, THROTTLED),
        (999, THROTTLED),
        (500, FetchOutcome.SERVER_ERROR),
        (502, FetchOutcome.SERVER_ERROR),
        (504, FetchOutcome.SERVER_ERROR),
    ],
)
def test_classify_status(status: int | None, outcome: FetchOutcome) -> None:
    assert classify_status(status) is outcome


def test_json_round_trip() -> None:
    clock = SiteClock(crawl_delay_s=3.0, override_delay_s=9.0)
    fetch(clock, T0, 0.2, THROTTLED)
    data = clock.to_json()
    back = SiteClock.from_json(data)
    assert back == clock
    assert back.to_json() == data


def test_json_restores_idle_clock() -> None:
    clock = SiteClock()
    clock.start(T0)
    back = SiteClock.from_json(clock.to_json())
    assert back.in_flight is False
    assert back.next_allowed_at == 0.0


@pytest.mark.parametrize(
    "data",
    [
        {},
        {**SiteClock().to_json(), "error_count": 1.5},
        {**SiteClock().to_json(), "parked_until": "x"},
    ],
)
def test_from_json_rejects_damaged(data: dict[str, object]) -> None:
    with pytest.raises(DataError, match="site clock checkpoint is damaged"):
        SiteClock.from_json(data)


def test_stats_and_repr_show_state() -> None:
    clock = SiteClock(crawl_delay_s=4.0)
    clock.start(T0)
    assert clock.stats() == SiteClockStats(
        next_allowed_at=0.0,
        in_flight=True,
        crawl_delay_s=4.0,
        avg_response_ms=0.0,
        consecutive_failures=0,
        error_count=0,
        parked_until=None,
    )
    assert "in_flight=True" in repr(clock)
    assert "crawl_delay_s=4.0" in repr(clock)


@settings(max_examples=200, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.floats(min_value=0.0, max_value=120.0),
            st.sampled_from(list(FetchOutcome)),
            st.one_of(st.none(), st.floats(min_value=0.0, max_value=86_400.0)),
            st.floats(min_value=0.0, max_value=10.0),
        ),
        max_size=40,
    ),
    crawl_delay=st.one_of(st.none(), st.floats(min_value=0.0, max_value=3600.0)),
)
def test_invariant_start_gap_never_below_rule(
    steps: list[tuple[float, FetchOutcome, float | None, float]], crawl_delay: float | None
) -> None:
    clock = SiteClock(crawl_delay_s=crawl_delay)
    now = T0
    previous_end = None
    previous_rule = 0.0
    for response_s, outcome, retry_after_s, wait_s in steps:
        now = max(now, clock.next_allowed_at) + wait_s
        if previous_end is not None:
            # Compared as sums, the way the clock compares, so float rounding can't creep in.
            assert now >= previous_end + previous_rule
        clock.start(now)
        now += response_s
        clock.finish(now, response_s, outcome, policy=POLICY, retry_after_s=retry_after_s)
        previous_end = now
        previous_rule = max(1.0, crawl_delay or 0.0, 10.0 * response_s, retry_after_s or 0.0)


def test_issue_4_system_clock_never_wakes_before_the_time_asked() -> None:
    """Reproduces a RuntimeError('politeness violated') on uvloop: its timers round to ms."""
    import asyncio
    import time

    import uvloop

    from trawl.clock import SystemClock

    async def early_wakeups() -> int:
        clock = SystemClock()
        early = 0
        for i in range(40):
            target = time.time() + 0.0013 + i * 0.0001
            await clock.sleep_until(target)
            early += time.time() < target
        return early

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        assert runner.run(early_wakeups()) == 0
