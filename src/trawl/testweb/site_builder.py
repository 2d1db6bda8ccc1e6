"""Generate the sites of a test web: layout first, then every page's links.

Two passes, because cross-site links need every site's pages: `_lay_out` decides each
site's hostnames, addresses, robots variant and page paths; `_SiteWriter` then writes the
pages with their links. All randomness comes from the one `random.Random` passed in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING

from trawl.testweb import text
from trawl.testweb.layout import Decoration, Form, Link, Page, PageKind, Place, Site
from trawl.testweb.robots_variants import VARIANT_CYCLE, RobotsVariant

if TYPE_CHECKING:
    import random

# Sites whose index % 12 is in this set put their apex hostname on one address shared
# by the group, so a per-IP cap is exercised; every other hostname has its own address.
_SHARED_IP_SLOTS = frozenset({1, 4, 8})
_SAME_HOST_FORMS = (Form.RELATIVE, Form.RELATIVE, Form.ABSOLUTE_PATH, Form.ABSOLUTE_URL)
_OTHER_HOST_FORMS = (Form.ABSOLUTE_URL, Form.ABSOLUTE_URL, Form.UPPER_HOST)
_DECORATIONS = (Decoration.NONE,) * 6 + (Decoration.FRAGMENT, Decoration.TRACKING, Decoration.BOTH)


@dataclass(slots=True)
class _Plan:
    """A site's layout before its links are written."""

    index: int
    domain: str
    hosts: list[str]
    ips: list[str]
    robots: RobotsVariant
    weight: float
    # (host, path) -> kind, in creation order; index pages are listed in `children`
    kinds: dict[tuple[str, str], PageKind] = field(default_factory=dict)
    children: dict[tuple[str, str], list[tuple[str, str]]] = field(default_factory=dict)
    redirects: dict[tuple[str, str], tuple[str, int]] = field(default_factory=dict)
    chains: dict[tuple[str, str], str] = field(default_factory=dict)  # rel=next

    @property
    def apex(self) -> str:
        return self.hosts[0]

    def html_pages(self) -> list[tuple[str, str]]:
        return [key for key, kind in self.kinds.items() if kind is PageKind.HTML]

    def content_pages(self) -> list[tuple[str, str]]:
        return [k for k in self.html_pages() if k not in self.children]


def build_sites(n_sites: int, pages_per_site: int, rng: random.Random) -> list[Site]:
    ranks = rng.sample(range(n_sites), n_sites)
    plans = [_lay_out(i, pages_per_site, 1.0 / (ranks[i] + 1), rng) for i in range(n_sites)]
    _assign_ips(plans)
    return [_SiteWriter(plan, plans, rng).write() for plan in plans]


def _lay_out(index: int, pages_per_site: int, weight: float, rng: random.Random) -> _Plan:
    domain = f"site{index:04d}.test"
    hosts = [domain]
    if index % 4 in (1, 3):
        hosts.append(f"www.{domain}")
    if index % 4 in (2, 3):
        hosts.append(f"blog.{domain}")
    robots = VARIANT_CYCLE[index % len(VARIANT_CYCLE)]
    plan = _Plan(index, domain, hosts, [], robots, weight)
    if f"www.{domain}" in hosts:
        _lay_out_section(plan, f"www.{domain}", "/", ["/about.html", "/team/1.html"])
    if f"blog.{domain}" in hosts:
        posts = [f"/posts/{n}.html" for n in range(1, max(2, pages_per_site // 6) + 1)]
        _lay_out_section(plan, f"blog.{domain}", "/", posts)
    _lay_out_apex(plan, pages_per_site - len(plan.kinds), rng)
    return plan


def _lay_out_apex(plan: _Plan, budget: int, rng: random.Random) -> None:
    """Lay out the apex host: 10 fixed pages (indexes, /private/, PDF, redirects) + content."""
    apex = plan.apex
    content = max(4, budget - 10)
    n_articles = max(1, content // 2)
    n_docs_a = max(1, (content - n_articles + 1) // 2)
    n_docs_b = max(1, content - n_articles - n_docs_a)
    articles = [f"/articles/{n}.html" for n in range(1, n_articles + 1)]
    _lay_out_section(plan, apex, "/", ["/articles/", "/docs/"])
    _lay_out_section(plan, apex, "/articles/", articles)
    _lay_out_section(plan, apex, "/docs/", ["/docs/a/", "/docs/b/"])
    _lay_out_section(plan, apex, "/docs/a/", [f"/docs/a/{n}.html" for n in range(1, n_docs_a + 1)])
    _lay_out_section(plan, apex, "/docs/b/", [f"/docs/b/{n}.html" for n in range(1, n_docs_b + 1)])
    for a, b in pairwise(articles):
        plan.chains[(apex, a)] = b
    home = plan.children[(apex, "/")]
    for n in (1, 2):
        plan.kinds[(apex, f"/private/{n}.html")] = PageKind.HTML
        home.append((apex, f"/private/{n}.html"))
    plan.kinds[(apex, "/files/report.pdf")] = PageKind.PDF
    home.append((apex, "/files/report.pdf"))
    targets = [k for k in plan.content_pages() if not k[1].startswith("/private/")]
    for n, status in ((1, 301), (2, 302)):
        source = (apex, f"/old/{n}.html")
        plan.kinds[source] = PageKind.REDIRECT
        plan.redirects[source] = (rng.choice(targets)[1], status)
        home.append(source)


def _lay_out_section(plan: _Plan, host: str, index_path: str, paths: list[str]) -> None:
    plan.kinds.setdefault((host, index_path), PageKind.HTML)
    kids = plan.children.setdefault((host, index_path), [])
    for path in paths:
        plan.kinds.setdefault((host, path), PageKind.HTML)
        kids.append((host, path))


def _assign_ips(plans: list[_Plan]) -> None:
    counter = 0
    for plan in plans:
        for host in plan.hosts:
            if host == plan.apex and plan.index % 12 in _SHARED_IP_SLOTS:
                plan.ips.append(f"127.2.{plan.index // 12}.1")
                continue
            # 127.1.x.y with y in 1..250: never 127.0.0.1, never a .0 or .255 address
            plan.ips.append(f"127.1.{counter // 250}.{counter % 250 + 1}")
            counter += 1


class _SiteWriter:
    """Writes one planned site's pages; reads (never writes) the other plans."""

    def __init__(self, plan: _Plan, plans: list[_Plan], rng: random.Random) -> None:
        self._plan = plan
        self._plans = plans
        self._rng = rng
        self._others = [p for p in plans if p is not plan]
        self._weights = [p.weight for p in self._others]

    def write(self) -> Site:
        plan = self._plan
        pages = {key: self._page(key, kind) for key, kind in plan.kinds.items()}
        return Site(
            index=plan.index,
            domain=plan.domain,
            hosts=tuple(plan.hosts),
            ips=tuple(plan.ips),
            robots=plan.robots,
            gzip=plan.index % 5 == 3,
            weight=plan.weight,
            pages=pages,
        )

    def _page(self, key: tuple[str, str], kind: PageKind) -> Page:
        host, path = key
        rng = self._rng
        if kind is PageKind.REDIRECT:
            target, status = self._plan.redirects[key]
            return Page(host, path, kind, redirect_to=target, redirect_status=status)
        if kind is PageKind.PDF:
            return Page(host, path, kind, title="Annual report", text_seed=rng.getrandbits(32))
        is_index = key in self._plan.children
        content = not is_index
        return Page(
            host,
            path,
            kind,
            title=text.title(rng),
            text_seed=rng.getrandbits(32),
            paragraphs=rng.randint(3, 8) if is_index else int(rng.triangular(4, 75, 12)),
            links=tuple(self._links(key)),
            nofollow=content and rng.random() < 0.08,
            noindex=content and rng.random() < 0.08,
            base_dir=self._base_dir(key) if content and rng.random() < 0.15 else None,
            base_absolute=rng.random() < 0.5,
            next_path=self._plan.chains.get(key),
        )

    def _base_dir(self, key: tuple[str, str]) -> str:
        dirs = sorted({p.rsplit("/", 1)[0] + "/" for h, p in self._plan.kinds if h == key[0]})
        return self._rng.choice(dirs)

    def _links(self, key: tuple[str, str]) -> list[Link]:
        host = key[0]
        plan, rng = self._plan, self._rng
        links = [self._link(key, t, name, Place.NAV) for t, name in self._nav(host)]
        if key in plan.chains:
            links.append(self._link(key, (host, plan.chains[key]), "Next", Place.BODY))
        for target in plan.children.get(key, []):
            links.append(self._link(key, target, text.words(rng, 3), Place.BODY))
        html = plan.html_pages()
        wanted = rng.randint(10, 20)
        while len(links) < wanted:
            links.append(self._link(key, rng.choice(html), text.words(rng, 3), Place.BODY))
        links += self._odd_links(key)
        links += [self._link(key, t, text.title(rng), Place.ASIDE) for t in self._far(key)]
        return links

    def _nav(self, host: str) -> list[tuple[tuple[str, str], str]]:
        apex = self._plan.apex
        if host == apex:
            return [
                ((apex, "/"), "Home"),
                ((apex, "/articles/"), "Articles"),
                ((apex, "/docs/"), "Docs"),
            ]
        return [((host, "/"), host.split(".")[0].title()), ((apex, "/"), "Home")]

    def _odd_links(self, key: tuple[str, str]) -> list[Link]:
        """Links to 404s, redirects, the PDF and /private/ that some pages carry."""
        plan, rng = self._plan, self._rng
        apex = plan.apex
        odd: list[tuple[str, str]] = []
        if rng.random() < 0.15:
            odd.append((apex, f"/articles/missing-{rng.randint(1, 3)}.html"))
        if rng.random() < 0.1:
            odd.append((key[0], f"/gone/{rng.randint(1, 2)}.html"))
        if rng.random() < 0.1:
            odd.append((apex, f"/old/{rng.randint(1, 2)}.html"))
        if rng.random() < 0.1:
            odd.append((apex, "/files/report.pdf"))
        if rng.random() < 0.1:
            odd.append((apex, f"/private/{rng.randint(1, 2)}.html"))
        return [self._link(key, target, text.words(rng, 2), Place.BODY) for target in odd]

    def _far(self, key: tuple[str, str]) -> list[tuple[str, str]]:
        """Cross-site targets: popular sites more often; home pages also form a ring."""
        plan, rng = self._plan, self._rng
        targets: list[tuple[str, str]] = []
        if key == (plan.apex, "/") and len(self._plans) > 2:
            for step in (1, 2):
                other = self._plans[(plan.index + step) % len(self._plans)]
                targets.append((other.apex, "/"))
        if not self._others:
            return targets
        for other in rng.choices(self._others, self._weights, k=rng.randint(2, 5)):
            html = other.html_pages()
            targets.append((other.apex, "/") if rng.random() < 0.5 else rng.choice(html))
        return targets

    def _link(
        self, source: tuple[str, str], target: tuple[str, str], anchor: str, place: Place
    ) -> Link:
        rng = self._rng
        forms = _SAME_HOST_FORMS if source[0] == target[0] else _OTHER_HOST_FORMS
        return Link(
            target[0], target[1], rng.choice(forms), rng.choice(_DECORATIONS), anchor, place
        )
