"""Crawler-trap rules: which links are not worth queueing, and how much a site may get (pure).

How this works. Two kinds of rule, both sans-I/O:

- `check_url(url, depth, policy)` judges one normalised link before it is queued: too deep,
  too long, too many query parameters or path segments, or a path that repeats itself
  (`/a/b/a/b/a/b/a/b`, the signature of relative links that resolve into ever-longer paths
  and of calendars linking to themselves). It runs for every new link, so it is a handful
  of string operations; the repeat scan only runs when the path has a repeated segment.
- `SiteTrapState` watches a site as it is crawled: which other sites link to it (its
  importance, which scales its daily page cap) and the fingerprints of its recent pages
  (`PageOutput.trap_fingerprint`: the simhash of a page with prose, the letter-word shape of
  a thin one). When most recent pages are near-identical (a calendar, a faceted search, a
  soft-404 page), the site is flagged and its daily cap shrinks; whether the page just
  noted has a near twin feeds the site's containment (`frontier.containment`), which
  bounds what a trap costs within a few fetches.

Daily cap formula: `cap = daily_page_cap * min(1 + log2(1 + referring_sites), max_importance)`,
times `flagged_cap_factor` while flagged. One referring site doubles the base cap, three
triple it, and ~511 reach the default ceiling of 10x. Referring sites are counted with a
k-minimum-values sketch (the `_SKETCH_SIZE` smallest 52-bit hashes of distinct sites): exact
up to `_SKETCH_SIZE` sites, an estimate (about ±15 %) beyond, in bounded memory per site.
"""

from __future__ import annotations

import math
import re
from collections import deque
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from hashlib import blake2b

from trawl.errors import DataError

__all__ = [
    "URL_RULES",
    "SiteTrapState",
    "TrapCounters",
    "TrapPolicy",
    "TrapReason",
    "check_url",
]

_SKETCH_SIZE = 64
_HASH_BITS = 52  # stays exact as a JSON number (IEEE double) in any reader
_NOT_FULL = 1 << _HASH_BITS


@dataclass(frozen=True, slots=True)
class TrapPolicy:
    """Trap thresholds; a limit is exceeded when the value is strictly greater."""

    max_depth: int = 50  # link hops from a seed
    max_url_length: int = 1024  # characters; stricter than the normaliser's 2048
    max_query_params: int = 12
    max_path_segments: int = 30
    max_repeats: int = 3  # a run of 1-4 segments repeated more often than this is a trap
    daily_page_cap: int = 5000  # pages per site per day before importance scaling
    max_importance: float = 10.0  # ceiling of the importance factor
    similarity_window: int = 50  # recent page fingerprints kept per site
    similarity_threshold: int = 3  # Hamming distance (bits) that counts as near-identical
    similarity_alarm_share: float = 0.8  # share of the window that flags the site
    similarity_min_pages: int = 10  # no alarm before this many pages are in the window
    similarity_clear_share: float = 0.4  # a flagged site is cleared below this share
    flagged_cap_factor: float = 0.1  # a flagged site's daily cap is scaled by this
    # Containment (frontier.containment): when and how hard a trap site is held back.
    contain_window: int = 5  # recent discovery pages judged per site
    contain_pages: int = 3  # trap pages among them that contain the site at once
    contain_clear_after: int = 3  # distinct trickled pages in a row that clear it
    contained_interval_s: float = 3600.0  # one unvouched discovery fetch per this
    contained_daily_cap: int = 24  # unvouched discovery fetches per UTC day while contained
    vouched_depth: int = 1  # link hops below the site's entry exempt from the trickle

    def __post_init__(self) -> None:
        if self.max_repeats < 1 or self.similarity_window < 1:
            raise ValueError("max_repeats and similarity_window must be >= 1")
        if not 0.0 <= self.similarity_clear_share <= self.similarity_alarm_share <= 1.0:
            raise ValueError("need 0 <= similarity_clear_share <= similarity_alarm_share <= 1")
        if not 1 <= self.contain_pages <= self.contain_window:
            raise ValueError("need 1 <= contain_pages <= contain_window")
        if self.contain_clear_after < 1 or self.contained_daily_cap < 0:
            raise ValueError("need contain_clear_after >= 1 and contained_daily_cap >= 0")
        if self.contained_interval_s < 0 or self.vouched_depth < 0:
            raise ValueError("need contained_interval_s >= 0 and vouched_depth >= 0")


class TrapReason(StrEnum):
    """Why a URL is not queued or a site gets no more pages today (skip reasons)."""

    MAX_DEPTH = "max_depth"
    URL_TOO_LONG = "url_too_long"
    TOO_MANY_PARAMS = "too_many_params"
    TOO_MANY_SEGMENTS = "too_many_segments"
    REPEATING_PATH = "repeating_path"
    DAILY_CAP = "daily_cap"
    SIMILAR_PAGES = "similar_pages"
    # Containment (frontier.containment), issue 13:
    COPY_PAGE_LINKS = "copy_page_links"  # links found on a same-site copy, not followed
    CONTAINED_COPIES = "contained_copies"  # sites contained, by reason
    CONTAINED_SIMILAR_PAGES = "contained_similar_pages"
    CONTAINED_URL_PATTERNS = "contained_url_patterns"
    CONTAINED_CLEARED = "contained_cleared"  # contained sites whose flag cleared
    CONTAINED_TRICKLE = "contained_trickle"  # unvouched fetches of contained sites
    CONTAINED_REST = "contained_rest"  # turns a contained site rested until its trickle


# The rules that judge one URL's shape (check_url): a page linking such URLs looks like a trap.
URL_RULES = (
    TrapReason.MAX_DEPTH,
    TrapReason.URL_TOO_LONG,
    TrapReason.TOO_MANY_PARAMS,
    TrapReason.TOO_MANY_SEGMENTS,
    TrapReason.REPEATING_PATH,
)


_repeat_patterns: dict[int, re.Pattern[str]] = {}


def _repeat_pattern(max_repeats: int) -> re.Pattern[str]:
    """A run of 1-4 whole segments followed by `max_repeats` copies of itself.

    Every copy starts with "/", so copies meet at segment boundaries; the lookahead makes
    the last copy end at one too. `*+` is possessive: no backtracking inside a segment.
    """
    pattern = _repeat_patterns.get(max_repeats)
    if pattern is None:
        pattern = re.compile(r"((?:/[^/]*+){1,4}?)\1{" + str(max_repeats) + r"}(?=/|$)")
        _repeat_patterns[max_repeats] = pattern
    return pattern


def check_url(url: str, depth: int, policy: TrapPolicy) -> TrapReason | None:
    """The first trap rule a normalised URL breaks, or None when it may be queued.

    `depth` is the URL's own depth (its parent's plus one). Never raises, whatever the text.
    """
    if depth > policy.max_depth:
        return TrapReason.MAX_DEPTH
    if len(url) > policy.max_url_length:
        return TrapReason.URL_TOO_LONG
    start = url.find("://")
    start = url.find("/", start + 3 if start >= 0 else 0)
    query_at = url.find("?")
    if query_at >= 0:
        if url.count("&", query_at) >= policy.max_query_params:  # n params, n-1 "&"
            return TrapReason.TOO_MANY_PARAMS
        if start > query_at:
            start = -1
    if start < 0:
        return None  # no path: "http://host?q" cannot repeat or nest
    path = url[start:query_at] if query_at >= 0 else url[start:]
    segments = path.split("/")  # segments[0] is "" (before the leading "/")
    if segments[-1] == "":
        segments.pop()  # a trailing "/" names the same directory
    if len(segments) - 1 > policy.max_path_segments:
        return TrapReason.TOO_MANY_SEGMENTS
    # A repeat needs a repeated segment; most paths have none, so the regex rarely runs.
    if len(set(segments)) < len(segments) and _repeat_pattern(policy.max_repeats).search(path):
        return TrapReason.REPEATING_PATH
    return None


@lru_cache(maxsize=65_536)  # a page's cross-site links all credit the page's one site
def _site_hash(site: str) -> int:
    return int.from_bytes(blake2b(site.encode(), digest_size=8).digest()) >> (64 - _HASH_BITS)


class SiteTrapState:
    """Trap watch of one site. Owned by the task holding the site: only it writes and reads.

    `note_referrer` is the exception: it is called when another site's page links here. It
    is synchronous (no await inside), so on one event loop it cannot interleave with the
    owner; across machines, referrers must reach the owner with the queued URL.
    """

    __slots__ = ("_flagged", "_largest", "_policy", "_recent", "_referrers")

    def __init__(self, policy: TrapPolicy) -> None:
        self._policy = policy  # the similarity rules; daily caps take theirs per call
        self._referrers: set[int] = set()  # the smallest hashes of distinct referring sites
        # max(_referrers) once the sketch is full, above any hash until then: most links of
        # a well-linked site fall above it, and one comparison turns them away.
        self._largest = _NOT_FULL
        # Each entry: [fingerprint, how many other window entries are near-identical to it].
        # A deque from the site's first page on: an empty one costs ~600 bytes, and most
        # sites in memory are only linked to (loop.idle_sites).
        self._recent: deque[list[int]] | tuple[list[int], ...] = ()
        self._flagged = False

    # -- importance ---------------------------------------------------------------------
    def note_referrer(self, site: str) -> None:
        """Another site (registered domain) links to this one."""
        h = _site_hash(site)
        if h >= self._largest:
            return  # the sketch is full and keeps smaller hashes (or has this one)
        refs = self._referrers
        if h in refs:
            return
        if len(refs) < _SKETCH_SIZE:
            refs.add(h)
            if len(refs) == _SKETCH_SIZE:
                self._largest = max(refs)
            return
        refs.remove(self._largest)
        refs.add(h)
        self._largest = max(refs)

    def referring_sites(self) -> int:
        """Distinct referring sites: exact up to 64, a k-minimum-values estimate above."""
        refs = self._referrers
        if len(refs) < _SKETCH_SIZE:
            return len(refs)
        return round((_SKETCH_SIZE - 1) * (1 << _HASH_BITS) / (max(refs) + 1))

    def daily_cap(self, policy: TrapPolicy) -> int:
        """Pages this site may get per day (formula in the module docstring); at least 1."""
        factor = min(1.0 + math.log2(1 + self.referring_sites()), policy.max_importance)
        if self._flagged:
            factor *= policy.flagged_cap_factor
        return max(1, int(policy.daily_page_cap * factor))

    # -- similarity ---------------------------------------------------------------------
    def note_page(self, fingerprint: int) -> bool:
        """Add a fetched page's simhash; True when this page turns the alarm on.

        The alarm is on while at least `similarity_alarm_share` of the window (and at
        least `similarity_min_pages` pages) are near-identical to some other page in it;
        it goes off again below `similarity_clear_share`. Costs one XOR per window entry.
        """
        policy = self._policy
        recent = self._recent
        if not isinstance(recent, deque):
            recent = self._recent = deque()
        if len(recent) >= policy.similarity_window:
            self._forget(recent.popleft(), policy.similarity_threshold)
        entry = [fingerprint, 0]
        for other in recent:
            if (other[0] ^ fingerprint).bit_count() <= policy.similarity_threshold:
                other[1] += 1
                entry[1] += 1
        recent.append(entry)
        share = self.similar_share()
        if self._flagged:
            if share < policy.similarity_clear_share:
                self._flagged = False
            return False
        if len(recent) >= policy.similarity_min_pages and share >= policy.similarity_alarm_share:
            self._flagged = True
            return True
        return False

    @property
    def last_page_has_twin(self) -> bool:
        """The page last noted has a near-identical page in the window (it is SIMILAR)."""
        return bool(self._recent) and self._recent[-1][1] > 0

    def _forget(self, gone: list[int], threshold: int) -> None:
        for other in self._recent:
            if (other[0] ^ gone[0]).bit_count() <= threshold:
                other[1] -= 1

    def similar_share(self) -> float:
        """Share of the window's pages that have a near-identical twin in the window."""
        if not self._recent:
            return 0.0
        return sum(1 for entry in self._recent if entry[1]) / len(self._recent)

    @property
    def is_flagged(self) -> bool:
        return self._flagged

    # -- host record --------------------------------------------------------------------
    def to_json(self) -> dict[str, object]:
        """The host record's `traps` object; fingerprints as 16 hex digits, oldest first."""
        return {
            "referrers": sorted(self._referrers),
            "recent": [f"{entry[0]:016x}" for entry in self._recent],
            "flagged": self._flagged,
        }

    @classmethod
    def from_json(cls, data: object, policy: TrapPolicy) -> SiteTrapState:
        """Inverse of `to_json`; raises DataError naming the bad field."""
        state = cls(policy)
        try:
            if not isinstance(data, dict):
                raise TypeError("traps is not an object")
            refs, recent, flagged = data["referrers"], data["recent"], data["flagged"]
            if not isinstance(refs, list) or not isinstance(recent, list):
                raise TypeError("referrers or recent is not a list")
            if not isinstance(flagged, bool):
                raise TypeError(f"flagged = {flagged!r} is not a boolean")
            for h in refs[:_SKETCH_SIZE]:
                if isinstance(h, bool) or not isinstance(h, int) or not 0 <= h < 1 << _HASH_BITS:
                    raise ValueError(f"referrer hash {h!r} is out of range")
                state._referrers.add(h)
            if len(state._referrers) == _SKETCH_SIZE:
                state._largest = max(state._referrers)
            window: deque[list[int]] = deque()
            for text in recent[-policy.similarity_window :]:
                raw = bytes.fromhex(text) if isinstance(text, str) and len(text) == 16 else b""
                if len(raw) != 8:  # fromhex skips spaces, so a short result is damage too
                    raise ValueError(f"fingerprint {text!r} is not 16 hex digits")
                window.append([int.from_bytes(raw), 0])
            if window:
                state._recent = window
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"traps record is damaged: {exc!s}") from None
        state._flagged = flagged
        state._recount(policy.similarity_threshold)
        return state

    def _recount(self, threshold: int) -> None:
        for entry in self._recent:
            fingerprint = entry[0]
            near = sum(
                1 for other in self._recent if (other[0] ^ fingerprint).bit_count() <= threshold
            )
            entry[1] = near - 1  # itself

    def __repr__(self) -> str:
        return (
            f"<SiteTrapState referrers={self.referring_sites()} recent={len(self._recent)} "
            f"similar={self.similar_share():.2f} flagged={self._flagged}>"
        )


class TrapCounters:
    """How often each trap rule fired; written by the crawl shell, read by stats."""

    __slots__ = ("_counts",)

    def __init__(self) -> None:
        self._counts = dict.fromkeys(TrapReason, 0)

    def count(self, reason: TrapReason, n: int = 1) -> None:
        self._counts[reason] += n

    def url_rule_hits(self) -> int:
        """Links refused so far by the URL-shape rules (`URL_RULES`)."""
        counts = self._counts
        return sum(counts[rule] for rule in URL_RULES)

    def as_dict(self) -> dict[str, int]:
        """Every reason (zeros included) by its value, in declaration order."""
        return {reason.value: n for reason, n in self._counts.items()}

    def __repr__(self) -> str:
        fired = ", ".join(f"{k}={v}" for k, v in self.as_dict().items() if v)
        return f"<TrapCounters {fired or 'none'}>"
