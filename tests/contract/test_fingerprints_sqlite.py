"""The fingerprint index (exact copies and near copies) against the embedded SQLite store."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trawl.store.fingerprints_sqlite import Original, SqliteFingerprints, simhash_blocks
from trawl.store.sqlite_db import open_database

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture
def index(tmp_path: Path) -> SqliteFingerprints:
    return SqliteFingerprints(open_database(tmp_path / "trawl.db"))


def _original(n: int) -> Original:
    return Original(f"{n:032x}", f"http://a.test/{n}", f"f:{n}:10", f"<urn:{n}>", 1.0, "sha1:X")


def test_first_stored_copy_stays_the_original(index: SqliteFingerprints) -> None:
    assert index.original_of("c1") is None
    index.add_original("c1", _original(1))
    index.add_original("c1", _original(2))  # a later copy never replaces it
    assert index.original_of("c1") == _original(1)


def _flip(value: int, bits: list[int]) -> int:
    for bit in bits:
        value ^= 1 << bit
    return value


def test_finds_a_copy_within_three_bits_whichever_blocks_differ(
    index: SqliteFingerprints,
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
    index: SqliteFingerprints,
) -> None:
    index.put_simhash("a" * 32, "http://a.test/", "a.test", 12345)
    assert index.near_copy_of(12345, max_distance=3, exclude_url_hash="a" * 32) is None
    index.drop_simhash("a" * 32)
    assert index.near_copy_of(12345, max_distance=3, exclude_url_hash="b" * 32) is None


def test_past_its_own_row_a_refetched_page_finds_the_closest_other(
    index: SqliteFingerprints,
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
    index: SqliteFingerprints,
) -> None:
    value = (1 << 64) - 3  # top bit set: stored as a negative integer
    index.put_simhash("a" * 32, "http://a.test/", "a.test", value)
    match = index.near_copy_of(value ^ 1, max_distance=3, exclude_url_hash="b" * 32)
    assert match is not None
    assert match.distance == 1


def test_a_new_main_copy_takes_the_whole_group_over(index: SqliteFingerprints) -> None:
    index.note_near_copy("b", "a")
    index.note_near_copy("c", "a")
    assert sorted(index.move_near_copies("a", "d")) == ["a", "b", "c"]
    assert sorted(index.move_near_copies("d", "b")) == ["a", "c", "d"]  # b is main now
