"""The local test web: many small sites on 127.x.y.z, built deterministically from a seed.

How this works: `build_web` first lays out each site (hostnames, addresses, robots
variant, page paths, popularity), then writes each page's links, spelled in the many
ways a URL normaliser must fold into one. Everything a test needs to judge a crawl is
derived from the same values: `expected_fetches` walks the link graph the way a correct
polite crawler would (BFS from the seeds, no links out of `nofollow` pages, robots rules
evaluated by RFC 9309 with trawl's parser), and `politeness_inputs` feeds `check_politeness`.

Rules the generator keeps, so expectations stay simple:
- every page of a site is linked from an index page that is never `nofollow`, except the
  freshness web's sitemap-only pages (`build_web(freshness=True)`, see `freshness.py`);
- pages carry no external resources (no stylesheets, images or scripts; the script cases
  of `build_web(script_cases=True)` are the exception, see `script_cases.py`), and a
  `<link rel="next">` target is also linked by an `<a>`, so a link extractor that reads
  `<link>` tags and one that does not discover the same URLs;
- link targets never carry a query other than utm_* parameters.
"""

from __future__ import annotations

import dataclasses
import random
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from trawl.politeness.robots_txt import RobotsTxt
from trawl.testweb.freshness import Freshness, add_freshness
from trawl.testweb.hostile import HostileKind, HostileSite, build_hostile_sites
from trawl.testweb.layout import Decoration, Form, Link, Page, PageKind, Place, Site
from trawl.testweb.politeness import PolitenessInputs
from trawl.testweb.robots_variants import RobotsVariant, effective_rules
from trawl.testweb.scope_cases import ScopeCases, add_scope_cases
from trawl.testweb.script_cases import MIN_SITES as MIN_SCRIPT_SITES
from trawl.testweb.script_cases import ScriptCases, add_script_cases
from trawl.testweb.site_builder import build_sites

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "DEFAULT_AGENT_TOKEN",
    "Decoration",
    "Form",
    "Freshness",
    "HostileKind",
    "HostileSite",
    "Link",
    "Page",
    "PageKind",
    "Place",
    "RobotsVariant",
    "ScopeCases",
    "ScriptCases",
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
    # The freshness features (`build_web(freshness=True)`), see `freshness()`.
    freshness_spec: Freshness | None = None
    # The crawl-scope cases (`build_web(scope_cases=True)`), see `scope_cases()`.
    scope_cases_spec: ScopeCases | None = None
    # The script-built cases (`build_web(script_cases=True)`), see `script_cases()`.
    script_cases_spec: ScriptCases | None = None

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
        return set(self._walk(port, agent_token)[0])

    def expected_fetches_with_sitemaps(
        self, port: int, agent_token: str = DEFAULT_AGENT_TOKEN
    ) -> set[tuple[str, str]]:
        """`expected_fetches` of a crawl that also reads sitemaps, and what they lead to.

        Sitemaps are those robots.txt names plus /sitemap.xml, read when their host is
        discovered; only entries on the sitemap's own site count. The sitemap files
        themselves are left out, like robots.txt (see `Freshness.sitemap_files`).
        """
        return set(self._walk(port, agent_token, with_sitemaps=True)[0])

    def expected_fetches_with_rendering(
        self, port: int, agent_token: str = DEFAULT_AGENT_TOKEN
    ) -> set[tuple[str, str]]:
        """`expected_fetches` of a crawl that also follows the links in the rendered DOM of
        the script cases' shells (`ScriptCases.rendered_links`), so it reaches the
        render-only pages. The scripts, JSON and images a browser loads are left out."""
        rendered = self.script_cases().rendered_links
        return set(self._walk(port, agent_token, rendered=rendered)[0])

    def breadth_first_order(
        self, port: int, agent_token: str = DEFAULT_AGENT_TOKEN
    ) -> list[tuple[str, str]]:
        """`expected_fetches` in the order a breadth-first crawl from the seeds meets them."""
        return self._walk(port, agent_token)[0]

    def freshness(self) -> Freshness:
        """Which URLs play which freshness part; raises ValueError unless built with it."""
        if self.freshness_spec is None:
            raise ValueError("this test web was built without freshness=True")
        return self.freshness_spec

    def scope_cases(self) -> ScopeCases:
        """Which URLs play which scope part; raises ValueError unless built with it."""
        if self.scope_cases_spec is None:
            raise ValueError("this test web was built without scope_cases=True")
        return self.scope_cases_spec

    def script_cases(self) -> ScriptCases:
        """Which URLs play which script case; raises ValueError unless built with it."""
        if self.script_cases_spec is None:
            raise ValueError("this test web was built without script_cases=True")
        return self.script_cases_spec

    def followed_targets(self, host: str, path: str) -> list[tuple[str, str]]:
        """(host, path) of the links a crawler follows from this URL once fetched: a
        redirect's target, an HTML page's links unless it is `nofollow`; none for a PDF,
        a 404 or a host outside this web. For tests that walk the link graph themselves
        (a scoped crawl's expectation)."""
        site = self.by_host.get(host)
        return [] if site is None else _followed_targets(site.pages.get((host, path)))

    def sitemap_targets(self, host: str) -> list[tuple[str, str]]:
        """Same-site entries of the sitemaps a crawler reads when it meets `host`."""
        site = self.by_host.get(host)
        return [] if site is None else _sitemap_targets(site, host)

    def is_allowed(
        self, host: str, path: str, port: int, agent_token: str = DEFAULT_AGENT_TOKEN
    ) -> bool:
        """May a correct crawler fetch `path` on `host` (its site's robots rules)?"""
        site = self.by_host.get(host)
        if site is None:
            return False
        rules = RobotsTxt.parse(self.robots_rules(site))
        return rules.is_allowed(f"http://{host}:{port}{path}", agent_token)

    def expected_robots(self, port: int, agent_token: str = DEFAULT_AGENT_TOKEN) -> set[str]:
        """Hostnames whose /robots.txt a correct crawl requests (every discovered host)."""
        return self._walk(port, agent_token)[1]

    def politeness_inputs(self) -> PolitenessInputs:
        """Keyword arguments for `check_politeness`: crawl delays and the robots rules in force.

        A host whose robots.txt fails (503) gets "Disallow: /", so any fetch there but
        robots.txt is reported.
        """
        delays = {s.domain: s.crawl_delay_s for s in self.sites if s.crawl_delay_s > 0}
        robots = {host: self.robots_rules(s) for s in self.sites for host in s.hosts}
        robots.update({site.domain: site.robots_rules for site in self.hostile})
        return PolitenessInputs(crawl_delays=delays, robots_txt=robots)

    def robots_rules(self, site: Site) -> str:
        """The robots.txt text a correct crawler obeys on `site`'s hosts: for a redirect to
        another site's robots.txt, that file's rules (RFC 9309 §2.3.1.2)."""
        if site.robots_redirect_host is not None:
            return effective_rules(self.by_host[site.robots_redirect_host].robots)
        return effective_rules(site.robots)

    def robots_cases(self) -> dict[RobotsVariant, Site]:
        """The sites given the issue 13 robots variants (`build_web(robots_cases=True)`)."""
        cases = (RobotsVariant.NAMED_LIKE_AGENT, RobotsVariant.REDIRECT_OTHER_SITE)
        return {s.robots: s for s in self.sites if s.robots in cases}

    def hostile_sites(self) -> tuple[HostileSite, ...]:
        """The hostile sites, one per `HostileKind` (empty unless built with hostile=True)."""
        return self.hostile

    def hostile_bounds(self) -> dict[str, int]:
        """Site -> most page requests (robots.txt excluded) a sane crawler makes there.

        stall/giant/bomb/binary/flaky: a few, retries included; throttle: each page twice
        (429, then 200); redirects: the loop and the 12-hop chain once each. calendar,
        repeat, facets, copies, relpath and session are infinite or huge: their real pages
        (`HostileSite.real_paths`) plus at most 20 fetches before the crawler contains the
        trap (issue 13). robots-5xx and robots-stall: 0, since an
        unreadable robots.txt forbids the whole site (RFC 9309 §2.3.1.4).
        """
        return {site.domain: site.page_bound for site in self.hostile}

    def _walk(
        self,
        port: int,
        agent_token: str,
        *,
        with_sitemaps: bool = False,
        rendered: Mapping[tuple[str, str], tuple[tuple[str, str], ...]] | None = None,
    ) -> tuple[list[tuple[str, str]], set[str]]:
        rules = {s.domain: RobotsTxt.parse(self.robots_rules(s)) for s in self.sites}
        start = [(domain, "/") for domain in self.seed_domains]
        seen = set(start)
        queue = deque(start)
        fetched: list[tuple[str, str]] = []
        robots_hosts: set[str] = set()
        while queue:
            host, path = queue.popleft()
            site = self.by_host.get(host)
            if site is None:  # a hostile site: judged by `hostile_bounds` instead
                continue
            targets = _followed_targets(site.pages.get((host, path)))
            if host not in robots_hosts and with_sitemaps:
                targets += _sitemap_targets(site, host)
            if rendered is not None:
                targets += rendered.get((host, path), ())
            robots_hosts.add(host)
            if not rules[site.domain].is_allowed(f"http://{host}:{port}{path}", agent_token):
                continue
            fetched.append((host, path))
            for target in targets:
                if target not in seen:
                    seen.add(target)
                    queue.append(target)
        return fetched, robots_hosts


def _followed_targets(page: Page | None) -> list[tuple[str, str]]:
    if page is None or page.kind is PageKind.PDF:
        return []
    if page.kind is PageKind.REDIRECT:
        assert page.redirect_to is not None
        return [(page.redirect_host or page.host, page.redirect_to)]
    if page.nofollow:
        return []
    return [(link.host, link.path) for link in page.links]


def _sitemap_targets(site: Site, host: str) -> list[tuple[str, str]]:
    """Same-site entries of the sitemaps a crawler reads on `host` (indexes followed)."""
    files = [(host, path) for path in site.robots_sitemaps] if host == site.apex else []
    files.append((host, "/sitemap.xml"))
    targets: list[tuple[str, str]] = []
    while files:
        sitemap = site.sitemaps.get(files.pop(0))
        if sitemap is None:
            continue
        entries = [(e.host, e.path) for e in sitemap.entries if e.host in site.hosts]
        if sitemap.is_index:
            files += entries
        else:
            targets += entries
    return targets


def build_web(
    n_sites: int = 60,
    pages_per_site: int = 20,
    seed: int = 1,
    *,
    n_seeds: int = 5,
    hostile: bool = False,
    freshness: bool = False,
    robots_cases: bool = False,
    scope_cases: bool = False,
    script_cases: bool = False,
) -> TestWeb:
    """Build a test web of `n_sites` sites of about `pages_per_site` pages each.

    Every robots variant appears once `n_sites >= 12`. `hostile` adds one hostile site
    per `HostileKind` (127.3.0.x), linked from the first seed's home page; the other
    sites and pages stay as without it. `freshness` adds live and static pages, sitemaps,
    exact and near copies and popular pages (see `freshness.py` and `TestWeb.freshness`);
    it needs `n_sites >= 12` and changes the text of every page (ValueError if too small).
    `robots_cases` (needs `n_sites >= 12`) gives two sites the issue 13 robots.txt files:
    groups named like trawl but not `trawl`, and a redirect to another site's robots.txt
    (see `TestWeb.robots_cases`). `scope_cases` (needs `n_sites >= 4`, not with
    `freshness`) adds a cross-site redirect, a www. page and a sitemap to site 3 for the
    crawl-scope tests (see `scope_cases.py`, `TestWeb.scope_cases`). `script_cases`
    (needs `n_sites >= 3`) adds the script-built sites and pages of issue 18, linked from
    the first seed's home page: an app whose every page is the same shell, server-rendered
    framework pages, a login page, a page using another site's assets and one that never
    settles (see `script_cases.py`, `TestWeb.script_cases`); it is applied last, so the
    web is otherwise as without it. Pure: the same arguments give the same web.
    """
    if n_sites < 1 or pages_per_site < 1:
        raise ValueError(f"need >= 1 site and page, got {n_sites=} {pages_per_site=}")
    if script_cases and n_sites < MIN_SCRIPT_SITES:
        raise ValueError(f"script_cases needs >= {MIN_SCRIPT_SITES} sites, got {n_sites}")
    sites = build_sites(n_sites, pages_per_site, random.Random(seed))
    if robots_cases:
        sites = _with_robots_cases(sites)
    cases: ScopeCases | None = None
    if scope_cases:
        if freshness:
            raise ValueError("scope_cases and freshness both add sitemaps: pick one")
        sites, cases = add_scope_cases(sites)
    by_host = {host: site for site in sites for host in site.hosts}
    ranked = sorted(sites, key=lambda s: (-s.weight, s.index))
    by_domain = {s.domain: s for s in sites}
    fetchable = [s for s in ranked if _may_crawl_home(s, by_domain)]
    seeds = tuple(s.domain for s in fetchable[:n_seeds])
    hostile_sites: tuple[HostileSite, ...] = ()
    if hostile:
        hostile_sites = build_hostile_sites()
        sites = [_link_hostile(s, hostile_sites) if s.domain == seeds[0] else s for s in sites]
        by_host = {host: site for site in sites for host in site.hosts}
    spec: Freshness | None = None
    if freshness:
        base = TestWeb(tuple(sites), seeds, by_host, hostile_sites)
        reached = {host for host, path in base.expected_fetches(80) if path == "/"}
        # Its own generator, so the base web is the same with and without the features.
        rng = random.Random(f"freshness:{seed}")
        sites, spec = add_freshness(sites, seeds, reached, rng)
    script: ScriptCases | None = None
    if script_cases:
        sites, script = add_script_cases(sites, seeds[0])
    by_host = {host: site for site in sites for host in site.hosts}
    return TestWeb(tuple(sites), seeds, by_host, hostile_sites, spec, cases, script)


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


def _may_crawl_home(site: Site, by_domain: dict[str, Site]) -> bool:
    target = by_domain.get(site.robots_redirect_host or "", site)
    rules = RobotsTxt.parse(effective_rules(target.robots))
    return rules.is_allowed(f"http://{site.domain}/", DEFAULT_AGENT_TOKEN)


# build_web(robots_cases=True): site index -> its variant. The two replace ALLOW_ALL sites
# (VARIANT_CYCLE), so the ring of home-page links still reaches everything.
_ROBOTS_CASES = {4: RobotsVariant.NAMED_LIKE_AGENT, 8: RobotsVariant.REDIRECT_OTHER_SITE}
# The redirect leads to the REDIRECTED site's /robots.txt, itself a redirect (to
# /robots-rules.txt, "Disallow: /docs/b/"): two hops, the first to another site.
_REDIRECT_TARGET_INDEX = 10


def _with_robots_cases(sites: list[Site]) -> list[Site]:
    if len(sites) < 12:
        raise ValueError(f"robots_cases needs >= 12 sites, got {len(sites)}")
    target = sites[_REDIRECT_TARGET_INDEX]
    out = list(sites)
    for index, variant in _ROBOTS_CASES.items():
        host = target.apex if variant is RobotsVariant.REDIRECT_OTHER_SITE else None
        out[index] = dataclasses.replace(sites[index], robots=variant, robots_redirect_host=host)
    return out
