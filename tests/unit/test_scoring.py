"""Link priority scoring and the fast-line rules (issue 5; pure)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trawl.frontier.inlinks import InLinkCounter
from trawl.frontier.scoring import (
    ScoreParts,
    ScoringPolicy,
    importance,
    is_fast,
    path_depth,
    score_bucket,
    score_link,
)
from trawl.urls.normalise import url_hash

POLICY = ScoringPolicy()
counts = st.integers(0, 100_000)
depths = st.integers(0, 200)
parent_scores = st.floats(-50, 1e6, allow_nan=False)


def score(
    *,
    inlink_pages: int = 0,
    inlink_sites: int = 0,
    parent_score: float = 0.0,
    site_referrers: int = 0,
    depth: int = 0,
) -> float:
    return score_link(
        inlink_pages=inlink_pages,
        inlink_sites=inlink_sites,
        parent_score=parent_score,
        site_referrers=site_referrers,
        depth=depth,
        policy=POLICY,
    ).total()


# -- the fast-line rules ------------------------------------------------------------------------
def test_another_sites_home_page_found_by_one_link_goes_fast() -> None:
    depth = path_depth("https://new.test/")
    assert depth == 0
    assert is_fast(score(inlink_pages=1, inlink_sites=1, depth=depth), POLICY)


def test_another_sites_deep_page_found_by_one_link_is_slow() -> None:
    depth = path_depth("https://new.test/archive/2019/05/story.html")
    assert not is_fast(score(inlink_pages=1, inlink_sites=1, depth=depth), POLICY)


@given(depth=depths, referrers=counts)
def test_seeds_go_fast_at_any_depth(depth: int, referrers: int) -> None:
    parts = score_link(
        inlink_pages=0,
        inlink_sites=0,
        parent_score=0.0,
        site_referrers=referrers,
        depth=depth,
        is_seed=True,
        policy=POLICY,
    )
    assert is_fast(parts.total(), POLICY)


@given(sites=st.integers(3, 10_000), extra_pages=counts, depth=depths, parent=parent_scores)
def test_a_page_linked_from_three_sites_goes_fast(
    sites: int, extra_pages: int, depth: int, parent: float
) -> None:
    total = score(
        inlink_pages=sites + extra_pages, inlink_sites=sites, depth=depth, parent_score=parent
    )
    assert is_fast(total, POLICY)


@given(depth=st.integers(1, 200), parent=parent_scores, referrers=counts)
def test_a_leaf_with_one_same_site_in_link_is_slow(
    depth: int, parent: float, referrers: int
) -> None:
    total = score(inlink_pages=1, depth=depth, parent_score=parent, site_referrers=referrers)
    assert not is_fast(total, POLICY)


def test_two_sites_are_not_enough_for_a_deep_page_alone() -> None:
    assert not is_fast(score(inlink_pages=2, inlink_sites=2, depth=7), POLICY)


def test_most_linked_pages_outscore_deep_leaves_of_a_crawled_site() -> None:
    """The e2e's promise in small: section pages linked from every page go first."""
    counter = InLinkCounter(width=1 << 12, pair_capacity=10_000)
    sections = [f"https://a.test/s{n}/" for n in range(4)]
    parts = {}
    for page in range(40):  # every page links all sections and two leaves of its own
        leaves = [f"https://a.test/s{page % 4}/2026/{page}/{k}.html" for k in range(2)]
        targets = sections + leaves
        found = counter.add_page_links("a.test", [url_hash(u) for u in targets], ["a.test"] * 6)
        for url, (pages, sites) in zip(targets, found, strict=True):
            parts[url] = score_link(
                inlink_pages=pages,
                inlink_sites=sites,
                parent_score=2.0,
                site_referrers=5,
                depth=path_depth(url),
                policy=POLICY,
            ).total()
    leaf_scores = [s for u, s in parts.items() if u not in sections]
    assert all(is_fast(parts[u], POLICY) for u in sections)
    assert not any(is_fast(s, POLICY) for s in leaf_scores)
    assert min(parts[u] for u in sections) > max(leaf_scores)


# -- monotone ---------------------------------------------------------------------------------
@given(pages=counts, sites=counts, depth=depths, parent=parent_scores, referrers=counts)
def test_more_in_links_score_higher(
    pages: int, sites: int, depth: int, parent: float, referrers: int
) -> None:
    def at(pages: int, sites: int) -> float:
        return score(
            inlink_pages=pages,
            inlink_sites=sites,
            depth=depth,
            parent_score=parent,
            site_referrers=referrers,
        )

    assert at(pages + 1, sites) > at(pages, sites)
    assert at(pages, sites + 1) > at(pages, sites)


@given(pages=counts, sites=counts, depth=depths, parent=parent_scores, referrers=counts)
def test_deeper_scores_lower_and_better_parents_and_sites_higher(
    pages: int, sites: int, depth: int, parent: float, referrers: int
) -> None:
    base = {"inlink_pages": pages, "inlink_sites": sites}
    here = score(depth=depth, parent_score=parent, site_referrers=referrers, **base)
    deeper = score(depth=depth + 1, parent_score=parent, site_referrers=referrers, **base)
    if depth < POLICY.depth_cap:
        assert deeper < here
    else:
        assert deeper == here  # the penalty is capped so well-linked deep pages still go fast
    assert score(depth=depth, parent_score=parent + 1, site_referrers=referrers, **base) >= here
    assert score(depth=depth, parent_score=parent, site_referrers=referrers + 1, **base) >= here


def test_in_link_parts_are_log_scaled() -> None:
    one = score_link(
        inlink_pages=1, inlink_sites=1, parent_score=0, site_referrers=0, depth=0, policy=POLICY
    )
    many = score_link(
        inlink_pages=1023,
        inlink_sites=1023,
        parent_score=0,
        site_referrers=0,
        depth=0,
        policy=POLICY,
    )
    assert many.inlink_pages == 10 * one.inlink_pages == 10 * POLICY.pages_weight
    assert many.inlink_sites == 10 * one.inlink_sites == 10 * POLICY.sites_weight


def test_boosts_add_up() -> None:
    plain = score(depth=2)
    assert score_link(
        inlink_pages=0,
        inlink_sites=0,
        parent_score=0,
        site_referrers=0,
        depth=2,
        is_seed=True,
        from_sitemap=True,
        policy=POLICY,
    ).total() == pytest.approx(plain + POLICY.seed_boost + POLICY.sitemap_boost)


# -- score_bucket -------------------------------------------------------------------------------
def test_score_bucket_changes_only_when_one_plus_n_is_a_power_of_two() -> None:
    for n in range(1, 5000):
        crosses = (n + 1) & n == 0
        assert (score_bucket(n, 7) != score_bucket(n - 1, 7)) == crosses
        assert (score_bucket(7, n) != score_bucket(7, n - 1)) == crosses


@given(a=st.tuples(counts, counts), b=st.tuples(counts, counts))
def test_same_bucket_exactly_when_both_counts_have_the_same_whole_log2(
    a: tuple[int, int], b: tuple[int, int]
) -> None:
    same_bits = all(
        math.floor(math.log2(1 + x)) == math.floor(math.log2(1 + y))
        for x, y in zip(a, b, strict=True)
    )
    assert (score_bucket(*a) == score_bucket(*b)) == same_bits


def test_score_bucket_tells_pages_and_sites_apart() -> None:
    assert score_bucket(1, 0) != score_bucket(0, 1)
    assert score_bucket(0, 0) != score_bucket(1, 1)


# -- parts, JSON, importance, depth --------------------------------------------------------------
def test_parts_total_and_json_round_trip() -> None:
    parts = score_link(
        inlink_pages=5,
        inlink_sites=2,
        parent_score=3.0,
        site_referrers=9,
        depth=3,
        from_sitemap=True,
        policy=POLICY,
    )
    data = json.loads(json.dumps(parts.to_json()))
    assert data["total"] == round(parts.total(), 3)
    assert data["depth"] == -1.5
    assert set(data) == {
        "inlinkPages",
        "inlinkSites",
        "parent",
        "sitePopularity",
        "depth",
        "boost",
        "total",
    }
    again = ScoreParts.from_json(data)
    assert again.total() == pytest.approx(parts.total(), abs=0.01)
    assert again.to_json() == parts.to_json()


@pytest.mark.parametrize(
    "data", [{}, {"inlinkPages": "1"}, dict.fromkeys(("inlinkPages", "inlinkSites"), True)]
)
def test_damaged_parts_json_is_refused(data: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="not a number"):
        ScoreParts.from_json(data)


@given(st.floats(-100, 1e9, allow_nan=False))
def test_importance_is_at_least_one_and_grows_with_score(s: float) -> None:
    assert 1.0 <= importance(s) <= 10.0
    assert importance(s + 1) >= importance(s)


def test_importance_values() -> None:
    assert importance(-3.0) == importance(0.0) == 1.0
    assert importance(8.0) == 2.0
    assert importance(1e9) == 10.0
    with pytest.raises(ValueError, match="NaN"):
        importance(math.nan)


@pytest.mark.parametrize(
    ("url", "depth"),
    [
        ("https://a.test/", 0),
        ("https://a.test", 0),
        ("https://a.test/?page=2", 0),
        ("https://a.test/docs/", 1),
        ("https://a.test/docs/a/3.html", 3),
        ("https://a.test/docs//a/?q=/x/y", 2),
    ],
)
def test_path_depth(url: str, depth: int) -> None:
    assert path_depth(url) == depth


def test_negative_counts_are_a_bug() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        score(inlink_pages=-1)
    with pytest.raises(ValueError, match=">= 0"):
        score_bucket(0, -1)


@pytest.mark.parametrize(
    "kwargs", [{"sites_weight": -1.0}, {"depth_cap": -1}, {"fast_threshold": math.inf}]
)
def test_bad_policies_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="finite"):
        ScoringPolicy(**kwargs)


_PART = st.one_of(
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False),
    st.integers(min_value=-1000, max_value=1000),  # an int weight times an int depth
)


@given(st.tuples(*[_PART] * 6))
def test_parts_json_text_is_what_json_dumps_writes(values: tuple[float, ...]) -> None:
    parts = ScoreParts(*values)
    text = parts.to_json_text()
    assert text == json.dumps(parts.to_json(), separators=(",", ":"))
    assert ScoreParts.from_json(json.loads(text)) == ScoreParts(*[round(v, 3) for v in values])


_PART = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False) | st.integers(-1000, 1000)


@given(st.tuples(_PART, _PART, _PART, _PART, _PART, _PART))
def test_parts_text_reads_back_as_json_reads_it(values: tuple[float, ...]) -> None:
    text = ScoreParts(*map(float, values)).to_json_text()
    assert ScoreParts.from_json_text(text) == ScoreParts.from_json(json.loads(text))


def _read(read: Any, text: str) -> object:
    try:
        return read(text)
    except (ValueError, TypeError, AttributeError) as exc:
        return type(exc)


@given(
    st.text(alphabet='{}":,.-+eE0123456789 ', max_size=80)
    | st.sampled_from(
        [
            '{"inlinkPages":1,"inlinkSites":2,"parent":3,"sitePopularity":4,"depth":-1,'
            '"boost":0.5,"total":9.5}',
            '{"inlinkPages":1, "inlinkSites":2,"parent":3,"sitePopularity":4,"depth":-1,'
            '"boost":0.5,"total":9.5}',  # json's default spacing: read by json
            '{"inlinkPages":01,"inlinkSites":2,"parent":3,"sitePopularity":4,"depth":-1,'
            '"boost":0.5,"total":9.5}',  # not JSON: refused by both
            '{"inlinkPages":NaN,"inlinkSites":2,"parent":3,"sitePopularity":4,"depth":-1,'
            '"boost":0.5,"total":9.5}',
            '{"inlinkSites":2,"parent":3}',
            "[]",
            "",
        ]
    )
)
def test_any_parts_text_reads_as_json_and_from_json_read_it(text: str) -> None:
    fast = _read(ScoreParts.from_json_text, text)
    slow = _read(lambda t: ScoreParts.from_json(json.loads(t)), text)
    assert fast == slow or repr(fast) == repr(slow)  # NaN parts are equal only as text
