"""A worker's memo of normalised links: each href is normalised, hashed and sited once.

How this works. A site's navigation links repeat on every one of its pages, and links to
other sites' home pages repeat across sites, so most of a page's links were seen before by
the same worker. The memo keeps `make(url, url_hash(url), site)`, or None for an href the
normaliser rejects, keyed by the href and by only the part of the base that its resolution
reads (`base_need`): nothing for "http://h/x", the origin for "/x", the directory for
"x.html", the whole base otherwise. So "/about" is looked up once per site, not per page,
and the answer is the one `normalise_url` would give (tests/unit/test_link_memo.py checks
both the keys and the whole memo against the plain loop).

Memory bound: at most `max_entries` entries plus one page's links; when a page starts with
the memo full, it is emptied (simpler and cheaper than LRU bookkeeping per link; a site's
navigation links come back within a page or two). An entry is ~450 bytes on the bench web
(the key href, a tuple of url, 32-hex hash and shared site string, dict slots), so the
default 32,768 entries stay under ~16 MB per worker process (bench/normalise_bench.py
--pages prints the measured figure).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from trawl.errors import InvalidUrl
from trawl.urls.normalise import (
    DEFAULT_RULES,
    BaseNeed,
    NormaliseRules,
    base_need,
    base_scopes,
    normalise_url,
    url_hash,
)
from trawl.urls.registered_domain import site_of_normalised

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

__all__ = ["LinkMemo", "LinkMemoStats"]


class _HasUrl(Protocol):
    @property
    def url(self) -> str: ...


LinkT = TypeVar("LinkT", bound=_HasUrl)


@dataclass(frozen=True, slots=True)
class LinkMemoStats:
    entries: int
    lookups: int  # hrefs looked up since the memo was made
    misses: int  # of those, hrefs normalised because the memo did not hold them


class LinkMemo(Generic[LinkT]):
    """Normalises a page's hrefs against its base, remembering answers across pages.

    Written and read by one worker process only (one memo per process, no locking).
    """

    def __init__(
        self,
        make: Callable[[str, str, str], LinkT],
        rules: NormaliseRules = DEFAULT_RULES,
        max_entries: int = 32_768,
    ) -> None:
        self.rules = rules
        self._make = make
        self._max_entries = max_entries
        self._absolute: dict[str, LinkT | None] = {}
        # Keyed by base_scopes' origin, directory, and whole base: kept apart so that a
        # string that is one page's origin and another's whole base cannot meet.
        self._scoped: tuple[dict[str, dict[str, LinkT | None]], ...] = ({}, {}, {})
        self._entries = 0
        self._lookups = 0
        self._misses = 0

    def links(self, hrefs: Iterable[str], base: str) -> tuple[list[LinkT], int]:
        """(links in href order without repeated URLs, how many hrefs were rejected)."""
        if self._entries >= self._max_entries:
            self._clear()
        tables = self._tables(base)
        seen: set[str] = set()
        out: list[LinkT] = []
        bad = 0
        lookups = 0
        for href in hrefs:
            lookups += 1
            table = tables[base_need(href)]
            try:
                link = table[href]
            except KeyError:  # free when not raised (3.11); a miss costs ~10 us anyway
                link = table[href] = self._normalise(href, base)
            if link is None:
                bad += 1
            elif link.url not in seen:
                seen.add(link.url)
                out.append(link)
        self._lookups += lookups
        return out, bad

    def stats(self) -> LinkMemoStats:
        return LinkMemoStats(self._entries, self._lookups, self._misses)

    def __repr__(self) -> str:
        s = self.stats()
        return f"<LinkMemo entries={s.entries}/{self._max_entries} misses={s.misses}/{s.lookups}>"

    def _tables(self, base: str) -> tuple[dict[str, LinkT | None], ...]:
        """The four tables for this base, indexed by BaseNeed."""
        origins, directories, bases = self._scoped
        whole = bases.setdefault(base, {})
        try:
            origin, directory = base_scopes(base)
        except InvalidUrl:
            # Every relative href fails alike; the whole base is a safe key for all of them.
            return self._absolute, whole, whole, whole
        tables = (
            self._absolute,
            origins.setdefault(origin, {}),
            directories.setdefault(directory, {}),
            whole,
        )
        assert len(tables) == len(BaseNeed)
        return tables

    def _normalise(self, href: str, base: str) -> LinkT | None:
        self._entries += 1
        self._misses += 1
        try:
            url = normalise_url(href, base, self.rules)
            site = site_of_normalised(url)
        except (InvalidUrl, ValueError):
            return None
        return self._make(url, url_hash(url), site)

    def _clear(self) -> None:
        self._absolute.clear()
        for table in self._scoped:
            table.clear()
        self._entries = 0
