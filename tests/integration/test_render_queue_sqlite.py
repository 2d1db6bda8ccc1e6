"""The render queue on a real database file (render/queue_sqlite.py, issue 18)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from trawl.render.ports import RenderItem
from trawl.render.queue_sqlite import SqliteRenderQueue
from trawl.store.sqlite_db import open_database

if TYPE_CHECKING:
    from pathlib import Path


def _item(site: str, n: int, key: str = "w.warc.gz:0:10") -> RenderItem:
    url = f"http://{site}/p{n}"
    return RenderItem(url, f"{site}-{n}", site, "empty-mount", key, f"<urn:{n}>", 1.0)


def _queue(tmp_path: Path) -> SqliteRenderQueue:
    return SqliteRenderQueue(open_database(tmp_path / "trawl.db"))


def test_oldest_first_one_page_a_site_and_none_of_a_site_already_leased(tmp_path: Path) -> None:
    q = _queue(tmp_path)
    for at, item in enumerate([_item("a.test", 1), _item("a.test", 2), _item("b.test", 1)]):
        q.offer(item, now=float(at))
    first = q.lease(now=10.0, lease_s=60.0, limit=5)
    assert [(i.site, i.url) for i in first] == [
        ("a.test", "http://a.test/p1"),
        ("b.test", "http://b.test/p1"),
    ]
    assert all(i.attempts == 1 for i in first)
    assert q.lease(now=11.0, lease_s=60.0, limit=5) == []  # a.test's second waits
    q.done("a.test-1")
    assert [i.url for i in q.lease(now=12.0, lease_s=60.0, limit=5)] == ["http://a.test/p2"]
    assert q.stats(now=12.0).queued == 2
    assert q.stats(now=12.0).leased == 2


def test_the_limit_counts_sites(tmp_path: Path) -> None:
    q = _queue(tmp_path)
    for n in range(5):
        q.offer(_item(f"s{n}.test", 1), now=float(n))
    assert [i.site for i in q.lease(now=9.0, lease_s=5.0, limit=2)] == ["s0.test", "s1.test"]
    assert q.lease(now=9.0, lease_s=5.0, limit=0) == []


def test_an_expired_lease_is_leased_again_and_counts_its_attempts(tmp_path: Path) -> None:
    q = _queue(tmp_path)
    q.offer(_item("a.test", 1), now=0.0)
    assert q.lease(now=1.0, lease_s=10.0, limit=1)[0].attempts == 1
    assert q.lease(now=10.9, lease_s=10.0, limit=1) == []
    assert q.lease(now=11.0, lease_s=10.0, limit=1)[0].attempts == 2


def test_retry_waits_until_not_before(tmp_path: Path) -> None:
    q = _queue(tmp_path)
    q.offer(_item("a.test", 1), now=0.0)
    q.lease(now=1.0, lease_s=10.0, limit=1)
    q.retry("a.test-1", not_before=30.0)
    assert q.lease(now=29.0, lease_s=10.0, limit=1) == []
    assert [i.attempts for i in q.lease(now=30.0, lease_s=10.0, limit=1)] == [2]


def test_an_uncounted_retry_gives_its_leases_attempt_back(tmp_path: Path) -> None:
    """A lease that never reached the browser (a store out of reach, a partition moving)."""
    q = _queue(tmp_path)
    q.offer(_item("a.test", 1), now=0.0)
    for now in (1.0, 2.0, 3.0):
        (item,) = q.lease(now=now, lease_s=10.0, limit=1)
        assert item.attempts == 1
        q.retry("a.test-1", not_before=now, uncounted=True)
    q.lease(now=4.0, lease_s=10.0, limit=1)
    q.retry("a.test-1", not_before=4.0)  # counted: a browser failure
    assert [i.attempts for i in q.lease(now=5.0, lease_s=10.0, limit=1)] == [2]


def test_a_re_offer_points_at_the_newest_response_and_keeps_the_place(tmp_path: Path) -> None:
    q = _queue(tmp_path)
    q.offer(_item("a.test", 1, key="old.warc.gz:0:10"), now=0.0)
    q.offer(_item("b.test", 1), now=1.0)
    q.offer(_item("a.test", 1, key="new.warc.gz:5:20"), now=2.0)
    leased = q.lease(now=3.0, lease_s=10.0, limit=5)
    assert [(i.url, i.storage_key) for i in leased] == [
        ("http://a.test/p1", "new.warc.gz:5:20"),
        ("http://b.test/p1", "w.warc.gz:0:10"),
    ]
    assert q.stats().queued == 2


def test_committed_rows_survive_a_killed_process_and_their_leases_end(tmp_path: Path) -> None:
    conn = open_database(tmp_path / "trawl.db")
    q = SqliteRenderQueue(conn)
    q.offer(_item("a.test", 1), now=0.0)
    q.offer(_item("b.test", 1), now=0.0)
    q.lease(now=1.0, lease_s=600.0, limit=1)
    conn.commit()
    q.offer(_item("c.test", 1), now=2.0)  # not committed: lost with the process
    conn.close()  # SQLite rolls back the open transaction, as a killed process's is
    again = SqliteRenderQueue(open_database(tmp_path / "trawl.db"))
    assert again.stats().queued == 2
    assert again.reset_leases() == 1
    assert sorted(i.site for i in again.lease(now=3.0, lease_s=60.0, limit=5)) == [
        "a.test",
        "b.test",
    ]


def test_an_item_without_its_response_is_refused() -> None:
    with pytest.raises(ValueError, match="storage key"):
        RenderItem("http://a.test/", "h", "a.test", "empty-mount", "", "", 1.0)


def test_a_partitions_rows_move_to_another_queue_with_their_place_and_attempts(
    tmp_path: Path,
) -> None:
    """A cluster node's hand-over: the rows of some sites leave one queue (its checkpoint
    carries them) and join another's, keeping their order and attempts."""
    old = SqliteRenderQueue(open_database(tmp_path / "old.db"))
    for at, item in enumerate([_item("a.test", 1), _item("b.test", 1), _item("a.test", 2)]):
        old.offer(item, now=float(at))
    old.lease(now=5.0, lease_s=60.0, limit=5)  # a.test-1 and b.test-1 in flight
    assert old.sites() == {"a.test", "b.test"}
    moving = old.rows_of(["a.test"])
    assert [(i.url_hash, i.attempts, i.queued_at) for i in moving] == [
        ("a.test-1", 1, 0.0),
        ("a.test-2", 0, 2.0),
    ]
    old.drop_sites(["a.test"])
    assert old.sites() == {"b.test"}
    new = SqliteRenderQueue(open_database(tmp_path / "new.db"))
    new.offer(_item("a.test", 2, key="here.warc.gz:0:9"), now=9.0)  # queued here already
    new.restore(moving)
    leased = new.lease(now=10.0, lease_s=60.0, limit=5)
    assert [(i.url_hash, i.attempts) for i in leased] == [("a.test-1", 2)]  # not in flight here
    new.done("a.test-1")
    (second,) = new.lease(now=11.0, lease_s=60.0, limit=5)
    assert (second.url_hash, second.storage_key) == ("a.test-2", "here.warc.gz:0:9")
    assert new.rows_of([f"s{n}.test" for n in range(1200)]) == []  # many sites: chunked
