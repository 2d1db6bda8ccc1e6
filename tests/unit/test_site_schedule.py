"""The frontier's pure scheduling core: ready times, lines and one-task-per-site."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trawl.frontier.site_schedule import SiteSchedule
from trawl.model import Line


def pop(s: SiteSchedule, now: float) -> str | None:
    turn = s.pop_ready(now)
    return None if turn is None else turn[0]


def test_site_is_not_handed_out_before_its_ready_time() -> None:
    s = SiteSchedule()
    s.add_work("a.test", Line.SLOW, 1, ready_at=10.0)
    assert pop(s, 9.99) is None
    assert s.next_ready_at() == 10.0
    assert pop(s, 10.0) == "a.test"


def test_busy_site_is_never_handed_out_twice() -> None:
    s = SiteSchedule()
    s.add_work("a.test", Line.SLOW, 5)
    assert pop(s, 0.0) == "a.test"
    s.add_work("a.test", Line.FAST, 1)  # more work while busy must not re-queue it
    assert pop(s, 100.0) is None
    s.release("a.test", ready_at=101.0)
    assert pop(s, 100.5) is None
    assert pop(s, 101.0) == "a.test"


def test_release_of_a_free_site_is_a_bug() -> None:
    s = SiteSchedule()
    s.add_work("a.test", Line.SLOW)
    with pytest.raises(ValueError, match="not busy"):
        s.release("a.test", 1.0)


def test_fast_line_served_first_but_slow_line_not_starved() -> None:
    s = SiteSchedule(fast_share=0.75)
    for i in range(40):
        s.add_work(f"fast{i}.test", Line.FAST)
        s.add_work(f"slow{i}.test", Line.SLOW)
    picks = [pop(s, 0.0) for _ in range(40)]
    fast = sum(1 for p in picks if p is not None and p.startswith("fast"))
    assert fast == 30  # exactly the configured share while both lines have ready sites
    assert picks[0] is not None
    assert picks[0].startswith("fast")


def test_site_without_work_is_dropped_when_it_surfaces() -> None:
    s = SiteSchedule()
    s.add_work("a.test", Line.SLOW, 1)
    assert pop(s, 0.0) == "a.test"
    s.take_work("a.test", Line.SLOW)
    s.release("a.test", 1.0)
    assert pop(s, 5.0) is None
    assert s.next_ready_at() is None
    assert s.forget_idle() == 1
    assert s.stats().sites == 0


def test_taking_more_work_than_queued_is_a_bug() -> None:
    s = SiteSchedule()
    s.add_work("a.test", Line.FAST, 1)
    with pytest.raises(ValueError, match="taking 2"):
        s.take_work("a.test", Line.FAST, 2)


def test_move_sets_a_waiting_site_later_or_earlier_but_not_a_busy_one() -> None:
    s = SiteSchedule()
    s.add_work("a.test", Line.SLOW, 1, ready_at=5.0)
    s.move("a.test", 8.0)
    assert pop(s, 6.0) is None
    s.move("a.test", 3.0)
    assert s.next_ready_at() == 3.0
    assert pop(s, 3.0) == "a.test"
    s.move("a.test", 100.0)  # busy: its release decides
    s.release("a.test", 4.0)
    assert pop(s, 4.0) == "a.test"
    s.move("a.test", 1.0)
    s.release("a.test", 9.0)
    s.move("a.test", 2.0)  # moved twice while waiting: the last move counts
    s.move("a.test", 12.0)
    assert pop(s, 11.0) is None
    assert pop(s, 12.0) == "a.test"


@given(
    st.lists(
        st.tuples(st.integers(0, 9), st.sampled_from(list(Line)), st.floats(0, 50)),
        min_size=1,
        max_size=60,
    )
)
def test_handed_out_sites_are_ready_and_never_busy(adds: list[tuple[int, Line, float]]) -> None:
    s = SiteSchedule()
    ready_at: dict[str, float] = {}
    for n, line, at in adds:
        site = f"s{n}.test"
        if site not in ready_at:
            ready_at[site] = at
        s.add_work(site, line, 1, ready_at=at)
    busy: set[str] = set()
    now = 0.0
    while now <= 60.0:
        turn = s.pop_ready(now)
        if turn is None:
            now += 1.0
            continue
        site, line = turn
        assert site not in busy
        assert ready_at[site] <= now
        busy.add(site)
        s.take_work(site, line)  # the line handed out always has work
        ready_at[site] = now + 1.0
        s.release(site, now + 1.0)
        busy.discard(site)
    stats = s.stats()
    assert stats.queued_fast + stats.queued_slow + stats.queued_refresh == 0
    assert sum(stats.handed_out) == len(adds)


def test_refresh_gets_its_share_when_discovery_also_waits() -> None:
    s = SiteSchedule(refresh_share=0.6)
    for i in range(100):
        s.add_work(f"r{i}.test", Line.REFRESH)
        s.add_work(f"d{i}.test", Line.SLOW)
    turns = [s.pop_ready(0.0) for _ in range(100)]
    lines = [t[1] for t in turns if t is not None]
    assert len(lines) == 100
    assert 59 <= lines.count(Line.REFRESH) <= 61  # the share, up to float rounding of credits
    assert all(t is not None and t[0].startswith("r") == (t[1] is Line.REFRESH) for t in turns)
    refresh, discovery = s.stats().contested
    assert refresh + discovery == 100
    assert refresh == lines.count(Line.REFRESH)


def test_either_kind_takes_every_turn_when_the_other_has_none() -> None:
    s = SiteSchedule(refresh_share=0.6)
    for i in range(10):
        s.add_work(f"r{i}.test", Line.REFRESH)
    assert [t[1] for t in (s.pop_ready(0.0) for _ in range(10)) if t] == [Line.REFRESH] * 10
    s = SiteSchedule(refresh_share=1.0)
    for i in range(10):
        s.add_work(f"d{i}.test", Line.FAST)
    assert [t[1] for t in (s.pop_ready(0.0) for _ in range(10)) if t] == [Line.FAST] * 10


def test_site_with_both_kinds_of_work_is_handed_out_once_per_turn() -> None:
    s = SiteSchedule(refresh_share=0.5)
    s.add_work("a.test", Line.REFRESH)
    s.add_work("a.test", Line.FAST)
    turn = s.pop_ready(0.0)
    assert turn is not None
    assert turn[0] == "a.test"
    assert s.pop_ready(0.0) is None  # its other ready entry is stale while it is busy
    s.take_work("a.test", turn[1])
    s.release("a.test", 1.0)
    assert s.pop_ready(0.5) is None
    second = s.pop_ready(1.0)
    assert second is not None
    assert {turn[1], second[1]} == {Line.REFRESH, Line.FAST}
    s.take_work("a.test", second[1])
    s.release("a.test", 2.0)
    assert s.pop_ready(10.0) is None


def test_dropped_sites_leave_with_their_work() -> None:
    s = SiteSchedule()
    s.add_work("a.test", Line.FAST, 3)
    s.add_work("b.test", Line.SLOW, 2)
    s.add_work("c.test", Line.REFRESH, 1)
    assert pop(s, 0.0) == "a.test"  # busy when dropped: its later release is a no-op
    assert s.drop_sites(["a.test", "c.test", "never.test"]) == 4
    stats = s.stats()
    assert (stats.queued_fast, stats.queued_slow, stats.queued_refresh) == (0, 2, 0)
    s.release("a.test", ready_at=0.0)
    assert pop(s, 1.0) == "b.test"
    assert pop(s, 1.0) is None
    assert s.next_ready_at() is None


def test_issue_13_hold_takes_a_waiting_site_until_release() -> None:
    s = SiteSchedule()
    s.add_work("b.test", Line.SLOW, 2)
    assert s.hold("b.test") is True
    assert pop(s, 100.0) is None  # held: its queued turn is not handed out
    assert s.hold("b.test") is False  # nor held twice
    s.release("b.test", ready_at=5.0)
    assert pop(s, 4.99) is None
    assert pop(s, 5.0) == "b.test"


def test_issue_13_hold_fails_on_a_site_in_its_own_turn() -> None:
    s = SiteSchedule()
    s.add_work("b.test", Line.FAST, 1)
    assert pop(s, 0.0) == "b.test"
    assert s.hold("b.test") is False
    s.release("b.test", ready_at=1.0)
    assert s.hold("b.test") is True


def test_issue_13_hold_of_a_site_without_work_leaves_nothing_behind() -> None:
    s = SiteSchedule()
    assert s.hold("c.test") is True
    s.add_work("c.test", Line.SLOW, 1)  # found meanwhile: waits for the release
    assert pop(s, 0.0) is None
    s.release("c.test", ready_at=2.0)
    assert s.next_ready_at() == 2.0
    assert pop(s, 2.0) == "c.test"
    s.take_work("c.test", Line.SLOW)
    s.release("c.test", ready_at=3.0)
    assert s.forget_idle() == 1
    assert s.stats().sites == 0


def test_a_slot_dropped_and_made_again_never_matches_its_old_entries() -> None:
    """Versions are never reused: forget_idle leaves the heap alone, and the old entry of a
    site that comes back must not hand it out at its old, earlier ready time."""
    s = SiteSchedule()
    s.add_work("a.test", Line.SLOW, 1, ready_at=5.0)  # heap entry at 5.0
    s.move("a.test", 1.0)  # an operator's shorter gap: the 5.0 entry is stale, still queued
    assert pop(s, 1.0) == "a.test"
    s.take_work("a.test", Line.SLOW)
    s.release("a.test", ready_at=2.0)
    assert s.forget_idle() == 1
    s.add_work("a.test", Line.SLOW, 1, ready_at=50.0)  # back, ready much later
    assert pop(s, 5.0) is None  # not at the stale entry's 5.0
    assert s.next_ready_at() == 50.0
    assert pop(s, 50.0) == "a.test"


def test_forget_idle_looks_only_at_sites_emptied_since_its_last_call() -> None:
    s = SiteSchedule()
    for i in range(100):
        s.add_work(f"s{i}.test", Line.SLOW, 2)
    turns = [pop(s, 0.0) for _ in range(100)]
    for site in turns:
        assert site is not None
        s.take_work(site, Line.SLOW)
        s.release(site, ready_at=1.0)  # one URL left each: not idle
    assert s.forget_idle() == 0
    assert not s._emptied  # nothing to look at again
    drained = [pop(s, 1.0) for _ in range(3)]
    for site in drained:
        assert site is not None
        s.take_work(site, Line.SLOW)
        s.release(site, ready_at=2.0)
    assert len(s._emptied) == 3
    assert s.forget_idle() == 3
    assert s.stats().sites == 97
    s.add_work("gone.test", Line.FAST, 1)
    s.take_work("gone.test", Line.FAST)  # skipped while waiting (an exclude), not busy
    assert s.forget_idle() == 1
    assert pop(s, 5.0) is not None  # the rest still served; the stale entry is skipped


@given(st.lists(st.tuples(st.integers(0, 5), st.sampled_from(["add", "pop", "forget"])),
                max_size=60))  # fmt: skip
def test_forget_idle_never_loses_queued_work(ops: list[tuple[int, str]]) -> None:
    """Whatever the order of work, turns and forgets, every URL added is handed out once."""
    s = SiteSchedule()
    now = 0.0
    added = taken = 0
    for n, op in ops:
        now += 1.0
        if op == "add":
            s.add_work(f"s{n}.test", Line.SLOW, 1, ready_at=now)
            added += 1
        elif op == "pop":
            turn = s.pop_ready(now)
            if turn is not None:
                s.take_work(turn[0], turn[1])
                taken += 1
                s.release(turn[0], ready_at=now + 0.5)
        else:
            s.forget_idle()
    while (turn := s.pop_ready(now := now + 1.0)) is not None:
        s.take_work(turn[0], turn[1])
        taken += 1
        s.release(turn[0], ready_at=now + 0.5)
    assert taken == added
    assert s.stats().queued_slow == 0
