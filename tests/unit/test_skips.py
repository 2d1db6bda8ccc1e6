"""Issue 16: the pure skip tally (counts by reason, the ring of the last skips)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trawl.frontier.skips import Skip, SkipTally

REASONS = ("scope", "exclude", "max_depth", "hops")


def _skip(n: int, reason: str = "scope") -> Skip:
    return Skip(f"http://a.test/{n}", reason, f"rule {n}", f"http://a.test/from/{n}", float(n))


def _note(tally: SkipTally, skip: Skip) -> None:
    tally.note(skip.url, skip.reason, skip.rule, skip.referrer, skip.at)


def test_counts_by_reason_and_recent_newest_first() -> None:
    tally = SkipTally(sample_size=3)
    for n, reason in enumerate(["scope", "exclude", "scope", "hops", "scope"]):
        _note(tally, _skip(n, reason))
    assert tally.counts() == {"scope": 3, "exclude": 1, "hops": 1}
    assert tally.recent(10) == [_skip(4), _skip(3, "hops"), _skip(2)]  # the ring holds 3
    assert tally.recent(10, "scope") == [_skip(4), _skip(2)]
    assert tally.recent(1) == [_skip(4)]
    assert tally.recent(10, "exclude") == []  # counted, but it left the ring
    assert repr(tally) == "<SkipTally noted=5 sampled=3/3 unflushed=3 reasons=3>"


def test_take_unflushed_hands_over_each_skip_once_and_only_changed_counts() -> None:
    tally = SkipTally(sample_size=4)
    _note(tally, _skip(0))
    _note(tally, _skip(1, "exclude"))
    first = tally.take_unflushed()
    assert first.skips == (_skip(0), _skip(1, "exclude"))
    assert first.counts == {"scope": 1, "exclude": 1}
    assert tally.take_unflushed().is_empty
    _note(tally, _skip(2))
    second = tally.take_unflushed()
    assert second.skips == (_skip(2),)
    assert second.counts == {"scope": 2}  # the whole count, for an idempotent write


def test_more_skips_than_the_ring_between_flushes_hands_over_the_last_ring_full() -> None:
    tally = SkipTally(sample_size=3)
    for n in range(10):
        _note(tally, _skip(n))
    assert tally.stats().unflushed == 3
    batch = tally.take_unflushed()
    assert batch.skips == (_skip(7), _skip(8), _skip(9))
    assert batch.counts == {"scope": 10}


def test_restored_state_goes_on_counting_and_is_not_written_again() -> None:
    tally = SkipTally(sample_size=3, counts={"scope": 40}, recent=[_skip(1), _skip(2)])
    assert tally.take_unflushed().is_empty
    assert tally.recent(5) == [_skip(2), _skip(1)]
    _note(tally, _skip(3))
    _note(tally, _skip(4))
    assert tally.recent(5) == [_skip(4), _skip(3), _skip(2)]
    assert tally.take_unflushed().skips == (_skip(3), _skip(4))
    assert tally.counts() == {"scope": 42}
    assert tally.stats().noted == 2  # this process's own


def test_bad_values_refused() -> None:
    with pytest.raises(ValueError, match="sample_size"):
        SkipTally(sample_size=0)
    with pytest.raises(ValueError, match="reason"):
        Skip("http://a.test/", "", "", "", 0.0)


@given(
    size=st.integers(1, 8),
    steps=st.lists(st.one_of(st.sampled_from(REASONS), st.none()), max_size=60),
)
def test_matches_a_list_model(size: int, steps: list[str | None]) -> None:
    # None is a flush; a reason notes a skip. The model keeps everything in lists.
    tally = SkipTally(sample_size=size)
    noted: list[Skip] = []
    written: list[Skip] = []
    written_counts: dict[str, int] = {}
    for n, step in enumerate(steps):
        if step is None:
            batch = tally.take_unflushed()
            written.extend(batch.skips)
            written_counts.update(batch.counts)
            continue
        noted.append(_skip(n, step))
        _note(tally, noted[-1])
    batch = tally.take_unflushed()
    written.extend(batch.skips)
    written_counts.update(batch.counts)
    counts = {r: sum(s.reason == r for s in noted) for r in REASONS}
    assert tally.counts() == {r: c for r, c in counts.items() if c}
    assert written_counts == tally.counts()
    assert tally.recent(size + 1) == noted[::-1][:size]
    for reason in REASONS:
        assert tally.recent(size, reason) == [s for s in noted[::-1][:size] if s.reason == reason]
    # Every skip still in the ring was written exactly once, in order.
    assert written[-size:] == noted[-size:]
    assert len(written) == len(set(written))
