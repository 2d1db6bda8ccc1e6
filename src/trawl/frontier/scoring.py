"""Link priority: a new URL's score, its parts, and whether it goes to the fast line (pure).

How this works. A link's score is a sum of parts, each measured in "bits" so that no single
signal dwarfs the rest (a page linked from 1,000 sites scores ~10 for it, not 1,000):

    inlink_pages    =  pages_weight  * log2(1 + pages linking to the URL)
    inlink_sites    =  sites_weight  * log2(1 + other sites linking to it)
    parent          =  parent_weight * clamp(score of the linking page, 0, parent_score_cap)
    site_popularity =  site_weight   * min(log2(1 + other sites linking to its site), site_bits_cap)
    depth           = -depth_weight  * min(depth, depth_cap)
    boost           =  seed_boost (a seed)  +  sitemap_boost (listed in a sitemap)

A URL goes to the fast line when the total reaches `fast_threshold`. In-link counts come from
`trawl.frontier.inlinks` (approximate, never under), site referrers from the trap state's
sketch. `depth` is how far below its site's entry the page is, 0 for a site's home page: the
path depth of its URL (`path_depth`) is a pure, always-available measure of that.

Why these numbers (the defaults). Other sites' links are the best evidence a page matters, so a
linking site weighs three times a linking page. The parent and site-popularity parts are capped
at 1.5 each: they order pages within a line but alone never lift a page into the fast line,
which in-links and boosts decide. The depth penalty is capped at 3.5 so that well-linked pages
go fast however deep they are. With a threshold of 4:

- another site's home page, found through one link: 1 + 3 - 0 = 4, fast (trawl's first rule);
- a page linked from 3 other sites (so from >= 3 pages): 2 + 6 - 3.5 = 4.5 at any depth, fast;
- a seed: boost 8 - 3.5 = 4.5 at any depth, fast;
- a page with one same-site in-link at depth >= 1: at most 1 + 1.5 + 1.5 - 0.5 = 3.5, slow;
- a section page at depth 1, linked from every page of its site, climbs as they are crawled:
  re-scored at 31 linking pages it is fast with nothing else (log2(32) - 0.5 = 4.5).

Re-scoring. The in-link parts only change when log2(1 + n) passes a whole number, so
`score_bucket` (floor(log2(1 + n)) of both counts) tells the frontier when a queued URL's score
is worth recomputing: O(log n) updates per URL instead of one per link.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "ScoreParts",
    "ScoringPolicy",
    "importance",
    "is_fast",
    "path_depth",
    "score_bucket",
    "score_link",
]

_IMPORTANCE_PER_SCORE = 0.125  # importance grows by 1 every 8 points of score
_MAX_IMPORTANCE = 10.0  # the recrawl interval is divided by importance: at most 10x sooner


@dataclass(frozen=True, slots=True)
class ScoringPolicy:
    """Weights and caps of the score (see the module docstring for the formula)."""

    pages_weight: float = 1.0
    sites_weight: float = 3.0
    parent_weight: float = 0.25
    parent_score_cap: float = 6.0  # a parent scoring more counts as this
    site_weight: float = 0.25
    site_bits_cap: float = 6.0  # log2(1 + 63 referring sites)
    depth_weight: float = 0.5
    depth_cap: int = 7
    seed_boost: float = 8.0
    sitemap_boost: float = 2.0
    fast_threshold: float = 4.0

    def __post_init__(self) -> None:
        weights = (
            self.pages_weight,
            self.sites_weight,
            self.parent_weight,
            self.parent_score_cap,
            self.site_weight,
            self.site_bits_cap,
            self.depth_weight,
            self.depth_cap,
            self.seed_boost,
            self.sitemap_boost,
        )
        if not all(math.isfinite(w) and w >= 0 for w in weights):
            raise ValueError(f"scoring weights and caps must be finite and >= 0: {self!r}")
        if not math.isfinite(self.fast_threshold):
            raise ValueError(f"fast_threshold must be finite, got {self.fast_threshold!r}")


# The parts' JSON keys, in the order of ScoreParts' fields; "total" follows them.
_PART_KEYS = ("inlinkPages", "inlinkSites", "parent", "sitePopularity", "depth", "boost")
# %r of a float or int is what json writes for it (finite: the policy checks that).
_PARTS_JSON = "{" + ",".join(f'"{key}":%r' for key in (*_PART_KEYS, "total")) + "}"
# What `_PARTS_JSON` writes, read back in one match: a JSON number per key.
_NUMBER = r"(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)"
_PARTS_TEXT = re.compile(
    r"\{" + ",".join(f'"{key}":{_NUMBER}' for key in (*_PART_KEYS, "total")) + r"\}"
)


@dataclass(frozen=True, slots=True)
class ScoreParts:
    """A score split into its parts, kept on the frontier entry so it can be inspected."""

    inlink_pages: float
    inlink_sites: float
    parent: float
    site_popularity: float
    depth: float  # <= 0: a penalty
    boost: float

    def total(self) -> float:
        return (
            self.inlink_pages
            + self.inlink_sites
            + self.parent
            + self.site_popularity
            + self.depth
            + self.boost
        )

    def to_json(self) -> dict[str, float]:
        """camelCase keys as in the records, rounded to 3 decimals, with the total."""
        return dict(zip((*_PART_KEYS, "total"), self._rounded(), strict=True))

    def to_json_text(self) -> str:
        """`json.dumps(self.to_json(), separators=(",", ":"))`, byte for byte, in a third
        of the time: every new link and every re-score writes one (issue 17)."""
        return _PARTS_JSON % self._rounded()

    def _rounded(self) -> tuple[float, ...]:
        """The parts and the total, rounded to 3 decimals, in `_PART_KEYS` order."""
        values = (
            self.inlink_pages,
            self.inlink_sites,
            self.parent,
            self.site_popularity,
            self.depth,
            self.boost,
            self.total(),
        )
        return tuple([round(value, 3) for value in values])

    @classmethod
    def from_json_text(cls, text: str) -> ScoreParts:
        """`from_json(json.loads(text))`, the text `to_json_text` writes read in one regex
        match instead (every re-score reads one: json.loads and from_json were 6 of its 17
        µs, issue 17); any other text goes through json. Raises ValueError as they do."""
        match = _PARTS_TEXT.fullmatch(text)
        if match is None:
            return cls.from_json(json.loads(text))
        return cls(*map(float, match.groups()[: len(_PART_KEYS)]))  # the total is recomputed

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> ScoreParts:
        """Inverse of `to_json` (the total is recomputed); raises ValueError naming a bad key."""
        values = []
        for key in _PART_KEYS:
            value = data.get(key)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"score parts: {key!r} is {value!r}, not a number")
            values.append(float(value))
        return cls(*values)


def score_link(
    *,
    inlink_pages: int,
    inlink_sites: int,
    parent_score: float,
    site_referrers: int,
    depth: int,
    is_seed: bool = False,
    from_sitemap: bool = False,
    policy: ScoringPolicy,
) -> ScoreParts:
    """Score a URL from its in-links, the linking page's score, its site and depth.

    `parent_score` is the linking page's total (0 for seeds and sitemap entries);
    `site_referrers` counts other sites linking to the URL's site. Negative counts raise
    ValueError.
    """
    if min(inlink_pages, inlink_sites, site_referrers, depth) < 0:
        raise ValueError(
            f"counts and depth must be >= 0: pages={inlink_pages} sites={inlink_sites}"
            f" site_referrers={site_referrers} depth={depth}"
        )
    p = policy
    parent = min(max(parent_score, 0.0), p.parent_score_cap)
    return ScoreParts(
        inlink_pages=p.pages_weight * math.log2(1 + inlink_pages),
        inlink_sites=p.sites_weight * math.log2(1 + inlink_sites),
        parent=p.parent_weight * parent,
        site_popularity=p.site_weight * min(math.log2(1 + site_referrers), p.site_bits_cap),
        depth=-p.depth_weight * min(depth, p.depth_cap),
        boost=(p.seed_boost if is_seed else 0.0) + (p.sitemap_boost if from_sitemap else 0.0),
    )


def is_fast(score: float, policy: ScoringPolicy) -> bool:
    """Does a URL with this total score go to the fast line?"""
    return score >= policy.fast_threshold


def score_bucket(inlink_pages: int, inlink_sites: int) -> int:
    """floor(log2(1 + n)) of both counts in one int: it changes only when 1 + n is a power of two.

    The frontier re-scores a queued URL only when this changes (n = 1, 3, 7, 15, ...).
    """
    if inlink_pages < 0 or inlink_sites < 0:
        raise ValueError(f"in-link counts must be >= 0: {inlink_pages}, {inlink_sites}")
    return (1 + inlink_pages).bit_length() | ((1 + inlink_sites).bit_length() << 32)


def importance(score: float) -> float:
    """A page's importance for recrawl scheduling: 1 + score / 8, within [1, 10].

    `recrawl.schedule` divides the refetch interval by it, so a page scoring 8 (a seed, or a
    page linked from a few other sites) is refetched twice as often as an unlinked one.
    """
    if math.isnan(score):
        raise ValueError("score is NaN")
    return min(_MAX_IMPORTANCE, 1.0 + max(score, 0.0) * _IMPORTANCE_PER_SCORE)


def path_depth(url: str) -> int:
    """Segments in a normalised URL's path: 0 for "http://a.test/", 3 for ".../docs/a/3.html"."""
    _, _, rest = url.partition("://")
    path = rest.partition("/")[2].partition("?")[0].partition("#")[0]
    return sum(1 for segment in path.split("/") if segment)
