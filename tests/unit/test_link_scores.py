"""New URLs' score entries (frontier.link_scores.LinkScores.score_new) and their memo."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trawl.frontier import link_scores
from trawl.frontier.link_scores import LinkScores
from trawl.frontier.scoring import ScoringPolicy, is_fast, path_depth, score_link
from trawl.model import Line
from trawl.parse.page_work import FoundLink

_URLS = [
    "http://a.test/",
    "http://a.test/x.html",
    "http://a.test/s/x.html",
    "http://b.test/s/t/u/v.html",
]

_links = st.tuples(
    st.sampled_from(_URLS),
    st.integers(0, 70),  # pages
    st.integers(0, 9),  # sites
    st.sampled_from([0.0, 1.25, 4.0, 4.5, 7.75]),  # parent score
    st.integers(0, 70),  # site referrers
)


def _expected(
    url: str,
    pages: int,
    sites: int,
    parent: float,
    referrers: int,
    *,
    is_seed: bool = False,
    from_sitemap: bool = False,
):
    policy = ScoringPolicy()
    parts = score_link(
        inlink_pages=pages,
        inlink_sites=sites,
        parent_score=parent,
        site_referrers=referrers,
        depth=path_depth(url),
        is_seed=is_seed,
        from_sitemap=from_sitemap,
        policy=policy,
    )
    total = parts.total()
    return total, parts.to_json_text(), Line.FAST if is_fast(total, policy) else Line.SLOW


@settings(max_examples=60, deadline=None)
@given(st.lists(_links, min_size=1, max_size=60))
def test_issue_17_memoised_entries_are_the_computed_ones(tmp_path_factory, links) -> None:
    # A memo of 8 entries: the stream fills and empties it several times over.
    path = Path(tmp_path_factory.mktemp("scores")) / "inlinks.bin"
    scores = LinkScores(path)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(link_scores, "_ENTRY_MEMO_SIZE", 8)
        for url, pages, sites, parent, referrers in links:
            link = FoundLink(url, "0" * 32, url.split("/")[2])
            got = scores.score_new(link, pages, sites, parent, referrers)
            assert got == _expected(url, pages, sites, parent, referrers)
            assert len(scores._new_entries) <= 8


_unlinked = st.tuples(
    st.sampled_from(_URLS), st.integers(0, 70), st.sampled_from(["seed", "sitemap"])
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_unlinked, min_size=1, max_size=60))
def test_issue_17_memoised_seed_and_sitemap_entries_are_the_computed_ones(
    tmp_path_factory, urls
) -> None:
    path = Path(tmp_path_factory.mktemp("scores")) / "inlinks.bin"
    scores = LinkScores(path)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(link_scores, "_ENTRY_MEMO_SIZE", 8)
        for url, referrers, kind in urls:
            if kind == "seed":
                got = scores.seed(url, referrers)
            else:
                got = scores.sitemap_entry(url, referrers)
            assert got == _expected(
                url,
                0,
                0,
                0.0,
                referrers,
                is_seed=kind == "seed",
                from_sitemap=kind == "sitemap" and referrers >= 3,
            )
            assert len(scores._unlinked_entries) <= 8


def test_issue_17_a_page_s_second_like_link_is_a_memo_hit(tmp_path: Path) -> None:
    scores = LinkScores(tmp_path / "inlinks.bin")
    first = scores.score_new(FoundLink(_URLS[1], "1" * 32, "a.test"), 1, 0, 4.5, 3)
    second = scores.score_new(FoundLink("http://a.test/y.html", "2" * 32, "a.test"), 1, 0, 4.5, 3)
    assert second is first  # same key (same depth): the stored entry, not a new one
    deeper = scores.score_new(FoundLink(_URLS[2], "3" * 32, "a.test"), 1, 0, 4.5, 3)
    assert deeper[0] < first[0]  # one level deeper scores lower


_HASHES = [f"{n:032x}" for n in (1, 2, 3 << 100, 5 << 64)]
_PARTS = [
    '{"inlinkPages":1.0,"inlinkSites":0.0,"parent":1.125,"sitePopularity":0.5,'
    '"depth":-1.0,"boost":0.0,"total":1.625}',
    '{"inlinkPages":0.0,"inlinkSites":0.0,"parent":0.0,"sitePopularity":0.0,'
    '"depth":0.0,"boost":8.0,"total":8.0}',
    "not json",
]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 2), st.booleans(), st.booleans()),
        min_size=1,
        max_size=80,
    )
)
def test_issue_17_memoised_rescores_are_the_computed_ones(tmp_path_factory, ops) -> None:
    path = Path(tmp_path_factory.mktemp("scores")) / "inlinks.bin"
    scores = LinkScores(path)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(link_scores, "_ENTRY_MEMO_SIZE", 4)
        for which, parts, add, other_site in ops:
            url_hash = _HASHES[which]
            if add:  # the counts move between re-scores of the same URL
                target_site = "dst.test" if other_site else "src.test"
                scores.counter.add_page_links("src.test", [url_hash], [target_site])
            pages, sites = scores.counter.estimate(url_hash)
            expected = scores._rescore(_PARTS[parts], pages, sites)
            assert scores.rescored(url_hash, _PARTS[parts]) == expected
            assert len(scores._rescored_entries) <= 4


@given(st.integers(0, 5000))
def test_issue_19_route_weights_add_up_to_the_finder_s_count_at_each_power_of_two(
    count: int,
) -> None:
    sent = sum(LinkScores.route_weight(n) for n in range(1, count + 1))
    assert sent == (1 << (count + 1).bit_length() - 1) - 1  # the last 2**k - 1 <= count
    assert count / 2 <= sent <= count or count == 0


def test_issue_19_arrivals_rank_queued_urls_and_say_when_to_rescore(tmp_path: Path) -> None:
    scores = LinkScores(tmp_path / "inlinks.bin", counts_arrive=True)
    target = _HASHES[0]
    scores.counter.add_page_links("src.test", [target], ["dst.test"])  # found here
    assert scores.ranking.estimate(target) == (0, 0), "the finder's count is not the owner's"
    assert scores.count_arrival(target, 1, "src.test")  # 0 -> 1 page, 0 -> 1 site
    assert not scores.count_arrival(target, 1, "src.test")  # 2 pages: same power of two
    assert scores.count_arrival(target, 1, "other.test")  # 3 pages, 2 sites
    stored = scores.seed("http://dst.test/", 0)[1]
    before = json.loads(stored)
    entry = scores.rescored(target, stored)
    assert entry is not None
    after = json.loads(entry[1])
    assert after["inlinkPages"] > before["inlinkPages"]
    assert after["inlinkSites"] > before["inlinkSites"]


def test_issue_19_a_rescore_never_lowers_what_in_links_gave(tmp_path: Path) -> None:
    owner = LinkScores(tmp_path / "a.bin", counts_arrive=True)
    for n in range(40):
        owner.count_arrival(_HASHES[0], 1, f"s{n}.test")
    entry = owner.rescored(_HASHES[0], owner.seed("http://dst.test/", 0)[1])
    assert entry is not None
    # The partition moves: its new owner has counted nothing for the URL yet.
    new_owner = LinkScores(tmp_path / "b.bin", counts_arrive=True)
    again = new_owner.rescored(_HASHES[0], entry[1])
    assert again is not None
    kept, had = json.loads(again[1]), json.loads(entry[1])
    assert (kept["inlinkPages"], kept["inlinkSites"]) == (had["inlinkPages"], had["inlinkSites"])
    assert again[0] == pytest.approx(entry[0], abs=0.01)  # the total of rounded parts
