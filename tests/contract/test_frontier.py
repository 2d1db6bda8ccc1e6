"""The Frontier contract, against every adapter: SQLite on a file and SQLite in memory.

A `Backend` opens a frontier on its database (loaded, as the wiring does) and commits its
writes; the tests use the port's methods only, except where a case is about SQLite itself
(rows on disk, an old table) or a restart, which only the file adapter can have.
`:memory:` goes through store.sqlite_db.open_database like a file (its WAL request turns
into SQLite's "memory" journal), so both adapters get the same schema.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import pytest

from trawl.frontier.queue_sqlite import SqliteFrontier
from trawl.model import CrawlUrl, Line
from trawl.store.sqlite_db import open_database

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

LEASE_S = 300.0


class Backend(Protocol):
    conn: sqlite3.Connection

    def open(self) -> SqliteFrontier:
        """A frontier on this backend's database, loaded as after a start."""


class FileBackend:
    def __init__(self, path: Path) -> None:
        self.path = path / "trawl.db"
        self.conn = open_database(self.path)
        self.opened = False

    def open(self) -> SqliteFrontier:
        """After the first call, each is a restart: what was not committed is lost."""
        if self.opened:
            self.conn.close()
            self.conn = open_database(self.path)
        self.opened = True
        return _loaded(self.conn)


class MemoryBackend:
    def __init__(self) -> None:
        self.conn = open_database(Path(":memory:"))

    def open(self) -> SqliteFrontier:
        return _loaded(self.conn)


def _loaded(conn: sqlite3.Connection) -> SqliteFrontier:
    frontier = SqliteFrontier(conn, lease_s=LEASE_S, fast_share=0.8, refresh_share=0.6)
    frontier.load()
    return frontier


@pytest.fixture(params=["sqlite_file", "sqlite_memory"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    chosen: Backend = FileBackend(tmp_path) if request.param == "sqlite_file" else MemoryBackend()
    yield chosen
    chosen.conn.close()


@pytest.fixture
def f(backend: Backend) -> SqliteFrontier:
    return backend.open()


def _url(
    site: str, path: str, line: Line = Line.SLOW, score: float = 0.0, depth: int = 1
) -> CrawlUrl:
    url = f"http://{site}/{path}"
    digest = hashlib.sha256(url.encode()).hexdigest()[:32]
    return CrawlUrl(url, digest, site, depth, line, 0.0, score=score)


def _name(item: CrawlUrl) -> str:
    return item.url.rsplit("/", 1)[1]


def _drain(f: SqliteFrontier, site: str, line: Line | None = None) -> list[str]:
    order = []
    while (head := f.head(site, line)) is not None:
        order.append(_name(head.item))
        f.done(f.lease(head, now=0.0))
    return order


# --- line order and shares --------------------------------------------------------------------


def test_fast_line_first_then_oldest(f: SqliteFrontier) -> None:
    f.enqueue(_url("a.test", "slow1"))
    f.enqueue(_url("a.test", "slow2"))
    f.enqueue(_url("a.test", "fast", Line.FAST))
    assert _drain(f, "a.test") == ["fast", "slow1", "slow2"]
    assert f.queued() == 0


def test_within_a_line_the_higher_score_goes_first(f: SqliteFrontier) -> None:
    f.enqueue(_url("a.test", "low", score=0.1))
    f.enqueue(_url("a.test", "high", score=0.9))
    f.enqueue(_url("a.test", "mid", score=0.5))
    f.enqueue(_url("a.test", "mid2", score=0.5))
    assert _drain(f, "a.test") == ["high", "mid", "mid2", "low"]


def test_a_turns_line_picks_refresh_or_discovery_work_first(f: SqliteFrontier) -> None:
    f.enqueue(_url("a.test", "due", Line.REFRESH))
    f.enqueue(_url("a.test", "new", Line.SLOW))
    refresh_first = f.head("a.test", Line.REFRESH)
    discovery_first = f.head("a.test", Line.SLOW)
    assert refresh_first is not None
    assert discovery_first is not None
    assert (_name(refresh_first.item), _name(discovery_first.item)) == ("due", "new")
    assert _drain(f, "a.test", Line.REFRESH) == ["due", "new"]  # then the other kind


def test_one_site_is_handed_out_to_one_task_at_a_time(f: SqliteFrontier) -> None:
    for i in range(3):
        f.enqueue(_url("a.test", str(i)))
    assert f.pop_ready_site(0.0) == ("a.test", Line.SLOW)
    assert f.pop_ready_site(0.0) is None
    f.release_site("a.test", ready_at=1.0)
    assert f.next_ready_at() == 1.0
    assert f.pop_ready_site(0.5) is None
    assert f.pop_ready_site(1.0) == ("a.test", Line.SLOW)


def _turn_lines(f: SqliteFrontier, n: int) -> list[Line]:
    return [turn[1] for _ in range(n) if (turn := f.pop_ready_site(0.0)) is not None]


def test_contested_turns_go_fast_line_at_its_share(f: SqliteFrontier) -> None:
    for i in range(100):
        f.enqueue(_url(f"fast{i}.test", "x", Line.FAST))
        f.enqueue(_url(f"slow{i}.test", "x", Line.SLOW))
    lines = _turn_lines(f, 100)
    assert 79 <= lines.count(Line.FAST) <= 81  # fast_share=0.8, give or take rounding
    assert f.stats().handed_out == (lines.count(Line.FAST), lines.count(Line.SLOW), 0)
    assert _turn_lines(f, 200).count(Line.SLOW) > 0  # neither line starves


def test_contested_turns_go_to_refresh_work_at_its_share(f: SqliteFrontier) -> None:
    for i in range(100):
        f.enqueue(_url(f"due{i}.test", "x", Line.REFRESH))
        f.enqueue(_url(f"new{i}.test", "x", Line.SLOW))
    lines = _turn_lines(f, 100)
    refresh = lines.count(Line.REFRESH)
    assert 59 <= refresh <= 61  # refresh_share=0.6
    assert f.stats().contested == (refresh, 100 - refresh)


# --- head, defer, not_before ------------------------------------------------------------------


def test_issue_13_a_retry_goes_behind_the_sites_other_ready_urls(f: SqliteFrontier) -> None:
    f.enqueue(_url("a.test", "resets", Line.FAST))
    f.enqueue(_url("a.test", "healthy"))
    head = f.head("a.test", now=10.0)
    assert head is not None
    assert head.item.url.endswith("/resets")
    f.retry(f.lease(head, now=10.0), not_before=20.0)
    head = f.head("a.test", now=11.0)
    assert head is not None
    assert head.item.url.endswith("/healthy"), "the healthy page goes first"
    f.done(f.lease(head, now=11.0))
    # Nothing else is ready: the retry comes now, not only at not_before, with its attempt.
    again = f.head("a.test", now=12.0)
    assert again is not None
    assert again.item.url.endswith("/resets")
    assert again.attempts == 1
    assert again.not_before == 20.0


def test_issue_13_a_deferred_url_competes_again_after_its_time(f: SqliteFrontier) -> None:
    f.enqueue(_url("a.test", "first", Line.FAST))
    f.enqueue(_url("a.test", "second"))
    first = f.head("a.test", now=0.0)
    assert first is not None
    f.defer(first, 5.0)
    assert (h := f.head("a.test", now=4.9)) is not None
    assert h.item.url.endswith("/second")
    assert (h := f.head("a.test", now=5.0)) is not None
    assert h.item.url.endswith("/first"), "after its time, line and score decide again"


def test_defer_never_brings_a_url_forward(f: SqliteFrontier) -> None:
    f.enqueue(_url("a.test", "first", Line.FAST))
    f.enqueue(_url("a.test", "second"))
    first = f.head("a.test", now=0.0)
    assert first is not None
    f.defer(first, 10.0)
    f.defer(first, 3.0)  # an earlier time does not shorten the wait
    assert (h := f.head("a.test", now=5.0)) is not None
    assert (_name(h.item), h.not_before) == ("second", 0.0)
    deferred = f.head("a.test", now=10.0)
    assert deferred is not None
    assert (_name(deferred.item), deferred.not_before) == ("first", 10.0)


def test_when_all_wait_the_one_due_soonest_comes(f: SqliteFrontier) -> None:
    f.enqueue(_url("a.test", "late", Line.FAST))
    f.enqueue(_url("a.test", "soon"))
    for name, until in (("late", 9.0), ("soon", 4.0)):
        queued = f.head("a.test", now=0.0)
        assert queued is not None
        assert _name(queued.item) == name
        f.defer(queued, until)
    head = f.head("a.test", now=1.0)
    assert head is not None
    assert (_name(head.item), head.not_before) == ("soon", 4.0)


def test_head_within_depth_skips_deeper_urls(f: SqliteFrontier) -> None:
    f.enqueue(_url("a.test", "deep", Line.FAST, depth=5))
    f.enqueue(_url("a.test", "shallow", depth=1))
    f.enqueue(_url("a.test", "due", Line.REFRESH, depth=0))
    head = f.head_within_depth("a.test", 2, now=0.0)
    assert head is not None
    assert _name(head.item) == "shallow"
    assert f.head_within_depth("b.test", 2, now=0.0) is None


# --- lease, done, retry, put_back, drop, attempts ---------------------------------------------


def test_a_leased_url_is_not_handed_out_again_until_it_ends(f: SqliteFrontier) -> None:
    f.enqueue(_url("a.test", "x"))
    head = f.head("a.test")
    assert head is not None
    lease = f.lease(head, now=5.0)
    assert (lease.item, lease.expires_at) == (head.item, 5.0 + LEASE_S)
    assert f.head("a.test") is None
    assert (f.queued(), f.queued_for("a.test")) == (0, 0)
    f.done(lease)
    assert f.head("a.test") is None
    assert f.rows_of(["a.test"]) == []


def test_retry_puts_the_url_back_with_one_attempt_more(f: SqliteFrontier) -> None:
    f.enqueue(_url("a.test", "x"), attempts=2)
    for expected in range(2, 5):
        head = f.head("a.test")
        assert head is not None
        assert head.attempts == expected
        lease = f.lease(head, now=0.0)
        assert f.attempts(lease) == expected
        f.retry(lease)
    assert f.queued_for("a.test") == 1
    assert [row[6] for row in f.rows_of(["a.test"])] == [5]


def test_put_back_returns_an_unsent_url_without_an_attempt(f: SqliteFrontier) -> None:
    f.enqueue(_url("a.test", "x"))
    head = f.head("a.test")
    assert head is not None
    f.put_back(f.lease(head, now=0.0))
    again = f.head("a.test")
    assert again is not None
    assert (again.item.url, again.attempts) == (head.item.url, 0)
    assert f.queued() == 1


def test_drop_removes_an_unleased_url_for_good(f: SqliteFrontier) -> None:
    f.enqueue(_url("a.test", "disallowed", Line.FAST))
    f.enqueue(_url("a.test", "fine"))
    head = f.head("a.test")
    assert head is not None
    f.drop(head)
    assert (f.queued(), f.queued_for("a.test")) == (1, 1)
    assert _drain(f, "a.test") == ["fine"]


def test_a_lease_ends_once(f: SqliteFrontier) -> None:
    # A lease that expired and went back to line cannot then be retried or put back a second
    # time: the URL is queued once, with no extra attempt.
    f.enqueue(_url("a.test", "x"))
    head = f.head("a.test")
    assert head is not None
    lease = f.lease(head, now=0.0)
    assert f.requeue_expired(LEASE_S) == 1
    f.retry(lease)
    f.put_back(lease)
    assert f.queued_for("a.test") == 1
    again = f.head("a.test")
    assert again is not None
    assert again.attempts == 0


def test_expired_lease_goes_back_in_line(f: SqliteFrontier) -> None:
    f.enqueue(_url("a.test", "x"))
    head = f.head("a.test")
    assert head is not None
    f.lease(head, now=0.0)
    assert f.head("a.test") is None
    assert f.queued() == 0
    assert f.requeue_expired(LEASE_S - 1) == 0
    assert f.requeue_expired(LEASE_S) == 1
    again = f.head("a.test")
    assert again is not None
    assert again.item == head.item
    assert f.queued() == 1


# --- site turns -------------------------------------------------------------------------------


def test_hold_site_takes_a_site_outside_its_turn(f: SqliteFrontier) -> None:
    f.enqueue(_url("a.test", "x"))
    assert f.hold_site("a.test")
    assert not f.hold_site("a.test"), "held already"
    assert f.pop_ready_site(0.0) is None, "a held site has no turn"
    f.release_site("a.test", ready_at=2.0)
    assert f.pop_ready_site(2.0) == ("a.test", Line.SLOW)
    assert not f.hold_site("a.test"), "its turn holds it"
    assert f.hold_site("empty.test"), "a site with no work can be held too"
    f.release_site("empty.test", ready_at=0.0)
    assert f.pop_ready_site(10.0) is None


def test_issue_15_is_held_from_a_turn_or_a_hold_until_release(f: SqliteFrontier) -> None:
    f.enqueue(_url("a.test", "x"))
    assert not f.is_held("a.test")
    assert not f.is_held("never.test")
    assert f.pop_ready_site(0.0) == ("a.test", Line.SLOW)
    assert f.is_held("a.test"), "its turn holds it"
    f.release_site("a.test", ready_at=1.0)
    assert not f.is_held("a.test")
    assert f.hold_site("a.test")
    assert f.is_held("a.test")
    f.move_site("a.test", 0.5)  # no effect while held
    f.drop_sites(["a.test"])
    assert not f.is_held("a.test"), "a dropped site is held by nobody"
    f.release_site("a.test", ready_at=2.0)  # the turn's release after a drop: a no-op


def test_move_site_changes_when_a_waiting_sites_turn_comes(f: SqliteFrontier) -> None:
    f.enqueue(_url("a.test", "x"), ready_at=10.0)
    assert f.next_ready_at() == 10.0
    f.move_site("a.test", 4.0)
    assert f.next_ready_at() == 4.0
    assert f.pop_ready_site(3.9) is None
    f.move_site("a.test", 20.0)
    assert f.pop_ready_site(10.0) is None
    assert f.next_ready_at() == 20.0
    assert f.pop_ready_site(20.0) == ("a.test", Line.SLOW)
    f.move_site("a.test", 0.0)  # busy: its release says when, not a move
    assert f.pop_ready_site(30.0) is None


def test_a_new_site_waits_until_ready_at_and_an_old_one_keeps_its_time(
    f: SqliteFrontier,
) -> None:
    f.enqueue(_url("a.test", "1"), ready_at=7.0)
    f.enqueue(_url("a.test", "2"), ready_at=1.0)  # the site waits already
    assert f.next_ready_at() == 7.0
    assert f.pop_ready_site(6.0) is None
    assert f.pop_ready_site(7.0) == ("a.test", Line.SLOW)


def test_forget_idle_sites_drops_only_sites_with_nothing_queued(f: SqliteFrontier) -> None:
    f.enqueue(_url("a.test", "x"))
    f.enqueue(_url("b.test", "x"))
    assert _drain(f, "a.test") == ["x"]
    assert f.stats().sites == 2
    assert f.forget_idle_sites() == 1
    assert f.stats().sites == 1
    assert f.queued_for("b.test") == 1
    f.enqueue(_url("a.test", "y"))  # its slot comes back with its next URL
    assert f.queued_for("a.test") == 1


# --- rescore ----------------------------------------------------------------------------------


def test_rescore_moves_a_waiting_discovery_url(f: SqliteFrontier) -> None:
    f.enqueue(_url("a.test", "a", score=0.5))
    f.enqueue(_url("a.test", "b", score=0.1))
    target = _url("a.test", "b")
    seen: list[tuple[str, str]] = []

    def promote(url_hash: str, parts: str) -> tuple[float, str, Line]:
        seen.append((url_hash, parts))
        return 0.9, json.dumps({"inlinks": 3}), Line.FAST

    assert f.rescore([target.url_hash], promote) == 1
    assert seen == [(target.url_hash, "")]  # the stored parts were handed in
    stats = f.stats()
    assert (stats.queued_fast, stats.queued_slow) == (1, 1)
    head = f.head("a.test")
    assert head is not None
    assert (_name(head.item), head.item.score, head.item.line) == ("b", 0.9, Line.FAST)
    assert head.item.score_parts == '{"inlinks": 3}'


def test_rescore_takes_a_pages_batch_at_once(f: SqliteFrontier) -> None:
    names = [f"p{n}" for n in range(1_200)]  # past one statement's chunk of URLs
    for name in names:
        f.enqueue(_url("a.test", name, score=0.1))
    hashes = [_url("a.test", name).url_hash for name in names]
    asked: list[str] = []

    def promote(url_hash: str, parts: str) -> tuple[float, str, Line] | None:
        asked.append(url_hash)
        return None if url_hash == hashes[7] else (0.5, parts, Line.FAST)

    twice = [*hashes, hashes[3], _url("a.test", "unknown").url_hash]
    assert f.rescore(twice, promote) == len(names) - 1
    assert sorted(asked) == sorted(hashes), "each waiting URL once, unknown ones never"
    stats = f.stats()
    assert (stats.queued_fast, stats.queued_slow) == (len(names) - 1, 1)
    assert f.rescore([], promote) == 0


def test_rescore_leaves_urls_that_do_not_wait(f: SqliteFrontier) -> None:
    f.enqueue(_url("a.test", "leased"))
    f.enqueue(_url("a.test", "due", Line.REFRESH))
    f.enqueue(_url("a.test", "kept"))
    head = f.head("a.test")
    assert head is not None
    f.lease(head, now=0.0)
    never = lambda url_hash, parts: (1.0, parts, Line.FAST)  # noqa: E731
    for name in ("leased", "due", "unknown"):
        assert f.rescore([_url("a.test", name).url_hash], never) == 0, name
    kept = _url("a.test", "kept").url_hash
    assert f.rescore([kept], lambda url_hash, parts: None) == 0
    assert f.stats().queued_fast == 0


# --- inspection and moving sites between machines ---------------------------------------------


def test_queued_counts_waiting_urls_per_site(f: SqliteFrontier) -> None:
    for i in range(5):
        f.enqueue(_url(f"s{i % 2}.test", str(i)))
    assert (f.queued(), f.queued_for("s0.test"), f.queued_for("s1.test")) == (5, 3, 2)
    assert f.queued_for("none.test") == 0
    head = f.head("s0.test")
    assert head is not None
    f.lease(head, now=0.0)
    assert (f.queued(), f.queued_for("s0.test")) == (4, 2)


def test_sites_of_a_moved_partition_leave_with_their_rows(f: SqliteFrontier) -> None:
    for site, path in [("a.test", "1"), ("a.test", "2"), ("b.test", "1")]:
        f.enqueue(_url(site, path))
    assert sorted(f.queued_sites()) == ["a.test", "b.test"]
    assert [row[2] for row in f.rows_of(["a.test"])] == ["http://a.test/1", "http://a.test/2"]
    assert f.drop_sites(["a.test"]) == 2
    assert f.queued_sites() == ["b.test"]
    assert f.head("a.test") is None
    assert f.queued() == 1


def test_rows_of_carries_every_field_and_leased_rows(f: SqliteFrontier) -> None:
    item = _url("a.test", "x", Line.FAST, score=0.25, depth=3)
    f.enqueue(
        CrawlUrl(
            item.url, item.url_hash, "a.test", 3, Line.FAST, 12.5, score=0.25, redirects=2,
            standing=(1 << 40) | 7,
        ),
        attempts=1,
    )  # fmt: skip
    head = f.head("a.test")
    assert head is not None
    f.lease(head, now=0.0)  # leased, not done: it still belongs to the site
    [row] = f.rows_of(["a.test"])
    assert row == (
        "a.test", int(Line.FAST), item.url, item.url_hash, 3, 12.5, 1, 0, 0.25, "", 2,
        (1 << 40) | 7,
    )  # fmt: skip
    assert f.queued_sites() == ["a.test"]


def test_a_queued_urls_standing_comes_back_with_it(f: SqliteFrontier) -> None:
    item = _url("a.test", "x")
    f.enqueue(CrawlUrl(item.url, item.url_hash, "a.test", 1, Line.SLOW, 0.0, standing=2**62))
    head = f.head("a.test")
    assert head is not None
    assert head.item.standing == 2**62
    assert f.lease(head, now=0.0).item.standing == 2**62


def _drop_all(f: SqliteFrontier, matches: Callable[[str], bool]) -> list[CrawlUrl]:
    """`drop_matching_after` over the whole queue, two rows a slice (the cursor is used)."""
    out: list[CrawlUrl] = []
    after: int | None = 0
    while after is not None:
        dropped, after = f.drop_matching_after(matches, after, 2)
        out += dropped
    return out


def test_drop_matching_reads_the_queue_a_slice_at_a_time(f: SqliteFrontier) -> None:
    for i in range(5):
        f.enqueue(_url("a.test", f"tag-{i}", Line.SLOW))
    sizes = []
    after: int | None = 0
    while after is not None:
        dropped, after = f.drop_matching_after(lambda url: "/tag-" in url, after, 2)
        sizes.append(len(dropped))
    assert sizes == [2, 2, 1]
    assert f.queued() == 0


def test_drop_matching_takes_waiting_urls_out_but_not_leased_ones(f: SqliteFrontier) -> None:
    for name in ("tag-1", "keep", "tag-2", "tag-leased"):
        f.enqueue(_url("a.test", name, Line.FAST if name == "tag-leased" else Line.SLOW))
    f.enqueue(_url("b.test", "tag-3", Line.REFRESH))
    head = f.head("a.test")
    assert head is not None
    assert _name(head.item) == "tag-leased"
    lease = f.lease(head, now=0.0)
    dropped = _drop_all(f, lambda url: "/tag-" in url)
    assert sorted(_name(item) for item in dropped) == ["tag-1", "tag-2", "tag-3"]
    assert f.queued_for("a.test") == 1
    assert f.queued_for("b.test") == 0
    assert _drop_all(f, lambda url: "/tag-" in url) == []
    f.done(lease)
    assert _drain(f, "a.test") == ["keep"]
    assert f.head("b.test") is None


# --- SQLite: rows on disk, restart (file adapter only where it needs a file) ------------------


def test_queued_urls_are_rows_not_memory(backend: Backend, f: SqliteFrontier) -> None:
    for i in range(5000):
        f.enqueue(_url(f"s{i % 10}.test", str(i)))
    stats = f.stats()
    assert stats.sites == 10  # memory holds one slot per site...
    assert stats.queued_fast + stats.queued_slow == 5000  # ...and counts, not the URLs
    assert backend.conn.execute("SELECT count(*) FROM queue").fetchone()[0] == 5000


def test_restart_returns_leased_urls_and_keeps_the_queue(tmp_path: Path) -> None:
    backend = FileBackend(tmp_path)
    f = backend.open()
    for i in range(4):
        f.enqueue(_url(f"s{i % 2}.test", str(i)))
    head = f.head("s0.test")
    assert head is not None
    f.lease(head, now=0.0)  # leased, then the process dies before done()
    done = f.head("s1.test")
    assert done is not None
    f.done(f.lease(done, now=0.0))
    backend.conn.commit()
    restarted = backend.open()
    assert restarted.queued() == 3
    assert restarted.queued_for("s0.test") == 2
    assert restarted.queued_for("s1.test") == 1


def test_uncommitted_writes_are_gone_after_a_restart(tmp_path: Path) -> None:
    backend = FileBackend(tmp_path)
    f = backend.open()
    f.enqueue(_url("a.test", "kept"))
    backend.conn.commit()
    f.enqueue(_url("a.test", "lost"))  # the process dies before the loop's commit
    backend.conn.close()
    assert _drain(backend.open(), "a.test") == ["kept"]


def test_retries_survive_a_restart(tmp_path: Path) -> None:
    backend = FileBackend(tmp_path)
    f = backend.open()
    f.enqueue(_url("a.test", "x"))
    for _ in range(3):
        head = f.head("a.test")
        assert head is not None
        f.retry(f.lease(head, now=0.0), not_before=50.0)
    backend.conn.commit()
    again = backend.open().head("a.test")
    assert again is not None
    assert (again.attempts, again.not_before) == (3, 50.0)


def test_issue_13_the_redirect_count_survives_a_restart(tmp_path: Path) -> None:
    backend = FileBackend(tmp_path)
    f = backend.open()
    item = _url("a.test", "inf/4")
    f.enqueue(CrawlUrl(item.url, item.url_hash, item.site, 1, Line.SLOW, 0.0, redirects=4))
    backend.conn.commit()
    restarted = backend.open()
    head = restarted.head("a.test")
    assert head is not None
    assert head.item.redirects == 4
    assert restarted.rows_of(["a.test"])[0][10] == 4


def test_issue_13_a_queue_table_from_before_gets_the_new_columns(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "trawl.db")
    conn.executescript(
        "CREATE TABLE queue (id INTEGER PRIMARY KEY, site TEXT NOT NULL, line INTEGER NOT NULL,"
        " url TEXT NOT NULL, url_hash TEXT NOT NULL, depth INTEGER NOT NULL,"
        " discovered_at REAL NOT NULL, leased_until REAL NOT NULL DEFAULT 0);"
        "INSERT INTO queue(site, line, url, url_hash, depth, discovered_at) VALUES"
        " ('a.test', 1, 'http://a.test/old', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', 1, 0.0);"
    )
    conn.close()
    f = FileBackend(tmp_path).open()
    head = f.head("a.test")
    assert head is not None
    assert (head.item.url, head.item.redirects, head.not_before) == ("http://a.test/old", 0, 0.0)
