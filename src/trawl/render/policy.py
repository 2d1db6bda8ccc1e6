r"""Which plainly fetched pages go to the render queue: shares, per-site learning, forcing.

How this works. For each HTML page fetched plainly, the crawl loop calls
`note_plain_page(site)` (the page counts toward the shares), then `decide(url, site,
reason)` with the detector's reason (parse.render_need) or "" when it flagged nothing. A
granted render counts toward the shares at once (it is queued, not yet done). When the
browser has finished a render, `note_render` says what it gained over the plain page, and
the site learns from it. Nothing here reads a clock: the shares are of pages, not of time.

Rules, in order; the first that applies decides (`RenderWhy` names each outcome):
1. A page is a candidate when the detector flagged it or a `force_on` entry matches its URL;
   any other page is not rendered (`not_detected`).
2. A `force_off` entry matches: not rendered (`forced_off`). force_off wins over force_on.
3. A `force_on` entry matches: rendered (`forced`), whatever the learning and the shares
   say: the operator asked for it. Forced renders count toward the shares of the others.
4. The site is unproductive (its last `learn_after` finished renders in a row each gained
   fewer than `min_text_gain_chars` characters of visible text and fewer than
   `min_links_gained` new links): not rendered (`site_unproductive`), except one candidate
   in `recheck_every`, which goes on to the share rules, so a site that starts needing a
   browser is noticed. Any productive render makes the site productive again.
5. The site's renders, this one included, may not exceed max(`site_min_pages`,
   floor(`site_share` * the site's plain pages)); else `site_share`.
6. All renders, this one included, may not exceed max(`overall_min`,
   floor(`overall_share` * all plain pages)); else `overall_share`.
7. Rendered (`detected`).

Shares are exact: a share is read as the decimal the operator wrote (0.2 is 1/5, so
floor(0.2 * 15) = 3) and compared in integers, never in floats.

Partitioning. All state is per site (registered domain), and the crawl-wide counts are the
sums over the sites this book holds; on a cluster node, "overall" is that node's sites.
`forget_site` takes a site's counts out of the sums and `restore_site` puts them back, so a
site's state can move with its partition or live in its host record across restarts.

Force patterns. Each `force_on`/`force_off` entry is a host name or a scope pattern:
- A bare host name (labels joined by dots, none of `\ ^ $ | ? * + ( ) [ ] { } / : @ # %`
  nor spaces) matches that host and every host under it, any scheme and port:
  `example.com` names the whole site (www.example.com, shop.example.com, example.com:8080),
  `shop.example.com` only that part of it. Unicode names are IDNA-encoded, as URLs are.
- Anything else is an RE2 pattern searched in the normalised URL, exactly as
  `scope.include` and `scope.exclude` are (frontier.scope_patterns): `^https://example\.com/app/`.
  A literal dot in a pattern is `\.`, so `index\.html` is a pattern and `index.html` a host.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from fractions import Fraction
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

from trawl.errors import ConfigError, InvalidUrl
from trawl.frontier.scope_patterns import compile_patterns
from trawl.urls.normalise import normalise_url

if TYPE_CHECKING:
    from trawl.frontier.scope_patterns import PatternSet

__all__ = [
    "RenderBook",
    "RenderDecision",
    "RenderRuleValues",
    "RenderRules",
    "RenderStats",
    "RenderWhy",
]

_LABEL = r"[^.\\^$|?*+()\[\]{}/:@#%\s]+"
_BARE_HOST = re.compile(rf"{_LABEL}(?:\.{_LABEL})+")


class RenderWhy(Enum):
    """Why a page was or was not sent to the render queue."""

    DETECTED = "detected"  # the detector flagged it and every rule let it through
    FORCED = "forced"  # a force_on entry matched
    NOT_DETECTED = "not_detected"  # not flagged, not forced on
    FORCED_OFF = "forced_off"  # a force_off entry matched a candidate
    SITE_SHARE = "site_share"  # the site's share of renders is used up
    OVERALL_SHARE = "overall_share"  # the crawl-wide share of renders is used up
    SITE_UNPRODUCTIVE = "site_unproductive"  # the site's renders gain nothing lately

    @property
    def renders(self) -> bool:
        """Is this a reason to render?"""
        return self in (RenderWhy.DETECTED, RenderWhy.FORCED)


@dataclass(frozen=True, slots=True)
class RenderDecision:
    """Render the page or not, and why; `render` always agrees with `why`."""

    render: bool
    why: RenderWhy

    def __post_init__(self) -> None:
        if self.render != self.why.renders:
            raise ValueError(f"render={self.render} contradicts why={self.why.value}")


_DECISIONS = {why: RenderDecision(why.renders, why) for why in RenderWhy}


class RenderRuleValues(Protocol):
    """The rule keys of the `[render]` settings: what `RenderRules.from_settings` reads."""

    @property
    def site_share(self) -> float: ...
    @property
    def site_min_pages(self) -> int: ...
    @property
    def overall_share(self) -> float: ...
    @property
    def overall_min(self) -> int: ...
    @property
    def learn_after(self) -> int: ...
    @property
    def recheck_every(self) -> int: ...
    @property
    def min_text_gain_chars(self) -> int: ...
    @property
    def min_links_gained(self) -> int: ...
    @property
    def force_on(self) -> tuple[str, ...]: ...
    @property
    def force_off(self) -> tuple[str, ...]: ...


@dataclass(frozen=True, slots=True)
class RenderRules:
    """The render policy's numbers and the operator's forcing (see the module docstring).

    Raises ValueError naming the field on a bad value or a force entry that is neither a
    host name nor a valid RE2 pattern.
    """

    site_share: float = 0.2
    site_min_pages: int = 3
    overall_share: float = 0.05
    overall_min: int = 20
    learn_after: int = 5
    recheck_every: int = 20
    min_text_gain_chars: int = 200
    min_links_gained: int = 1
    force_on: tuple[str, ...] = ()
    force_off: tuple[str, ...] = ()
    _site_ratio: tuple[int, int] = field(init=False, repr=False, compare=False)
    _overall_ratio: tuple[int, int] = field(init=False, repr=False, compare=False)
    _force_on_set: PatternSet = field(init=False, repr=False, compare=False)
    _force_off_set: PatternSet = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("site_share", "overall_share"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
                raise ValueError(f"{name} = {value!r}: must be a number from 0 to 1")
        minimums = (
            ("site_min_pages", 0),
            ("overall_min", 0),
            ("learn_after", 1),
            ("recheck_every", 1),
            ("min_text_gain_chars", 0),
            ("min_links_gained", 0),
        )
        for name, least in minimums:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"{name} = {value!r}: must be an integer >= {least}")
        object.__setattr__(self, "_site_ratio", _ratio(self.site_share))
        object.__setattr__(self, "_overall_ratio", _ratio(self.overall_share))
        object.__setattr__(self, "_force_on_set", _compile_force(self.force_on, "force_on"))
        object.__setattr__(self, "_force_off_set", _compile_force(self.force_off, "force_off"))

    @classmethod
    def from_settings(cls, values: RenderRuleValues) -> RenderRules:
        """The rules of a `[render]` settings section (config.RenderSettings)."""
        return cls(
            site_share=values.site_share,
            site_min_pages=values.site_min_pages,
            overall_share=values.overall_share,
            overall_min=values.overall_min,
            learn_after=values.learn_after,
            recheck_every=values.recheck_every,
            min_text_gain_chars=values.min_text_gain_chars,
            min_links_gained=values.min_links_gained,
            force_on=values.force_on,
            force_off=values.force_off,
        )

    def site_cap(self, plain_pages: int) -> int:
        """How many renders a site with `plain_pages` plain HTML pages may have had."""
        numerator, denominator = self._site_ratio
        return max(self.site_min_pages, plain_pages * numerator // denominator)

    def overall_cap(self, plain_pages: int) -> int:
        """How many renders `plain_pages` plain HTML pages of all sites may have had."""
        numerator, denominator = self._overall_ratio
        return max(self.overall_min, plain_pages * numerator // denominator)

    def is_forced_on(self, url: str) -> bool:
        """Does a `force_on` entry match the normalised `url`?"""
        return bool(self._force_on_set.matching(url))

    def is_forced_off(self, url: str) -> bool:
        """Does a `force_off` entry match the normalised `url`?"""
        return bool(self._force_off_set.matching(url))

    def is_productive(self, text_gained_chars: int, links_gained: int) -> bool:
        """Did a render gain enough text or links to be worth its cost?"""
        return (
            text_gained_chars >= self.min_text_gain_chars or links_gained >= self.min_links_gained
        )


def _ratio(share: float) -> tuple[int, int]:
    """`share` as the exact fraction of the decimal it prints as: 0.2 -> (1, 5)."""
    exact = Fraction(repr(float(share)))
    return exact.numerator, exact.denominator


def _compile_force(entries: tuple[str, ...], key: str) -> PatternSet:
    """One RE2 set of `entries`, each host name turned into the pattern of its hosts."""
    if not isinstance(entries, tuple) or not all(isinstance(e, str) for e in entries):
        raise ValueError(f"{key} = {entries!r}: must be a tuple of strings")
    patterns = tuple(_host_pattern(e, f"{key}[{n}]") for n, e in enumerate(entries))
    try:
        return compile_patterns(patterns, key)
    except ConfigError as exc:  # this value speaks ValueError; config adds "render."
        raise ValueError(str(exc)) from None


def _host_pattern(entry: str, key: str) -> str:
    """The RE2 pattern of a bare host name entry; any other entry as it is."""
    if not _BARE_HOST.fullmatch(entry):
        return entry
    try:
        host = urlsplit(normalise_url(f"http://{entry}/")).hostname
    except InvalidUrl:
        host = None
    if not host:
        raise ValueError(f"{key}: {entry!r} looks like a host name but is not a valid one")
    return rf"^https?://(?:[^/]*\.)?{re.escape(host)}(?::[0-9]+)?/"


@dataclass(frozen=True, slots=True)
class RenderStats:
    """Counts for the summary, /metrics and the API.

    `sites`, `plain_pages`, `renders` and `unproductive_sites` describe the sites held now;
    the decision and render counts are everything this book decided and learnt.
    """

    sites: int
    plain_pages: int
    renders: int
    unproductive_sites: int
    detected: int
    forced: int
    not_detected: int
    forced_off: int
    site_share: int
    overall_share: int
    site_unproductive: int
    renders_noted: int
    renders_productive: int


_STATE_KEYS = ("plain_pages", "renders", "unproductive_streak", "since_recheck")


@dataclass(slots=True)
class _SiteState:
    plain_pages: int = 0  # HTML pages of the site fetched plainly
    renders: int = 0  # renders granted (forced ones included)
    unproductive_streak: int = 0  # finished renders in a row that gained nothing
    since_recheck: int = 0  # candidates refused while unproductive, since the last render


# Mutable: a RenderBook is owned by the crawl loop (its event-loop thread): the parse step
# notes pages and decides, the render step's completion notes renders, and only between
# awaits. The API reads `stats()` and `repr()` and never writes.
class RenderBook:
    """Per-site render accounting and the decisions made from it."""

    def __init__(self, rules: RenderRules) -> None:
        self.rules = rules
        self._sites: dict[str, _SiteState] = {}
        self._plain_pages = 0  # sum over _sites
        self._renders = 0  # sum over _sites
        self._unproductive_sites = 0  # sites of _sites whose streak >= learn_after
        self._decided = dict.fromkeys(RenderWhy, 0)
        self._renders_noted = 0
        self._renders_productive = 0

    # -- inputs ------------------------------------------------------------------------------
    def note_plain_page(self, site: str) -> None:
        """An HTML page of `site` was fetched plainly; call it before `decide` on the page."""
        self._state(site).plain_pages += 1
        self._plain_pages += 1

    def decide(self, url: str, site: str, reason: str) -> RenderDecision:
        """Send the page at normalised `url` of `site` to the render queue or not.

        `reason` is the detector's reason, "" when it flagged nothing. A granted render
        counts toward the shares at once.
        """
        why = self._judge(url, site, reason)
        self._decided[why] += 1
        if why.renders:
            state = self._state(site)
            state.renders += 1
            state.since_recheck = 0
            self._renders += 1
        return _DECISIONS[why]

    def note_render(self, site: str, *, text_gained_chars: int, links_gained: int) -> None:
        """A render of a page of `site` finished: learn whether the site's renders pay.

        `text_gained_chars` is rendered minus plain visible text (negative counts as none);
        `links_gained` the rendered DOM's links the plain page did not have. Note finished
        renders only: one cut short or failed says nothing about the site's pages.
        """
        state = self._state(site)
        was_unproductive = self._is_unproductive(state)
        self._renders_noted += 1
        if self.rules.is_productive(text_gained_chars, links_gained):
            self._renders_productive += 1
            state.unproductive_streak = 0
        else:
            state.unproductive_streak += 1
        if was_unproductive != self._is_unproductive(state):
            self._unproductive_sites += -1 if was_unproductive else 1
            state.since_recheck = 0

    def forget_site(self, site: str) -> None:
        """Drop a site's state (it moved to another machine, or went idle); its counts
        leave the crawl-wide sums. Unknown sites are ignored."""
        state = self._sites.pop(site, None)
        if state is not None:
            self._drop_from_sums(state)

    # -- state of one site -------------------------------------------------------------------
    def site_state(self, site: str) -> dict[str, int]:
        """The site's state as JSON-able counts (all zero for a site never seen)."""
        state = self._sites.get(site, _SiteState())
        return {key: getattr(state, key) for key in _STATE_KEYS}

    # -- kept in the site's host record (politeness.site_book.HostRecordPart) -----------------
    field = "render"

    def part_of(self, site: str) -> dict[str, int] | None:
        """`site_state`, or None for a site the book holds nothing of."""
        return self.site_state(site) if site in self._sites else None

    def restore_part(self, site: str, data: object) -> None:
        self.restore_site(site, data)

    def restore_site(self, site: str, data: object) -> None:
        """Put back a `site_state` (replacing what the book holds for the site).

        Raises ValueError naming the site and the field when `data` is damaged.
        """
        state = _SiteState(**_checked_state(site, data))
        self.forget_site(site)
        self._sites[site] = state
        self._plain_pages += state.plain_pages
        self._renders += state.renders
        self._unproductive_sites += int(self._is_unproductive(state))

    # -- questions ---------------------------------------------------------------------------
    def is_unproductive(self, site: str) -> bool:
        """Have the site's last `learn_after` finished renders each gained nothing?"""
        state = self._sites.get(site)
        return state is not None and self._is_unproductive(state)

    def stats(self) -> RenderStats:
        decided = self._decided
        return RenderStats(
            sites=len(self._sites),
            plain_pages=self._plain_pages,
            renders=self._renders,
            unproductive_sites=self._unproductive_sites,
            detected=decided[RenderWhy.DETECTED],
            forced=decided[RenderWhy.FORCED],
            not_detected=decided[RenderWhy.NOT_DETECTED],
            forced_off=decided[RenderWhy.FORCED_OFF],
            site_share=decided[RenderWhy.SITE_SHARE],
            overall_share=decided[RenderWhy.OVERALL_SHARE],
            site_unproductive=decided[RenderWhy.SITE_UNPRODUCTIVE],
            renders_noted=self._renders_noted,
            renders_productive=self._renders_productive,
        )

    def __repr__(self) -> str:
        return (
            f"<RenderBook sites={len(self._sites)} plain_pages={self._plain_pages}"
            f" renders={self._renders}/{self.rules.overall_cap(self._plain_pages)}"
            f" unproductive_sites={self._unproductive_sites}>"
        )

    # -- rules -------------------------------------------------------------------------------
    def _judge(self, url: str, site: str, reason: str) -> RenderWhy:
        """Rules 1-7 of the module docstring, in order."""
        forced_on = self.rules.is_forced_on(url)
        if not (reason or forced_on):
            return RenderWhy.NOT_DETECTED
        if self.rules.is_forced_off(url):
            return RenderWhy.FORCED_OFF
        if forced_on:
            return RenderWhy.FORCED
        state = self._sites.get(site, _SiteState())
        if self._is_unproductive(state) and not self._is_recheck_due(site, state):
            return RenderWhy.SITE_UNPRODUCTIVE
        if state.renders + 1 > self.rules.site_cap(state.plain_pages):
            return RenderWhy.SITE_SHARE
        if self._renders + 1 > self.rules.overall_cap(self._plain_pages):
            return RenderWhy.OVERALL_SHARE
        return RenderWhy.DETECTED

    def _is_recheck_due(self, site: str, state: _SiteState) -> bool:
        """Is this candidate of an unproductive site the one in `recheck_every` to try?

        Counts the candidates it refuses; the count restarts only when a render is granted,
        so a recheck a share refused is tried again on the next candidate."""
        if state.since_recheck + 1 >= self.rules.recheck_every:
            return True
        self._sites[site].since_recheck += 1  # unproductive, so the site is in _sites
        return False

    def _is_unproductive(self, state: _SiteState) -> bool:
        return state.unproductive_streak >= self.rules.learn_after

    def _state(self, site: str) -> _SiteState:
        state = self._sites.get(site)
        if state is None:
            state = self._sites[site] = _SiteState()
        return state

    def _drop_from_sums(self, state: _SiteState) -> None:
        self._plain_pages -= state.plain_pages
        self._renders -= state.renders
        self._unproductive_sites -= int(self._is_unproductive(state))


def _checked_state(site: str, data: object) -> dict[str, int]:
    """The fields of a site's saved state; ValueError naming the site and what is wrong."""
    where = f"render state of {site!r}"
    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: expected an object of counts, got {data!r}")
    missing = [key for key in _STATE_KEYS if key not in data]
    if missing:
        raise ValueError(f"{where}: missing {', '.join(missing)}")
    unknown = sorted(repr(key) for key in data if key not in _STATE_KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown fields {', '.join(unknown)}")
    out: dict[str, int] = {}
    for key in _STATE_KEYS:
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{where}: {key} = {value!r} is not a count (an integer >= 0)")
        out[key] = value
    return out
