"""Everything trawl knows about one site (registered domain), and its host record form.

Pure state: the crawl shell owns each SiteState while it holds the site (one task at a time,
see frontier.site_schedule), and serialises it to the host record with the design's
field names. All of it is keyed by registered domain, so it partitions with the site.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trawl.errors import DataError
from trawl.frontier.containment import SiteContainment
from trawl.frontier.traps import SiteTrapState, TrapPolicy
from trawl.politeness.origin_health import OriginHealth
from trawl.politeness.robots import RobotsRules, RobotsStatus
from trawl.politeness.site_clock import ClockPolicy, SiteClock
from trawl.politeness.site_limits import SiteLimits

_SECONDS_PER_DAY = 86400
_RECENT_ERRORS = 10
_MAX_HINT = 1 << 20  # bytes; the page workers try at most 32 KiB (parse.fingerprint)


@dataclass(slots=True)
class SiteState:
    site: str
    clock: SiteClock = field(default_factory=SiteClock)
    robots: dict[str, RobotsRules] = field(default_factory=dict)  # by origin
    pages_today: int = 0
    day: int = 0  # epoch day that pages_today counts
    recent_errors: list[str] = field(default_factory=list)
    traps: SiteTrapState = field(default_factory=lambda: SiteTrapState(TrapPolicy()))
    containment: SiteContainment = field(default_factory=lambda: SiteContainment(TrapPolicy()))
    copies: int = 0  # stored pages that were exact or near copies of another page
    main_copies: int = 0  # stored pages that were not
    sitemap_day: int = 0  # epoch day the sitemap counters count
    sitemap_files: int = 0
    sitemap_urls: int = 0
    limits: SiteLimits | None = None  # the operator's override
    origins: OriginHealth = field(default_factory=OriginHealth)
    loaded_at: float = 0.0  # when this process read it (SiteBook; not in the host record)
    # Where the last page's main text ended (parse.page_work.PageInput.window_hint): a cost
    # hint for the page workers, kept in the host record so that a site read back after
    # leaving memory (a recrawl's visit, a restart) does not pay the full window again.
    main_text_window: int = 0

    def set_limits(
        self, limits: SiteLimits | None, policy: ClockPolicy, restarted_at: float | None = None
    ) -> None:
        """Put an override in force (None removes it) from the very next request on."""
        self.limits = limits
        self.clock.override_delay_s = limits.crawl_delay_s if limits else None
        self.clock.regap(policy, restarted_at)

    def is_idle(self, now: float, idle_s: float) -> bool:
        """May this state leave memory at `now`, to be read back from its host record when
        next needed? Nothing fetched or loaded for `idle_s` and no request in flight. A
        wait still running (a backoff, a Retry-After, a park, an origin's own hold) keeps
        it, and a pause: the host record holds them, but the site is soon needed again, or
        counted."""
        clock = self.clock
        # `is_ready`: no request in flight, no wait running, not parked.
        if not clock.is_ready(now) or self.origins.holds_after(now):
            return False
        if self.paused:  # an operator's: the API counts paused sites from memory
            return False
        return now - max(self.loaded_at, clock.last_finished_at or 0.0) >= idle_s

    @property
    def paused(self) -> bool:
        return self.limits is not None and self.limits.paused

    def daily_cap(self, policy: TrapPolicy) -> int:
        """Pages this site may get today: the operator's number, else the traps' formula."""
        if self.limits is not None and self.limits.max_pages_per_day is not None:
            return self.limits.max_pages_per_day
        return self.traps.daily_cap(policy)

    def is_over_daily_cap(self, now: float, policy: TrapPolicy) -> bool:
        """Has the site had today's pages (`daily_cap`) by `now`?"""
        return self.pages_on(now) >= self.daily_cap(policy)

    def note_content(self, *, is_copy: bool) -> None:
        if is_copy:
            self.copies += 1
        else:
            self.main_copies += 1

    def recrawl_slowdown(self, *, copy_share: float, factor: float, min_pages: int = 10) -> float:
        """How much longer this site's recrawl intervals are: copy-heavy sites wait longer."""
        total = self.copies + self.main_copies
        if total >= min_pages and self.copies >= copy_share * total:
            return factor
        return 1.0

    def sitemap_budget(self, now: float) -> tuple[int, int]:
        """(sitemap files, sitemap URLs) taken so far on `now`'s UTC day."""
        today = int(now // _SECONDS_PER_DAY)
        if today != self.sitemap_day:
            self.sitemap_day, self.sitemap_files, self.sitemap_urls = today, 0, 0
        return self.sitemap_files, self.sitemap_urls

    def pages_on(self, now: float) -> int:
        """Pages fetched so far on `now`'s (UTC) day."""
        return self.pages_today if int(now // _SECONDS_PER_DAY) == self.day else 0

    def count_page(self, now: float) -> None:
        today = int(now // _SECONDS_PER_DAY)
        if today != self.day:
            self.day, self.pages_today = today, 0
        self.pages_today += 1

    def note_error(self, now: float, url: str, kind: str) -> None:
        self.recent_errors.append(f"{now:.3f} {kind} {url}")
        del self.recent_errors[:-_RECENT_ERRORS]

    def set_robots(self, rules: RobotsRules, agent_token: str) -> None:
        """Store an origin's rules; the site's Crawl-delay is the largest of its origins'."""
        self.robots[rules.origin] = rules
        delays = [
            d
            for r in self.robots.values()
            if r.status is RobotsStatus.RULES and (d := r.crawl_delay(agent_token)) is not None
        ]
        self.clock.crawl_delay_s = max(delays) if delays else None

    def to_host_record(self, owner: str) -> dict[str, object]:
        fetched = [r.fetched_at for r in self.robots.values()]
        return {
            "host": self.site,
            "nextAllowedAt": self.clock.next_allowed_at,
            "crawlDelay": self.clock.crawl_delay_s,
            "robotsRules": {origin: r.to_json() for origin, r in sorted(self.robots.items())},
            "robotsFetchedAt": max(fetched) if fetched else None,
            "errorCount": self.clock.error_count,
            "avgResponseMs": round(self.clock.avg_response_ms, 3),
            "pagesToday": self.pages_today,
            "ownerMachine": owner,
            "recentErrors": list(self.recent_errors),
            "clock": self.clock.to_json(),
            "day": self.day,
            "traps": self.traps.to_json(),
            "similarPagesFlag": self.traps.is_flagged,
            "containment": self.containment.to_json(),
            "copies": self.copies,
            "mainCopies": self.main_copies,
            "sitemaps": {
                "day": self.sitemap_day,
                "files": self.sitemap_files,
                "urls": self.sitemap_urls,
            },
            "override": self.limits.to_json() if self.limits else None,
            "origins": self.origins.to_json(),
            "mainTextWindow": self.main_text_window,
        }

    @classmethod
    def from_host_record(
        cls, record: dict[str, object], policy: TrapPolicy | None = None
    ) -> SiteState:
        """Raises DataError naming the site when the record is damaged."""
        site = record.get("host")
        try:
            if not isinstance(site, str):
                raise TypeError("host is missing")
            clock_data = record.get("clock")
            robots_data = record.get("robotsRules") or {}
            if not isinstance(clock_data, dict) or not isinstance(robots_data, dict):
                raise TypeError("clock or robotsRules is not an object")
            robots = {o: RobotsRules.from_json(r) for o, r in robots_data.items()}
            errors = record.get("recentErrors") or []
            pages_today = record.get("pagesToday", 0)
            day = record.get("day", 0)
            if not isinstance(pages_today, int) or not isinstance(day, int):
                raise TypeError("pagesToday or day is not an integer")
            policy = policy or TrapPolicy()
            traps_data = record.get("traps")
            traps = (
                SiteTrapState(policy)
                if traps_data is None
                else (SiteTrapState.from_json(traps_data, policy))
            )
            # Absent from records written before issue 13: a clear state.
            containment = SiteContainment.from_json(record.get("containment"), policy)
            counts = [record.get("copies", 0), record.get("mainCopies", 0)]
            sitemaps = record.get("sitemaps") or {}
            if not isinstance(sitemaps, dict):
                raise TypeError("sitemaps is not an object")
            counts += [sitemaps.get(k, 0) for k in ("day", "files", "urls")]
            if not all(isinstance(n, int) for n in counts):
                raise TypeError("copies, mainCopies or sitemaps counters are not integers")
            override = record.get("override")
            # The floor was checked when it was set; the clock enforces it again on use.
            limits = None if override is None else SiteLimits.from_json(override, 0.0)
            return cls(
                site=site,
                clock=SiteClock.from_json(clock_data),
                robots=robots,
                pages_today=pages_today,
                day=day,
                recent_errors=[str(e) for e in errors] if isinstance(errors, list) else [],
                traps=traps,
                containment=containment,
                copies=int(counts[0]),  # type: ignore[call-overload]  # checked above
                main_copies=int(counts[1]),  # type: ignore[call-overload]
                sitemap_day=int(counts[2]),  # type: ignore[call-overload]
                sitemap_files=int(counts[3]),  # type: ignore[call-overload]
                sitemap_urls=int(counts[4]),  # type: ignore[call-overload]
                limits=limits,
                origins=OriginHealth.from_json(record.get("origins")),
                main_text_window=_window_hint(record.get("mainTextWindow")),
            )
        except (TypeError, ValueError, KeyError, DataError) as exc:
            raise DataError(f"host record of {site!r} is damaged: {exc}") from None


def _window_hint(value: object) -> int:
    """A host record's main-text window hint; anything but a plausible one is no hint (it
    only saves work, so a damaged one is dropped rather than failing the record)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _MAX_HINT:
        return value
    return 0
