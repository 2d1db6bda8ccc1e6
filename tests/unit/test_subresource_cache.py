"""The per-site cache of scripts and styles (render/subresource_cache.py): pure, exact."""

from __future__ import annotations

import pytest

from trawl.render.ports import SubresourceAnswer
from trawl.render.subresource_cache import (
    ENTRY_OVERHEAD_BYTES,
    SubresourceCache,
    SubresourceCacheStats,
    entry_bytes,
)

JS = (("content-type", "text/javascript"),)


def answer(body: bytes, status: int = 200) -> SubresourceAnswer:
    return SubresourceAnswer(status, JS, body)


def test_entry_bytes_counts_body_url_headers_and_overhead() -> None:
    url = "http://a.test/app.js"
    expected = ENTRY_OVERHEAD_BYTES + len(url) + len("content-type") + len("text/javascript") + 3
    assert entry_bytes(url, answer(b"abc")) == expected


def test_a_kept_answer_is_served_for_its_site_only() -> None:
    cache = SubresourceCache()
    kept = answer(b"render()")
    assert cache.put("a.test", "http://a.test/app.js", kept)
    assert cache.get("a.test", "http://a.test/app.js") is kept
    assert cache.get("b.test", "http://a.test/app.js") is None
    assert cache.get("a.test", "http://a.test/other.js") is None
    size = entry_bytes("http://a.test/app.js", kept)
    assert cache.stats() == SubresourceCacheStats(
        entries=1, bytes=size, max_bytes=cache.stats().max_bytes, hits=1, misses=2, evictions=0
    )


def test_only_complete_answers_are_kept() -> None:
    cache = SubresourceCache()
    assert not cache.put("a.test", "http://a.test/gone.js", answer(b"", status=404))
    assert not cache.put("a.test", "http://a.test/moved.js", answer(b"", status=301))
    assert cache.stats().entries == 0


def test_least_recently_used_goes_first_when_bytes_run_out() -> None:
    one = entry_bytes("http://a.test/1.js", answer(b"x" * 100))
    cache = SubresourceCache(max_bytes=2 * one)
    cache.put("a.test", "http://a.test/1.js", answer(b"x" * 100))
    cache.put("a.test", "http://a.test/2.js", answer(b"x" * 100))
    assert cache.get("a.test", "http://a.test/1.js") is not None  # 2.js is now the oldest
    cache.put("a.test", "http://a.test/3.js", answer(b"x" * 100))
    assert cache.get("a.test", "http://a.test/2.js") is None
    assert cache.get("a.test", "http://a.test/1.js") is not None
    assert cache.get("a.test", "http://a.test/3.js") is not None
    stats = cache.stats()
    assert (stats.entries, stats.bytes, stats.evictions) == (2, 2 * one, 1)


def test_an_answer_bigger_than_the_cache_is_not_kept_and_evicts_nothing() -> None:
    small = answer(b"x")
    cache = SubresourceCache(max_bytes=entry_bytes("http://a.test/s.js", small))
    assert cache.put("a.test", "http://a.test/s.js", small)
    assert not cache.put("a.test", "http://a.test/big.js", answer(b"x" * 1000))
    assert cache.get("a.test", "http://a.test/s.js") is small
    assert cache.stats().evictions == 0


def test_putting_a_url_again_replaces_its_entry() -> None:
    cache = SubresourceCache()
    cache.put("a.test", "http://a.test/app.js", answer(b"old"))
    new = answer(b"newer")
    cache.put("a.test", "http://a.test/app.js", new)
    assert cache.get("a.test", "http://a.test/app.js") is new
    assert cache.stats().entries == 1
    assert cache.stats().bytes == entry_bytes("http://a.test/app.js", new)


def test_repr_shows_the_state() -> None:
    cache = SubresourceCache(max_bytes=10_000)
    cache.put("a.test", "http://a.test/app.js", answer(b"abc"))
    cache.get("a.test", "http://a.test/app.js")
    size = entry_bytes("http://a.test/app.js", answer(b"abc"))
    assert repr(cache) == (
        f"<SubresourceCache entries=1 bytes={size}/10000 hits=1 misses=0 evictions=0>"
    )


def test_a_negative_bound_is_refused() -> None:
    with pytest.raises(ValueError, match="max_bytes must be >= 0, got -1"):
        SubresourceCache(max_bytes=-1)
