"""Issue 19: a batch PostgreSQL could not take (the server stopped) is kept, reconnected and
committed once it is back, with its events numbered after the earlier ones, no hole and no
copy. A private server: the session's one is shared and must not stop."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from tests.contract.test_records import _event, _page
from tests.servers.postgres import restart, stop_keeping_data, temporary_postgres

from trawl.errors import DataError
from trawl.store.fingerprints import Original
from trawl.store.fingerprints_postgres import PostgresFingerprints
from trawl.store.postgres_db import open_postgres, reconnect_postgres
from trawl.store.records_postgres import PostgresRecords

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tests.servers.postgres import PostgresServer


@pytest.fixture
def server() -> Iterator[PostgresServer]:
    with temporary_postgres() as running:
        yield running


def test_issue_19_a_batch_refused_during_an_outage_commits_once_the_server_is_back(
    server: PostgresServer,
) -> None:
    records = PostgresRecords(
        open_postgres(server.dsn), connect=lambda: reconnect_postgres(server.dsn)
    )
    first = _page(1)
    records.put_page(first, _event(first))
    records.commit_batch(records.take_batch())
    batch_pages = [_page(i) for i in (2, 3, 4)]
    for page in batch_pages:
        records.put_page(page, _event(page))
    batch = records.take_batch()
    stop_keeping_data(server)
    try:
        with pytest.raises(DataError, match="PostgreSQL"):
            records.commit_batch(batch)
        with pytest.raises(DataError):
            records.commit_batch(batch)  # still down: still kept
        assert records.get_page(_page(3).url_hash) == _page(3), "reads still see the batch"
    finally:
        restart(server)
    records.commit_batch(batch)
    events = records.read_events(0, 100)
    assert [e.offset for e in events] == [1, 2, 3, 4], "no hole, no copy"
    assert [e.url_hash for e in events] == [p.url_hash for p in (first, *batch_pages)]
    records.close()


def test_issue_19_a_batch_whose_commit_answer_was_lost_is_not_written_twice(
    server: PostgresServer,
) -> None:
    records = PostgresRecords(open_postgres(server.dsn))
    page = _page(1)
    records.put_page(page, _event(page))
    batch = records.take_batch()
    # The server committed it, but the connection dropped before the answer came back:
    records._commit_batch(batch)  # type: ignore[arg-type]  # the batch is a _Batch
    batch.maybe_committed = True  # type: ignore[attr-defined]  # as _commit_batch sets it
    records.commit_batch(batch)  # the retry finds its last event and sends nothing
    assert [e.offset for e in records.read_events(0, 100)] == [1]
    records.close()


def test_issue_19_the_duplicate_index_answers_not_known_while_the_server_is_down(
    server: PostgresServer,
) -> None:
    records = PostgresRecords(
        open_postgres(server.dsn), connect=lambda: reconnect_postgres(server.dsn)
    )
    index = PostgresFingerprints(records)
    stored = Original("a" * 32, "http://a.test/", "k:1", "<urn:1>", 1.0, "sha1:X")
    index.add_original("c1", stored)
    index.put_simhash("a" * 32, "http://a.test/", "a.test", 1 << 40)
    records.commit_batch(records.take_batch())
    stop_keeping_data(server)
    try:
        assert index.original_of("c1") is None, "not known: the body is stored again"
        assert index.near_copy_of(1 << 40, max_distance=3, exclude_url_hash="") is None
        index.add_original("c2", stored._replace(url_hash="b" * 32))  # queued meanwhile
        assert index.original_of("c2") is not None, "its own writes still count"
        assert index.unanswered == 2
    finally:
        restart(server)
    assert index.original_of("c1") == stored, "answered again once the server is back"
    records.commit_batch(records.take_batch())
    records.close()
