"""The operator's per-site override: validation, what it changes, and its durable form."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trawl.errors import DataError
from trawl.frontier.traps import TrapPolicy
from trawl.politeness.site_clock import DEFAULT_POLICY, FetchOutcome
from trawl.politeness.site_limits import SiteLimits, checked_limits
from trawl.politeness.site_state import SiteState

T0 = 1_000_000.0


def limits(delay: object = None, cap: object = None, paused: object = False) -> SiteLimits:
    return checked_limits(delay, cap, paused, now=T0, min_delay_s=1.0)


@pytest.mark.parametrize(
    ("delay", "cap", "paused", "message"),
    [
        (0.5, None, False, "between 1 and 86400"),
        (math.inf, None, False, "between"),
        (math.nan, None, False, "between"),
        (100_000, None, False, "between"),
        ("5", None, False, "number of seconds"),
        (True, None, False, "number of seconds"),
        (None, -1, False, "whole number"),
        (None, 2.5, False, "whole number"),
        (None, True, False, "whole number"),
        (None, None, "yes", "true or false"),
    ],
)
def test_bad_values_are_refused_with_a_message(
    delay: object, cap: object, paused: object, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        limits(delay, cap, paused)


def test_the_floor_follows_a_lower_test_configuration_only() -> None:
    assert checked_limits(0.2, None, False, now=T0, min_delay_s=0.05).crawl_delay_s == 0.2
    with pytest.raises(ValueError, match="between 1 and"):
        checked_limits(0.2, None, False, now=T0, min_delay_s=3.0)


@given(
    delay=st.none() | st.floats(1.0, 86400.0),
    cap=st.none() | st.integers(0, 10**9),
    paused=st.booleans(),
)
def test_json_round_trip(delay: float | None, cap: int | None, paused: bool) -> None:
    original = limits(delay, cap, paused)
    assert SiteLimits.from_json(original.to_json()) == original


def test_a_damaged_stored_override_is_a_data_error() -> None:
    for damaged in ("x", {"crawlDelay": "slow"}, {"setAt": "yesterday"}, {"paused": 1}):
        with pytest.raises(DataError, match="override"):
            SiteLimits.from_json(damaged)


def fetched(state: SiteState, at: float) -> float:
    """One fast OK exchange at `at`; returns when it ended."""
    state.clock.start(at)
    state.clock.finish(at, 0.0, FetchOutcome.OK, policy=DEFAULT_POLICY)
    return at


def test_slowing_a_site_moves_its_next_request_at_once_and_removal_restores() -> None:
    state = SiteState("a.test")
    end = fetched(state, T0)
    state.set_limits(limits(delay=30.0), DEFAULT_POLICY)
    assert state.clock.next_allowed_at == end + 30.0
    state.set_limits(None, DEFAULT_POLICY)
    assert state.clock.next_allowed_at == end + 1.0
    assert state.limits is None


def test_the_daily_cap_override_replaces_the_formula_up_or_down() -> None:
    policy = TrapPolicy()
    state = SiteState("a.test")
    formula = state.daily_cap(policy)
    state.set_limits(limits(cap=3), DEFAULT_POLICY)
    assert state.daily_cap(policy) == 3
    state.set_limits(limits(cap=formula * 10), DEFAULT_POLICY)
    assert state.daily_cap(policy) == formula * 10
    state.set_limits(limits(delay=5.0), DEFAULT_POLICY)  # no cap named: the formula
    assert state.daily_cap(policy) == formula


def test_the_override_lives_in_the_host_record() -> None:
    state = SiteState("a.test")
    fetched(state, T0)
    state.set_limits(limits(delay=7.0, cap=10, paused=True), DEFAULT_POLICY)
    record = state.to_host_record("m1")
    assert record["override"] == {
        "crawlDelay": 7.0, "maxPagesPerDay": 10, "paused": True, "setAt": T0,
    }  # fmt: skip
    restored = SiteState.from_host_record(record)
    assert restored.limits == state.limits
    assert restored.paused
    assert restored.clock.gap_s(DEFAULT_POLICY) == 7.0
    assert SiteState.from_host_record({**record, "override": None}).limits is None


def test_a_damaged_override_names_the_site() -> None:
    record = SiteState("a.test").to_host_record("m1")
    with pytest.raises(DataError, match=r"a\.test.*override"):
        SiteState.from_host_record({**record, "override": {"maxPagesPerDay": "lots"}})
