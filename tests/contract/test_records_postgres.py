"""What only the PostgreSQL adapter promises: one outbox shared by concurrent nodes, with
offsets a follower can trust; page partitions; clear errors for a bad or lost server."""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from dataclasses import replace
from typing import TYPE_CHECKING

import psycopg
import pytest

from trawl.errors import ConfigError, DataError, UsageError
from trawl.model import PageFetchedEvent, PageRecord
from trawl.store.postgres_db import SCHEMA_VERSION, open_postgres
from trawl.store.records_postgres import PostgresRecords

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from tests.servers.postgres import PostgresServer


# Refuses to insert an event for a URL containing "poison": the failure comes after the batch's
# pages were written and its offsets taken, the worst moment for a rollback.
POISON_TRIGGER = """
CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.event->>'url' LIKE '%poison%' THEN RAISE EXCEPTION 'poisoned event'; END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER refuse_poison BEFORE INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION refuse_poison();
"""


class Worker(threading.Thread):
    """A thread whose failure is raised again by `join_checked`, not just printed."""

    error: BaseException | None = None

    def run(self) -> None:
        try:
            super().run()
        except BaseException as exc:  # handed to the test's thread below
            self.error = exc

    def join_checked(self, timeout_s: float = 60.0) -> None:
        self.join(timeout_s)
        assert not self.is_alive(), f"{self.name} still running after {timeout_s} s"
        if self.error is not None:
            raise self.error


class Stores:
    """Opens stores (one connection each, like separate nodes) and closes them at the end."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.conns: list[psycopg.Connection[tuple[object, ...]]] = []
        self.lock = threading.Lock()

    def open(self, partition_of: Callable[[str], int] | None = None) -> PostgresRecords:
        conn = open_postgres(self.dsn)
        with self.lock:
            self.conns.append(conn)
        return PostgresRecords(conn, partition_of=partition_of)

    def sql(self, statement: str) -> list[tuple[object, ...]]:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            cur = conn.execute(statement)
            return cur.fetchall() if cur.description else []


@pytest.fixture
def stores(postgres_dsn: str) -> Iterator[Stores]:
    s = Stores(postgres_dsn)
    yield s
    for conn in s.conns:
        conn.close()


def _page(url: str, *, due_at: float = 0.0, site: str = "a.test") -> PageRecord:
    return PageRecord(
        url_hash=hashlib.md5(url.encode()).hexdigest(),
        url=url,
        last_fetched_at=1000.0,
        http_status=200,
        content_hash="c" * 32,
        next_fetch_at=due_at,
        storage_key="k",
        site=site,
    )


def _event(url: str) -> PageFetchedEvent:
    return PageFetchedEvent(url, _page(url).url_hash, "k", "c" * 32, 200, 1000.0)


def _put(records: PostgresRecords, url: str) -> None:
    records.put_page(_page(url), _event(url))


def _follow(records: PostgresRecords, until: threading.Event, seen: list[PageFetchedEvent]) -> None:
    """A consumer: reads from the next offset it expects, in random-sized pages, and checks
    that the first event it gets is exactly that offset (a skipped one would show here)."""
    rng = random.Random(7)
    while True:
        done = until.is_set()  # read once more after the writers finished
        batch = records.read_events(len(seen) + 1, rng.randint(1, 40))
        for event in batch:
            assert event.offset == len(seen) + 1, f"expected offset {len(seen) + 1}: {event}"
            seen.append(event)
        if done and not batch:
            return
        if not batch:
            time.sleep(0.001)  # let the writers have the GIL


def _write(records: PostgresRecords, node: int, committed: list[str]) -> None:
    """A node: 30 batches of 1-15 pages with events; about one batch in 8 is poisoned and
    must vanish whole."""
    rng = random.Random(node)
    for batch in range(30):
        urls = [f"http://n{node}.test/{batch}/{i}" for i in range(rng.randint(1, 15))]
        if rng.random() < 0.125:
            urls[rng.randrange(len(urls))] += "poison"
        for url in urls:
            _put(records, url)
        try:
            records.commit()
        except DataError:
            assert any("poison" in url for url in urls)
        else:
            committed.extend(urls)


def test_concurrent_writers_and_a_follower_see_every_offset_once_in_order(
    stores: Stores,
) -> None:
    stores.open()
    stores.sql(POISON_TRIGGER)
    committed: dict[int, list[str]] = {node: [] for node in range(6)}
    seen: list[PageFetchedEvent] = []
    writers_done = threading.Event()
    follower = Worker(target=_follow, args=(stores.open(), writers_done, seen))
    writers = [Worker(target=_write, args=(stores.open(), n, committed[n])) for n in committed]
    follower.start()
    for t in writers:
        t.start()
    try:
        for t in writers:
            t.join_checked()
    finally:
        writers_done.set()
    follower.join_checked()
    everything = [url for urls in committed.values() for url in urls]
    assert sorted(e.url for e in seen) == sorted(everything)  # each exactly once
    for node, urls in committed.items():  # each node's events in its commit order
        assert [e.url for e in seen if e.url.startswith(f"http://n{node}.")] == urls
    assert stores.sql("SELECT count(*) FROM pages WHERE url LIKE '%poison%'") == [(0,)]
    assert len({e.url.rsplit("/", 1)[0] for e in seen}) > 6 * 30 * 0.6  # most batches landed


def test_a_later_committer_waits_for_an_earlier_one(stores: Stores) -> None:
    """An earlier transaction holding offset 1 keeps every later batch back until it ends:
    a follower never sees offset 2 while 1 may still appear."""
    reader, writer = stores.open(), stores.open()
    payload = _event("http://slow.test/").to_json()
    del payload["offset"]
    with psycopg.connect(stores.dsn) as slow:  # a node whose commit has taken offset 1
        slow.execute(
            "WITH taken AS (UPDATE event_offsets SET next_offset = next_offset + 1"
            " RETURNING next_offset - 1 AS o)"
            " INSERT INTO events SELECT o, 'slow', %s::jsonb FROM taken",
            (json.dumps(payload),),
        )
        _put(writer, "http://fast.test/")
        fast = Worker(target=writer.commit)
        fast.start()
        time.sleep(0.3)
        assert fast.is_alive()  # waiting for the counter row
        assert reader.read_events(1, 10) == []
        assert reader.last_offset() == -1
        slow.commit()
    fast.join_checked()
    assert [(e.offset, e.url) for e in reader.read_events(1, 10)] == [
        (1, "http://slow.test/"),
        (2, "http://fast.test/"),
    ]


def test_failed_commit_leaves_neither_record_nor_event_nor_a_hole(stores: Stores) -> None:
    records, other = stores.open(), stores.open()
    stores.sql(POISON_TRIGGER)
    _put(records, "http://a.test/1")
    records.commit()
    _put(records, "http://a.test/2")
    _put(records, "http://a.test/poison")
    records.put_host("a.test", {"nextAllowedAt": 1.0})
    with pytest.raises(DataError, match=r"^PostgreSQL 127\.0\.0\.1:\d+/trawl: commit failed: "):
        records.commit()
    assert other.get_page(_page("http://a.test/2").url_hash) is None
    assert other.get_host("a.test") is None
    assert records.get_page(_page("http://a.test/2").url_hash) is None  # the batch is gone
    _put(records, "http://a.test/3")
    records.commit()
    assert [(e.offset, e.url) for e in other.read_events(0, 10)] == [
        (1, "http://a.test/1"),
        (2, "http://a.test/3"),
    ]


def test_events_are_readable_only_once_committed(stores: Stores) -> None:
    records = stores.open()
    _put(records, "http://a.test/1")
    assert records.get_page(_page("http://a.test/1").url_hash) is not None
    assert (records.read_events(0, 10), records.last_offset()) == ([], -1)
    assert "pending=2" in repr(records)
    records.commit()
    assert [e.offset for e in records.read_events(0, 10)] == [1]
    assert records.last_offset() == 1
    stats = records.stats()
    assert (stats.commits, stats.events_written, stats.pending_writes) == (1, 1, 0)


def test_non_finite_numbers_are_refused_at_put_not_at_commit(stores: Stores) -> None:
    records = stores.open()
    _put(records, "http://a.test/1")
    page = _page("http://a.test/2")
    page.change_rate = float("nan")
    with pytest.raises(UsageError, match=r"page record of http://a\.test/2: .*NaN"):
        records.put_page(page, None)
    with pytest.raises(UsageError, match=r"host record of a\.test"):
        records.put_host("a.test", {"nextAllowedAt": float("inf")})
    records.commit()  # the batch without them still commits
    assert [e.url for e in records.read_events(0, 10)] == ["http://a.test/1"]


def _partition(site: str) -> int:
    return int(site.split(".")[0][1:]) % 4  # "s6.test" is in partition 2


def test_take_due_keeps_to_the_nodes_partitions(stores: Stores) -> None:
    node_a, node_b = stores.open(_partition), stores.open(_partition)
    for i in range(8):  # site s{i}: due at 10 * (i + 1)
        node_a.put_page(_page(f"http://s{i}.test/", due_at=10.0 * (i + 1), site=f"s{i}.test"), None)
    node_a.commit()
    node_b.put_page(_page("http://s9.test/", due_at=5.0, site="s9.test"), None)  # uncommitted
    assert node_b.due_count(1e9, partitions={1}) == 3  # s1, s5 stored; s9 pending
    assert node_b.next_due_at(partitions={1}) == 5.0
    assert node_a.next_due_at(partitions={3}) == 40.0
    assert node_a.due_count(1e9, partitions=[]) == 0
    taken_b = [d.site for d in node_b.take_due(1e9, 10, partitions={1, 2})]
    assert taken_b == ["s9.test", "s1.test", "s2.test", "s5.test", "s6.test"]
    taken_a = [d.site for d in node_a.take_due(1e9, 10, partitions={0, 3})]
    assert taken_a == ["s0.test", "s3.test", "s4.test", "s7.test"]
    node_b.commit()
    node_a.commit()
    assert node_a.take_due(1e9, 10) == []
    assert stores.sql("SELECT site, partition FROM pages ORDER BY site") == [
        (f"s{i}.test", i % 4) for i in (0, 1, 2, 3, 4, 5, 6, 7, 9)
    ]


def test_a_new_owner_asks_once_for_what_many_partitions_did_since_their_checkpoints(
    stores: Stores,
) -> None:
    node = stores.open(_partition)
    for i in range(8):  # site s{i} in partition i % 4, fetched at 1000 + i
        page = replace(_page(f"http://s{i}.test/", site=f"s{i}.test"), last_fetched_at=1000.0 + i)
        if i in (2, 6):  # a render queued for these, and one that ended for s3
            page = replace(page, render={"queuedAt": 999.0, "queuedReason": "empty_mount"})
        if i == 3:
            page = replace(page, render={"state": "rendered"})
        node.put_page(page, None)
    node.commit()
    since = {0: 0.0, 1: 1004.5, 2: 1000.0, 3: 2000.0}  # partition -> its checkpoint's time
    fetched = node.fetched_since(since)
    hashes = {_page(f"http://s{i}.test/").url_hash: i for i in range(8)}
    assert {p: sorted(hashes[h] for h in found) for p, found in fetched.items()} == {
        0: [0, 4],
        1: [5],
        2: [2, 6],
    }  # partition 3's pages are older than its checkpoint
    waiting = node.waiting_renders(since)
    assert {p: sorted(page.site for page in pages) for p, pages in waiting.items()} == {
        2: ["s2.test", "s6.test"]
    }
    assert node.fetched_since({}) == {}


def test_partitions_need_a_partition_function(stores: Stores) -> None:
    with pytest.raises(UsageError, match="partition_of"):
        stores.open().take_due(1.0, 10, partitions={0})


@pytest.mark.parametrize(
    ("dsn", "message"),
    [
        ("host=127.0.0.1 port=1 dbname=x password=s3cret", r"127\.0\.0\.1:1/x: cannot connect"),
        ("postgresql://u:s3cret@127.0.0.1:1/y", r"127\.0\.0\.1:1/y: cannot connect"),
        ("hots=127.0.0.1", "not a PostgreSQL connection string"),
        ("{server} dbname=missing password=s3cret", r"/missing: cannot connect .*does not exist"),
    ],
)
def test_bad_dsn_is_a_one_line_config_error(
    postgres_server: PostgresServer, dsn: str, message: str
) -> None:
    dsn = dsn.format(server=f"host=127.0.0.1 port={postgres_server.port} user=postgres")
    with pytest.raises(ConfigError, match=message) as caught:
        open_postgres(dsn)
    assert "\n" not in str(caught.value)
    assert "s3cret" not in str(caught.value)


def test_lost_server_connection_is_a_data_error(stores: Stores) -> None:
    records = stores.open()
    pid = stores.conns[-1].info.backend_pid
    stores.sql(f"SELECT pg_terminate_backend({pid})")
    _put(records, "http://a.test/1")
    with pytest.raises(DataError, match="commit failed") as caught:
        records.commit()
    assert "\n" not in str(caught.value)
    with pytest.raises(DataError, match="query failed"):
        records.get_page("0" * 32)


def test_nodes_starting_together_share_one_schema(stores: Stores) -> None:
    threads = [Worker(target=stores.open) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join_checked()
    assert stores.sql("SELECT value FROM meta") == [(str(SCHEMA_VERSION),)]
    assert stores.sql("SELECT next_offset FROM event_offsets") == [(1,)]
