from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trawl.errors import DataError
from trawl.frontier.traps import (
    SiteTrapState,
    TrapCounters,
    TrapPolicy,
    TrapReason,
    _site_hash,
    check_url,
)

POLICY = TrapPolicy()
BASE = "https://www.example.com"


def test_depth_limit_is_exclusive() -> None:
    assert check_url(BASE + "/a", 50, POLICY) is None
    assert check_url(BASE + "/a", 51, POLICY) is TrapReason.MAX_DEPTH


def test_url_length_limit_is_exclusive() -> None:
    url = BASE + "/" + "a" * (1024 - len(BASE) - 1)
    assert len(url) == 1024
    assert check_url(url, 0, POLICY) is None
    assert check_url(url + "b", 0, POLICY) is TrapReason.URL_TOO_LONG


def test_query_parameter_limit_is_exclusive() -> None:
    twelve = "&".join(f"p{i}=1" for i in range(12))
    assert check_url(f"{BASE}/s?{twelve}", 0, POLICY) is None
    assert check_url(f"{BASE}/s?{twelve}&p12=1", 0, POLICY) is TrapReason.TOO_MANY_PARAMS
    assert check_url(f"{BASE}?{twelve}&p12=1", 0, POLICY) is TrapReason.TOO_MANY_PARAMS


def test_path_segment_limit_is_exclusive_and_ignores_a_trailing_slash() -> None:
    thirty = "/".join(f"s{i}" for i in range(30))
    assert check_url(f"{BASE}/{thirty}", 0, POLICY) is None
    assert check_url(f"{BASE}/{thirty}/", 0, POLICY) is None
    assert check_url(f"{BASE}/{thirty}/s30", 0, POLICY) is TrapReason.TOO_MANY_SEGMENTS


@pytest.mark.parametrize(
    "path",
    [
        "/x/x/x/x",
        "/a/b/a/b/a/b/a/b",
        "/2026/11/2026/11/2026/11/2026/11",
        "/cal/2026/11/2026/11/2026/11/2026/11/view.html",
        "/p/q/r/s/p/q/r/s/p/q/r/s/p/q/r/s",
        "/img/img/img/img/",
    ],
)
def test_paths_repeating_more_than_three_times_are_traps(path: str) -> None:
    assert check_url(BASE + path, 0, POLICY) is TrapReason.REPEATING_PATH


@pytest.mark.parametrize(
    "path",
    [
        "/x/x/x",  # three times is allowed
        "/a/b/a/b/a/b/c",
        "/2026/11/2026/11/2026/11",
        "/docs/a/b/c/d/e/f.html",
        "/2026/11/30/story.html",
        "/a/b/c/d/e/a/b/c/d/e/a/b/c/d/e/a/b/c/d/e",  # period 5 is beyond the rule
        "/x/xy/x/xy/x/xy/x/xz",  # not whole segments at the end
        "/ab/ab/ab/abc",
        "/",
        "/search?q=a/a/a/a/a",  # the query is not the path
    ],
)
def test_normal_paths_are_not_traps(path: str) -> None:
    assert check_url(BASE + path, 3, POLICY) is None


def test_max_repeats_is_configurable() -> None:
    strict = TrapPolicy(max_repeats=1)
    assert check_url(BASE + "/a/a", 0, strict) is TrapReason.REPEATING_PATH
    assert check_url(BASE + "/a/b/a/c", 0, strict) is None


def test_first_broken_rule_wins_in_a_fixed_order() -> None:
    url = BASE + "/x" * 40 + "?" + "&".join(f"p{i}=1" for i in range(20))
    assert check_url(url, 99, POLICY) is TrapReason.MAX_DEPTH
    assert check_url(url, 0, POLICY) is TrapReason.TOO_MANY_PARAMS
    assert check_url(BASE + "/x" * 40, 0, POLICY) is TrapReason.TOO_MANY_SEGMENTS


_segment = st.text(alphabet="abc019%-._~", min_size=0, max_size=6)


@given(
    st.lists(_segment, max_size=40),
    st.lists(st.text(alphabet="ab=&%2F", max_size=8), max_size=15),
    st.integers(min_value=0, max_value=60),
)
def test_check_url_never_raises_on_normalised_looking_urls(
    segments: list[str], params: list[str], depth: int
) -> None:
    url = BASE + "/" + "/".join(segments) + ("?" + "&".join(params) if params else "")
    assert check_url(url, depth, POLICY) in (None, *TrapReason)


@given(st.text(max_size=300), st.integers(min_value=0, max_value=60))
def test_check_url_never_raises_on_any_text(url: str, depth: int) -> None:
    assert check_url(url, depth, POLICY) in (None, *TrapReason)


# -- daily cap -------------------------------------------------------------------------


def test_daily_cap_grows_with_distinct_referring_sites() -> None:
    state = SiteTrapState(POLICY)
    assert state.daily_cap(POLICY) == 5000
    state.note_referrer("a.com")
    state.note_referrer("a.com")  # the same site twice counts once
    assert state.referring_sites() == 1
    assert state.daily_cap(POLICY) == 10000  # 1 + log2(2) = 2
    for site in ("b.com", "c.com"):
        state.note_referrer(site)
    assert state.daily_cap(POLICY) == 15000  # 1 + log2(4) = 3


def test_daily_cap_is_exact_to_64_referrers_then_estimated_and_capped_at_ten_times() -> None:
    state = SiteTrapState(POLICY)
    for i in range(63):
        state.note_referrer(f"site{i}.com")
    assert state.referring_sites() == 63
    assert state.daily_cap(POLICY) == int(5000 * (1 + math.log2(64)))
    for i in range(63, 2000):
        state.note_referrer(f"site{i}.com")
    assert 1600 <= state.referring_sites() <= 2400  # the sketch's ~15 % error
    assert state.daily_cap(POLICY) == 50000
    assert len(state.to_json()["referrers"]) == 64  # type: ignore[arg-type]  # a list


@given(st.lists(st.integers(0, 400), max_size=600), st.integers(0, 600))
def test_the_referrer_sketch_keeps_the_64_smallest_hashes_across_a_restore(
    sites: list[int], restore_at: int
) -> None:
    state = SiteTrapState(POLICY)
    for n, i in enumerate(sites):
        if n == restore_at:  # a restart mid-way: the sketch comes back from its record
            state = SiteTrapState.from_json(json.loads(json.dumps(state.to_json())), POLICY)
        state.note_referrer(f"site{i}.com")
    hashes = sorted({_site_hash(f"site{i}.com") for i in sites})
    assert state.to_json()["referrers"] == hashes[:64]


def test_flagged_site_cap_shrinks() -> None:
    state = _flagged_state()
    assert state.is_flagged
    assert state.daily_cap(POLICY) == 500


def test_daily_cap_is_at_least_one() -> None:
    tiny = TrapPolicy(daily_page_cap=1, flagged_cap_factor=0.01)
    assert _flagged_state(tiny).daily_cap(tiny) == 1


# -- similarity alarm ------------------------------------------------------------------


def _distinct(i: int) -> int:
    """Fingerprints far apart from each other (different bytes everywhere)."""
    return int.from_bytes(bytes([(i * 37 + k * 101) % 256 for k in range(8)]))


def _flagged_state(policy: TrapPolicy = POLICY) -> SiteTrapState:
    state = SiteTrapState(policy)
    for i in range(policy.similarity_min_pages):
        state.note_page(0xABCD_0000_0000_0000 | i % 4)  # within 2 bits of each other
    return state


def test_distinct_fingerprints_are_far_apart() -> None:
    values = [_distinct(i) for i in range(50)]
    assert min((a ^ b).bit_count() for a in values for b in values if a != b) > 3


def test_issue_13_alarm_fires_at_ten_pages_not_twenty() -> None:
    state = SiteTrapState(POLICY)
    flips = [state.note_page(7) for _ in range(10)]
    assert flips == [False] * 9 + [True]
    assert [state.last_page_has_twin, SiteTrapState(POLICY).last_page_has_twin] == [True, False]
    assert state.is_flagged
    assert state.note_page(7) is False  # it flips once


def test_alarm_flips_exactly_at_the_share() -> None:
    state = SiteTrapState(POLICY)
    for i in range(10):
        assert not state.note_page(_distinct(i))
    # 10 distinct + n similar: the share reaches 0.8 at n = 40 (40/50).
    flips = [state.note_page(0x1000 | (n % 8)) for n in range(40)]
    assert flips.index(True) == 39
    assert state.similar_share() == pytest.approx(0.8)


def test_similarity_threshold_is_inclusive() -> None:
    three_bits_apart = SiteTrapState(POLICY)
    four_bits_apart = SiteTrapState(POLICY)
    for i in range(10):
        three_bits_apart.note_page(_distinct(i))
        three_bits_apart.note_page(_distinct(i) ^ 0b111)
        four_bits_apart.note_page(_distinct(i))
        four_bits_apart.note_page(_distinct(i) ^ 0b1111)
    assert three_bits_apart.similar_share() == 1.0
    assert three_bits_apart.is_flagged
    assert four_bits_apart.similar_share() == 0.0
    assert not four_bits_apart.is_flagged


def test_window_forgets_old_pages_and_the_alarm_clears() -> None:
    state = _flagged_state()
    for i in range(50):
        state.note_page(_distinct(i))
    assert state.similar_share() == 0.0
    assert not state.is_flagged
    assert state.daily_cap(POLICY) == 5000


def test_json_round_trip_keeps_everything() -> None:
    state = _flagged_state()
    for i in range(10):
        state.note_page(_distinct(i))
        state.note_referrer(f"r{i}.org")
    data = json.loads(json.dumps(state.to_json()))
    again = SiteTrapState.from_json(data, POLICY)
    assert again.to_json() == state.to_json()
    assert repr(again) == repr(state)
    assert again.similar_share() == state.similar_share()
    assert again.daily_cap(POLICY) == state.daily_cap(POLICY)
    # the restored counts keep working as the window slides
    for i in range(50):
        again.note_page(_distinct(i + 100))
        state.note_page(_distinct(i + 100))
    assert again.to_json() == state.to_json()
    assert not again.is_flagged


@pytest.mark.parametrize(
    "data",
    [
        None,
        [],
        {},
        {"referrers": [], "recent": [], "flagged": "yes"},
        {"referrers": {}, "recent": [], "flagged": False},
        {"referrers": [-1], "recent": [], "flagged": False},
        {"referrers": [1 << 60], "recent": [], "flagged": False},
        {"referrers": [], "recent": ["xyz"], "flagged": False},
        {"referrers": [], "recent": ["zzzzzzzzzzzzzzzz"], "flagged": False},
        {"referrers": [], "recent": [5], "flagged": False},
        {"referrers": [], "recent": ["-fffffffffffffff"], "flagged": False},
        {"referrers": [], "recent": ["ff ff ff ff ff f"], "flagged": False},
    ],
)
def test_damaged_record_is_a_data_error(data: object) -> None:
    with pytest.raises(DataError, match="traps record is damaged"):
        SiteTrapState.from_json(data, POLICY)


def test_counters_count_every_reason() -> None:
    counters = TrapCounters()
    counters.count(TrapReason.REPEATING_PATH)
    counters.count(TrapReason.REPEATING_PATH)
    counters.count(TrapReason.DAILY_CAP, 5)
    counts = counters.as_dict()
    assert list(counts) == [r.value for r in TrapReason]
    assert counts["repeating_path"] == 2
    assert counts["daily_cap"] == 5
    assert sum(counts.values()) == 7
    assert repr(counters) == "<TrapCounters repeating_path=2, daily_cap=5>"


def test_policy_rejects_inconsistent_shares() -> None:
    with pytest.raises(ValueError, match="similarity_clear_share"):
        TrapPolicy(similarity_clear_share=0.9)
