"""The disk-backed frontier over a real SQLite file: order, leases, restart."""

from __future__ import annotations

import hashlib
import sqlite3
from typing import TYPE_CHECKING

from trawl.frontier.queue_sqlite import SqliteFrontier
from trawl.model import CrawlUrl, Line
from trawl.store.sqlite_db import open_database

if TYPE_CHECKING:
    from pathlib import Path


def _url(site: str, path: str, line: Line = Line.SLOW) -> CrawlUrl:
    url = f"http://{site}/{path}"
    return CrawlUrl(url, hashlib.sha256(url.encode()).hexdigest()[:32], site, 1, line, 0.0)


def _frontier(path: Path) -> SqliteFrontier:
    frontier = SqliteFrontier(open_database(path / "trawl.db"), lease_s=300.0, fast_share=0.8)
    frontier.load()
    return frontier


def test_fast_line_first_then_oldest(tmp_path: Path) -> None:
    f = _frontier(tmp_path)
    f.enqueue(_url("a.test", "slow1"))
    f.enqueue(_url("a.test", "slow2"))
    f.enqueue(_url("a.test", "fast", Line.FAST))
    order = []
    while (head := f.head("a.test")) is not None:
        order.append(head.item.url.rsplit("/", 1)[1])
        f.done(f.lease(head, now=0.0))
    assert order == ["fast", "slow1", "slow2"]
    assert f.queued() == 0


def test_one_site_is_handed_out_to_one_task_at_a_time(tmp_path: Path) -> None:
    f = _frontier(tmp_path)
    for i in range(3):
        f.enqueue(_url("a.test", str(i)))
    assert f.pop_ready_site(0.0) == ("a.test", Line.SLOW)
    assert f.pop_ready_site(0.0) is None
    f.release_site("a.test", ready_at=1.0)
    assert f.pop_ready_site(0.5) is None
    assert f.pop_ready_site(1.0) == ("a.test", Line.SLOW)


def test_expired_lease_goes_back_in_line(tmp_path: Path) -> None:
    f = _frontier(tmp_path)
    f.enqueue(_url("a.test", "x"))
    head = f.head("a.test")
    assert head is not None
    f.lease(head, now=0.0)
    assert f.head("a.test") is None
    assert f.queued() == 0
    assert f.requeue_expired(299.0) == 0
    assert f.requeue_expired(300.0) == 1
    again = f.head("a.test")
    assert again is not None
    assert again.item == head.item
    assert f.queued() == 1


def test_restart_returns_leased_urls_and_keeps_the_queue(tmp_path: Path) -> None:
    f = _frontier(tmp_path)
    for i in range(4):
        f.enqueue(_url(f"s{i % 2}.test", str(i)))
    head = f.head("s0.test")
    assert head is not None
    f.lease(head, now=0.0)  # leased, then the process dies before done()
    done = f.head("s1.test")
    assert done is not None
    f.done(f.lease(done, now=0.0))
    f._conn.execute("COMMIT")
    restarted = _frontier(tmp_path)
    assert restarted.queued() == 3
    assert restarted.queued_for("s0.test") == 2
    assert restarted.queued_for("s1.test") == 1


def test_queued_urls_live_on_disk_not_in_memory(tmp_path: Path) -> None:
    f = _frontier(tmp_path)
    for i in range(5000):
        f.enqueue(_url(f"s{i % 10}.test", str(i)))
    stats = f.stats()
    assert stats.sites == 10  # memory holds one slot per site...
    assert stats.queued_fast + stats.queued_slow == 5000  # ...and counts, not the URLs
    rows = f._conn.execute("SELECT count(*) FROM queue").fetchone()[0]
    assert rows == 5000


def test_retry_puts_the_url_back_with_one_attempt_more_and_survives_restart(
    tmp_path: Path,
) -> None:
    f = _frontier(tmp_path)
    f.enqueue(_url("a.test", "x"))
    for expected in range(3):
        head = f.head("a.test")
        assert head is not None
        assert head.attempts == expected
        lease = f.lease(head, now=0.0)
        assert f.attempts(lease) == expected
        f.retry(lease)
    f._conn.execute("COMMIT")
    again = _frontier(tmp_path).head("a.test")
    assert again is not None
    assert again.attempts == 3


def test_put_back_returns_an_unsent_url_without_an_attempt(tmp_path: Path) -> None:
    f = _frontier(tmp_path)
    f.enqueue(_url("a.test", "x"))
    head = f.head("a.test")
    assert head is not None
    f.put_back(f.lease(head, now=0.0))
    again = f.head("a.test")
    assert again is not None
    assert (again.item.url, again.attempts) == (head.item.url, 0)
    assert f.queued() == 1


def test_sites_of_a_moved_partition_leave_with_their_rows(tmp_path: Path) -> None:
    f = _frontier(tmp_path)
    for site, path in [("a.test", "1"), ("a.test", "2"), ("b.test", "1")]:
        f.enqueue(_url(site, path))
    assert sorted(f.queued_sites()) == ["a.test", "b.test"]
    assert [row[2] for row in f.rows_of(["a.test"])] == ["http://a.test/1", "http://a.test/2"]
    assert f.drop_sites(["a.test"]) == 2
    assert f.queued_sites() == ["b.test"]
    assert f.head("a.test") is None
    assert f.queued() == 1


def test_issue_13_a_retry_goes_behind_the_sites_other_ready_urls(tmp_path: Path) -> None:
    f = _frontier(tmp_path)
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


def test_issue_13_a_deferred_url_competes_again_after_its_time(tmp_path: Path) -> None:
    f = _frontier(tmp_path)
    f.enqueue(_url("a.test", "first", Line.FAST))
    f.enqueue(_url("a.test", "second"))
    first = f.head("a.test", now=0.0)
    assert first is not None
    f.defer(first, 5.0)
    assert (h := f.head("a.test", now=4.9)) is not None
    assert h.item.url.endswith("/second")
    assert (h := f.head("a.test", now=5.0)) is not None
    assert h.item.url.endswith("/first"), "after its time, line and score decide again"


def test_issue_13_the_redirect_count_survives_a_restart(tmp_path: Path) -> None:
    f = _frontier(tmp_path)
    item = _url("a.test", "inf/4")
    f.enqueue(CrawlUrl(item.url, item.url_hash, item.site, 1, Line.SLOW, 0.0, redirects=4))
    f._conn.commit()
    head = _frontier(tmp_path).head("a.test")
    assert head is not None
    assert head.item.redirects == 4
    assert f.rows_of(["a.test"])[0][-1] == 4


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
    f = _frontier(tmp_path)
    head = f.head("a.test")
    assert head is not None
    assert (head.item.url, head.item.redirects, head.not_before) == ("http://a.test/old", 0, 0.0)
