"""A worker's memo of normalised links: each href is normalised, hashed and sited once.

How this works. A site's navigation links repeat on every one of its pages, and links to
other sites' home pages repeat across sites, so most of a page's links were seen before by
the same worker. The memo keeps `make(url, url_hash(url), site)`, or REJECTED for an href the
normaliser rejects, keyed by the href without its fragment (`without_fragment`) and by only
the part of the base that its resolution reads (`base_need`): nothing for "http://h/x" or
"mailto:", the origin for "/x", the directory for "x.html". So "/about" is normalised once
per site, not once per page, and the answer is the one `normalise_url` gives
(tests/unit/test_link_memo.py checks the keys, and the memo against the plain loop). The
rare hrefs that read the whole base ("?q") are remembered for the page only: bases do not
repeat in a crawl.

Memory bound: the memo counts `_KEY_BYTES` plus the characters of each key, `_URL_BYTES`
plus the characters of each distinct URL, `_TABLE_BYTES` plus those of each origin and
directory, and empties itself when a page starts with more than `max_bytes` counted: it
holds at most `max_bytes` plus one page's links, 16 MB by default. tracemalloc on the quick
bench web (every page, a fresh copy of each page's hrefs as a worker unpickles them, never
emptied): 102,728 entries took 15.0 MB and were counted as 19.3 MB, so the default stays
near 12.5 MB of heap per worker process, under 20 MB.
Emptying is cheaper than LRU bookkeeping per link, and a site's navigation comes back within
a page.

When the memo does not pay, it is skipped. A miss costs more than the plain loop's work on
the href (the key, the tables, the bookkeeping: ~4 us more, against ~1 us for a hit and
~10 for the plain work), so the memo pays only while more than about 30 % of hrefs hit. On
a web of many sites crawled at once, a site's next page comes after the memo has emptied:
on the full bench web (2,000 sites) 82 % of hrefs missed, and the memo cost 0.61-0.67 ms a
page against 0.52-0.54 for the plain loop; on the quick one (800 sites) 24 % missed, 0.18
against 0.40 (bench/memo_replay.py). So after its first `WARM_WINDOWS` windows of
`WINDOW_PAGES` pages, which only fill it, each window is judged: with fewer than
`MIN_HIT_SHARE` of its hrefs hits, the next `BYPASS_PAGES` pages take the plain loop, then
the memo (kept as it was) is tried again. The answers are the same either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
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
    without_fragment,
)
from trawl.urls.registered_domain import site_of_normalised

if TYPE_CHECKING:
    from collections.abc import Callable, Collection

__all__ = ["DEFAULT_MAX_BYTES", "LinkMemo", "LinkMemoStats"]

DEFAULT_MAX_BYTES = 16_000_000  # counted; under 20 MB of heap per worker (see above)
# Estimated bytes besides the characters (see above): a key is a str and a dict slot; a URL
# is a str, a dict slot, the link tuple and its 32-hex hash (the site is shared).
_KEY_BYTES = 120
_URL_BYTES = 300
_TABLE_BYTES = 200  # an origin's or directory's table: an empty dict, its key and slot
# When the memo is skipped (see above).
WINDOW_PAGES = 256
WARM_WINDOWS = 4
MIN_HIT_SHARE = 0.3
BYPASS_PAGES = 2_048


class _Rejected(Enum):
    REJECTED = 0  # what the memo holds for an href that normalise_url rejects


class _HasUrl(Protocol):
    @property
    def url(self) -> str: ...


LinkT = TypeVar("LinkT", bound=_HasUrl)


@dataclass(frozen=True, slots=True)
class LinkMemoStats:
    entries: int
    bytes: int  # estimated memory held (see the module's docstring)
    lookups: int  # hrefs looked up since the memo was made
    misses: int  # of those, hrefs normalised because the memo did not hold them
    bypassed: int = 0  # hrefs normalised without the memo (it was not paying)


class LinkMemo(Generic[LinkT]):
    """Normalises a page's hrefs against its base, remembering answers across pages.

    Written and read by one worker process only (one memo per process, no locking).
    """

    def __init__(
        self,
        make: Callable[[str, str, str], LinkT],
        rules: NormaliseRules = DEFAULT_RULES,
        max_bytes: int = DEFAULT_MAX_BYTES,
        *,
        window_pages: int = WINDOW_PAGES,
        warm_windows: int = WARM_WINDOWS,
        bypass_pages: int = BYPASS_PAGES,
    ) -> None:
        self.rules = rules
        self._make = make
        self._max_bytes = max_bytes
        self._window_pages = window_pages
        self._bypass_pages = bypass_pages
        self._warm_windows = warm_windows  # windows left before the first judgement
        self._window_left = window_pages  # pages through the memo before the next one
        self._window_lookups = 0  # `_lookups` and `_misses` when the window began
        self._window_misses = 0
        self._bypass_left = 0  # pages still to take the plain loop
        self._bypassed = 0
        self._absolute: dict[str, LinkT | _Rejected] = {}
        # Keyed by base_scopes' origin and directory: two dicts, so that one page's origin
        # cannot meet another's directory.
        self._origins: dict[str, dict[str, LinkT | _Rejected]] = {}
        self._directories: dict[str, dict[str, LinkT | _Rejected]] = {}
        self._by_url: dict[str, LinkT] = {}
        self._entries = 0
        self._bytes = 0  # estimated, see the module's docstring
        self._lookups = 0
        self._misses = 0

    def links(self, hrefs: Collection[str], base: str) -> tuple[list[LinkT], int]:
        """(links in href order without repeated URLs, how many hrefs were rejected)."""
        if self._bypass_left:
            self._bypass_left -= 1
            self._bypassed += len(hrefs)
            return self._plain_links(hrefs, base)
        if self._bytes >= self._max_bytes:
            self._clear()
        tables = self._tables(base)
        absolute, page = tables[BaseNeed.NOTHING], tables[BaseNeed.WHOLE]
        seen: set[str] = set()
        out: list[LinkT] = []
        bad = 0
        rules = self.rules
        rejected = _Rejected.REJECTED
        for href in hrefs:
            key = without_fragment(href, rules) if "#" in href else href
            # Most links are absolute, and only absolute keys are in that table: look
            # there before working out which table the key belongs to.
            link = absolute.get(key)
            if link is None:
                table = tables[base_need(key)]
                link = table.get(key)
                if link is None:
                    link = table[key] = self._normalise(key, base, table is not page)
            if link is rejected:
                bad += 1
            elif link.url not in seen:
                seen.add(link.url)
                out.append(link)
        self._lookups += len(hrefs)
        self._window_left -= 1
        if not self._window_left:
            self._judge()
        return out, bad

    def _judge(self) -> None:
        """At a window's end: too few hits in it (and warm), and the plain loop takes over
        for a while (see the module's docstring)."""
        lookups = self._lookups - self._window_lookups
        hits = lookups - (self._misses - self._window_misses)
        if self._warm_windows:
            self._warm_windows -= 1
        elif hits < MIN_HIT_SHARE * lookups:
            self._bypass_left = self._bypass_pages
        self._window_left = self._window_pages
        self._window_lookups, self._window_misses = self._lookups, self._misses

    def _plain_links(self, hrefs: Collection[str], base: str) -> tuple[list[LinkT], int]:
        """`links` without the memo: each href normalised, hashed and sited afresh."""
        rules = self.rules
        make = self._make
        seen: set[str] = set()
        out: list[LinkT] = []
        bad = 0
        for href in hrefs:
            try:
                url = normalise_url(href, base, rules)
                site = site_of_normalised(url)
            except (InvalidUrl, ValueError):
                bad += 1
                continue
            if url not in seen:
                seen.add(url)
                out.append(make(url, url_hash(url), site))
        return out, bad

    def stats(self) -> LinkMemoStats:
        return LinkMemoStats(
            self._entries, self._bytes, self._lookups, self._misses, self._bypassed
        )

    def __repr__(self) -> str:
        s = self.stats()
        return (
            f"<LinkMemo entries={s.entries} bytes={s.bytes}/{self._max_bytes}"
            f" misses={s.misses}/{s.lookups} bypassed={s.bypassed}>"
        )

    def _tables(self, base: str) -> tuple[dict[str, LinkT | _Rejected], ...]:
        """The four tables for this base, indexed by BaseNeed; the last is the page's own."""
        page: dict[str, LinkT | _Rejected] = {}
        try:
            origin, directory = base_scopes(base)
        except InvalidUrl:
            return self._absolute, page, page, page  # every relative href fails alike
        tables = (
            self._absolute,
            self._scoped_table(self._origins, origin),
            self._scoped_table(self._directories, directory),
            page,
        )
        assert len(tables) == len(BaseNeed)
        return tables

    def _scoped_table(
        self, tables: dict[str, dict[str, LinkT | _Rejected]], scope: str
    ) -> dict[str, LinkT | _Rejected]:
        table = tables.get(scope)
        if table is None:
            table = tables[scope] = {}
            self._bytes += _TABLE_BYTES + len(scope)
        return table

    def _normalise(self, href: str, base: str, kept: bool) -> LinkT | _Rejected:
        """The link for `href`, counting its memory if the memo keeps it beyond the page."""
        self._misses += 1
        if kept:
            self._entries += 1
            # A str with a character past U+00FF holds 2 or 4 bytes each: count the worst.
            self._bytes += _KEY_BYTES + (len(href) if href.isascii() else 4 * len(href))
        try:
            url = normalise_url(href, base, self.rules)
        except InvalidUrl:
            return _Rejected.REJECTED
        # Spellings of one URL share its link: on the bench web 56k misses were 9k URLs.
        link = self._by_url.get(url)
        if link is not None:
            return link
        try:
            site = site_of_normalised(url)
        except ValueError:
            return _Rejected.REJECTED
        self._bytes += _URL_BYTES + len(url)
        link = self._by_url[url] = self._make(url, url_hash(url), site)
        return link

    def _clear(self) -> None:
        self._by_url.clear()
        self._absolute.clear()
        self._origins.clear()
        self._directories.clear()
        self._entries = 0
        self._bytes = 0
