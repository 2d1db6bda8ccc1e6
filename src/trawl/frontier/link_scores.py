"""Scores for discovered URLs: in-link counts in, frontier line and score parts out.

The shell around `frontier.scoring` (pure) and `frontier.inlinks` (the bounded counter):
every link found on every page counts as an in-link of its target; a new target is scored
and queued with its parts; a target already queued is re-scored only when its in-link
counts cross a power of two (`_crossed`, where `frontier.scoring.score_bucket` changes),
so frontier updates stay logarithmic.

In cluster mode the counts that rank a partition's URLs are its owner's: links found on
any node reach it through the partition's stream (cluster.link_router), and the owner
counts them in a counter of its own (`count_arrival`): a link first found by this finder
counts one page, and at each power of two of this finder's own count (1, 3, 7, 15, ...)
it is sent again for the pages since (`route_weight`), so the owner's count follows every
finder's at a logarithmic cost in stream entries; each (target, linking site) pair is sent
once and counts one site. The finder's counter (`counter`) still scores the links it finds.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, TypeVar

from trawl.frontier.inlinks import InLinkCounter
from trawl.frontier.scoring import (
    ScoreParts,
    ScoringPolicy,
    is_fast,
    path_depth,
    score_link,
)
from trawl.model import Line

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from trawl.parse.page_work import FoundLink

_MIN_PAGES_TO_RESCORE = 15
# Entries of new and re-scored URLs by what scores them: a page's new links share its
# score, and most have one in-link at one of a few depths, so a page's second such link
# costs a lookup (issue 17). Emptied when full; an entry is a few hundred bytes.
_ENTRY_MEMO_SIZE = 4096
_TRUSTED_REFERRERS = 3  # a site linked from this many other sites is trusted (sitemap boost)
K = TypeVar("K")
V = TypeVar("V")


def _remember(memo: dict[K, V], key: K, entry: V) -> V:
    """`entry` kept under `key` in a memo that empties itself at `_ENTRY_MEMO_SIZE`."""
    if len(memo) >= _ENTRY_MEMO_SIZE:
        memo.clear()
    memo[key] = entry
    return entry


def _crossed(n: int) -> bool:
    """Did a count that just rose to `n` change floor(log2(1 + n))?"""
    return n > 0 and (n + 1) & n == 0


class LinkScores:
    def __init__(
        self, path: Path, policy: ScoringPolicy | None = None, *, counts_arrive: bool = False
    ) -> None:
        """`counts_arrive`: cluster mode, where the owner's counts come from the streams."""
        self.path = path
        self.policy = policy or ScoringPolicy()
        self.damaged_file = False
        self.counter = self._load()
        # The counts that rank queued URLs: the finder's own, or what arrived (cluster mode)
        self.ranking = InLinkCounter() if counts_arrive else self.counter
        self._new_entries: dict[tuple[int, int, float, int, int], tuple[float, str, Line]] = {}
        self._rescored_entries: dict[tuple[str, int, int], tuple[float, str, Line]] = {}
        self._unlinked_entries: dict[tuple[int, int, bool, bool], tuple[float, str, Line]] = {}

    def _load(self) -> InLinkCounter:
        try:
            return InLinkCounter.from_bytes(self.path.read_bytes())
        except FileNotFoundError:
            return InLinkCounter()
        except ValueError:
            # A soft signal: start counting afresh rather than refuse to crawl.
            self.damaged_file = True
            return InLinkCounter()

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        with tmp.open("wb") as out:
            self.counter.write_to(out)
        os.replace(tmp, self.path)

    def count_page_links(
        self, source_site: str, links: Sequence[FoundLink]
    ) -> list[tuple[int, int]]:
        """Count one in-link per target of this page; (pages, other sites) per link."""
        return self.counter.add_page_links(
            source_site, [link.url_hash for link in links], [link.site for link in links]
        )

    @staticmethod
    def route_weight(pages: int) -> int:
        """Cluster mode: the linking pages a finder sends the owner with a link it has just
        counted `pages` times: those since its last send, at each power of two; else 0."""
        return (pages + 1) >> 1 if _crossed(pages) else 0

    def count_arrival(self, url_hash: str, pages: int, referrer: str) -> bool:
        """Cluster mode: count in-links that arrived for a URL of an owned partition; True
        when its score should change (a count crossed a power of two)."""
        before, after = self.ranking.add_arrival(url_hash, pages, referrer)
        return any(
            (1 + old).bit_length() != (1 + new).bit_length()
            for old, new in zip(before, after, strict=True)
        )

    @staticmethod
    def worth_rescoring(link: FoundLink, source_site: str, pages: int, sites: int) -> bool:
        """Did this in-link move the target's counts across a power of two?

        Links from other sites always count. A site's own links (navigation: every page
        links the same few) re-score only from 15 linking pages on: below that their part
        moves the score by less than the fast line's margin, and checking the queue for
        every one of them cost more than the rest of the scoring.
        """
        if link.site != source_site:
            return _crossed(sites) or (pages >= _MIN_PAGES_TO_RESCORE and _crossed(pages))
        return pages >= _MIN_PAGES_TO_RESCORE and _crossed(pages)

    def score_new(
        self, link: FoundLink, pages: int, sites: int, parent_score: float, site_referrers: int
    ) -> tuple[float, str, Line]:
        """(score, parts JSON, line) of a newly discovered URL."""
        key = (pages, sites, parent_score, site_referrers, path_depth(link.url))
        entry = self._new_entries.get(key)
        if entry is None:
            parts = score_link(
                inlink_pages=pages,
                inlink_sites=sites,
                parent_score=parent_score,
                site_referrers=site_referrers,
                depth=key[4],
                policy=self.policy,
            )
            entry = _remember(self._new_entries, key, self._entry_of(parts))
        return entry

    def rescored(self, url_hash: str, stored_parts: str) -> tuple[float, str, Line] | None:
        """New (score, parts JSON, line) for a queued URL from today's in-link counts."""
        pages, sites = self.ranking.estimate(url_hash)
        # Queued URLs scored alike store the same parts text (the new-entry memo's keys):
        # re-scored to the same counts, they get the same entry.
        key = (stored_parts, pages, sites)
        entry = self._rescored_entries.get(key)
        if entry is None:
            entry = self._rescore(stored_parts, pages, sites)
            if entry is None:
                return None
            _remember(self._rescored_entries, key, entry)
        return entry

    def _rescore(self, stored_parts: str, pages: int, sites: int) -> tuple[float, str, Line] | None:
        try:
            parts = ScoreParts.from_json_text(stored_parts)
        except (ValueError, TypeError, AttributeError):
            return None
        fresh = score_link(
            inlink_pages=pages,
            inlink_sites=sites,
            parent_score=0.0,
            site_referrers=0,
            depth=0,
            policy=self.policy,
        )
        # Never lower: counts halve as they age, and a partition's new owner counts afresh
        # what its old owner had counted for the URLs it hands over.
        parts = ScoreParts(
            max(fresh.inlink_pages, parts.inlink_pages),
            max(fresh.inlink_sites, parts.inlink_sites),
            parts.parent,
            parts.site_popularity,
            parts.depth,
            parts.boost,
        )
        return self._entry_of(parts)

    def seed(self, url: str, site_referrers: int) -> tuple[float, str, Line]:
        return self._unlinked(url, site_referrers, is_seed=True, from_sitemap=False)

    def sitemap_entry(self, url: str, site_referrers: int) -> tuple[float, str, Line]:
        trusted = site_referrers >= _TRUSTED_REFERRERS
        return self._unlinked(url, site_referrers, is_seed=False, from_sitemap=trusted)

    def _unlinked(
        self, url: str, site_referrers: int, *, is_seed: bool, from_sitemap: bool
    ) -> tuple[float, str, Line]:
        """A URL that arrives without a linking page: a seed or a sitemap entry.

        Memoised as new links are: a start-up's 100,000 seeds scored alike were 100,000
        score computations and JSON texts (~0.8 s before the first fetch)."""
        depth = path_depth(url)
        key = (site_referrers, depth, is_seed, from_sitemap)
        entry = self._unlinked_entries.get(key)
        if entry is None:
            parts = score_link(
                inlink_pages=0,
                inlink_sites=0,
                parent_score=0.0,
                site_referrers=site_referrers,
                depth=depth,
                is_seed=is_seed,
                from_sitemap=from_sitemap,
                policy=self.policy,
            )
            entry = _remember(self._unlinked_entries, key, self._entry_of(parts))
        return entry

    def _entry_of(self, parts: ScoreParts) -> tuple[float, str, Line]:
        """(score, parts JSON, line) as the frontier entry keeps them."""
        score = parts.total()
        line = Line.FAST if is_fast(score, self.policy) else Line.SLOW
        return score, parts.to_json_text(), line
