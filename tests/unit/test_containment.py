"""Issue 13 §1: trap containment of one site, with a fake `now` (frontier.containment)."""

from __future__ import annotations

import json

import pytest

from trawl.errors import DataError
from trawl.frontier.containment import ContainReason, PageVerdict, SiteContainment
from trawl.frontier.traps import TrapPolicy
from trawl.politeness.site_state import SiteState

POLICY = TrapPolicy()
DAY = 86400.0
T0 = 100 * DAY + 600.0  # early on a UTC day
D, C, S, U = PageVerdict.DISTINCT, PageVerdict.COPY, PageVerdict.SIMILAR, PageVerdict.URL_PATTERNS


def contained(reason_pages: list[PageVerdict], policy: TrapPolicy = POLICY) -> SiteContainment:
    state = SiteContainment(policy)
    state.note_page(D, 0, T0)  # the home
    for n, verdict in enumerate(reason_pages):
        state.note_page(verdict, 2, T0 + n)
    return state


def test_issue_13_three_trap_pages_of_the_last_five_contain_the_site_at_once() -> None:
    state = SiteContainment(POLICY)
    verdicts = [D, D, S, D, S, S]
    reasons = [state.note_page(v, 1, T0 + n) for n, v in enumerate(verdicts)]
    assert reasons == [None] * 5 + [ContainReason.SIMILAR_PAGES]
    assert state.is_contained
    assert state.contained_at == T0 + 5
    assert (state.fetches_before, state.pages_before) == (3, 6)


def test_distinct_pages_dilute_the_window() -> None:
    state = SiteContainment(POLICY)
    for n, verdict in enumerate([S, D, D, S, D, D, S, D, D] * 3):
        assert state.note_page(verdict, 1, T0 + n) is None
    assert not state.is_contained


@pytest.mark.parametrize(
    ("verdicts", "reason"),
    [
        ([C, C, S], ContainReason.COPIES),
        ([S, U, S], ContainReason.SIMILAR_PAGES),
        ([U, U, C], ContainReason.URL_PATTERNS),
        ([C, S, U], ContainReason.COPIES),  # a tie goes to the stronger evidence
    ],
)
def test_the_reason_is_the_most_frequent_verdict(
    verdicts: list[PageVerdict], reason: ContainReason
) -> None:
    assert contained(verdicts).reason is reason


def test_issue_13_contained_site_trickles_one_url_per_interval() -> None:
    state = contained([C, C, C])
    at = state.contained_at
    assert not state.may_trickle(at)
    assert not state.may_trickle(at + 3599.9)
    assert state.next_trickle_at(at) == at + 3600
    assert state.may_trickle(at + 3600)
    state.note_trickle(at + 3700)
    assert not state.may_trickle(at + 3700 + 3599)
    assert state.may_trickle(at + 3700 + 3600)


def test_issue_13_trickle_obeys_the_daily_cap_until_the_next_utc_day() -> None:
    policy = TrapPolicy(contained_interval_s=60.0, contained_daily_cap=3)
    state = contained([C, C, C], policy)
    now = state.contained_at
    for _ in range(3):
        now = state.next_trickle_at(now)
        assert state.may_trickle(now)
        state.note_trickle(now)
    assert not state.may_trickle(now + 3600)
    tomorrow = (now // DAY + 1) * DAY
    assert state.next_trickle_at(now + 60) == tomorrow
    assert state.may_trickle(tomorrow)


def test_a_clear_site_is_never_held_back() -> None:
    state = SiteContainment(POLICY)
    assert state.may_trickle(T0)
    assert state.is_vouched(99)  # no entry yet: nothing to be vouched against


def test_issue_13_pages_one_link_below_the_entry_are_vouched() -> None:
    state = contained([S, S, S])
    assert state.entry_depth == 0
    assert state.is_vouched(1)
    assert not state.is_vouched(2)
    assert state.max_vouched_depth() == 1
    shallower = SiteContainment(POLICY)
    shallower.note_page(D, 3, T0)
    shallower.note_page(D, 1, T0)  # a shorter way in: the entry moves up
    assert shallower.max_vouched_depth() == 2


def test_distinct_trickled_pages_in_a_row_clear_the_flag() -> None:
    state = contained([C, C, C])
    state.note_page(D, 1, T0 + 10)  # vouched: a real page, never in doubt, does not count
    state.note_page(D, 2, T0 + 20)
    state.note_page(C, 2, T0 + 30)  # a trap page starts the count again
    state.note_page(D, 2, T0 + 40)
    state.note_page(D, 2, T0 + 50)
    assert state.reason is ContainReason.COPIES
    state.note_page(D, 2, T0 + 60)
    assert state.to_json()["contained"] is False
    assert (state.contained_at, state.fetches_before) == (0.0, 0)


def test_host_record_round_trips_and_old_records_read_as_clear() -> None:
    state = contained([C, S, C])
    state.note_trickle(state.contained_at + 3600)
    data = json.loads(json.dumps(state.to_json()))
    assert data["contained"] is True
    assert data["reason"] == "copies"
    assert data["fetchesBeforeContainment"] == 3
    again = SiteContainment.from_json(data, POLICY)
    assert again.to_json() == state.to_json()
    assert repr(again) == repr(state)
    assert not SiteContainment.from_json(None, POLICY).is_contained


def test_issue_13_host_records_from_before_containment_still_load() -> None:
    record = SiteState("example.com").to_host_record("m1")
    del record["containment"]
    state = SiteState.from_host_record(record)
    assert not state.containment.is_contained
    contained_state = SiteState("example.com", containment=contained([C, C, C]))
    record = json.loads(json.dumps(contained_state.to_host_record("m1")))
    assert SiteState.from_host_record(record).containment.reason is ContainReason.COPIES


@pytest.mark.parametrize(
    "damage",
    [
        [],
        {"reason": "bogus"},
        {"containedSince": "yesterday"},
        {"fetchesBeforeContainment": 1.5},
        {"entryDepth": True},
        {"recent": ["copy", "nonsense"]},
        {"recent": "copy"},
    ],
)
def test_damaged_records_raise_data_error(damage: object) -> None:
    record = contained([C, C, C]).to_json()
    data = {**record, **damage} if isinstance(damage, dict) else damage
    with pytest.raises(DataError, match="containment record is damaged"):
        SiteContainment.from_json(data, POLICY)


@pytest.mark.parametrize(
    "bad",
    [
        {"contain_pages": 0},
        {"contain_pages": 6},
        {"contain_clear_after": 0},
        {"contained_daily_cap": -1},
        {"contained_interval_s": -1.0},
        {"vouched_depth": -1},
    ],
)
def test_bad_containment_policy_is_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=r"contain|vouched"):
        TrapPolicy(**bad)  # type: ignore[arg-type]  # ints and floats by key
