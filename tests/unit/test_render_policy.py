"""render.policy: which flagged pages go to the render queue (issue 18)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trawl.render.policy import RenderBook, RenderDecision, RenderRules, RenderStats, RenderWhy

FLAG = "empty-mount"  # a detector reason (parse.render_need.RenderReason value)


def fill(book: RenderBook, site: str, pages: int) -> None:
    for _ in range(pages):
        book.note_plain_page(site)


def decide_many(book: RenderBook, site: str, count: int, reason: str = FLAG) -> list[str]:
    return [book.decide(f"https://{site}/{n}", site, reason).why.value for n in range(count)]


def learn(book: RenderBook, site: str, renders: int, *, productive: bool = False) -> None:
    gain = 10_000 if productive else 0
    for _ in range(renders):
        book.note_render(site, text_gained_chars=gain, links_gained=0)


# -- decisions -------------------------------------------------------------------------------
def test_a_page_the_detector_did_not_flag_is_not_rendered() -> None:
    book = RenderBook(RenderRules())
    book.note_plain_page("a.test")
    assert book.decide("https://a.test/", "a.test", "") == RenderDecision(
        False, RenderWhy.NOT_DETECTED
    )
    assert book.site_state("a.test")["renders"] == 0


def test_a_flagged_page_is_rendered_and_counted_at_once() -> None:
    book = RenderBook(RenderRules())
    book.note_plain_page("a.test")
    decision = book.decide("https://a.test/", "a.test", FLAG)
    assert decision == RenderDecision(True, RenderWhy.DETECTED)
    assert book.site_state("a.test") == {
        "plain_pages": 1,
        "renders": 1,
        "unproductive_streak": 0,
        "since_recheck": 0,
    }


def test_a_decision_agrees_with_its_why() -> None:
    with pytest.raises(ValueError, match="render=True contradicts why=site_share"):
        RenderDecision(True, RenderWhy.SITE_SHARE)
    assert [why.value for why in RenderWhy if why.renders] == ["detected", "forced"]


def test_site_share_after_the_first_pages() -> None:
    book = RenderBook(RenderRules(site_share=0.2, site_min_pages=3))
    fill(book, "a.test", 20)  # floor(0.2 * 20) = 4 renders
    assert decide_many(book, "a.test", 6) == ["detected"] * 4 + ["site_share"] * 2
    fill(book, "a.test", 5)  # 25 pages: 5 renders
    assert decide_many(book, "a.test", 2) == ["detected", "site_share"]


def test_a_small_site_renders_its_first_candidates() -> None:
    book = RenderBook(RenderRules(site_share=0.2, site_min_pages=3))
    fill(book, "a.test", 1)
    assert decide_many(book, "a.test", 4) == ["detected"] * 3 + ["site_share"]


def test_shares_are_exact_decimals() -> None:
    # 0.29 * 100 is 28.999999999999996 in floats; the operator meant 29.
    assert RenderRules(site_share=0.29, site_min_pages=0).site_cap(100) == 29
    assert RenderRules(overall_share=0.07, overall_min=0).overall_cap(100) == 7
    assert RenderRules(site_share=0.2, site_min_pages=0).site_cap(14) == 2
    assert RenderRules(site_share=1, site_min_pages=0).site_cap(9) == 9


def test_overall_share_across_sites() -> None:
    book = RenderBook(RenderRules(site_share=1.0, overall_share=0.05, overall_min=2))
    fill(book, "a.test", 40)
    fill(book, "b.test", 40)  # 80 plain pages: floor(0.05 * 80) = 4 renders in all
    assert decide_many(book, "a.test", 3) == ["detected"] * 3
    assert decide_many(book, "b.test", 2) == ["detected", "overall_share"]
    assert repr(book) == ("<RenderBook sites=2 plain_pages=80 renders=4/4 unproductive_sites=0>")


def test_overall_min_lets_a_crawl_start_rendering() -> None:
    book = RenderBook(RenderRules(site_min_pages=1, overall_min=2))
    for site in ("a.test", "b.test", "c.test"):
        book.note_plain_page(site)
    assert [
        book.decide(f"https://{s}/", s, FLAG).why.value for s in ("a.test", "b.test", "c.test")
    ] == [
        "detected",
        "detected",
        "overall_share",
    ]


def test_a_site_share_refusal_is_checked_before_the_overall_one() -> None:
    book = RenderBook(RenderRules(site_min_pages=0, overall_min=0))
    book.note_plain_page("a.test")
    assert book.decide("https://a.test/", "a.test", FLAG).why is RenderWhy.SITE_SHARE


def test_a_site_never_noted_only_gets_its_first_pages() -> None:
    book = RenderBook(RenderRules(site_min_pages=1))
    assert decide_many(book, "a.test", 2) == ["detected", "site_share"]


# -- learning --------------------------------------------------------------------------------
def test_a_site_whose_renders_gain_nothing_stops_rendering() -> None:
    book = RenderBook(RenderRules(site_share=1.0, learn_after=3, recheck_every=4))
    fill(book, "a.test", 100)
    learn(book, "a.test", 2)
    assert not book.is_unproductive("a.test")
    learn(book, "a.test", 1)
    assert book.is_unproductive("a.test")
    # One candidate in four is still tried; the others are refused.
    assert decide_many(book, "a.test", 8) == ["site_unproductive"] * 3 + ["detected"] + [
        "site_unproductive"
    ] * 3 + ["detected"]
    assert book.stats().unproductive_sites == 1


def test_one_productive_render_makes_the_site_productive_again() -> None:
    book = RenderBook(RenderRules(site_share=1.0, learn_after=2, recheck_every=10))
    fill(book, "a.test", 100)
    learn(book, "a.test", 2)
    assert decide_many(book, "a.test", 1) == ["site_unproductive"]
    learn(book, "a.test", 1, productive=True)
    assert not book.is_unproductive("a.test")
    assert book.site_state("a.test")["unproductive_streak"] == 0
    assert decide_many(book, "a.test", 3) == ["detected"] * 3
    assert book.stats().unproductive_sites == 0


def test_an_unproductive_recheck_keeps_the_site_unproductive() -> None:
    book = RenderBook(RenderRules(site_share=1.0, learn_after=2, recheck_every=2))
    fill(book, "a.test", 100)
    learn(book, "a.test", 2)
    assert decide_many(book, "a.test", 2) == ["site_unproductive", "detected"]
    learn(book, "a.test", 1)
    assert book.site_state("a.test")["unproductive_streak"] == 3
    assert decide_many(book, "a.test", 2) == ["site_unproductive", "detected"]


def test_a_recheck_refused_by_the_share_is_tried_on_the_next_candidate() -> None:
    book = RenderBook(RenderRules(site_share=0.0, site_min_pages=1, learn_after=1, recheck_every=2))
    fill(book, "a.test", 10)
    assert decide_many(book, "a.test", 1) == ["detected"]  # the site's one render
    learn(book, "a.test", 1)
    assert decide_many(book, "a.test", 3) == ["site_unproductive", "site_share", "site_share"]
    book.restore_site("a.test", {**book.site_state("a.test"), "renders": 0})
    assert decide_many(book, "a.test", 1) == ["detected"]


def test_recheck_every_1_never_skips() -> None:
    book = RenderBook(RenderRules(site_share=1.0, learn_after=1, recheck_every=1))
    fill(book, "a.test", 10)
    learn(book, "a.test", 1)
    assert book.is_unproductive("a.test")
    assert decide_many(book, "a.test", 3) == ["detected"] * 3


@pytest.mark.parametrize(
    ("text", "links", "productive"),
    [
        (200, 0, True),
        (199, 0, False),
        (0, 1, True),
        (-5000, 0, False),  # a render can show less text than the plain page
        (199, 1, True),
    ],
)
def test_what_counts_as_a_gain(text: int, links: int, productive: bool) -> None:
    rules = RenderRules(min_text_gain_chars=200, min_links_gained=1)
    assert rules.is_productive(text, links) is productive


def test_gains_of_zero_make_every_render_productive() -> None:
    book = RenderBook(RenderRules(learn_after=1, min_text_gain_chars=0, min_links_gained=0))
    learn(book, "a.test", 5)
    assert not book.is_unproductive("a.test")
    assert book.stats().renders_productive == 5


# -- forcing ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("url", "forced"),
    [
        ("https://example.com/", True),
        ("http://example.com/a?b=c", True),
        ("https://www.example.com/", True),
        ("https://shop.eu.example.com:8443/cart", True),
        ("https://notexample.com/", False),
        ("https://example.com.evil.test/", False),
        ("https://other.test/?next=https://example.com/", False),
        ("https://other.test/example.com/", False),
    ],
)
def test_a_host_name_entry_matches_the_host_and_hosts_under_it(url: str, forced: bool) -> None:
    assert RenderRules(force_on=("example.com",)).is_forced_on(url) is forced


def test_a_host_name_entry_of_a_subdomain_matches_only_that_part() -> None:
    rules = RenderRules(force_on=("Shop.Example.com",))
    assert rules.is_forced_on("https://shop.example.com/x")
    assert rules.is_forced_on("https://eu.shop.example.com/x")
    assert not rules.is_forced_on("https://example.com/x")
    assert not rules.is_forced_on("https://www.example.com/shop.example.com/")


def test_host_name_entries_are_idna_encoded_and_ip_addresses_work() -> None:
    rules = RenderRules(force_on=("bücher.example", "127.0.0.5"))
    assert rules.is_forced_on("https://xn--bcher-kva.example/")
    assert rules.is_forced_on("http://127.0.0.5:8080/app")
    assert not rules.is_forced_on("http://127.0.0.50/")


def test_other_entries_are_scope_patterns_over_the_normalised_url() -> None:
    rules = RenderRules(force_on=(r"^https://a\.test/app/", r"index\.html$", "/#!/"))
    assert rules.is_forced_on("https://a.test/app/x")
    assert not rules.is_forced_on("http://a.test/app/x")
    assert rules.is_forced_on("https://b.test/docs/index.html")
    assert not rules.is_forced_on("https://b.test/docs/indexXhtml")
    assert not RenderRules().is_forced_on("https://a.test/")


def test_force_on_renders_unflagged_pages_past_learning_and_shares() -> None:
    rules = RenderRules(
        site_share=0.5,
        site_min_pages=0,
        overall_share=0.5,
        overall_min=0,
        learn_after=1,
        force_on=("spa.test",),
    )
    book = RenderBook(rules)
    book.note_plain_page("spa.test")
    learn(book, "spa.test", 1)
    assert decide_many(book, "spa.test", 3, reason="") == ["forced"] * 3
    # Forced renders count toward the overall share: 5 plain pages allow 2 renders.
    fill(book, "a.test", 4)
    assert decide_many(book, "a.test", 1) == ["overall_share"]


def test_force_off_wins_over_force_on_and_detection() -> None:
    rules = RenderRules(force_on=("example.com",), force_off=(r"^https://example\.com/static/",))
    book = RenderBook(rules)
    fill(book, "example.com", 10)
    assert book.decide("https://example.com/static/a", "example.com", "").why.value == "forced_off"
    assert book.decide("https://example.com/static/b", "example.com", FLAG).why.value == (
        "forced_off"
    )
    assert book.decide("https://example.com/app", "example.com", "").why.value == "forced"


def test_force_off_counts_only_candidates() -> None:
    book = RenderBook(RenderRules(force_off=("a.test",)))
    assert decide_many(book, "a.test", 1, reason="") == ["not_detected"]
    assert decide_many(book, "a.test", 1) == ["forced_off"]


# -- rules -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"site_share": 1.5}, r"^site_share = 1\.5: must be a number from 0 to 1$"),
        ({"site_share": float("nan")}, r"^site_share = nan: must be"),
        ({"overall_share": -0.1}, r"^overall_share = -0\.1: must be"),
        ({"overall_share": True}, r"^overall_share = True: must be"),
        ({"site_min_pages": -1}, r"^site_min_pages = -1: must be an integer >= 0$"),
        ({"overall_min": 2.5}, r"^overall_min = 2\.5: must be an integer >= 0$"),
        ({"learn_after": 0}, r"^learn_after = 0: must be an integer >= 1$"),
        ({"recheck_every": 0}, r"^recheck_every = 0: must be an integer >= 1$"),
        ({"min_text_gain_chars": -1}, r"^min_text_gain_chars = -1: must be"),
        ({"min_links_gained": False}, r"^min_links_gained = False: must be"),
        ({"force_on": ["a.test"]}, r"^force_on = \['a\.test'\]: must be a tuple of strings$"),
        ({"force_on": ("ok", "(a)\\1")}, r"^force_on\[1\]: '\(a\)\\\\1' is not a valid RE2"),
        ({"force_off": ("*.example.com",)}, r"^force_off\[0\]: '\*\.example\.com' is not a"),
        ({"force_off": ("a.test", "bad!.test")}, r"^force_off\[1\]: 'bad!\.test' looks like a"),
    ],
)
def test_bad_rules_are_refused_naming_the_field(changes: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RenderRules(**changes)  # type: ignore[arg-type]  # wrong types on purpose


def test_rules_are_values() -> None:
    assert RenderRules(force_on=("a.test",)) == RenderRules(force_on=("a.test",))
    assert hash(RenderRules()) == hash(RenderRules())
    assert repr(RenderRules(learn_after=2)) == (
        "RenderRules(site_share=0.2, site_min_pages=3, overall_share=0.05, overall_min=20,"
        " learn_after=2, recheck_every=20, min_text_gain_chars=200, min_links_gained=1,"
        " force_on=(), force_off=())"
    )


@dataclass(frozen=True)
class _Values:
    site_share: float = 0.5
    site_min_pages: int = 1
    overall_share: float = 0.25
    overall_min: int = 7
    learn_after: int = 2
    recheck_every: int = 3
    min_text_gain_chars: int = 50
    min_links_gained: int = 4
    force_on: tuple[str, ...] = ("a.test",)
    force_off: tuple[str, ...] = ("b.test",)


def test_rules_from_settings_values() -> None:
    assert RenderRules.from_settings(_Values()) == RenderRules(
        0.5, 1, 0.25, 7, 2, 3, 50, 4, ("a.test",), ("b.test",)
    )


# -- state, stats, repr ----------------------------------------------------------------------
def test_stats_count_every_decision_by_why() -> None:
    book = RenderBook(RenderRules(site_min_pages=1, learn_after=1, force_on=("f.test",),
                                  force_off=("off.test",)))  # fmt: skip
    fill(book, "a.test", 2)
    decide_many(book, "a.test", 3)  # detected, site_share, site_share
    decide_many(book, "a.test", 1, reason="")
    decide_many(book, "f.test", 1, reason="")
    decide_many(book, "off.test", 1)
    learn(book, "u.test", 1)
    decide_many(book, "u.test", 1)
    book.note_render("a.test", text_gained_chars=0, links_gained=3)
    assert book.stats() == RenderStats(
        sites=3,
        plain_pages=2,
        renders=2,
        unproductive_sites=1,
        detected=1,
        forced=1,
        not_detected=1,
        forced_off=1,
        site_share=2,
        overall_share=0,
        site_unproductive=1,
        renders_noted=2,
        renders_productive=1,
    )
    assert repr(book) == "<RenderBook sites=3 plain_pages=2 renders=2/20 unproductive_sites=1>"


def test_site_state_round_trips_through_json() -> None:
    book = RenderBook(RenderRules(site_share=1.0, learn_after=2, recheck_every=5))
    fill(book, "a.test", 30)
    decide_many(book, "a.test", 4)
    learn(book, "a.test", 2)
    decide_many(book, "a.test", 2)
    saved = json.loads(json.dumps(book.site_state("a.test")))
    assert saved == {"plain_pages": 30, "renders": 4, "unproductive_streak": 2, "since_recheck": 2}
    again = RenderBook(book.rules)
    again.restore_site("a.test", saved)
    assert repr(again) == repr(book)
    assert decide_many(again, "a.test", 3) == decide_many(book, "a.test", 3)
    assert again.site_state("a.test") == book.site_state("a.test")


def test_an_unknown_site_has_a_fresh_state() -> None:
    book = RenderBook(RenderRules())
    assert book.site_state("never.test") == {
        "plain_pages": 0,
        "renders": 0,
        "unproductive_streak": 0,
        "since_recheck": 0,
    }
    assert book.stats().sites == 0
    assert not book.is_unproductive("never.test")


def test_forget_and_restore_keep_the_crawl_wide_sums() -> None:
    book = RenderBook(RenderRules(learn_after=1))
    fill(book, "a.test", 10)
    fill(book, "b.test", 5)
    decide_many(book, "a.test", 2)
    learn(book, "b.test", 1)
    saved = book.site_state("b.test")
    book.forget_site("b.test")
    book.forget_site("never.test")
    assert repr(book) == "<RenderBook sites=1 plain_pages=10 renders=2/20 unproductive_sites=0>"
    book.restore_site("b.test", saved)
    book.restore_site("b.test", saved)  # replaces, never adds twice
    assert repr(book) == "<RenderBook sites=2 plain_pages=15 renders=2/20 unproductive_sites=1>"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([1, 2], r"^render state of 'a\.test': expected an object of counts, got \[1, 2\]$"),
        ({"plain_pages": 1}, r"^render state of 'a\.test': missing renders, unproductive_streak,"),
        (
            {"plain_pages": 1, "renders": 0, "unproductive_streak": 0, "since_recheck": 0, "x": 1},
            r"^render state of 'a\.test': unknown fields 'x'$",
        ),
        (
            {"plain_pages": -1, "renders": 0, "unproductive_streak": 0, "since_recheck": 0},
            r"^render state of 'a\.test': plain_pages = -1 is not a count \(an integer >= 0\)$",
        ),
        (
            {"plain_pages": 1, "renders": True, "unproductive_streak": 0, "since_recheck": 0},
            r": renders = True is not a count",
        ),
        (
            {"plain_pages": 1, "renders": 0, "unproductive_streak": 1.5, "since_recheck": 0},
            r": unproductive_streak = 1\.5 is not a count",
        ),
        (
            {"plain_pages": 1, "renders": 0, "unproductive_streak": 0, "since_recheck": "2"},
            r": since_recheck = '2' is not a count",
        ),
    ],
)
def test_a_damaged_state_is_refused_and_changes_nothing(data: object, message: str) -> None:
    book = RenderBook(RenderRules())
    fill(book, "a.test", 3)
    with pytest.raises(ValueError, match=message):
        book.restore_site("a.test", data)
    assert repr(book) == "<RenderBook sites=1 plain_pages=3 renders=0/20 unproductive_sites=0>"


# -- properties ------------------------------------------------------------------------------
SITES = ("a.test", "b.test", "c.test")
note_op = st.tuples(st.just("note"), st.sampled_from(SITES))
decide_op = st.tuples(st.just("decide"), st.sampled_from(SITES), st.sampled_from((FLAG, "")))
render_op = st.tuples(
    st.just("render"),
    st.sampled_from(SITES),
    st.sampled_from((-100, 0, 0, 0, 199, 200)),  # text gained: mostly none, to learn
    st.sampled_from((0, 0, 0, 1)),
)
operations = st.lists(st.one_of(note_op, decide_op, render_op), max_size=200)
rules_strategy = st.builds(
    RenderRules,
    site_share=st.sampled_from((0.0, 0.1, 0.2, 0.29, 0.5, 1.0)),
    site_min_pages=st.integers(0, 4),
    overall_share=st.sampled_from((0.0, 0.05, 0.07, 0.3, 1.0)),
    overall_min=st.integers(0, 6),
    learn_after=st.integers(1, 4),
    recheck_every=st.integers(1, 5),
)


def apply(book: RenderBook, op: tuple[object, ...]) -> RenderDecision | None:
    match op:
        case ("note", str(site)):
            book.note_plain_page(site)
        case ("decide", str(site), str(reason)):
            return book.decide(f"https://{site}/p", site, reason)
        case ("render", str(site), int(text), int(links)):
            book.note_render(site, text_gained_chars=text, links_gained=links)
    return None


@settings(max_examples=300, deadline=None)
@given(rules=rules_strategy, ops=operations)
def test_the_shares_are_never_exceeded(rules: RenderRules, ops: list[tuple[object, ...]]) -> None:
    book = RenderBook(rules)
    for op in ops:
        apply(book, op)
        for site in SITES:
            state = book.site_state(site)
            assert state["renders"] <= rules.site_cap(state["plain_pages"])
        stats = book.stats()
        assert stats.renders <= rules.overall_cap(stats.plain_pages)
        assert stats.renders == sum(book.site_state(s)["renders"] for s in SITES)
        assert stats.plain_pages == sum(book.site_state(s)["plain_pages"] for s in SITES)


@settings(max_examples=200, deadline=None)
@given(rules=rules_strategy, ops=operations)
def test_an_unproductive_site_renders_one_candidate_in_recheck_every(
    rules: RenderRules, ops: list[tuple[object, ...]]
) -> None:
    book = RenderBook(rules)
    refused = dict.fromkeys(SITES, 0)  # site_unproductive in a row, since a render or the verdict
    for op in ops:
        site = str(op[1])
        was_unproductive = book.is_unproductive(site)
        decision = apply(book, op)
        if op[0] == "render" and was_unproductive != book.is_unproductive(site):
            refused[site] = 0
        if decision is None or not was_unproductive:
            continue
        if decision.why is RenderWhy.SITE_UNPRODUCTIVE:
            refused[site] += 1
        elif decision.render:
            assert refused[site] == rules.recheck_every - 1
            refused[site] = 0
        assert refused[site] <= rules.recheck_every - 1


@settings(max_examples=200, deadline=None)
@given(rules=rules_strategy, ops=operations, split=st.integers(0, 200))
def test_saving_and_restoring_every_site_changes_no_decision(
    rules: RenderRules, ops: list[tuple[object, ...]], split: int
) -> None:
    kept, moved = RenderBook(rules), RenderBook(rules)
    for op in ops[:split]:
        apply(kept, op)
        apply(moved, op)
    restored = RenderBook(rules)
    for site in SITES:
        restored.restore_site(site, json.loads(json.dumps(moved.site_state(site))))
    for op in ops[split:]:
        assert apply(kept, op) == apply(restored, op)
    for site in SITES:
        assert kept.site_state(site) == restored.site_state(site)
    a, b = kept.stats(), restored.stats()
    assert (a.plain_pages, a.renders, a.unproductive_sites) == (
        b.plain_pages,
        b.renders,
        b.unproductive_sites,
    )
