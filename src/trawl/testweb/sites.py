"""The local test web: many small sites on 127.x.y.z, built deterministically from a seed.

How this works: `build_web` first lays out each site (hostnames, addresses, robots
variant, page paths, popularity), then writes each page's links, spelled in the many
ways a URL normaliser must fold into one. Everything a test needs to judge a crawl is
derived from the same values: `expected_fetches` walks the link graph the way a correct
polite crawler would (BFS from the seeds, no links out of `nofollow` pages, robots rules
evaluated with protego), and `politeness_inputs` feeds `check_politeness`.

Rules the generator keeps, so expectations stay simple:
- every page of a site is linked from an index page that is never `nofollow`;
- pages carry no external resources (no stylesheets, images or scripts), and a
  `<link rel="next">` target is also linked by an `<a>`, so a link extractor that reads
  `<link>` tags and one that does not discover the same URLs;
- link targets never carry a query other than utm_* parameters.
"""

from __future__ import annotations

import dataclasses
import random
from collections import deque
from dataclasses import dataclass, field
from typing import ClassVar

from protego import Protego

from trawl.testweb.hostile import HostileKind, HostileSite, build_hostile_sites
from trawl.testweb.layout import Decoration, Form, Link, Page, PageKind, Place, Site
from trawl.testweb.politeness import PolitenessInputs
from trawl.testweb.robots_variants import RobotsVariant, effective_rules
from trawl.testweb.site_builder import build_sites

__all__ = [
    "DEFAULT_AGENT_TOKEN",
    "Decoration",
    "Form",
    "HostileKind",
    "HostileSite",
    "Link",
    "Page",
    "PageKind",
    "Place",
    "RobotsVariant",
    "Site",
    "TestWeb",
    "build_web",
]

DEFAULT_AGENT_TOKEN = "trawl"


@dataclass(frozen=True, slots=True)
class TestWeb:
    """A whole test web and what a correct crawl of it looks like."""

    __test__: ClassVar[bool] = False  # not a pytest test class

    sites: tuple[Site, ...]
    seed_domains: tuple[str, ...]
    by_host: dict[str, Site] = field(hash=False)
    # Hostile sites (`build_web(hostile=True)`): served by `hostile_server`, linked from
    # the first seed's home page, and left out of `expected_fetches`/`expected_robots`.
    hostile: tuple[HostileSite, ...] = ()

    def site_of(self, host: str) -> Site | None:
        return self.by_host.get(host.lower())

    def page(self, host: str, path: str) -> Page | None:
        site = self.site_of(host)
        return None if site is None else site.pages.get((host.lower(), path))

    def ips(self) -> list[str]:
        """Distinct addresses the server must listen on, in first-use order."""
        ips = [ip for site in self.sites for ip in site.ips]
        return list(dict.fromkeys(ips + [site.ip for site in self.hostile]))

    def hosts_lines(self, port: int | None = None) -> list[str]:
        """`"IP hostname"` lines for a hosts file (the port is not part of them)."""
        return [
            f"{ip} {host}"
            for site in self.sites
            for host, ip in zip(site.hosts, site.ips, strict=True)
        ] + [f"{site.ip} {site.domain}" for site in self.hostile]

    def seed_urls(self, port: int) -> list[str]:
        return [f"http://{domain}:{port}/" for domain in self.seed_domains]

    def expected_fetches(
        self, port: int, agent_token: str = DEFAULT_AGENT_TOKEN
    ) -> set[tuple[str, str]]:
        """(hostname, canonical path) pairs a correct crawl from the seeds fetches once.

        Includes 404 targets, redirect sources and targets and non-HTML files; excludes
        robots.txt requests (see `expected_robots`) and the hostile sites (see
        `hostile_bounds`).
        """
        return self._walk(port, agent_token)[0]

    def expected_robots(self, port: int, agent_token: str = DEFAULT_AGENT_TOKEN) -> set[str]:
        """Hostnames whose /robots.txt a correct crawl requests (every discovered host)."""
        return self._walk(port, agent_token)[1]

    def politeness_inputs(self) -> PolitenessInputs:
        """Keyword arguments for `check_politeness`: crawl delays and the robots rules in force.

        A host whose robots.txt fails (503) gets "Disallow: /", so any fetch there but
        robots.txt is reported.
        """
        delays = {s.domain: s.crawl_delay_s for s in self.sites if s.crawl_delay_s > 0}
        robots = {host: effective_rules(s.robots) for s in self.sites for host in s.hosts}
        robots.update({site.domain: site.robots_rules for site in self.hostile})
        return PolitenessInputs(crawl_delays=delays, robots_txt=robots)

    def hostile_sites(self) -> tuple[HostileSite, ...]:
        """The hostile sites, one per `HostileKind` (empty unless built with hostile=True)."""
        return self.hostile

    def hostile_bounds(self) -> dict[str, int]:
        """Site -> most page requests (robots.txt excluded) a sane crawler makes there.

        stall/giant/bomb/binary/flaky: a few, retries included; throttle: each page twice
        (429, then 200); redirects: the loop and the 12-hop chain once each. calendar,
        repeat, facets, copies and session are infinite or huge: only the crawler's trap
        rules (depth, repetition, query and session-id stripping, per-site budget) bound
        them, so their bound is a generous 200. robots-5xx and robots-stall: 0, since an
        unreadable robots.txt forbids the whole site (RFC 9309 §2.3.1.4).
        """
        return {site.domain: site.page_bound for site in self.hostile}

    def _walk(self, port: int, agent_token: str) -> tuple[set[tuple[str, str]], set[str]]:
        rules = {s.domain: Protego.parse(effective_rules(s.robots)) for s in self.sites}
        start = [(domain, "/") for domain in self.seed_domains]
        seen = set(start)
        queue = deque(start)
        fetched: set[tuple[str, str]] = set()
        robots_hosts: set[str] = set()
        while queue:
            host, path = queue.popleft()
            site = self.by_host.get(host)
            if site is None:  # a hostile site: judged by `hostile_bounds` instead
                continue
            robots_hosts.add(host)
            if not rules[site.domain].can_fetch(f"http://{host}:{port}{path}", agent_token):
                continue
            fetched.add((host, path))
            for target in _followed_targets(site.pages.get((host, path))):
                if target not in seen:
                    seen.add(target)
                    queue.append(target)
        return fetched, robots_hosts


def _followed_targets(page: Page | None) -> list[tuple[str, str]]:
    if page is None or page.kind is PageKind.PDF:
        return []
    if page.kind is PageKind.REDIRECT:
        assert page.redirect_to is not None
        return [(page.host, page.redirect_to)]
    if page.nofollow:
        return []
    return [(link.host, link.path) for link in page.links]


def build_web(
    n_sites: int = 60,
    pages_per_site: int = 20,
    seed: int = 1,
    *,
    n_seeds: int = 5,
    hostile: bool = False,
) -> TestWeb:
    """Build a test web of `n_sites` sites of about `pages_per_site` pages each.

    Every robots variant appears once `n_sites >= 12`. `hostile` adds one hostile site
    per `HostileKind` (127.3.0.x), linked from the first seed's home page; the other
    sites and pages stay as without it. Pure: the same arguments give the same web.
    """
    if n_sites < 1 or pages_per_site < 1:
        raise ValueError(f"need >= 1 site and page, got {n_sites=} {pages_per_site=}")
    sites = build_sites(n_sites, pages_per_site, random.Random(seed))
    by_host = {host: site for site in sites for host in site.hosts}
    ranked = sorted(sites, key=lambda s: (-s.weight, s.index))
    fetchable = [s for s in ranked if _may_crawl_home(s)]
    seeds = tuple(s.domain for s in fetchable[:n_seeds])
    if not hostile:
        return TestWeb(sites=tuple(sites), seed_domains=seeds, by_host=by_host)
    hostile_sites = build_hostile_sites()
    sites = [_link_hostile(s, hostile_sites) if s.domain == seeds[0] else s for s in sites]
    by_host = {host: site for site in sites for host in site.hosts}
    return TestWeb(tuple(sites), seeds, by_host, hostile_sites)


def _link_hostile(site: Site, hostile: tuple[HostileSite, ...]) -> Site:
    """`site` with its home page also linking every hostile site's entry paths."""
    key = (site.domain, "/")
    home = site.pages[key]
    extra = tuple(
        Link(h.domain, path, Form.ABSOLUTE_URL, Decoration.NONE, f"{h.kind} {path}", Place.ASIDE)
        for h in hostile
        for path in h.entry_paths
    )
    pages = {**site.pages, key: dataclasses.replace(home, links=home.links + extra)}
    return dataclasses.replace(site, pages=pages)


def _may_crawl_home(site: Site) -> bool:
    rules = Protego.parse(effective_rules(site.robots))
    return bool(rules.can_fetch(f"http://{site.domain}/", DEFAULT_AGENT_TOKEN))
