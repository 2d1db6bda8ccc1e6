"""The scripts and styles a site's pages share, kept between renders (issue 18).

How this works. The pages of one script-built site load the same bundle and stylesheet, so
once a render has fetched them, the next render of that site is served from here and costs
no request. Entries are keyed by (site, URL): a render only ever asks for its own site's
subresources, and keying by site keeps one site's answers from ever reaching another's page.
The cache is least-recently-used and bounded by the bytes it holds, counted as each entry's
body, URL and headers plus `ENTRY_OVERHEAD_BYTES`; an answer bigger than the bound is not
kept. Only complete answers (status 200) are kept: an error or redirect is asked for again.

Pure: no I/O, no clock. Written and read by one renderer, on its event loop (no locking).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trawl.render.ports import SubresourceAnswer

__all__ = ["DEFAULT_MAX_BYTES", "ENTRY_OVERHEAD_BYTES", "SubresourceCache", "SubresourceCacheStats"]

DEFAULT_MAX_BYTES = 64_000_000  # a few hundred sites' bundles (a bundle is ~100 KB-1 MB)
ENTRY_OVERHEAD_BYTES = 200  # the key tuple, the dict slot, the answer object


@dataclass(frozen=True, slots=True)
class SubresourceCacheStats:
    entries: int
    bytes: int  # counted as in the module's docstring
    max_bytes: int
    hits: int
    misses: int
    evictions: int  # entries dropped to stay under max_bytes


class SubresourceCache:
    """Answers to scripts and styles, by site and URL, least recently used dropped first."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if max_bytes < 0:
            raise ValueError(f"SubresourceCache max_bytes must be >= 0, got {max_bytes}")
        self._max_bytes = max_bytes
        self._entries: OrderedDict[tuple[str, str], tuple[SubresourceAnswer, int]] = OrderedDict()
        self._bytes = 0
        self._hits = 0
        self._misses = 0
        self._evictions = 0

    def get(self, site: str, url: str) -> SubresourceAnswer | None:
        """The answer kept for `url` on `site`, now the most recently used; None if none."""
        key = (site, url)
        entry = self._entries.get(key)
        if entry is None:
            self._misses += 1
            return None
        self._entries.move_to_end(key)
        self._hits += 1
        return entry[0]

    def put(self, site: str, url: str, answer: SubresourceAnswer) -> bool:
        """Keep `answer` for `url` on `site`, dropping the least recently used entries to
        make room. False (nothing kept) for a status other than 200 or an answer bigger
        than the whole cache."""
        size = entry_bytes(url, answer)
        if answer.status != 200 or size > self._max_bytes:
            return False
        key = (site, url)
        old = self._entries.pop(key, None)
        if old is not None:
            self._bytes -= old[1]
        self._entries[key] = (answer, size)
        self._bytes += size
        while self._bytes > self._max_bytes:
            _, (_, dropped) = self._entries.popitem(last=False)
            self._bytes -= dropped
            self._evictions += 1
        return True

    def stats(self) -> SubresourceCacheStats:
        return SubresourceCacheStats(
            len(self._entries),
            self._bytes,
            self._max_bytes,
            self._hits,
            self._misses,
            self._evictions,
        )

    def __repr__(self) -> str:
        s = self.stats()
        return (
            f"<SubresourceCache entries={s.entries} bytes={s.bytes}/{s.max_bytes}"
            f" hits={s.hits} misses={s.misses} evictions={s.evictions}>"
        )


def entry_bytes(url: str, answer: SubresourceAnswer) -> int:
    """The bytes an entry counts for (see the module's docstring)."""
    headers = sum(len(name) + len(value) for name, value in answer.headers)
    return ENTRY_OVERHEAD_BYTES + len(url) + headers + len(answer.body)
