from __future__ import annotations

import hashlib

import pytest

from trawl.seen.bloom import BloomFilter


def _h(i: int) -> str:
    return hashlib.sha256(str(i).encode()).hexdigest()[:32]


def test_no_false_new_and_about_the_configured_false_seen_rate() -> None:
    bloom = BloomFilter(20_000, 0.01)
    for i in range(20_000):
        assert bloom.add_if_new(_h(i)) or _h(i) in bloom
    assert all(_h(i) in bloom for i in range(20_000))  # never a false "new"
    false_seen = sum(_h(i) in bloom for i in range(20_000, 40_000))
    assert false_seen / 20_000 < 0.02


def test_round_trip_keeps_members_across_processes_hash_salt() -> None:
    bloom = BloomFilter(1000, 0.01)
    for i in range(500):
        bloom.add(_h(i))
    loaded = BloomFilter.from_bytes(bloom.to_bytes())
    assert all(_h(i) in loaded for i in range(500))
    assert loaded.capacity == 1000


def test_damaged_checkpoint_raises_value_error() -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - any ValueError subtype is fine here
        BloomFilter.from_bytes(b"garbage without header")


def test_about_ten_bits_per_url_at_one_percent() -> None:
    bloom = BloomFilter(1_000_000, 0.01)
    assert 9.0 <= bloom.size_bytes * 8 / 1_000_000 <= 10.5


def test_the_parts_the_checkpoint_writes_load_back_as_the_same_filter() -> None:
    bloom = BloomFilter(10_000, 0.01)
    hashes = [f"{n:032x}" for n in range(0, 10_000 * 7919, 7919)]
    for h in hashes[:5_000]:
        bloom.add(h)
    header, body = bloom.to_parts()
    assert header + body == bloom.to_bytes()
    loaded = BloomFilter.from_bytes(header + body)
    assert all(h in loaded for h in hashes[:5_000])
    assert [h in loaded for h in hashes[5_000:]] == [h in bloom for h in hashes[5_000:]]


def test_a_checkpoint_of_a_filter_hashed_by_a_python_callback_loads_the_same() -> None:
    # Checkpoints from before the filter was handed integers: rbloom called a Python hash
    # function on each urlHash string. The bits must be the same, or an upgrade would
    # take every URL seen before for new (or the reverse).
    from rbloom import Bloom

    offset = 1 << 127
    old = Bloom(5_000, 0.01, lambda url_hash: int(url_hash, 16) - offset)
    for i in range(2_500):
        old.add(_h(i))
    loaded = BloomFilter.from_bytes(b"5000:0.01\n" + bytes(old.save_bytes()))
    assert all(_h(i) in loaded for i in range(2_500))
    fresh = BloomFilter(5_000, 0.01)
    for i in range(2_500):
        fresh.add(_h(i))
    assert fresh.to_bytes() == loaded.to_bytes()
    assert [_h(i) in loaded for i in range(2_500, 5_000)] == [
        _h(i) in old for i in range(2_500, 5_000)
    ]
