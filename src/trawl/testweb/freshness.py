"""The freshness features of the test web (issue 5), laid over an already built web.

How this works: `add_freshness` takes the sites `site_builder` made and returns new ones
with pages, links and sitemaps added, plus a `Freshness` that says which URLs play which
part. It draws from its own `random.Random`, so the base web stays as without it. Every
HTML page also gets topic words (`text.topic_words`): the shared filler vocabulary is
small, and without them unrelated pages came out 2-3 simhash bits apart, like near-copies.

What it adds, on sites whose robots.txt lets trawl crawl and that a crawl reaches:
- live pages `/live/N.html` (text and ETag change on every request) and static pages
  `/static/N.html`, linked from the home pages of two sites, seeds first;
- exact copies: `/copies/a.html`, `/copies/b.html` and `/print/a.html` on one site, with
  byte-identical bodies (links spelled as absolute paths, nothing names the page's URL);
  home links the first, every copy links the other two. And one document on three sites:
  `/legal/licence.html`, byte-identical (PageKind.DOCUMENT), linked from each one's home
  (in a cluster, the sites may well be owned by different nodes);
- a syndicated article: the original `/news/<slug>.html` on the first seed, copies
  `/reprints/<slug>.html` on three later sites, same title and text, different chrome;
- sitemaps: one site names `/sitemap_index.xml` in robots.txt (an index of
  `/sitemaps/pages-1.xml` and the gzipped `/sitemaps/pages-2.xml.gz`), one names
  `/sitemap.xml`, one serves `/sitemap.xml` without saying so. They list sitemap-only pages
  `/hidden/N.html`, some linked pages, and (once) a page of another site, which a crawler
  must ignore. The first hidden page of each links `/archive/1.html`, reachable only so;
- popular pages `/popular/1.html` on two sites, at depth 2 under `/topics/`, linked from the
  `/articles/` index of every other site; the leaves `/topics/N.html` beside them have one
  in-link each and come first in `/topics/`, so only a crawler that ranks by in-links
  fetches the popular page first on its own merits.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trawl.testweb import text
from trawl.testweb.layout import Decoration, Form, Link, Page, PageKind, Place, Site
from trawl.testweb.robots_variants import RobotsVariant
from trawl.testweb.sitemaps import LASTMOD_NOW, Sitemap, SitemapEntry

if TYPE_CHECKING:
    import random
    from collections.abc import Iterable

Key = tuple[str, str]  # (hostname, path)

# Variants that let trawl fetch every path the features use, without a crawl delay.
_OPEN = frozenset(
    {
        RobotsVariant.ALLOW_ALL,
        RobotsVariant.DISALLOW_PRIVATE,
        RobotsVariant.MISSING,
        RobotsVariant.AGENT_ALLOWED,
    }
)
_ROBOTS_200 = _OPEN - {RobotsVariant.MISSING}
MIN_SITES = 12  # popular pages need >= 10 linking sites that a crawl can read
_LIVE_PAGES = 2
_LEAVES = 4
_SYNDICATED_COPIES = 3
_SYNDICATED_PARAGRAPHS = 10  # ~500 words: the whole of what the fingerprint reads


@dataclass(frozen=True, slots=True)
class Freshness:
    """Which URLs of a `build_web(freshness=True)` web play which part; keys are (host, path)."""

    changing_urls: frozenset[Key]
    static_urls: frozenset[Key]
    sitemap_only: frozenset[Key]  # listed in a sitemap, linked from no page
    lastmod_now: frozenset[Key]  # linked pages a sitemap lists with lastmod = request time
    foreign_sitemap_entries: frozenset[Key]  # listed in another site's sitemap: never fetch
    sitemap_files: frozenset[Key]  # every sitemap and sitemap index served
    robots_sitemaps: frozenset[Key]  # sitemaps named by a `Sitemap:` line in robots.txt
    unnamed_sitemaps: frozenset[Key]  # /sitemap.xml files robots.txt does not name
    # byte-identical bodies; in the first group (one site's), the first is linked first
    copy_groups: tuple[tuple[Key, ...], ...]
    near_copy_groups: tuple[tuple[Key, ...], ...]  # same main text; first is the original
    popular: frozenset[Key]
    deep_leaves: frozenset[Key]  # same sites and depth as `popular`, one in-link each


def add_freshness(
    sites: list[Site], seed_domains: tuple[str, ...], reached: set[str], rng: random.Random
) -> tuple[list[Site], Freshness]:
    """`sites` with the freshness features added, and what they are.

    `reached` holds the domains whose home page a crawl of the base web fetches. Raises
    ValueError when the web is too small to hold every feature (fewer than `MIN_SITES`).
    """
    open_sites = [s for s in sites if s.robots in _OPEN and s.domain in reached]
    by_domain = {s.domain: s for s in sites}
    ordered = [by_domain[d] for d in seed_domains if by_domain[d] in open_sites]
    ordered += [s for s in open_sites if s.domain not in seed_domains]
    n_named = sum(1 for s in ordered if s.robots in _ROBOTS_200)
    if len(sites) < MIN_SITES or len(ordered) < 6 or n_named < 3:
        raise ValueError(
            f"freshness needs >= {MIN_SITES} sites, >= 6 open to trawl and 3 of them with a "
            f"robots.txt; got {len(sites)} sites, {len(ordered)} open, {n_named} with robots.txt"
        )
    writer = _Writer(sites, rng)
    changing, static = writer.add_live(ordered[:2])
    copies = writer.add_copies(ordered[2])
    syndicated = writer.add_syndicated(
        by_domain[seed_domains[0]], [s for s in ordered if s.domain != seed_domains[0]][-3:]
    )
    hidden, foreign = writer.add_sitemaps(ordered)
    popular, leaves = writer.add_popular(ordered[1:3], sites)
    shared = writer.add_shared_file(ordered[3:6])  # last: the features above draw as before
    files = frozenset(key for s in writer.sitemaps.values() for key in s)
    named = frozenset(
        (s.apex, path) for s in sites for path in writer.robots_sitemaps.get(s.domain, ())
    )
    spec = Freshness(
        changing_urls=changing,
        static_urls=static,
        sitemap_only=hidden,
        lastmod_now=frozenset(writer.lastmod_now),
        foreign_sitemap_entries=foreign,
        sitemap_files=files,
        robots_sitemaps=named,
        unnamed_sitemaps=frozenset(k for k in files if k[1] == "/sitemap.xml") - named,
        copy_groups=(copies, shared),
        near_copy_groups=(syndicated,),
        popular=popular,
        deep_leaves=leaves,
    )
    return writer.sites(), spec


class _Writer:
    """Adds pages and links to copies of the sites' page maps; `sites()` gives the result."""

    def __init__(self, sites: list[Site], rng: random.Random) -> None:
        self._base = sites
        self._rng = rng
        self.pages = {s.domain: dict(s.pages) for s in sites}
        self.sitemaps: dict[str, dict[Key, Sitemap]] = {}
        self.robots_sitemaps: dict[str, tuple[str, ...]] = {}
        self.lastmod_now: set[Key] = set()

    def sites(self) -> list[Site]:
        out = []
        for site in self._base:
            pages = {key: _with_topic(page) for key, page in self.pages[site.domain].items()}
            out.append(
                dataclasses.replace(
                    site,
                    pages=pages,
                    sitemaps=self.sitemaps.get(site.domain, {}),
                    robots_sitemaps=self.robots_sitemaps.get(site.domain, ()),
                )
            )
        return out

    # --- the features -----------------------------------------------------------------

    def add_live(self, sites: list[Site]) -> tuple[frozenset[Key], frozenset[Key]]:
        changing: list[Key] = []
        static: list[Key] = []
        for site in sites:
            for n in range(1, _LIVE_PAGES + 1):
                changing.append(self._new(site, f"/live/{n}.html", kind=PageKind.LIVE))
                static.append(self._new(site, f"/static/{n}.html"))
            self._link_from(site, (site.apex, "/"), changing[-_LIVE_PAGES:] + static[-_LIVE_PAGES:])
        return frozenset(changing), frozenset(static)

    def add_copies(self, site: Site) -> tuple[Key, ...]:
        apex = site.apex
        keys = ((apex, "/copies/a.html"), (apex, "/copies/b.html"), (apex, "/print/a.html"))
        # Nothing in the body may depend on the path: same title, text and absolute links.
        links = [
            self._link(apex, target, name, Place.NAV, Form.ABSOLUTE_PATH)
            for target, name in _nav(site)
        ]
        links.append(self._link(apex, keys[1], "Permalink", Place.BODY, Form.ABSOLUTE_PATH))
        links.append(self._link(apex, keys[2], "Print version", Place.BODY, Form.ABSOLUTE_PATH))
        template = self._page(site, "/copies/a.html", tuple(links))
        for host, path in keys:
            self.pages[site.domain][(host, path)] = dataclasses.replace(template, path=path)
        self._link_from(site, (apex, "/"), keys[:1])
        return keys

    def add_syndicated(self, original: Site, copies: list[Site]) -> tuple[Key, ...]:
        rng = self._rng
        slug = text.words(rng, 2).replace(" ", "-")
        title, text_seed = text.title(rng), rng.getrandbits(32)
        keys: list[Key] = []
        for n, site in enumerate([original, *copies]):
            path = f"/news/{slug}.html" if n == 0 else f"/reprints/{slug}.html"
            # Chrome differs per site (nav, header, aside); the article text does not, so
            # it carries no body links, whose anchors would differ.
            aside = [
                self._link(site.apex, target, text.title(rng), Place.ASIDE)
                for target in rng.sample(_articles(site), min(3, len(_articles(site))))
            ]
            links = self._nav_links(site) + aside
            page = Page(
                site.apex,
                path,
                PageKind.HTML,
                title=title,
                text_seed=text_seed,
                paragraphs=_SYNDICATED_PARAGRAPHS,
                links=tuple(links),
                # Reprints name their source, as syndication guidelines ask.
                canonical=None if n == 0 else keys[0],
            )
            self.pages[site.domain][(site.apex, path)] = page
            self._link_from(site, (site.apex, "/"), [(site.apex, path)])
            keys.append((site.apex, path))
        return tuple(keys)

    def add_shared_file(self, sites: list[Site]) -> tuple[Key, ...]:
        text_seed = self._rng.getrandbits(32)  # a document's bytes depend on its text only
        keys = []
        for site in sites:
            key = (site.apex, "/legal/licence.html")
            self.pages[site.domain][key] = Page(
                site.apex, key[1], PageKind.DOCUMENT, title="Licence", text_seed=text_seed,
                paragraphs=8, links=(),
            )  # fmt: skip
            self._link_from(site, (site.apex, "/"), [key])
            keys.append(key)
        return tuple(keys)

    def add_sitemaps(self, ordered: list[Site]) -> tuple[frozenset[Key], frozenset[Key]]:
        named = [s for s in ordered if s.robots in _ROBOTS_200]
        index_site, urlset_site = named[-1], named[-2]
        unnamed_site = next(
            (s for s in reversed(ordered) if s.robots is RobotsVariant.MISSING),
            named[-3],
        )
        used = {index_site.domain, urlset_site.domain, unnamed_site.domain}
        elsewhere = next(s for s in ordered if s.domain not in used)
        foreign = self._new(elsewhere, "/hidden/elsewhere.html")
        hidden = self._sitemap_index(index_site, foreign)
        hidden += self._sitemap(urlset_site, "/sitemap.xml", 2, (), fresh=True)
        hidden += self._sitemap(unnamed_site, "/sitemap.xml", 2, ())
        self.robots_sitemaps[index_site.domain] = ("/sitemap_index.xml",)
        self.robots_sitemaps[urlset_site.domain] = ("/sitemap.xml",)
        return frozenset(hidden), frozenset({foreign})

    def add_popular(
        self, hosts: list[Site], sites: list[Site]
    ) -> tuple[frozenset[Key], frozenset[Key]]:
        popular: list[Key] = []
        leaves: list[Key] = []
        for site in hosts:
            topics = (site.apex, "/topics/")
            these = [self._new(site, f"/topics/{n}.html", up=topics) for n in range(1, _LEAVES + 1)]
            popular.append(self._new(site, "/popular/1.html", up=topics))
            # Leaves first: a breadth-first crawler meets them before the popular page here.
            self._new(site, "/topics/", extra=these + popular[-1:])
            self._link_from(site, (site.apex, "/"), [topics])
            leaves += these
        for site in sites:
            targets = [key for key in popular if key[0] not in site.hosts]
            self._link_from(site, (site.apex, "/articles/"), targets, Place.ASIDE)
        return frozenset(popular), frozenset(leaves)

    # --- sitemaps ---------------------------------------------------------------------

    def _sitemap_index(self, site: Site, foreign: Key) -> list[Key]:
        apex = site.apex
        first = self._sitemap(site, "/sitemaps/pages-1.xml", 2, (foreign,))
        second = self._sitemap(site, "/sitemaps/pages-2.xml.gz", 1, ())
        children = (
            SitemapEntry(apex, "/sitemaps/pages-1.xml", "2024-02-01"),
            SitemapEntry(apex, "/sitemaps/pages-2.xml.gz", "2024-02-01T08:00:00+00:00"),
        )
        self._add_sitemap(site, Sitemap(apex, "/sitemap_index.xml", children, is_index=True))
        return first + second

    def _sitemap(
        self,
        site: Site,
        path: str,
        n_hidden: int,
        foreign: tuple[Key, ...],
        *,
        fresh: bool = False,
    ) -> list[Key]:
        """A urlset of `n_hidden` new hidden pages, two linked pages and `foreign` entries;
        `fresh`: the linked pages' lastmod is the time of each request."""
        rng, apex = self._rng, site.apex
        start = 1 + sum(1 for h, p in self.pages[site.domain] if p.startswith("/hidden/"))
        hidden = [self._new(site, f"/hidden/{n}.html") for n in range(start, start + n_hidden)]
        if start == 1:  # the first hidden page leads to a page found only through it
            archive = self._new(site, "/archive/1.html")
            self._link_from(site, hidden[0], [archive])
        listed = hidden + rng.sample(_articles(site), min(2, len(_articles(site))))
        entries = [
            SitemapEntry(host, p, f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}")
            for host, p in listed
        ]
        if fresh:
            linked = listed[len(hidden) :]
            self.lastmod_now.update(linked)
            entries[len(hidden) :] = [SitemapEntry(h, p, LASTMOD_NOW) for h, p in linked]
        entries += [SitemapEntry(host, p) for host, p in foreign]
        self._add_sitemap(site, Sitemap(apex, path, tuple(entries)))
        return hidden

    def _add_sitemap(self, site: Site, sitemap: Sitemap) -> None:
        self.sitemaps.setdefault(site.domain, {})[(sitemap.host, sitemap.path)] = sitemap

    # --- pages and links --------------------------------------------------------------

    def _new(
        self,
        site: Site,
        path: str,
        *,
        kind: PageKind = PageKind.HTML,
        up: Key | None = None,
        extra: Iterable[Key] = (),
    ) -> Key:
        """A new page on the apex linking its nav, `up` and `extra`; returns its key."""
        apex = site.apex
        links = self._nav_links(site)
        links += [self._link(apex, t, text.words(self._rng, 3), Place.BODY) for t in extra]
        if up is not None:
            links.append(self._link(apex, up, "Up", Place.BODY))
        page = self._page(site, path, tuple(links))
        self.pages[site.domain][(apex, path)] = dataclasses.replace(page, kind=kind)
        return (apex, path)

    def _page(self, site: Site, path: str, links: tuple[Link, ...]) -> Page:
        rng = self._rng
        return Page(
            site.apex,
            path,
            PageKind.HTML,
            title=text.title(rng),
            text_seed=rng.getrandbits(32),
            paragraphs=rng.randint(4, 12),
            links=links,
        )

    def _nav_links(self, site: Site) -> list[Link]:
        return [self._link(site.apex, target, name, Place.NAV) for target, name in _nav(site)]

    def _link_from(
        self, site: Site, source: Key, targets: Iterable[Key], place: Place = Place.BODY
    ) -> None:
        """Append links to `targets` to the existing page `source` of `site`."""
        page = self.pages[site.domain][source]
        rng = self._rng
        extra = tuple(self._link(source[0], t, text.words(rng, 3), place) for t in targets)
        self.pages[site.domain][source] = dataclasses.replace(page, links=page.links + extra)

    def _link(
        self, source_host: str, target: Key, anchor: str, place: Place, form: Form | None = None
    ) -> Link:
        if form is None:
            same = source_host == target[0]
            choices = (Form.RELATIVE, Form.ABSOLUTE_PATH) if same else (Form.ABSOLUTE_URL,)
            form = self._rng.choice(choices)
        return Link(target[0], target[1], form, Decoration.NONE, anchor, place)


def _nav(site: Site) -> list[tuple[Key, str]]:
    apex = site.apex
    return [((apex, "/"), "Home"), ((apex, "/articles/"), "Articles"), ((apex, "/docs/"), "Docs")]


def _articles(site: Site) -> list[Key]:
    """The site's base article pages: linked targets that never gain links from here."""
    return sorted(
        key
        for key in site.pages
        if key[0] == site.apex and key[1].startswith("/articles/") and key[1].endswith(".html")
    )


def _with_topic(page: Page) -> Page:
    if page.kind not in (PageKind.HTML, PageKind.LIVE, PageKind.DOCUMENT):
        return page
    return dataclasses.replace(page, topic=text.topic_words(page.text_seed))
