"""The seen set of a cluster node: one slice per partition it owns, saved with the partition.

Each slice is a Bloom filter for discovered links and an exact set for must-crawl URLs (seeds,
operator URLs), as `SeenSet` keeps for the whole crawl in embedded mode. A slice moves with its
partition: `slice_bytes` goes into the partition's checkpoint, `load_slice` takes it back, and
`drop` forgets it on hand-over. Capacity per slice is the crawl's `seen.expected_urls` divided
among the partitions (a fixed share, so a slice saved by one node loads on any other).

The node claims URLs through `claim(partition, url_hash, must_crawl=...)`; the crawl loop never
claims in cluster mode (it routes what it finds), so the `SeenUrls` port's own claim methods
refuse, and `snapshot()` has nothing to save: slices are saved with their partitions.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING

from trawl.errors import DataError, UsageError
from trawl.seen.bloom import BloomFilter

if TYPE_CHECKING:
    from collections.abc import Callable

MIN_SLICE_CAPACITY = 10_000


class _Slice:
    __slots__ = ("bloom", "must_crawl")

    def __init__(self, bloom: BloomFilter, must_crawl: set[str]) -> None:
        self.bloom = bloom
        self.must_crawl = must_crawl


class PartitionedSeen:
    def __init__(self, *, expected_urls: int, fp_rate: float, partitions: int) -> None:
        self._capacity = max(MIN_SLICE_CAPACITY, math.ceil(expected_urls / partitions))
        self._fp_rate = fp_rate
        self._slices: dict[int, _Slice] = {}
        self.checks = 0
        self.load_error: str | None = None

    def __repr__(self) -> str:
        return f"<PartitionedSeen slices={len(self._slices)} checks={self.checks}>"

    # -- the node's side ---------------------------------------------------------------
    def claim(self, partition: int, url_hash: str, *, must_crawl: bool) -> bool:
        """True when the URL is new to its partition's slice; it is seen from now on."""
        self.checks += 1
        part = self._slice(partition)
        if must_crawl:
            if url_hash in part.must_crawl:
                return False
            part.must_crawl.add(url_hash)
            part.bloom.add(url_hash)
            return True
        return part.bloom.add_if_new(url_hash)

    def add(self, partition: int, url_hashes: list[str]) -> None:
        """Count URLs as seen (pages the previous owner fetched after its checkpoint)."""
        bloom = self._slice(partition).bloom
        for url_hash in url_hashes:
            bloom.add(url_hash)

    def slice_bytes(self, partition: int) -> bytes:
        part = self._slice(partition)
        musts = json.dumps(sorted(part.must_crawl), separators=(",", ":")).encode()
        return len(musts).to_bytes(8, "big") + musts + part.bloom.to_bytes()

    def load_slice(self, partition: int, data: bytes) -> None:
        """Raises DataError when `data` is not a slice `slice_bytes` wrote."""
        try:
            n = int.from_bytes(data[:8], "big")
            musts = json.loads(data[8 : 8 + n])
            bloom = BloomFilter.from_bytes(data[8 + n :])
        except (ValueError, UnicodeDecodeError) as exc:
            raise DataError(f"partition {partition}: damaged seen-set slice ({exc})") from None
        if not isinstance(musts, list) or not all(isinstance(h, str) for h in musts):
            raise DataError(f"partition {partition}: damaged seen-set slice (must-crawl list)")
        self._slices[partition] = _Slice(bloom, set(musts))

    def drop(self, partition: int) -> None:
        self._slices.pop(partition, None)

    def _slice(self, partition: int) -> _Slice:
        part = self._slices.get(partition)
        if part is None:
            part = self._slices[partition] = _Slice(
                BloomFilter(self._capacity, self._fp_rate), set()
            )
        return part

    # -- the SeenUrls port -------------------------------------------------------------
    def add_if_new(self, url_hash: str) -> bool:
        raise UsageError("cluster mode: URLs are claimed by their partition's owner")

    def add_must_crawl_if_new(self, url_hash: str) -> bool:
        raise UsageError("cluster mode: URLs are claimed by their partition's owner")

    def snapshot(self) -> Callable[[], None]:
        """Nothing to save: each slice is saved with its partition's checkpoint."""
        return _nothing

    @property
    def size_bytes(self) -> int:
        return sum(part.bloom.size_bytes for part in self._slices.values())


def _nothing() -> None:
    return None
