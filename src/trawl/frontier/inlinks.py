"""Approximate in-link counts: how many pages, and how many other sites, link to a URL (pure).

How this works. Every link found on every fetched page counts, new or already seen, so this
runs ~30,000 times a second at full speed and must stay in bounded memory. Two count-min
sketches share one table: row r (of 4) holds, for each of `width` buckets, a 16-bit *pages*
counter and beside it a 16-bit *sites* counter (side by side they share a cache line, which
measured ~15 % faster than two tables). A URL's bucket in row r is bits [r*b, (r+1)*b) of its
urlHash (b = log2(width)): the hash is already 128 uniform bits of SHA-256, so nothing is
hashed again. A URL's estimate is the smallest of its 4 counters.

- Pages: a page counts once per target however often it links to it (duplicates within one
  batch are skipped).
- Sites: a target's count rises the first time a page of `source_site` links to it, and never
  for a same-site link: a site's own navigation says nothing about what the rest of the web
  thinks of a page. First times are told apart by a Bloom filter (rbloom) of
  (target, source site) pairs, keyed by urlHash XOR a hash of the site.

Updates are *conservative* (Estan & Varghese 2002): only the counters at the current minimum are
raised, to minimum + 1. The estimate still never under-counts, and collisions add far less:
in a simulation with half the links to one-off URLs, an unseen URL read ~N/(4.5 * width) after
N links, against ~N/(2.5 * width) with plain count-min.

Ageing. However wide, a sketch fills: after N links every estimate is inflated by roughly
N/(4.5 * width). So every `halve_every_links` links (default 4 * width, ~140 s of a full-speed
crawl at the default width), or when the pair filter reaches `pair_capacity`, every counter is
halved and the pair filter is emptied (TinyLFU's reset; Einziger et al. 2017). Counts then
weigh recent links most: an old link counts 1/2 after one halving, 1/4 after two. Between
halvings estimates never under-count, except that a (target, site) pair has a chance of
at most 1 % (the pair filter's false-positive rate at capacity) of not raising the sites count.
Counters saturate at 65,535, far past where log-scaled scores stop telling pages apart.

Memory is fixed at construction: 16 * width bytes for the sketches (16 MiB at the default
width of 2**20) plus ~1.2 bytes per pair of capacity (11.4 MiB for 10 million).
"""

from __future__ import annotations

import struct
import sys
import zlib
from array import array
from dataclasses import dataclass
from hashlib import blake2b
from typing import TYPE_CHECKING

from rbloom import Bloom

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from typing import BinaryIO

__all__ = ["InLinkCounter", "InLinkStats"]

_ROWS = 4
_MAX_COUNT = 0xFFFF  # the counters are array('H')
_COUNTER_BYTES = 2
_OFFSET = 1 << 127  # rbloom wants its hashes as signed 128-bit integers
_PAIR_FALSE_POSITIVE_RATE = 0.01
_MAGIC = b"trawl-inlinks/1\n"
# width, halve_every_links, pair_capacity, links and pairs since halving, totals, halvings
_HEADER = struct.Struct("<8Q")
_CRC = struct.Struct("<I")


@dataclass(frozen=True, slots=True)
class InLinkStats:
    width: int
    links_counted: int  # page -> target links counted since the counter was created
    site_links_counted: int  # first links from a site to a target (raised a sites count)
    halvings: int
    size_bytes: int


def _check_sizes(width: int, halve_every_links: int, pair_capacity: int) -> None:
    if width & (width - 1) or not 1 << 4 <= width <= 1 << 32:
        raise ValueError(f"width must be a power of two from 16 to 2**32, got {width}")
    if halve_every_links < 1 or pair_capacity < 1:
        raise ValueError("halve_every_links and pair_capacity must be >= 1")


def _site_key(site: str) -> int:
    return int.from_bytes(blake2b(site.encode(), digest_size=16).digest())


def _halved(row: array[int]) -> array[int]:
    """Every 16-bit counter of `row` shifted right by one, via one big integer (~15 ms/4 MiB).

    Shifting the whole table right moves each counter's low bit into the top bit of the
    counter below it; the mask clears those bits. A Python loop over the counters is ~6x slower.
    """
    lanes = len(row)
    mask = int.from_bytes(b"\xff\x7f" * lanes, "little")
    value = (int.from_bytes(row, sys.byteorder) >> 1) & mask
    out = array("H")
    out.frombytes(value.to_bytes(lanes * _COUNTER_BYTES, sys.byteorder))
    return out


class InLinkCounter:
    """Approximate (pages, sites) in-link counts per urlHash in fixed memory.

    Writer and reader: the crawl loop only (not thread-safe, like every pure core here).
    """

    __slots__ = (
        "_halve_every",
        "_halvings",
        "_index_mask",
        "_links_since_halving",
        "_links_total",
        "_pair_capacity",
        "_pairs",
        "_pairs_since_halving",
        "_pairs_total",
        "_rows",
        "_shifts",
        "width",
    )

    def __init__(
        self,
        *,
        width: int = 1 << 20,
        halve_every_links: int | None = None,
        pair_capacity: int = 10_000_000,
    ) -> None:
        """`width`: buckets per row, a power of two from 2**4 to 2**32 (4 rows use 128 bits).

        `halve_every_links` defaults to 4 * width. Raises ValueError on bad sizes.
        """
        halve_every = 4 * width if halve_every_links is None else halve_every_links
        _check_sizes(width, halve_every, pair_capacity)
        self.width = width
        self._halve_every = halve_every
        self._pair_capacity = pair_capacity
        self._rows = [array("H", bytes(2 * width * _COUNTER_BYTES)) for _ in range(_ROWS)]
        self._pairs = Bloom(pair_capacity, _PAIR_FALSE_POSITIVE_RATE, int)
        self._links_since_halving = 0
        self._pairs_since_halving = 0
        self._links_total = 0
        self._pairs_total = 0
        self._halvings = 0
        self._set_indexing()

    def _set_indexing(self) -> None:
        # A pages counter sits at 2 * bucket and its sites counter at 2 * bucket + 1, so row r's
        # index is bits [r*b, (r+1)*b) of the hash shifted left by one: shift by r*b - 1, mask.
        bits = self.width.bit_length() - 1
        self._index_mask = (self.width - 1) << 1
        self._shifts = (bits - 1, 2 * bits - 1, 3 * bits - 1)

    def add_page_links(
        self, source_site: str, target_hashes: Sequence[str], target_sites: Sequence[str]
    ) -> list[tuple[int, int]]:
        """Count one page's links; returns each target's new (pages, sites) estimates.

        `target_hashes[i]` is a 32-hex-digit urlHash on site `target_sites[i]`. A target listed
        twice counts once (both get the same estimates). May halve the counters afterwards.
        """
        if len(target_hashes) != len(target_sites):
            raise ValueError("target_hashes and target_sites differ in length")
        # One flat loop with locals: this is the crawl's hottest pure code (~1.1 us a link).
        r0, r1, r2, r3 = self._rows
        mask = self._index_mask
        s1, s2, s3 = self._shifts
        pairs = self._pairs
        site_key = _site_key(source_site)
        counted: set[str] = set()
        new_pairs = 0
        out: list[tuple[int, int]] = []
        append = out.append
        for url_hash, site in zip(target_hashes, target_sites, strict=True):
            x = int(url_hash, 16)
            i0 = (x << 1) & mask
            i1 = (x >> s1) & mask
            i2 = (x >> s2) & mask
            i3 = (x >> s3) & mask
            a = r0[i0]
            b = r1[i1]
            c = r2[i2]
            d = r3[i3]
            pages = a if a < b else b  # min() is a call: ~25 % slower here
            if c < pages:
                pages = c
            if d < pages:
                pages = d
            if url_hash not in counted:
                counted.add(url_hash)
                if pages < _MAX_COUNT:
                    pages += 1
                    if a < pages:
                        r0[i0] = pages
                    if b < pages:
                        r1[i1] = pages
                    if c < pages:
                        r2[i2] = pages
                    if d < pages:
                        r3[i3] = pages
            i0 += 1
            i1 += 1
            i2 += 1
            i3 += 1
            a = r0[i0]
            b = r1[i1]
            c = r2[i2]
            d = r3[i3]
            sites = a if a < b else b
            if c < sites:
                sites = c
            if d < sites:
                sites = d
            if site != source_site:
                key = (x ^ site_key) - _OFFSET
                if key not in pairs:
                    pairs.add(key)
                    new_pairs += 1
                    if sites < _MAX_COUNT:
                        sites += 1
                        if a < sites:
                            r0[i0] = sites
                        if b < sites:
                            r1[i1] = sites
                        if c < sites:
                            r2[i2] = sites
                        if d < sites:
                            r3[i3] = sites
            append((pages, sites))
        self._note_added(len(counted), new_pairs)
        return out

    def add_arrival(
        self, url_hash: str, pages: int, source_site: str
    ) -> tuple[tuple[int, int], tuple[int, int]]:
        """Count in-links found elsewhere (cluster mode: another finder's share, through the
        target partition's stream): `pages` linking pages at once, and the site `source_site`
        ("" when the link is the target site's own); returns the (pages, sites) estimates
        from before and after."""
        x = int(url_hash, 16)
        indexes = self._indexes(x)
        pages_before, pages_now = self._raise(indexes, 0, pages)
        new_pair = False
        if source_site:
            key = (x ^ _site_key(source_site)) - _OFFSET
            new_pair = key not in self._pairs
            if new_pair:
                self._pairs.add(key)
        sites_before, sites_now = self._raise(indexes, 1, int(new_pair))
        self._note_added(int(pages > 0), int(new_pair))
        return (pages_before, sites_before), (pages_now, sites_now)

    def _indexes(self, x: int) -> tuple[int, int, int, int]:
        """The pages counter's index in each row for the urlHash `x` (sites: one past it)."""
        mask = self._index_mask
        s1, s2, s3 = self._shifts
        return (x << 1) & mask, (x >> s1) & mask, (x >> s2) & mask, (x >> s3) & mask

    def _raise(self, indexes: tuple[int, ...], lane: int, by: int) -> tuple[int, int]:
        """Conservative update by `by` of one lane (0 pages, 1 sites): the estimate before
        and after."""
        rows = self._rows
        before = min(rows[r][i + lane] for r, i in enumerate(indexes))
        if by <= 0:
            return before, before
        now = min(before + by, _MAX_COUNT)
        for r, i in enumerate(indexes):
            if rows[r][i + lane] < now:
                rows[r][i + lane] = now
        return before, now

    def _note_added(self, links: int, pairs: int) -> None:
        self._links_since_halving += links
        self._links_total += links
        self._pairs_since_halving += pairs
        self._pairs_total += pairs
        if (
            self._links_since_halving >= self._halve_every
            or self._pairs_since_halving >= self._pair_capacity
        ):
            self.halve()

    def estimate(self, url_hash: str) -> tuple[int, int]:
        """(linking pages, linking other sites) for a urlHash; never under-counts (see module)."""
        indexes = self._indexes(int(url_hash, 16))
        rows = self._rows
        pages = min(rows[r][i] for r, i in enumerate(indexes))
        sites = min(rows[r][i + 1] for r, i in enumerate(indexes))
        return pages, sites

    def halve(self) -> None:
        """Halve every counter and forget which sites linked where (the ageing step).

        Runs by itself every `halve_every_links` links; ~40 ms at the default width.
        """
        self._rows = [_halved(row) for row in self._rows]
        self._pairs.clear()
        self._links_since_halving = 0
        self._pairs_since_halving = 0
        self._halvings += 1

    @property
    def size_bytes(self) -> int:
        sketch = _ROWS * 2 * self.width * _COUNTER_BYTES
        return sketch + int(self._pairs.size_in_bits) // 8

    def stats(self) -> InLinkStats:
        return InLinkStats(
            width=self.width,
            links_counted=self._links_total,
            site_links_counted=self._pairs_total,
            halvings=self._halvings,
            size_bytes=self.size_bytes,
        )

    def to_bytes(self) -> bytes:
        """A checkpoint (~size_bytes long) that `from_bytes` reads back on any machine."""
        body = b"".join(self._parts())
        return body + _CRC.pack(zlib.crc32(body))

    def write_to(self, out: BinaryIO) -> None:
        """`to_bytes` written to `out` a part at a time, with no copy of the whole: the
        checkpoint thread joined the ~28 MB and copied it twice more while holding the GIL,
        and the crawl loop stalled behind it at every checkpoint (`bench.loop_stalls`).

        Each part is a copy (a row, ~7 MB), written and summed as it is: the crawl loop
        goes on counting while a checkpoint thread saves, so the live rows may change
        between the write and the CRC."""
        crc = 0
        for part in self._parts():
            out.write(part)
            crc = zlib.crc32(part, crc)
        out.write(_CRC.pack(crc))

    def _parts(self) -> Iterator[bytes]:
        yield _MAGIC
        yield _HEADER.pack(
            self.width,
            self._halve_every,
            self._pair_capacity,
            self._links_since_halving,
            self._pairs_since_halving,
            self._links_total,
            self._pairs_total,
            self._halvings,
        )
        for row in self._rows:
            if sys.byteorder == "big":  # checkpoints are little-endian everywhere
                row = array("H", row)
                row.byteswap()
            yield row.tobytes()
        yield bytes(self._pairs.save_bytes())

    @classmethod
    def from_bytes(cls, data: bytes) -> InLinkCounter:
        """Raises ValueError on damaged or foreign data (checked by a CRC-32 over all of it)."""
        if len(data) < len(_MAGIC) + _HEADER.size + _CRC.size or not data.startswith(_MAGIC):
            raise ValueError("not an in-link counter checkpoint")
        body, (crc,) = data[: -_CRC.size], _CRC.unpack(data[-_CRC.size :])
        if zlib.crc32(body) != crc:
            raise ValueError("in-link counter checkpoint is damaged (CRC mismatch)")
        view = memoryview(body)[len(_MAGIC) :]
        header = _HEADER.unpack_from(view)
        width, halve_every, pair_capacity = header[:3]
        _check_sizes(width, halve_every, pair_capacity)
        row_bytes = 2 * width * _COUNTER_BYTES
        offset = _HEADER.size
        if len(view) < offset + _ROWS * row_bytes:
            raise ValueError("in-link counter checkpoint is truncated")
        out = cls.__new__(cls)
        out.width, out._halve_every, out._pair_capacity = width, halve_every, pair_capacity
        out._links_since_halving, out._pairs_since_halving = header[3:5]
        out._links_total, out._pairs_total, out._halvings = header[5:]
        out._rows = []
        for _ in range(_ROWS):
            row = array("H")
            row.frombytes(view[offset : offset + row_bytes])
            if sys.byteorder == "big":
                row.byteswap()
            out._rows.append(row)
            offset += row_bytes
        out._pairs = Bloom.load_bytes(bytes(view[offset:]), int)
        out._set_indexing()
        return out

    def __repr__(self) -> str:
        return (
            f"<InLinkCounter width={self.width} links={self._links_total}"
            f" site_links={self._pairs_total} halvings={self._halvings} bytes={self.size_bytes}>"
        )
