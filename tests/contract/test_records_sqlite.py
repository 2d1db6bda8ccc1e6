"""The record and event contract, against the embedded SQLite store."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

import pytest

from trawl.errors import DataError
from trawl.model import PageFetchedEvent, PageRecord, UrlKind
from trawl.store.records_sqlite import SqliteRecords
from trawl.store.sqlite_db import open_database

if TYPE_CHECKING:
    from pathlib import Path


def _page(i: int, *, stored: bool = True) -> PageRecord:
    return PageRecord(
        url_hash=f"{i:032x}",
        url=f"http://a.test/{i}",
        last_fetched_at=1000.0 + i,
        http_status=200 if stored else 404,
        content_hash=f"{i:032x}" if stored else "",
        storage_key=f"f.warc.gz:{i * 100}:100" if stored else "",
        site="a.test",
    )


def _event(p: PageRecord) -> PageFetchedEvent:
    return PageFetchedEvent(
        p.url, p.url_hash, p.storage_key, p.content_hash, p.http_status, p.last_fetched_at
    )


@pytest.fixture
def records(tmp_path: Path) -> SqliteRecords:
    return SqliteRecords(open_database(tmp_path / "trawl.db"))


def test_page_and_event_commit_together_and_read_back(records: SqliteRecords) -> None:
    for i in range(5):
        page = _page(i, stored=i % 2 == 0)
        records.put_page(page, _event(page) if page.storage_key else None)
    records.commit()
    assert records.get_page(_page(3).url_hash) == _page(3, stored=False)
    events = records.read_events(0, 100)
    assert [e.url_hash for e in events] == [_page(i).url_hash for i in (0, 2, 4)]
    assert [e.offset for e in events] == sorted(e.offset for e in events)
    assert records.read_events(events[1].offset, 1) == [events[1]]
    assert records.last_offset() == events[-1].offset


def test_uncommitted_batch_is_lost_whole_on_crash(tmp_path: Path) -> None:
    db = tmp_path / "trawl.db"
    records = SqliteRecords(open_database(db))
    page = _page(1)
    records.put_page(page, _event(page))
    records.commit()
    page2 = _page(2)
    records.put_page(page2, _event(page2))  # not committed: the process "dies" here
    again = SqliteRecords(open_database(db))
    assert again.get_page(page.url_hash) is not None
    assert again.get_page(page2.url_hash) is None
    assert [e.url_hash for e in again.read_events(0, 10)] == [page.url_hash]


def test_record_json_uses_the_design_field_names(records: SqliteRecords) -> None:
    data = _page(1).to_json()
    for key in (
        "urlHash", "url", "lastFetchedAt", "httpStatus", "contentHash", "simhash", "etag",
        "lastModified", "changeRate", "nextFetchAt", "storageKey",
    ):  # fmt: skip
        assert key in data


def test_host_records_round_trip(records: SqliteRecords) -> None:
    records.put_host("a.test", {"host": "a.test", "nextAllowedAt": 5.0})
    records.commit()
    assert records.get_host("a.test") == {"host": "a.test", "nextAllowedAt": 5.0}
    assert records.get_host("b.test") is None
    assert list(records.iter_hosts()) == [("a.test", {"host": "a.test", "nextAllowedAt": 5.0})]


def test_damaged_json_is_a_data_error(tmp_path: Path) -> None:
    db = tmp_path / "trawl.db"
    records = SqliteRecords(open_database(db))
    records.commit()
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO hosts(site, record) VALUES ('x.test', '{broken')")
    conn.commit()
    conn.close()
    with pytest.raises(DataError, match="damaged host record"):
        records.get_host("x.test")


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "trawl.db"
    open_database(db).close()
    conn = sqlite3.connect(db)
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(DataError, match="schema version 99"):
        open_database(db)


def test_recrawl_fields_survive_the_round_trip(records: SqliteRecords) -> None:
    page = _page(1)
    page.visits = [[300.0, 1.0], [600.0, 0.0]]
    page.importance = 2.5
    page.duplicate_of = "http://a.test/0"
    page.near_duplicate_of = "http://b.test/9"
    page.last_status = 304
    page.kind = UrlKind.SITEMAP
    page.next_fetch_at = 5000.0
    records.put_page(page, None)
    records.commit()
    assert records.get_page(page.url_hash) == page


def test_due_pages_leave_the_due_index_once_taken(records: SqliteRecords) -> None:
    for i in range(5):
        page = _page(i)
        page.next_fetch_at = 100.0 * (i + 1)  # 100, 200, ... 500
        records.put_page(page, None)
    records.commit()
    assert records.due_count(250.0) == 2
    assert records.next_due_at() == 100.0
    due = records.take_due(350.0, limit=2)
    assert [d.url_hash for d in due] == [_page(0).url_hash, _page(1).url_hash]  # earliest first
    assert records.take_due(350.0, limit=10)[0].url_hash == _page(2).url_hash
    assert records.take_due(350.0, limit=10) == []
    records.commit()
    # A page stored again (fetched) is due again at its new nextFetchAt.
    page = _page(0)
    page.next_fetch_at = 900.0
    records.put_page(page, None)
    assert [d.url_hash for d in records.take_due(1000.0, limit=10)] == [
        _page(3).url_hash,
        _page(4).url_hash,
        _page(0).url_hash,
    ]


def test_make_due_only_brings_waiting_pages_forward(records: SqliteRecords) -> None:
    for i in range(3):
        page = _page(i)
        page.next_fetch_at = 1000.0
        records.put_page(page, None)
    records.commit()
    assert records.last_fetched([_page(0).url_hash, "f" * 32]) == {_page(0).url_hash: 1000.0}
    records.take_due(1000.0, limit=1)  # page 0 is queued now: not in the due index
    assert records.make_due([_page(0).url_hash, _page(1).url_hash], 10.0) == 1
    assert [d.url_hash for d in records.take_due(10.0, limit=10)] == [_page(1).url_hash]
    assert records.make_due([_page(2).url_hash], 2000.0) == 0  # never later
