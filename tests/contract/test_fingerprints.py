"""The fingerprint index (exact copies and near copies), against both adapters: the embedded
SQLite one and the cluster's PostgreSQL one.

A `Backend` opens indexes on one database, each on a connection of its own as another
process (a cluster node) would, with the commit that makes its writes visible to others.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trawl.store.fingerprints import Original, simhash_blocks
from trawl.store.fingerprints_postgres import PostgresFingerprints
from trawl.store.fingerprints_sqlite import SqliteFingerprints
from trawl.store.postgres_db import open_postgres
from trawl.store.records_postgres import PostgresRecords
from trawl.store.sqlite_db import open_database

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from trawl.store.ports import Fingerprints


@dataclass
class Opened:
    index: Fingerprints
    commit: Callable[[], None]


class Backend(Protocol):
    def open(self) -> Opened: ...


class SqliteBackend:
    def __init__(self, path: Path) -> None:
        self.path = path

    def open(self) -> Opened:
        conn = open_database(self.path)

        def commit() -> None:
            if conn.in_transaction:
                conn.execute("COMMIT")

        return Opened(SqliteFingerprints(conn), commit)


class PostgresBackend:
    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.records: list[PostgresRecords] = []

    def open(self) -> Opened:
        records = PostgresRecords(open_postgres(self.dsn))
        self.records.append(records)
        return Opened(PostgresFingerprints(records), records.commit)


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "sqlite":
        yield SqliteBackend(tmp_path / "trawl.db")
        return
    postgres = PostgresBackend(request.getfixturevalue("postgres_dsn"))
    yield postgres
    for records in postgres.records:
        records.close()


@pytest.fixture
def index(backend: Backend) -> Fingerprints:
    return backend.open().index


def _original(n: int) -> Original:
    return Original(f"{n:032x}", f"http://a.test/{n}", f"f:{n}:10", f"<urn:{n}>", 1.0, "sha1:X")


def test_first_stored_copy_stays_the_original(index: Fingerprints) -> None:
    assert index.original_of("c1") is None
    index.add_original("c1", _original(1))
    index.add_original("c1", _original(2))  # a later copy never replaces it
    assert index.original_of("c1") == _original(1)


def _flip(value: int, bits: list[int]) -> int:
    for bit in bits:
        value ^= 1 << bit
    return value


def test_finds_a_copy_within_three_bits_whichever_blocks_differ(
    index: Fingerprints,
) -> None:
    rng = random.Random(7)
    base = rng.getrandbits(64)
    index.put_simhash("a" * 32, "http://a.test/", "a.test", base)
    for _ in range(200):
        bits = rng.sample(range(64), rng.randint(0, 3))
        match = index.near_copy_of(_flip(base, bits), max_distance=3, exclude_url_hash="b" * 32)
        assert match is not None
        assert match.url == "http://a.test/"
        assert match.distance == len(bits)
    four_off = _flip(base, [0, 20, 40, 60])  # one flip per block: no block agrees
    assert index.near_copy_of(four_off, max_distance=3, exclude_url_hash="b" * 32) is None


def test_a_page_is_not_its_own_near_copy_and_can_leave_the_index(
    index: Fingerprints,
) -> None:
    index.put_simhash("a" * 32, "http://a.test/", "a.test", 12345)
    assert index.near_copy_of(12345, max_distance=3, exclude_url_hash="a" * 32) is None
    index.drop_simhash("a" * 32)
    assert index.near_copy_of(12345, max_distance=3, exclude_url_hash="b" * 32) is None


def test_past_its_own_row_a_refetched_page_finds_the_closest_other(
    index: Fingerprints,
) -> None:
    index.put_simhash("a" * 32, "http://a.test/", "a.test", 12345)  # its own, 0 bits off
    index.put_simhash("c" * 32, "http://c.test/", "c.test", _flip(12345, [1, 2, 3]))
    index.put_simhash("d" * 32, "http://d.test/", "d.test", _flip(12345, [40]))
    index.put_simhash("e" * 32, "http://e.test/", "e.test", _flip(12345, [50]))
    match = index.near_copy_of(12345, max_distance=3, exclude_url_hash="a" * 32)
    assert match is not None
    assert (match.url, match.distance) == ("http://d.test/", 1), "the first of the closest"
    assert index.near_copy_of(12345, max_distance=0, exclude_url_hash="a" * 32) is None


@given(st.integers(0, (1 << 64) - 1))
def test_blocks_cover_all_64_bits(value: int) -> None:
    b = simhash_blocks(value)
    assert b[0] | b[1] << 16 | b[2] << 32 | b[3] << 48 == value


def test_high_bit_fingerprints_round_trip_through_signed_sqlite(
    index: Fingerprints,
) -> None:
    value = (1 << 64) - 3  # top bit set: stored as a negative integer
    index.put_simhash("a" * 32, "http://a.test/", "a.test", value)
    match = index.near_copy_of(value ^ 1, max_distance=3, exclude_url_hash="b" * 32)
    assert match is not None
    assert match.distance == 1


def test_a_new_main_copy_takes_the_whole_group_over(index: Fingerprints) -> None:
    index.note_near_copy("b", "a")
    index.note_near_copy("c", "a")
    assert sorted(index.move_near_copies("a", "d")) == ["a", "b", "c"]
    assert sorted(index.move_near_copies("d", "b")) == ["a", "c", "d"]  # b is main now


def test_a_committed_original_is_found_by_every_other_process(backend: Backend) -> None:
    first, other = backend.open(), backend.open()
    first.index.add_original("c1", _original(1))
    assert first.index.original_of("c1") == _original(1), "its own write, before commit"
    first.commit()
    assert other.index.original_of("c1") == _original(1)
    other.index.add_original("c1", _original(2))  # a copy stored at the same time elsewhere
    other.commit()
    assert backend.open().index.original_of("c1") == _original(1), "the first stays"


def test_near_copies_of_pages_another_process_indexed_are_found(backend: Backend) -> None:
    first, other = backend.open(), backend.open()
    first.index.put_simhash("a" * 32, "http://a.test/", "a.test", 0xF0F0_F0F0_F0F0_F0F0)
    first.commit()
    match = other.index.near_copy_of(0xF0F0_F0F0_F0F0_F0F1, max_distance=3, exclude_url_hash="")
    assert match is not None
    assert (match.url_hash, match.site, match.distance) == ("a" * 32, "a.test", 1)


def test_uncommitted_changes_override_what_is_committed(backend: Backend) -> None:
    opened = backend.open()
    index = opened.index
    index.put_simhash("a" * 32, "http://a.test/", "a.test", 1000)
    opened.commit()
    index.drop_simhash("a" * 32)  # dropped, not yet committed
    assert index.near_copy_of(1000, max_distance=3, exclude_url_hash="") is None
    index.put_simhash("a" * 32, "http://a.test/", "a.test", 1 << 40)  # back, changed
    assert index.near_copy_of(1000, max_distance=3, exclude_url_hash="") is None
    match = index.near_copy_of((1 << 40) | 1, max_distance=3, exclude_url_hash="")
    assert match is not None
    assert match.distance == 1
    opened.commit()
    match = backend.open().index.near_copy_of(1 << 40, max_distance=3, exclude_url_hash="")
    assert match is not None
    assert match.distance == 0


def test_a_group_moves_whole_across_commits(backend: Backend) -> None:
    opened = backend.open()
    opened.index.note_near_copy("b", "a")
    opened.commit()
    opened.index.note_near_copy("c", "a")  # not committed yet
    assert sorted(opened.index.move_near_copies("a", "d")) == ["a", "b", "c"]
    opened.commit()
    assert sorted(backend.open().index.move_near_copies("d", "b")) == ["a", "c", "d"]
