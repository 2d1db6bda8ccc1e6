"""The record and event contract, against every adapter: embedded SQLite and PostgreSQL.

A `Backend` opens stores on one database (each `open()` a new connection, as a restarted
process would) and knows how to damage it; the tests only use the store's public methods.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Protocol

import psycopg
import pytest

from trawl.errors import DataError
from trawl.model import PageFetchedEvent, PageRecord, UrlKind
from trawl.store.postgres_db import open_postgres
from trawl.store.records_postgres import PostgresRecords
from trawl.store.records_sqlite import SqliteRecords
from trawl.store.sqlite_db import open_database

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


Records = SqliteRecords | PostgresRecords


class Backend(Protocol):
    def open(self) -> Records: ...

    def write_raw_host(self, site: str) -> None:
        """Store a host record that is not a JSON object, behind the store's back."""

    def set_schema_version(self, version: str) -> None: ...


class SqliteBackend:
    def __init__(self, path: Path) -> None:
        self.path = path

    def open(self) -> Records:
        return SqliteRecords(open_database(self.path))

    def write_raw_host(self, site: str) -> None:
        with sqlite3.connect(self.path) as conn:
            conn.execute("INSERT INTO hosts(site, record) VALUES (?, '{broken')", (site,))
        conn.close()

    def set_schema_version(self, version: str) -> None:
        with sqlite3.connect(self.path) as conn:
            conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (version,))
        conn.close()


class PostgresBackend:
    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.conns: list[psycopg.Connection[tuple[object, ...]]] = []

    def open(self) -> Records:
        conn = open_postgres(self.dsn)
        self.conns.append(conn)
        return PostgresRecords(conn)

    def write_raw_host(self, site: str) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute("INSERT INTO hosts(site, record) VALUES (%s, '[1]')", (site,))

    def set_schema_version(self, version: str) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute("UPDATE meta SET value = %s WHERE key = 'schema_version'", (version,))

    def close(self) -> None:
        for conn in self.conns:
            conn.close()


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "sqlite":
        yield SqliteBackend(tmp_path / "trawl.db")
        return
    pg = PostgresBackend(request.getfixturevalue("postgres_dsn"))
    yield pg
    pg.close()


@pytest.fixture
def records(backend: Backend) -> Records:
    return backend.open()


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


def test_page_and_event_commit_together_and_read_back(records: Records) -> None:
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


def test_uncommitted_batch_is_lost_whole_on_crash(backend: Backend) -> None:
    records = backend.open()
    page = _page(1)
    records.put_page(page, _event(page))
    records.commit()
    page2 = _page(2)
    records.put_page(page2, _event(page2))  # not committed: the process "dies" here
    again = backend.open()
    assert again.get_page(page.url_hash) is not None
    assert again.get_page(page2.url_hash) is None
    assert [e.url_hash for e in again.read_events(0, 10)] == [page.url_hash]


def test_record_json_uses_the_design_field_names(records: Records) -> None:
    data = _page(1).to_json()
    for key in (
        "urlHash", "url", "lastFetchedAt", "httpStatus", "contentHash", "simhash", "etag",
        "lastModified", "changeRate", "nextFetchAt", "storageKey",
    ):  # fmt: skip
        assert key in data


def test_host_records_round_trip(records: Records) -> None:
    records.put_host("a.test", {"host": "a.test", "nextAllowedAt": 5.0})
    records.commit()
    assert records.get_host("a.test") == {"host": "a.test", "nextAllowedAt": 5.0}
    assert records.get_host("b.test") is None
    assert list(records.iter_hosts()) == [("a.test", {"host": "a.test", "nextAllowedAt": 5.0})]


def test_damaged_json_is_a_data_error(backend: Backend) -> None:
    records = backend.open()
    records.commit()
    backend.write_raw_host("x.test")
    with pytest.raises(DataError, match="damaged host record"):
        records.get_host("x.test")


def test_newer_schema_is_refused(backend: Backend) -> None:
    backend.open()
    backend.set_schema_version("99")
    with pytest.raises(DataError, match="schema version 99"):
        backend.open()


def test_recrawl_fields_survive_the_round_trip(records: Records) -> None:
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


def test_a_pages_render_fields_survive_the_round_trip(records: Records) -> None:
    plain, rendered = _page(1), _page(2)
    rendered.render = {"state": "done", "reason": "empty-mount", "linksGained": 3}
    for page in (plain, rendered):
        records.put_page(page, None)
    records.commit()
    assert records.get_page(plain.url_hash) == plain
    assert records.get_page(plain.url_hash).to_json()["render"] is None  # type: ignore[union-attr]
    assert records.get_page(rendered.url_hash) == rendered
    assert "render" not in records.get_page(rendered.url_hash).extra  # type: ignore[union-attr]


def test_due_pages_leave_the_due_index_once_taken(records: Records) -> None:
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


def test_make_due_only_brings_waiting_pages_forward(records: Records) -> None:
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


def test_due_page_carries_what_the_refresh_line_needs(records: Records) -> None:
    page = _page(7)
    page.depth, page.importance, page.change_rate = 3, 1.5, 0.25
    page.visits = [[60.0, 1.0], [60.0, 0.0], [120.0, 1.0]]
    page.kind = UrlKind.SITEMAP
    page.next_fetch_at = 50.0
    records.put_page(page, None)
    records.commit()
    (due,) = records.take_due(60.0, limit=5)
    assert due == (page.url, page.url_hash, "a.test", 3, UrlKind.SITEMAP, 1.5, 0.25, 1007.0, 3)


def test_reads_see_this_stores_uncommitted_writes(records: Records) -> None:
    """Read-your-writes inside the open batch, stored rows and new ones mixed."""
    for i in (0, 2):
        page = _page(i)
        page.next_fetch_at = 100.0 + i
        records.put_page(page, None)
    records.put_host("b.test", {"n": 1})
    records.commit()
    newer = _page(1)
    newer.next_fetch_at = 50.0
    records.put_page(newer, None)  # uncommitted from here on
    changed = _page(2)
    changed.last_fetched_at = 5000.0
    records.put_page(changed, None)
    records.put_host("a.test", {"n": 2})
    records.put_host("b.test", {"n": 3})
    records.set_near_duplicate_of(_page(0).url_hash, "http://main.test/")
    records.set_near_duplicate_of("e" * 32, "http://main.test/")  # no such page: nothing
    assert records.get_page(newer.url_hash) == newer
    assert records.get_page(_page(0).url_hash).near_duplicate_of == "http://main.test/"
    assert records.get_page("e" * 32) is None
    assert [p.url_hash for p in records.iter_pages()] == [_page(i).url_hash for i in (0, 1, 2)]
    assert list(records.iter_hosts()) == [("a.test", {"n": 2}), ("b.test", {"n": 3})]
    assert records.get_host("b.test") == {"n": 3}
    assert records.last_fetched([_page(2).url_hash]) == {_page(2).url_hash: 5000.0}
    assert (records.due_count(101.0), records.next_due_at()) == (2, 50.0)
    assert [d.url_hash for d in records.take_due(200.0, 2)] == [newer.url_hash, _page(0).url_hash]
    assert (records.due_count(1e9), records.next_due_at()) == (0, None)  # page 2: not due
    records.commit()
    assert records.get_page(_page(0).url_hash).near_duplicate_of == "http://main.test/"
    assert records.get_page(_page(2).url_hash) == changed
    assert records.take_due(1e9, 10) == []


def test_iteration_goes_past_one_read_page(records: Records) -> None:
    for i in range(2500):
        page = _page(i)
        page.last_fetched_at = float(i % 7)  # many ties: the order must still be total
        records.put_page(page, None)
        records.put_host(f"s{i:05d}.test", {"i": i})
    records.commit()
    records.put_page(_page(2500), None)  # one uncommitted page merged in
    pages = [p.url_hash for p in records.iter_pages()]
    assert len(pages) == len(set(pages)) == 2501
    at = [records.get_page(h).last_fetched_at for h in pages]
    assert at == sorted(at)
    assert [site for site, _ in records.iter_hosts()] == [f"s{i:05d}.test" for i in range(2500)]
