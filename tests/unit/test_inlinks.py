"""Approximate in-link counts in bounded memory (issue 5: priority scoring; pure)."""

from __future__ import annotations

import io
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trawl.frontier.inlinks import InLinkCounter
from trawl.urls.normalise import url_hash

SMALL = {"pair_capacity": 10_000}  # keeps each counter's pair filter at ~12 KB


def h(n: int) -> str:
    return url_hash(f"https://t{n % 7}.test/p/{n}")


def site_of_target(n: int) -> str:
    return f"t{n % 7}.test"


# A page: (index of its source site, indexes of the targets it links to).
Pages = list[tuple[int, list[int]]]
pages_strategy = st.lists(
    st.tuples(st.integers(0, 9), st.lists(st.integers(0, 60), max_size=12)), max_size=40
)


def exact_counts(pages: Pages) -> tuple[Counter[int], Counter[int]]:
    linking_pages: Counter[int] = Counter()
    pairs = set()
    for source, targets in pages:
        for t in set(targets):
            linking_pages[t] += 1
            if site_of_target(t) != f"t{source}.test":
                pairs.add((t, source))
    return linking_pages, Counter(t for t, _ in pairs)


def feed(counter: InLinkCounter, pages: Pages) -> None:
    for source, targets in pages:
        counter.add_page_links(
            f"t{source}.test", [h(t) for t in targets], [site_of_target(t) for t in targets]
        )


@given(pages_strategy)
@settings(max_examples=60, deadline=None)
def test_never_under_counts_even_when_everything_collides(pages: Pages) -> None:
    # 16 buckets for 61 targets: many collisions (and no halving, which would lower counts)
    counter = InLinkCounter(width=16, halve_every_links=10**9, **SMALL)
    linking_pages, linking_sites = exact_counts(pages)
    feed(counter, pages)
    for t in range(61):
        est_pages, est_sites = counter.estimate(h(t))
        assert est_pages >= linking_pages[t]
        assert est_sites >= linking_sites[t]


@given(pages_strategy)
@settings(max_examples=60, deadline=None)
def test_exact_when_the_sketch_is_roomy(pages: Pages) -> None:
    counter = InLinkCounter(width=1 << 16, halve_every_links=10**9, **SMALL)
    linking_pages, linking_sites = exact_counts(pages)
    feed(counter, pages)
    for t in range(61):
        assert counter.estimate(h(t)) == (linking_pages[t], linking_sites[t])


def test_returns_each_targets_estimates_after_counting_the_page() -> None:
    counter = InLinkCounter(width=1 << 12, **SMALL)
    a, b = h(1), h(2)  # on t1.test and t2.test
    assert counter.add_page_links("t1.test", [a, b], ["t1.test", "t2.test"]) == [(1, 0), (1, 1)]
    assert counter.add_page_links("t3.test", [b, a], ["t2.test", "t1.test"]) == [(2, 2), (2, 1)]


def test_a_site_counts_once_however_many_of_its_pages_link() -> None:
    counter = InLinkCounter(width=1 << 12, **SMALL)
    target = h(1)
    for _ in range(5):
        counter.add_page_links("other.test", [target], ["t1.test"])
    assert counter.estimate(target) == (5, 1)
    counter.add_page_links("third.test", [target], ["t1.test"])
    assert counter.estimate(target) == (6, 2)


def test_same_site_links_count_as_pages_never_as_sites() -> None:
    counter = InLinkCounter(width=1 << 12, **SMALL)
    target = h(1)
    for _ in range(3):
        counter.add_page_links("t1.test", [target], ["t1.test"])
    assert counter.estimate(target) == (3, 0)


def test_a_target_listed_twice_on_a_page_counts_once() -> None:
    counter = InLinkCounter(width=1 << 12, **SMALL)
    target = h(1)
    out = counter.add_page_links(
        "x.test", [target, h(2), target], ["t1.test", "t2.test", "t1.test"]
    )
    assert out[0] == out[2] == (1, 1)
    assert counter.stats().links_counted == 2
    assert counter.stats().site_links_counted == 2


def test_conservative_update_reads_less_than_plain_count_min() -> None:
    counter = InLinkCounter(width=256, halve_every_links=10**9, **SMALL)
    plain = [[0] * 256 for _ in range(4)]  # what plain count-min would hold, same buckets
    for n in range(1024):  # 1024 one-off URLs in 256 buckets a row
        counter.add_page_links("s.test", [h(n)], ["s.test"])
        for r in range(4):
            plain[r][(int(h(n), 16) >> (8 * r)) & 255] += 1
    unseen = [h(n) for n in range(10_000, 11_000)]
    ours = sum(counter.estimate(u)[0] for u in unseen)
    theirs = sum(min(plain[r][(int(u, 16) >> (8 * r)) & 255] for r in range(4)) for u in unseen)
    assert ours < 0.75 * theirs


def test_memory_does_not_grow_with_links() -> None:
    counter = InLinkCounter(width=1 << 10, halve_every_links=10**9, **SMALL)
    size, checkpoint_bytes = counter.size_bytes, len(counter.to_bytes())
    targets = [h(n) for n in range(50)]
    for page in range(400):  # 20,000 links to 20,000 different URLs and 400 sites
        counter.add_page_links(
            f"s{page}.test", [f"{page:08x}{t[8:]}" for t in targets], ["x.test"] * 50
        )
    assert counter.stats().links_counted == 20_000
    assert counter.size_bytes == size
    assert len(counter.to_bytes()) == checkpoint_bytes


def test_halving_halves_every_estimate_and_lets_sites_count_again() -> None:
    counter = InLinkCounter(width=1 << 12, halve_every_links=10**9, **SMALL)
    targets = [h(n) for n in range(30)]
    for page in range(9):
        counter.add_page_links(f"s{page % 5}.test", targets[: 10 + page], ["x.test"] * (10 + page))
    before = [counter.estimate(t) for t in targets]
    counter.halve()
    assert [counter.estimate(t) for t in targets] == [(p // 2, s // 2) for p, s in before]
    # The pair filter is emptied with the counts: s0.test's next link counts as a site again.
    assert counter.add_page_links("s0.test", [targets[0]], ["x.test"]) == [(5, 3)]
    assert counter.stats().halvings == 1


def test_halves_by_itself_every_so_many_links() -> None:
    counter = InLinkCounter(width=1 << 12, halve_every_links=100, **SMALL)
    target = h(1)
    for _ in range(99):
        counter.add_page_links("t1.test", [target], ["t1.test"])
    assert counter.estimate(target) == (99, 0)
    counter.add_page_links("t1.test", [target], ["t1.test"])
    assert counter.estimate(target) == (50, 0)
    assert counter.stats().halvings == 1


def test_a_full_pair_filter_triggers_halving() -> None:
    counter = InLinkCounter(width=1 << 12, halve_every_links=10**9, pair_capacity=20)
    for n in range(20):
        counter.add_page_links(f"s{n}.test", [h(1)], ["t1.test"])
    assert counter.stats().halvings == 1
    assert counter.estimate(h(1)) == (10, 10)


def test_counters_saturate_instead_of_overflowing() -> None:
    counter = InLinkCounter(width=1 << 4, halve_every_links=10**9, **SMALL)
    target = [h(1)]
    for _ in range(0xFFFF + 3):
        counter.add_page_links("t1.test", target, ["t1.test"])
    assert counter.estimate(h(1)) == (0xFFFF, 0)


def test_checkpoint_round_trip_keeps_counts_and_pairs() -> None:
    counter = InLinkCounter(width=1 << 8, halve_every_links=500, **SMALL)
    pages = [(n % 10, [(n * 7 + k) % 61 for k in range(9)]) for n in range(80)]
    feed(counter, pages)
    copy = InLinkCounter.from_bytes(counter.to_bytes())
    assert repr(copy) == repr(counter)
    assert copy.stats() == counter.stats()
    assert [copy.estimate(h(t)) for t in range(61)] == [counter.estimate(h(t)) for t in range(61)]
    # The pair filter came along: a site that already linked adds a page, not a site.
    before = copy.estimate(h(8))
    assert copy.add_page_links("t0.test", [h(8)], [site_of_target(8)]) == [
        (before[0] + 1, before[1])
    ]
    assert copy.to_bytes() != counter.to_bytes()


def test_a_checkpoint_written_part_by_part_is_the_same_bytes() -> None:
    counter = InLinkCounter(width=1 << 8, halve_every_links=500, **SMALL)
    feed(counter, [(n % 10, [(n * 7 + k) % 61 for k in range(9)]) for n in range(80)])
    out = io.BytesIO()
    counter.write_to(out)
    assert out.getvalue() == counter.to_bytes()
    assert repr(InLinkCounter.from_bytes(out.getvalue())) == repr(counter)


def test_a_checkpoint_saved_while_the_loop_counts_reads_back() -> None:
    # The checkpoint thread saves while the crawl loop goes on counting: each part's CRC
    # must be over the bytes written, not over the live rows a moment later.
    counter = InLinkCounter(width=1 << 8, **SMALL)

    class CountingMeanwhile(io.BytesIO):
        def write(self, data: bytes) -> int:  # type: ignore[override]
            written = super().write(data)
            counter.add_page_links("z.test", [h(5)], ["t5.test"])
            return written

    out = CountingMeanwhile()
    counter.write_to(out)
    InLinkCounter.from_bytes(out.getvalue())  # raises on a CRC mismatch


@given(st.data())
@settings(max_examples=50, deadline=None)
def test_any_damage_to_a_checkpoint_is_rejected(data: st.DataObject) -> None:
    counter = InLinkCounter(width=16, pair_capacity=100)
    counter.add_page_links("a.test", [h(1), h(2)], ["t1.test", "b.test"])
    checkpoint = bytearray(counter.to_bytes())
    at = data.draw(st.integers(0, len(checkpoint) - 1))
    checkpoint[at] ^= data.draw(st.integers(1, 255))
    with pytest.raises(ValueError, match="checkpoint"):
        InLinkCounter.from_bytes(bytes(checkpoint))


@pytest.mark.parametrize("data", [b"", b"garbage", b"trawl-inlinks/1\n", b"x" * 200])
def test_foreign_or_truncated_data_is_rejected(data: bytes) -> None:
    with pytest.raises(ValueError, match="checkpoint"):
        InLinkCounter.from_bytes(data)


def test_truncated_checkpoint_is_rejected() -> None:
    checkpoint = InLinkCounter(width=16, pair_capacity=100).to_bytes()
    with pytest.raises(ValueError, match="checkpoint"):
        InLinkCounter.from_bytes(checkpoint[: len(checkpoint) // 2])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"width": 1000},
        {"width": 8},
        {"width": 1 << 33},
        {"halve_every_links": 0},
        {"pair_capacity": 0},
    ],
)
def test_bad_sizes_are_refused(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError, match=r">= 1|power of two"):
        InLinkCounter(**kwargs)


def test_mismatched_batches_are_refused_before_counting() -> None:
    counter = InLinkCounter(width=16, pair_capacity=100)
    with pytest.raises(ValueError, match="differ in length"):
        counter.add_page_links("a.test", [h(1), h(2)], ["t1.test"])
    assert counter.estimate(h(1)) == (0, 0)


def test_repr_and_stats_show_the_state() -> None:
    counter = InLinkCounter(width=1 << 10, pair_capacity=1000)
    counter.add_page_links("a.test", [h(1), h(2)], ["t1.test", "a.test"])
    stats = counter.stats()
    assert (stats.width, stats.links_counted, stats.site_links_counted, stats.halvings) == (
        1 << 10,
        2,
        1,
        0,
    )
    assert stats.size_bytes == counter.size_bytes >= 4 * 2 * (1 << 10) * 2
    assert repr(counter).startswith("<InLinkCounter width=1024 links=2 site_links=1 halvings=0")


def test_issue_19_arrivals_add_their_pages_and_each_linking_site_once() -> None:
    counter = InLinkCounter(width=1 << 12, **SMALL)
    a = h(1)
    assert counter.add_arrival(a, 1, "x.test") == ((0, 0), (1, 1))
    assert counter.add_arrival(a, 2, "x.test") == ((1, 1), (3, 1)), "x.test linked it before"
    assert counter.add_arrival(a, 0, "y.test") == ((3, 1), (3, 2)), "a new site, no new page"
    assert counter.add_arrival(a, 4, "") == ((3, 2), (7, 2)), "the target site's own pages"
    assert counter.estimate(a) == (7, 2)
    assert counter.estimate(h(2)) == (0, 0)


arrivals_strategy = st.lists(
    st.tuples(st.integers(0, 60), st.integers(0, 9), st.integers(0, 5)), max_size=60
)


@given(arrivals_strategy)
@settings(max_examples=60, deadline=None)
def test_issue_19_arrivals_never_under_count_even_when_everything_collides(
    arrivals: list[tuple[int, int, int]],
) -> None:
    counter = InLinkCounter(width=16, halve_every_links=10**9, **SMALL)
    pages: Counter[int] = Counter()
    pairs = set()
    for target, source, weight in arrivals:
        counter.add_arrival(h(target), weight, f"s{source}.test")
        pages[target] += weight
        pairs.add((target, source))
    sites = Counter(t for t, _ in pairs)
    for t in range(61):
        est_pages, est_sites = counter.estimate(h(t))
        assert est_pages >= pages[t]
        assert est_sites >= sites[t]
