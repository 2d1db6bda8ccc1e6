"""Trap containment of one site: when its new URLs stop getting full-rate fetches (pure).

How this works. Flagging a trap only reordered its links (issue 13: a site with nothing
else queued was still served at its full polite rate). Containment bounds what a trap
costs instead. Every discovery page fetched on a site (FAST or SLOW line; refetches do not
count) gets a verdict from the shell:

- COPY: its body is an exact copy (`duplicateOf`) or a near copy (`nearDuplicateOf`) of
  another page of the *same* site. Its links are not followed at all: they can only be new
  spellings of known content (`copy_page_links`). A copy of another site's page is a
  syndicated article, judged DISTINCT here.
- SIMILAR: its text shape (letters only: digits, ids and punctuation dropped) is within the
  similarity threshold of a recent page of the site (frontier.traps.SiteTrapState): a
  calendar month, a facet of a search, a page re-served under another path.
- URL_PATTERNS: some of its links broke a URL-shape rule (repeating path, too many query
  parameters or segments, too long, too deep).
- DISTINCT otherwise.

Rules, each a config value of `[traps]` (docs/CONFIG.md):

1. Contain: when at least `contain_pages` of the site's last `contain_window` discovery
   pages were not DISTINCT, the site is contained at once, with the most frequent of those
   verdicts as its reason (ties: copies, then similar_pages, then url_patterns). With the
   defaults (3 of the last 5) a trap costs a handful of fetches past its entry.
2. Contained: a discovery URL more than `vouched_depth` link hops below the site's entry
   (the shallowest page fetched on it) gets one fetch per `contained_interval_s`, at most
   `contained_daily_cap` per UTC day (the trickle). The site's REFRESH line is served as
   usual, and so are its vouched URLs: those within `vouched_depth` hops of its entry,
   linked from the home page a crawl reaches it by (its news, its products, the trap's
   own entry). Why depth and not "linked from a distinct page": a trap's first page is
   distinct too (a shop's search page links dozens of facets), so only the distance from
   the site's entry tells real pages from trap pages before the trap is fetched. The cost
   of that choice: a real page only reachable two or more hops inside a contained site
   waits for the trickle or for the flag to clear.
3. Clear: `contain_clear_after` trickled pages in a row that come back DISTINCT clear the
   flag (the site changed, or the trap was a false alarm); a trickled page that is not
   distinct starts the count again. Vouched pages fetched while contained do not count:
   they are the real pages that were never in doubt.

The state records why and since when the site is contained, and what it cost: discovery
pages fetched on the site (`pagesBeforeContainment`) and, of those, trap pages (not
DISTINCT, `fetchesBeforeContainment`) since the site was last clear. Nothing here reads a
clock: `now` comes in.
"""

from __future__ import annotations

from collections import deque
from enum import StrEnum
from typing import TYPE_CHECKING

from trawl.errors import DataError

if TYPE_CHECKING:
    from trawl.frontier.traps import TrapPolicy

__all__ = ["ContainReason", "PageVerdict", "SiteContainment"]

_SECONDS_PER_DAY = 86400


class PageVerdict(StrEnum):
    """What one fetched discovery page says about its site (see the module docstring)."""

    DISTINCT = "distinct"
    COPY = "copy"
    SIMILAR = "similar"
    URL_PATTERNS = "url_patterns"


class ContainReason(StrEnum):
    """Why a site is contained: the most frequent trap verdict of its recent pages."""

    COPIES = "copies"
    SIMILAR_PAGES = "similar_pages"
    URL_PATTERNS = "url_patterns"


_REASON_OF = {
    PageVerdict.COPY: ContainReason.COPIES,
    PageVerdict.SIMILAR: ContainReason.SIMILAR_PAGES,
    PageVerdict.URL_PATTERNS: ContainReason.URL_PATTERNS,
}


class SiteContainment:
    """Containment of one site; written and read by the task holding the site only."""

    __slots__ = (
        "_clear_run",
        "_policy",
        "_recent",
        "_trickle_day",
        "contained_at",
        "entry_depth",
        "fetches_before",
        "last_trickle_at",
        "maybe_vouched",
        "pages_before",
        "reason",
        "resting",
        "trickles_today",
    )

    def __init__(self, policy: TrapPolicy) -> None:
        self._policy = policy
        # A deque from the site's first page on: an empty one costs ~600 bytes, and most
        # sites in memory are only linked to (loop.idle_sites).
        self._recent: deque[PageVerdict] | tuple[PageVerdict, ...] = ()
        self.reason: ContainReason | None = None
        self.contained_at = 0.0  # epoch seconds; 0 while clear
        self.entry_depth: int | None = None  # the shallowest page fetched on the site
        self.pages_before = 0  # discovery pages fetched since the site was last clear
        self.fetches_before = 0  # of those, trap pages (not DISTINCT)
        self.last_trickle_at = 0.0
        self._trickle_day = 0
        self.trickles_today = 0
        self._clear_run = 0
        # Shell hints, not saved: the site rests until its next trickle (nothing else to
        # serve), and whether a vouched URL may be queued (so a turn looks for one).
        self.resting = False
        self.maybe_vouched = True

    @property
    def is_contained(self) -> bool:
        return self.reason is not None

    # -- pages ----------------------------------------------------------------------------
    def note_page(self, verdict: PageVerdict, depth: int, now: float) -> ContainReason | None:
        """A discovery page at link `depth` was fetched; the reason when it contains the site.

        Call it for every FAST/SLOW-line page with a body, vouched ones included.
        """
        if self.entry_depth is None or depth < self.entry_depth:
            self.entry_depth = depth
        if self.reason is not None:
            if not self.is_vouched(depth):
                self._clear_run = self._clear_run + 1 if verdict is PageVerdict.DISTINCT else 0
                if self._clear_run >= self._policy.contain_clear_after:
                    self._clear()
            return None
        self.pages_before += 1
        if verdict is not PageVerdict.DISTINCT:
            self.fetches_before += 1
        if not isinstance(self._recent, deque):
            self._recent = deque(maxlen=self._policy.contain_window)
        self._recent.append(verdict)
        counts = [sum(1 for v in self._recent if v is verdict) for verdict in _REASON_OF]
        if sum(counts) < self._policy.contain_pages:
            return None
        # Most frequent verdict; ties go to the stronger evidence (declaration order).
        top = max(range(len(counts)), key=lambda i: (counts[i], -i))
        self.reason = list(_REASON_OF.values())[top]
        self.contained_at = now
        self._clear_run = 0
        self.maybe_vouched = True
        return self.reason

    def _clear(self) -> None:
        self.reason = None
        self.contained_at = 0.0
        self.pages_before = self.fetches_before = 0
        self._recent = ()
        self._clear_run = 0
        self.resting = False

    # -- the trickle ----------------------------------------------------------------------
    def is_vouched(self, depth: int) -> bool:
        """A URL at link `depth` is within `vouched_depth` hops of the site's entry."""
        entry = self.entry_depth
        return entry is None or depth <= entry + self._policy.vouched_depth

    def max_vouched_depth(self) -> int:
        entry = 0 if self.entry_depth is None else self.entry_depth
        return entry + self._policy.vouched_depth

    def next_trickle_at(self, now: float) -> float:
        """When the contained site's next unvouched discovery URL may be fetched."""
        policy = self._policy
        at = max(self.contained_at, self.last_trickle_at) + policy.contained_interval_s
        if self._trickles_on(now) >= policy.contained_daily_cap:
            at = max(at, (now // _SECONDS_PER_DAY + 1) * _SECONDS_PER_DAY)
        return at

    def may_trickle(self, now: float) -> bool:
        return self.reason is None or now >= self.next_trickle_at(now)

    def note_trickle(self, now: float) -> None:
        """An unvouched discovery URL of the contained site was leased at `now`."""
        self._trickles_on(now)
        self.trickles_today += 1
        self.last_trickle_at = now

    def _trickles_on(self, now: float) -> int:
        today = int(now // _SECONDS_PER_DAY)
        if today != self._trickle_day:
            self._trickle_day, self.trickles_today = today, 0
        return self.trickles_today

    # -- host record ----------------------------------------------------------------------
    def to_json(self) -> dict[str, object]:
        """The host record's `containment` object."""
        return {
            "contained": self.reason is not None,
            "reason": None if self.reason is None else self.reason.value,
            "containedSince": self.contained_at or None,
            "fetchesBeforeContainment": self.fetches_before,
            "pagesBeforeContainment": self.pages_before,
            "entryDepth": self.entry_depth,
            "recent": [v.value for v in self._recent],
            "lastTrickleAt": self.last_trickle_at or None,
            "trickleDay": self._trickle_day,
            "tricklesToday": self.trickles_today,
        }

    @classmethod
    def from_json(cls, data: object, policy: TrapPolicy) -> SiteContainment:
        """Inverse of `to_json`; None (a host record from before issue 13) gives a clear
        state. Raises DataError naming the bad field."""
        state = cls(policy)
        if data is None:
            return state
        try:
            if not isinstance(data, dict):
                raise TypeError("containment is not an object")
            reason = data.get("reason")
            state.reason = None if reason is None else ContainReason(reason)
            state.contained_at = _number(data.get("containedSince"))
            state.last_trickle_at = _number(data.get("lastTrickleAt"))
            ints = [data.get(k, 0) for k in _INT_FIELDS]
            if not all(isinstance(n, int) and not isinstance(n, bool) for n in ints):
                raise TypeError(f"one of {_INT_FIELDS} is not an integer")
            state.fetches_before, state.pages_before, state._trickle_day = ints[:3]
            state.trickles_today = ints[3]
            entry = data.get("entryDepth")
            if entry is not None and (not isinstance(entry, int) or isinstance(entry, bool)):
                raise TypeError(f"entryDepth = {entry!r} is not an integer")
            state.entry_depth = entry
            recent = data.get("recent") or []
            if not isinstance(recent, list):
                raise TypeError("recent is not a list")
            if recent:
                state._recent = deque(
                    (PageVerdict(v) for v in recent), maxlen=policy.contain_window
                )
        except (TypeError, ValueError) as exc:
            raise DataError(f"containment record is damaged: {exc!s}") from None
        return state

    def __repr__(self) -> str:
        state = f"contained={self.reason}" if self.reason else "clear"
        return (
            f"<SiteContainment {state} entry={self.entry_depth} recent={len(self._recent)} "
            f"cost={self.fetches_before}/{self.pages_before} trickles={self.trickles_today}>"
        )


_INT_FIELDS = ("fetchesBeforeContainment", "pagesBeforeContainment", "trickleDay", "tricklesToday")


def _number(value: object) -> float:
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{value!r} is not a number")
    return float(value)
