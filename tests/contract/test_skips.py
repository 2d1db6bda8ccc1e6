"""Issue 16: the SkipLog contract (the last N skips, counts by reason, across restarts).

The embedded SQLite adapter is the only one so far; a `Backend` opens a log on one database
with a new connection each time, as a restarted process would.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trawl.frontier.skips import Skip, SkipBatch, SkipTally
from trawl.store.layout import DB_NAME
from trawl.store.skips_sqlite import SqliteSkipLog
from trawl.store.sqlite_db import open_database

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


class SqliteBackend:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.conns: list[sqlite3.Connection] = []

    def open(self, keep: int = 10_000) -> SqliteSkipLog:
        self.conns.append(open_database(self.path))
        return SqliteSkipLog(self.conns[-1], keep=keep)

    def commit(self) -> None:
        self.conns[-1].commit()

    def close(self) -> None:
        """End the process: what was not committed is lost."""
        self.conns.pop().close()


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[SqliteBackend]:
    b = SqliteBackend(tmp_path / DB_NAME)
    yield b
    for conn in b.conns:
        conn.close()


def _skip(n: int, reason: str = "scope") -> Skip:
    return Skip(f"http://a.test/{n}", reason, f"rule {n}", f"http://a.test/p{n}", 100.0 + n)


def _note(tally: SkipTally, skip: Skip) -> None:
    tally.note(skip.url, skip.reason, skip.rule, skip.referrer, skip.at)


def test_committed_skips_read_back_newest_first(backend: SqliteBackend) -> None:
    log = backend.open()
    assert (log.counts(), log.recent(10)) == ({}, [])
    log.write(SkipBatch((_skip(1), _skip(2, "exclude"), _skip(3)), {"scope": 2, "exclude": 1}))
    backend.commit()
    assert log.recent(10) == [_skip(3), _skip(2, "exclude"), _skip(1)]
    assert log.recent(2) == [_skip(3), _skip(2, "exclude")]
    assert log.recent(10, "scope") == [_skip(3), _skip(1)]
    assert log.recent(10, "hops") == []
    assert log.recent(0) == []
    assert log.counts() == {"exclude": 1, "scope": 2}


def test_counts_are_set_not_added(backend: SqliteBackend) -> None:
    log = backend.open()
    log.write(SkipBatch((), {"scope": 5}))
    log.write(SkipBatch((), {"scope": 5, "hops": 1}))  # the same value twice: still 5
    backend.commit()
    assert log.counts() == {"hops": 1, "scope": 5}


def test_the_table_keeps_only_the_newest_n(backend: SqliteBackend) -> None:
    log = backend.open(keep=5)
    log.write(SkipBatch(tuple(_skip(n) for n in range(3)), {"scope": 3}))
    log.write(SkipBatch(tuple(_skip(n) for n in range(3, 12)), {"scope": 12}))  # > keep at once
    backend.commit()
    assert log.recent(100) == [_skip(n) for n in range(11, 6, -1)]
    rows = backend.conns[-1].execute("SELECT count(*), min(seq), max(seq) FROM skipped")
    # The window rolled (seq goes on growing), and of the second batch only its newest 5
    # were written at all.
    assert rows.fetchone() == (5, 4, 8)
    assert log.counts() == {"scope": 12}  # the counts are not bounded


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keep=st.integers(1, 6), batches=st.lists(st.integers(0, 9), max_size=8))
def test_bound_holds_after_every_write(tmp_path: Path, keep: int, batches: list[int]) -> None:
    conn = open_database(tmp_path / DB_NAME)  # one file for every example: emptied first
    try:
        conn.execute("DELETE FROM skipped")
        log = SqliteSkipLog(conn, keep=keep)
        written: list[Skip] = []
        for size in batches:
            batch = tuple(_skip(len(written) + i) for i in range(size))
            written.extend(batch)
            log.write(SkipBatch(batch, {}))
            assert log.recent(keep + 10) == written[::-1][:keep]
        conn.commit()
    finally:
        conn.close()


def test_restart_resumes_counts_and_sample(backend: SqliteBackend) -> None:
    log = backend.open(keep=4)
    tally = SkipTally(sample_size=4)
    for n in range(6):
        _note(tally, _skip(n, "scope" if n % 2 else "max_depth"))
    log.write(tally.take_unflushed())
    backend.commit()
    _note(tally, _skip(99))
    log.write(tally.take_unflushed())  # never committed: the process is killed
    backend.close()

    log = backend.open(keep=4)
    assert log.counts() == {"max_depth": 3, "scope": 3}
    kept = log.recent(log.keep)
    assert kept == [_skip(5), _skip(4, "max_depth"), _skip(3), _skip(2, "max_depth")]
    resumed = SkipTally(sample_size=4, counts=log.counts(), recent=reversed(kept))
    assert resumed.take_unflushed().is_empty  # nothing restored is written twice
    _note(resumed, _skip(6, "max_depth"))
    log.write(resumed.take_unflushed())
    backend.commit()
    backend.close()

    log = backend.open(keep=4)
    assert log.counts() == {"max_depth": 4, "scope": 3}
    assert log.recent(10) == [_skip(6, "max_depth"), _skip(5), _skip(4, "max_depth"), _skip(3)]


def test_a_read_only_reader_sees_committed_skips_only(backend: SqliteBackend) -> None:
    log = backend.open()
    log.write(SkipBatch((_skip(1),), {"scope": 1}))
    backend.commit()
    log.write(SkipBatch((_skip(2),), {"scope": 2}))  # the open batch
    reader_conn = open_database(backend.path, readonly=True)
    try:
        reader = SqliteSkipLog(reader_conn)
        assert reader.recent(10) == [_skip(1)]
        assert reader.counts() == {"scope": 1}
    finally:
        reader_conn.close()


def test_a_database_from_before_issue_16_reads_as_nothing_skipped(tmp_path: Path) -> None:
    path = tmp_path / DB_NAME
    open_database(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE skipped")
        conn.execute("DROP TABLE skip_counts")
    conn.close()
    reader_conn = open_database(path, readonly=True)
    try:
        reader = SqliteSkipLog(reader_conn)
        assert (reader.counts(), reader.recent(10)) == ({}, [])
    finally:
        reader_conn.close()
    writer_conn = open_database(path)  # a writable open adds the tables
    try:
        SqliteSkipLog(writer_conn).write(SkipBatch((_skip(1),), {"scope": 1}))
        writer_conn.commit()
        assert SqliteSkipLog(writer_conn).recent(5) == [_skip(1)]
    finally:
        writer_conn.close()


def test_bad_keep_refused(backend: SqliteBackend) -> None:
    with pytest.raises(ValueError, match="keep"):
        backend.open(keep=0)
