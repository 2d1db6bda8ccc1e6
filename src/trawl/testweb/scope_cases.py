"""The crawl-scope cases of the test web (`build_web(scope_cases=True)`, issue 16).

The base web's redirects stay on their host and it has no sitemaps, so a scope test could
not see an off-scope redirect target or a sitemap entry outside the scope. This adds, to
the fourth site S (apex, www. and blog. hosts) only:
- `/docs/away/1.html` on S's apex: a 302 to the home page of the first site (another
  registered domain), linked from S's `/docs/`;
- `/docs/www.html` on S's www. host, linked from S's `/docs/`: under the apex's /docs/
  prefix once "www." is ignored;
- `/sitemap.xml` on S's apex (robots.txt names none, so a crawler guesses it), listing
  pages no page links: `/docs/a/listed.html` (under /docs/), `/articles/listed.html` (on
  the apex, outside /docs/), blog's `/posts/listed.html` (another host of the site), and
  the first site's `/docs/` (another site: sitemaps.org says ignore it).

Nothing random: the other sites and pages stay exactly as without the flag. A correct
crawl of such a web reads sitemaps, so `TestWeb.expected_fetches_with_sitemaps` is its
unscoped expectation.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from trawl.testweb.layout import Decoration, Form, Link, Page, PageKind, Place, Site
from trawl.testweb.sitemaps import Sitemap, SitemapEntry

Key = tuple[str, str]  # (host, path)

SITE_INDEX = 3  # the first site with both a www. and a blog. host (site_builder._lay_out)
TARGET_INDEX = 0


@dataclass(frozen=True, slots=True)
class ScopeCases:
    """Which URLs play which scope part (keys are (host, path))."""

    site: str  # S's registered domain
    other_site: str  # the registered domain the redirect and one sitemap entry lead to
    away: Key  # the cross-site redirect on S's apex
    away_target: Key  # where it leads: the other site's home page
    www_page: Key  # on S's www. host, under /docs/
    sitemap: Key  # S's apex /sitemap.xml
    listed_in_prefix: Key  # sitemap-only, under /docs/ on S's apex
    listed_out_of_prefix: Key  # sitemap-only, on S's apex outside /docs/
    listed_other_host: Key  # sitemap-only, on S's blog. host
    listed_other_site: Key  # an entry on the other site


def add_scope_cases(sites: list[Site]) -> tuple[list[Site], ScopeCases]:
    """`sites` with the scope cases added to site 3; ValueError for fewer than 4 sites."""
    if len(sites) <= SITE_INDEX:
        raise ValueError(f"scope_cases needs >= {SITE_INDEX + 1} sites, got {len(sites)}")
    site, other = sites[SITE_INDEX], sites[TARGET_INDEX]
    apex, www, blog = site.hosts  # apex, www., blog. (index % 4 == 3)
    cases = ScopeCases(
        site=site.domain,
        other_site=other.domain,
        away=(apex, "/docs/away/1.html"),
        away_target=(other.apex, "/"),
        www_page=(www, "/docs/www.html"),
        sitemap=(apex, "/sitemap.xml"),
        listed_in_prefix=(apex, "/docs/a/listed.html"),
        listed_out_of_prefix=(apex, "/articles/listed.html"),
        listed_other_host=(blog, "/posts/listed.html"),
        listed_other_site=(other.apex, "/docs/"),
    )
    pages = dict(site.pages)
    host, path = cases.away
    target_host, target_path = cases.away_target
    pages[cases.away] = Page(
        host, path, PageKind.REDIRECT, redirect_to=target_path, redirect_status=302,
        redirect_host=target_host,
    )  # fmt: skip
    for n, key in enumerate((cases.www_page, *_listed(cases)), 1):
        pages[key] = _page(key, apex, n)
    docs = pages[(apex, "/docs/")]
    extra = (
        Link(*cases.away, Form.ABSOLUTE_PATH, Decoration.NONE, "Moved away", Place.BODY),
        Link(*cases.www_page, Form.ABSOLUTE_URL, Decoration.NONE, "On www", Place.BODY),
    )
    pages[(apex, "/docs/")] = dataclasses.replace(docs, links=docs.links + extra)
    entries = tuple(SitemapEntry(*key, lastmod="2024-03-05") for key in _listed(cases))
    entries += (SitemapEntry(*cases.listed_other_site),)
    sitemap = Sitemap(*cases.sitemap, entries)
    out = list(sites)
    out[SITE_INDEX] = dataclasses.replace(site, pages=pages, sitemaps={cases.sitemap: sitemap})
    return out, cases


def _listed(cases: ScopeCases) -> tuple[Key, ...]:
    return (cases.listed_in_prefix, cases.listed_out_of_prefix, cases.listed_other_host)


def _page(key: Key, apex: str, n: int) -> Page:
    """A plain page linking its host's home and the apex's sections."""
    host, path = key
    targets = [(host, "/"), (apex, "/"), (apex, "/articles/"), (apex, "/docs/")]
    links = tuple(
        Link(t_host, t_path, Form.ABSOLUTE_URL, Decoration.NONE, f"Link {m}", Place.NAV)
        for m, (t_host, t_path) in enumerate(dict.fromkeys(targets), 1)
    )
    return Page(
        host, path, PageKind.HTML, title=f"Scope case {n}", text_seed=0x5C09E + n,
        paragraphs=4, links=links,
    )  # fmt: skip
