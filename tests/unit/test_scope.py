from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from trawl.errors import ConfigError
from trawl.frontier.scope import (
    CrawlScope,
    ScopeCheck,
    ScopeDecision,
    ScopeRule,
    ScopeType,
    SeedScope,
    Standing,
    seed_id_of,
)
from trawl.frontier.scope_patterns import compile_patterns
from trawl.urls.registered_domain import registered_domain

if TYPE_CHECKING:
    from collections.abc import Iterator

SEED = "https://www.example.org/docs/guide/intro.html"
AT_SEED = Standing(0)


def one(kind: ScopeType, **keys: object) -> CrawlScope:
    return CrawlScope([SeedScope(SEED, kind, **keys)])  # type: ignore[arg-type]


def queued(scope: CrawlScope, url: str, source: Standing = AT_SEED) -> bool:
    return scope.decide(url, source).queue


@pytest.mark.parametrize(
    ("kind", "inside", "outside"),
    [
        (ScopeType.PAGE, [], ["https://www.example.org/docs/guide/other.html"]),
        (
            ScopeType.PREFIX,
            ["https://www.example.org/docs/guide/", "https://example.org/docs/guide/a/b?x=1"],
            ["https://www.example.org/docs/", "https://www.example.org/docs/guidebook"],
        ),
        (
            ScopeType.HOST,
            ["https://example.org/", "http://www.example.org:8080/x"],
            ["https://api.example.org/", "https://example.com/"],
        ),
        (
            ScopeType.DOMAIN,
            ["https://api.example.org/v1", "http://a.b.example.org/"],
            ["https://example.com/", "https://example.org.evil.net/"],
        ),
        (ScopeType.ANY, ["https://anything.test/", "http://10.0.0.1/"], []),
        (ScopeType.CUSTOM, [], ["https://www.example.org/docs/guide/x"]),
    ],
)
def test_each_scope_type(kind: ScopeType, inside: list[str], outside: list[str]) -> None:
    scope = one(kind)
    for url in inside:
        assert scope.decide(url, AT_SEED) == ScopeDecision(
            True, ScopeRule.SCOPE, 0, Standing(0, 1, 0)
        )
        assert scope.check(url) == ScopeCheck(True, ScopeRule.SCOPE, SEED)
    for url in outside:
        assert scope.decide(url, AT_SEED) == ScopeDecision(False, ScopeRule.SCOPE, 0)
        assert scope.check(url) == ScopeCheck(False, ScopeRule.SCOPE, None)


def test_the_seed_is_always_in_scope() -> None:
    scope = CrawlScope([SeedScope(SEED, ScopeType.CUSTOM, exclude=("intro",))], ("guide",))
    assert scope.decide(SEED, Standing(0, 7, 3)) == ScopeDecision(
        True, ScopeRule.SEED, 0, Standing(0)
    )
    assert scope.check(SEED) == ScopeCheck(True, ScopeRule.SEED, SEED)
    assert scope.seed_standing(SEED) == Standing(0)
    assert scope.seed_standing("https://example.org/") is None


_hosts = st.from_regex(r"[a-z]{1,8}(\.[a-z]{1,8}){0,2}\.(org|com|co\.uk)", fullmatch=True)
_paths = st.from_regex(r"(/[a-z0-9]{0,6}){1,4}", fullmatch=True)


@given(
    host=_hosts,
    seed_path=_paths,
    path=_paths,
    seed_scheme=st.sampled_from(["http", "https"]),
    scheme=st.sampled_from(["http", "https"]),
    seed_www=st.booleans(),
    www=st.booleans(),
    kind=st.sampled_from([ScopeType.PREFIX, ScopeType.HOST, ScopeType.DOMAIN]),
)
def test_scheme_and_www_do_not_matter(
    host: str,
    seed_path: str,
    path: str,
    seed_scheme: str,
    scheme: str,
    seed_www: bool,
    www: bool,
    kind: ScopeType,
) -> None:
    def spell(scheme: str, www: bool, path: str) -> str:
        return f"{scheme}://{'www.' if www else ''}{host}{path}"

    # A host the Public Suffix List names a suffix (sa.com, us.com: CentralNic's) has
    # "www." as a registered domain of its own: not the same site, rightly.
    assume(registered_domain(f"www.{host}") == registered_domain(host))
    scope = CrawlScope([SeedScope(spell(seed_scheme, seed_www, seed_path), kind)])
    plain = scope.check(spell("https", False, path)).in_scope
    assert scope.check(spell(scheme, www, path)).in_scope == plain
    under = seed_path[: seed_path.rfind("/") + 1] + path.lstrip("/")
    assert scope.check(spell(scheme, www, under)).in_scope  # under the seed's directory


def test_prefix_with_a_query_takes_the_directory() -> None:
    scope = CrawlScope([SeedScope("https://ex.org/a/b?next=/c/d", ScopeType.PREFIX)])
    assert scope.check("https://ex.org/a/x").in_scope
    assert not scope.check("https://ex.org/c/d").in_scope


def test_union_credits_the_seed_that_found_it() -> None:
    a = SeedScope("https://a.test/", ScopeType.DOMAIN)
    b = SeedScope("https://b.test/", ScopeType.DOMAIN)
    both = SeedScope("https://c.test/", ScopeType.CUSTOM, include=(r"\.test/shared",))
    scope = CrawlScope([a, b, both])
    # a page of a links to b: in b's scope, so queued and credited to b.
    assert scope.decide("https://www.b.test/x", Standing(0, 2)) == ScopeDecision(
        True, ScopeRule.SCOPE, 1, Standing(1, 3, 0)
    )
    # in a's and c's scope, found from c: stays c's.
    assert scope.decide("https://a.test/shared", Standing(2, 1)) == ScopeDecision(
        True, ScopeRule.INCLUDE, 2, Standing(2, 2, 0)
    )
    # found from b, in a's and c's: the lowest-numbered member, a.
    assert scope.decide("https://a.test/shared", Standing(1, 1)).seed == 0
    assert scope.check("https://a.test/shared") == ScopeCheck(
        True, ScopeRule.SCOPE, "https://a.test/"
    )
    assert not queued(scope, "https://d.test/", Standing(0, 1))


@pytest.mark.parametrize("hops", [0, 1, 2, 3])
def test_extra_hops_follow_exactly_n_hops_out(hops: int) -> None:
    scope = one(ScopeType.HOST, extra_hops=hops)
    source = AT_SEED
    for n in range(1, hops + 1):
        decision = scope.decide(f"https://out{n}.test/", source)
        assert decision == ScopeDecision(True, ScopeRule.EXTRA_HOPS, 0, Standing(0, n, n))
        assert decision.standing is not None
        source = decision.standing
    rule = ScopeRule.EXTRA_HOPS if hops else ScopeRule.SCOPE
    assert scope.decide("https://beyond.test/", source) == ScopeDecision(False, rule, 0)
    # a link back into scope is queued and its off-scope hops start again
    assert scope.decide("https://example.org/back", source) == ScopeDecision(
        True, ScopeRule.SCOPE, 0, Standing(0, hops + 1, 0)
    )


def test_max_depth_counts_hops_from_the_seed() -> None:
    scope = one(ScopeType.ANY, max_depth=2)
    assert queued(scope, "https://x.test/1", Standing(0, 0))
    assert queued(scope, "https://x.test/2", Standing(0, 1))
    assert scope.decide("https://x.test/3", Standing(0, 2)) == ScopeDecision(
        False, ScopeRule.MAX_DEPTH, 0
    )


def test_max_depth_applies_to_extra_hops_too() -> None:
    scope = one(ScopeType.HOST, max_depth=1, extra_hops=5)
    assert scope.decide("https://out.test/", Standing(0, 1)).rule is ScopeRule.MAX_DEPTH


def test_a_deeper_member_takes_what_a_shallow_one_cannot() -> None:
    shallow = SeedScope("https://a.test/", ScopeType.ANY, max_depth=1)
    deep = SeedScope("https://b.test/", ScopeType.DOMAIN)
    scope = CrawlScope([shallow, deep])
    assert scope.decide("https://b.test/x", Standing(0, 3)) == ScopeDecision(
        True, ScopeRule.SCOPE, 1, Standing(1, 4, 0)
    )


def test_an_exclude_always_wins() -> None:
    scope = CrawlScope(
        [SeedScope(SEED, ScopeType.HOST, include=("/tag/",), exclude=("/tag/", "/private/"))],
        exclude=(r"\?replytocom=",),
    )
    for url in ("https://example.org/tag/a", "https://example.org/private/x"):
        assert scope.decide(url, AT_SEED) == ScopeDecision(False, ScopeRule.EXCLUDE, 0)
        assert scope.check(url) == ScopeCheck(False, ScopeRule.EXCLUDE, SEED)
    crawl_wide = "https://example.org/a?replytocom=3"
    assert scope.decide(crawl_wide, AT_SEED) == ScopeDecision(False, ScopeRule.EXCLUDE, 0)
    assert scope.check(crawl_wide) == ScopeCheck(False, ScopeRule.EXCLUDE, None)


def test_an_excluded_url_gets_no_extra_hops() -> None:
    scope = CrawlScope([SeedScope(SEED, ScopeType.HOST, extra_hops=2)], exclude=("ads",))
    assert scope.decide("https://ads.test/", AT_SEED).rule is ScopeRule.EXCLUDE
    own = CrawlScope([SeedScope(SEED, ScopeType.ANY, exclude=("ads",), extra_hops=2)])
    assert own.decide("https://ads.test/", AT_SEED).rule is ScopeRule.EXCLUDE


def test_one_seeds_exclude_does_not_remove_another_seeds_pages() -> None:
    a = SeedScope("https://a.test/", ScopeType.DOMAIN, exclude=("/tag/",))
    b = SeedScope("https://b.test/", ScopeType.ANY)
    scope = CrawlScope([a, b])
    assert scope.decide("https://a.test/tag/x", Standing(0, 1)) == ScopeDecision(
        True, ScopeRule.SCOPE, 1, Standing(1, 2, 0)
    )


def test_custom_is_includes_only() -> None:
    scope = one(ScopeType.CUSTOM, include=(r"^https://[^/]*example\.org/docs/",))
    assert scope.decide("https://example.org/docs/x", AT_SEED) == ScopeDecision(
        True, ScopeRule.INCLUDE, 0, Standing(0, 1, 0)
    )
    assert scope.check("https://www.example.org/docs/x").rule is ScopeRule.INCLUDE
    assert not queued(scope, "https://www.example.org/blog/")


def test_includes_widen_a_typed_scope() -> None:
    scope = one(ScopeType.PREFIX, include=(r"//cdn\.example\.org/",))
    assert scope.check("https://cdn.example.org/a.html") == ScopeCheck(
        True, ScopeRule.INCLUDE, SEED
    )
    assert scope.check("https://www.example.org/docs/guide/b").rule is ScopeRule.SCOPE


def test_run_time_exclusions_make_a_new_scope() -> None:
    scope = one(ScopeType.ANY)
    narrowed = scope.with_exclusions(("/calendar/",))
    assert scope.check("https://x.test/calendar/2030").in_scope
    assert narrowed.check("https://x.test/calendar/2030").rule is ScopeRule.EXCLUDE
    assert narrowed.seeds == scope.seeds


@given(
    seed=st.integers(0, 2**38 - 1),
    depth=st.integers(0, 0xFFFF),
    off_hops=st.integers(0, 0xFF),
    leaf=st.booleans(),
)
def test_standing_packs_into_one_integer(seed: int, depth: int, off_hops: int, leaf: bool) -> None:
    standing = Standing(seed, depth, off_hops, leaf)
    assert Standing.unpack(standing.pack()) == standing
    assert 0 <= standing.pack() < 2**63  # an SQLite INTEGER


@given(st.integers(-(2**63), 2**63 - 1))
def test_any_stored_integer_unpacks_to_a_valid_standing(packed: int) -> None:
    Standing.unpack(packed)  # a corrupt row must not raise in the loop


def test_seed_ids_are_stable_and_fit() -> None:
    assert seed_id_of(SEED) == seed_id_of(SEED)
    assert seed_id_of(SEED) != seed_id_of("https://example.com/")
    assert 0 <= seed_id_of(SEED) < 2**38
    ids = [seed_id_of(SEED), seed_id_of("https://b.test/")]
    scope = CrawlScope(
        [SeedScope(SEED, ScopeType.HOST), SeedScope("https://b.test/", ScopeType.HOST)],
        seed_ids=ids,
    )
    assert scope.seed_standing("https://b.test/") == Standing(ids[1])
    assert scope.decide("https://b.test/x", Standing(ids[1])).standing == Standing(ids[1], 1)
    assert scope.seed_url(ids[0]) == SEED


def test_off_scope_redirect_is_captured_as_a_leaf_or_dropped() -> None:
    seeds = [SeedScope(SEED, ScopeType.HOST)]
    capture = CrawlScope(seeds)
    decision = capture.decide_redirect("https://elsewhere.test/", Standing(0, 2))
    assert decision == ScopeDecision(True, ScopeRule.CAPTURE, 0, Standing(0, 2, 0, leaf=True))
    # The captured page's links are not followed, even those back in scope.
    assert capture.decide("https://elsewhere.test/a", Standing(0, 2, 0, True)).rule is (
        ScopeRule.CAPTURE
    )
    assert not queued(capture, "https://example.org/back", Standing(0, 2, 0, True))
    drop = CrawlScope(seeds, capture_redirects=False)
    assert drop.decide_redirect("https://elsewhere.test/", Standing(0, 2)) == ScopeDecision(
        False, ScopeRule.SCOPE, 0
    )
    # In scope: queued at the same depth (a redirect is not a hop); excluded: skipped.
    assert capture.decide_redirect("https://example.org/moved", Standing(0, 2)).standing == (
        Standing(0, 2)
    )
    narrowed = CrawlScope(seeds, ("/moved",))
    assert not narrowed.decide_redirect("https://x.test/moved", Standing(0, 2)).queue


def test_redirect_on_an_allowed_hop_is_that_hop() -> None:
    scope = one(ScopeType.HOST, extra_hops=1)
    hop = scope.decide("https://out.test/", AT_SEED)
    assert hop.standing == Standing(0, 1, 1)
    moved = scope.decide_redirect("https://out2.test/", Standing(0, 1, 1))
    assert moved == ScopeDecision(True, ScopeRule.EXTRA_HOPS, 0, Standing(0, 1, 1))
    # From in scope, a redirect out spends a hop like a link would (its links then stop).
    assert scope.decide_redirect("https://out.test/", Standing(0, 1)).standing == (
        Standing(0, 1, 1)
    )
    assert not queued(scope, "https://further.test/", Standing(0, 1, 1))


def test_listed_urls_need_some_seeds_scope() -> None:
    scope = CrawlScope(
        [SeedScope(SEED, ScopeType.PREFIX), SeedScope("https://b.test/", ScopeType.DOMAIN)],
        ("/private/",),
    )
    assert scope.decide_listed("https://www.example.org/docs/guide/x", 1) == ScopeDecision(
        True, ScopeRule.SCOPE, 0, Standing(0, 1)
    )
    assert scope.decide_listed("https://news.b.test/y", 1).standing == Standing(1, 1)
    assert scope.decide_listed("https://www.example.org/blog/", 1).rule is ScopeRule.SCOPE
    assert not scope.decide_listed("https://www.example.org/blog/", 1).queue
    assert scope.decide_listed("https://b.test/private/1", 1).rule is ScopeRule.EXCLUDE
    assert one(ScopeType.PREFIX, max_depth=1).decide_listed(SEED + "x", 2).queue is False


def test_a_standing_naming_no_seed_follows_the_crawls_default() -> None:
    seeds = [SeedScope(SEED, ScopeType.HOST)]
    stranger = Standing(12345, 3)
    assert CrawlScope(seeds).decide("https://any.test/", stranger).standing == Standing(12345, 4)
    closed = CrawlScope(seeds, open_fallback=False)
    assert not closed.decide("https://any.test/", stranger).queue
    assert closed.decide("https://example.org/a", stranger).standing == Standing(0, 4)
    assert CrawlScope([]).decide("https://any.test/", AT_SEED).queue
    assert CrawlScope([]).check("https://any.test/").in_scope
    assert CrawlScope([]).is_open
    assert not closed.is_open


def test_with_seed_adds_or_replaces() -> None:
    scope = one(ScopeType.PAGE)
    wider = scope.with_seed(SeedScope(SEED, ScopeType.HOST), 0)
    assert wider.seeds == (SeedScope(SEED, ScopeType.HOST),)
    two = scope.with_seed(SeedScope("https://b.test/", ScopeType.HOST), 7)
    assert two.seed_ids == (0, 7)
    assert two.check("https://b.test/z") == ScopeCheck(True, ScopeRule.SCOPE, "https://b.test/")


def test_explain_names_the_rule() -> None:
    scope = CrawlScope([SeedScope(SEED, ScopeType.HOST, max_depth=1)], ("/tag/",))
    url = "https://example.org/tag/x"
    assert scope.explain(url, scope.decide(url, AT_SEED)) == "exclude /tag/"
    deep = scope.decide("https://example.org/a", Standing(0, 1))
    assert scope.explain("https://example.org/a", deep) == f"max_depth 1 of {SEED}"
    out = scope.decide("https://out.test/", AT_SEED)
    assert scope.explain("https://out.test/", out) == f"scope host of {SEED}"


def test_depth_saturates_instead_of_overflowing() -> None:
    deepest = Standing(0, 0xFFFF)
    assert one(ScopeType.ANY).decide("https://x.test/", deepest).standing == deepest


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"max_depth": -1}, "max_depth = -1"),
        ({"extra_hops": -2}, "extra_hops = -2"),
        ({"extra_hops": 256}, "extra_hops = 256"),
    ],
)
def test_bad_seed_scope_values(keys: dict[str, int], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        SeedScope(SEED, **keys)  # type: ignore[arg-type]


def test_a_pattern_re2_refuses_names_its_key() -> None:
    with pytest.raises(ConfigError, match=r"^seeds\[1\]\.include\[1\]: '\(a\)\\\\1' is not"):
        CrawlScope([SeedScope(SEED), SeedScope(SEED, include=("ok", r"(a)\1"))])
    with pytest.raises(ConfigError, match=r"^scope\.exclude\[0\]: '\(\?=x\)'"):
        CrawlScope([SeedScope(SEED)], exclude=("(?=x)",))


def test_a_catastrophic_pattern_runs_in_linear_time() -> None:
    patterns = compile_patterns((r"(a+)+$", r"(x|x)*y"), "scope.exclude")
    url = "https://ex.org/" + "a" * 5000 + "!" + "x" * 5000
    started = time.perf_counter()
    assert patterns.matching(url) == []
    assert time.perf_counter() - started < 0.1  # Python's re would take longer than the universe


def test_repr_shows_the_scope() -> None:
    scope = CrawlScope([SeedScope(SEED, ScopeType.HOST), SeedScope(SEED)], ("x",))
    assert repr(scope) == "<CrawlScope seeds=2 types=any,host excludes=1>"


def test_derived_scopes_decide_as_if_built_whole() -> None:
    base = [SeedScope(SEED, ScopeType.PREFIX), SeedScope("https://b.test/", ScopeType.DOMAIN)]
    more = [
        (7, SeedScope("https://c.test/", ScopeType.HOST, include=("/shared/",))),
        (8, SeedScope("https://d.test/x/", ScopeType.PAGE)),
        (9, SeedScope("https://b.test/", ScopeType.PAGE)),  # a seed given again: replaced
    ]
    derived = CrawlScope(base).with_seeds(more[:2]).with_exclusions(("/tag/",))
    whole = CrawlScope([*base, more[0][1], more[1][1]], ("/tag/",), seed_ids=[0, 1, 7, 8])
    replaced = derived.with_seeds(more[2:])
    whole_replaced = CrawlScope(
        [base[0], more[2][1], more[0][1], more[1][1]], ("/tag/",), seed_ids=[0, 1, 7, 8]
    )
    urls = [
        "https://www.example.org/docs/guide/x", "https://api.b.test/", "https://c.test/a",
        "https://e.test/shared/1", "https://d.test/x/", "https://c.test/tag/1", "https://b.test/",
    ]  # fmt: skip
    for url in urls:
        assert derived.check(url) == whole.check(url), url
        assert replaced.check(url) == whole_replaced.check(url), url
        for source in (Standing(0, 1), Standing(7, 2), Standing(1, 0)):
            assert derived.decide(url, source) == whole.decide(url, source), (url, source)
    assert CrawlScope(base).check("https://c.test/a").in_scope is False  # the old one stays


def test_a_change_to_a_big_scope_is_quick() -> None:
    seeds = [SeedScope(f"https://s{n}.test/", ScopeType.DOMAIN) for n in range(20_000)]
    scope = CrawlScope(seeds)
    started = time.perf_counter()
    scope = scope.with_exclusions(("/tag/",)).with_seed(SeedScope("https://new.test/"), 99_999)
    elapsed = time.perf_counter() - started
    assert scope.check("https://new.test/x").seed == "https://new.test/"
    assert elapsed < 0.1, elapsed  # a full build of 20,000 seeds takes ~0.5 s


def test_may_hold_tells_sites_no_seed_can_reach() -> None:
    tied = CrawlScope(
        [SeedScope(SEED, ScopeType.PREFIX), SeedScope("https://b.test/", ScopeType.DOMAIN)]
    )
    assert tied.may_hold("example.org")
    assert tied.may_hold("b.test")
    assert not tied.may_hold("elsewhere.test")
    assert tied.with_seed(SeedScope("https://c.test/x", ScopeType.PAGE), 5).may_hold("c.test")
    assert CrawlScope([SeedScope(SEED, ScopeType.HOST, include=("/x",))]).may_hold("any.test")
    assert CrawlScope([SeedScope(SEED)]).may_hold("any.test")  # `any`
    assert CrawlScope([]).may_hold("any.test")
    assert not CrawlScope([], open_fallback=False).may_hold("any.test")


def test_a_known_site_decides_as_a_computed_one() -> None:
    scope = CrawlScope(
        [SeedScope(SEED, ScopeType.DOMAIN), SeedScope("https://b.co.uk/", ScopeType.DOMAIN)]
    )
    for url, site in (("https://x.b.co.uk/a", "b.co.uk"), ("https://example.org/x", "example.org"),
                      ("https://c.test/", "c.test")):  # fmt: skip
        assert scope.decide(url, AT_SEED, site) == scope.decide(url, AT_SEED)


_SEED_URLS = ["https://a.test/", "https://b.test/x/", "https://c.test/y.html"]
_LINK_URLS = [*_SEED_URLS, "https://a.test/z", "https://d.test/tag/1", "https://b.test/x/deep/q"]


@given(
    kinds=st.lists(st.sampled_from(list(ScopeType)), min_size=0, max_size=3),
    max_depth=st.sampled_from([0, 0, 2]),
    seed_excludes=st.booleans(),
    crawl_excludes=st.booleans(),
    source=st.builds(
        Standing,
        st.integers(0, 3),
        st.integers(0, 5),
        st.integers(0, 1),
        st.booleans(),
    ),
)
def test_issue_17_a_page_s_uniform_decision_is_what_decide_answers(
    kinds: list[ScopeType],
    max_depth: int,
    seed_excludes: bool,
    crawl_excludes: bool,
    source: Standing,
) -> None:
    seeds = [
        SeedScope(
            url,
            kind,
            include=("/x/",) if kind is ScopeType.CUSTOM else (),
            exclude=("/tag/",) if seed_excludes else (),
            max_depth=max_depth,
        )
        for url, kind in zip(_SEED_URLS, kinds, strict=False)
    ]
    scope = CrawlScope(seeds, ("/tag/",) if crawl_excludes else ())
    uniform = scope.uniform_link_decision(source)
    for url in _LINK_URLS:
        if uniform is not None and not scope.is_seed_url(url):
            assert uniform == scope.decide(url, source), url
    # The default scope (one `any` seed, nothing else) has one: the intake's fast path.
    default = CrawlScope([SeedScope("https://a.test/")])
    assert default.uniform_link_decision(Standing(0, 1)) == default.decide(
        "https://e.test/", Standing(0, 1)
    )
    assert default.uniform_link_decision(Standing(0, 1, leaf=True)) is None


_HOSTS = ["a.test", "b.test", "www.a.test", "c.b.test"]
_PATHS = ["/", "/x/", "/x/y.html", "/tag/1"]
_seed_scopes = st.builds(
    SeedScope,
    st.sampled_from([f"https://{h}{p}" for h in _HOSTS for p in _PATHS]),
    st.sampled_from(list(ScopeType)),
    st.sampled_from([(), ("/tag/",), ("^https://c",)]),
    st.sampled_from([(), ("/y",)]),
    st.sampled_from([0, 1, 3]),
    st.sampled_from([0, 1]),
)


@given(steps=st.lists(st.lists(_seed_scopes, min_size=1, max_size=4), min_size=1, max_size=8))
def test_seeds_added_in_steps_decide_as_if_built_whole(
    steps: list[list[SeedScope]], monkeypatch_module: pytest.MonkeyPatch
) -> None:
    """Seeds added call by call (kept in a second table, then merged into the first, or
    every table built again when one replaces a seed) answer as one scope built from the
    final seed list, where a seed given again keeps its first place with its new scope."""
    final: dict[str, SeedScope] = {}
    for seed in steps[0]:
        final.setdefault(seed.url, seed)  # a scope built whole keeps duplicates: not here
    first = list(final.values())
    scope = CrawlScope(first, seed_ids=[seed_id_of(s.url) for s in first])
    later = steps[1:]
    versions = [(scope, list(final.values()))]
    for step in later:
        scope = scope.with_seeds([(seed_id_of(s.url), s) for s in step])
        for seed in step:
            final[seed.url] = seed  # a dict keeps the first place of a URL given again
        versions.append((scope, list(final.values())))
    whole = CrawlScope(list(final.values()), seed_ids=[seed_id_of(u) for u in final])
    for version, seeds in versions:  # each scope made on the way answers as it did
        assert version.seeds == tuple(seeds)
        built = CrawlScope(seeds, seed_ids=[seed_id_of(s.url) for s in seeds])
        for url in ("https://a.test/x/z", "https://c.b.test/tag/1", "https://d.test/y"):
            assert version.check(url) == built.check(url), url
    assert scope.seeds == whole.seeds
    assert repr(scope) == repr(whole)
    for host in [*_HOSTS, "d.test"]:
        for path in [*_PATHS, "/x/z", "/other"]:
            url = f"https://{host}{path}"
            assert scope.check(url) == whole.check(url), url
            assert scope.decide_listed(url, 2) == whole.decide_listed(url, 2), url
            for seed in final.values():
                source = Standing(seed_id_of(seed.url), 1, 0)
                assert scope.decide(url, source) == whole.decide(url, source), (url, source)
        assert scope.may_hold(host.removeprefix("www.")) == whole.may_hold(
            host.removeprefix("www.")
        )


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    """Merge the added seeds' table after a handful, so the steps above cross merges."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("trawl.frontier.scope._MERGE_MIN", 3)
        patch.setattr("trawl.frontier.scope._MERGE_SHARE", 2)
        yield patch


def test_many_seeds_sharing_an_include_list_are_added_in_linear_time() -> None:
    """The [scope] default includes are every seed's: each seed added copied the group's
    whole member list: 50,000 seeds added at once took ~n**2/2 list copies (100,000: 25 s)."""
    shared = ("/shared/",)
    seeds = [
        SeedScope(f"https://s{n}.test/", ScopeType.HOST, include=shared) for n in range(50_000)
    ]
    base = CrawlScope(seeds[:1_000])
    started = time.perf_counter()
    scope = base.with_seeds([(seed_id_of(s.url), s) for s in seeds[1_000:]])
    elapsed = time.perf_counter() - started
    assert scope.check("https://other.test/shared/x").seed == seeds[0].url
    assert scope.check("https://s49999.test/a").seed == seeds[-1].url
    assert len(scope.seeds) == 50_000
    assert len(base.seeds) == 1_000  # the old one stays
    assert elapsed < 2.5, elapsed  # ~0.7 s; quadratic, ~6 s


def test_a_seed_added_to_a_hundred_thousand_is_quick() -> None:
    """The API's POST /v1/seeds on a crawl seeded with 100,000 sites: each call built every
    table again, 30-48 ms on the crawl loop (430-490 ms with a million seeds)."""
    scope = CrawlScope([SeedScope(f"https://s{n}.test/", ScopeType.DOMAIN) for n in range(100_000)])
    took = []
    for n in range(60):
        seed = SeedScope(f"https://new{n}.test/", ScopeType.HOST)
        started = time.perf_counter()
        scope = scope.with_seed(seed, seed_id_of(seed.url))
        took.append(time.perf_counter() - started)
        assert scope.check(f"https://new{n}.test/a").seed == seed.url
    assert scope.check("https://s99999.test/a").in_scope
    took.sort()
    assert took[len(took) // 2] < 0.005, took  # the median; the whole copy took >= 30 ms


def test_a_seed_s_site_is_the_one_the_scope_computed_when_it_was_added() -> None:
    # wiring.add_seeds reads it instead of a Public Suffix lookup per seed.
    first = CrawlScope([SeedScope("https://shop.example.co.uk/a", ScopeType.ANY)])
    later = first.with_seeds([(7, SeedScope("http://blog.example.org/", ScopeType.DOMAIN))])
    assert later.seed_site("https://shop.example.co.uk/a") == "example.co.uk"
    assert later.seed_site("http://blog.example.org/") == "example.org"
    assert later.seed_site("http://blog.example.org/other") is None
    assert first.seed_site("http://blog.example.org/") is None
