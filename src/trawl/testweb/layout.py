"""The shapes of the test web: sites, their pages, and each link as it is spelled."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from trawl.testweb.robots_variants import RobotsVariant, crawl_delay_s

if TYPE_CHECKING:
    from trawl.testweb.sitemaps import Sitemap


class PageKind(StrEnum):
    HTML = "html"
    PDF = "pdf"
    REDIRECT = "redirect"
    LIVE = "live"  # HTML whose text changes on every request (`build_web(freshness=True)`)
    # HTML as a JavaScript framework serves it (`build_web(script_cases=True)`): the body is
    # the site's `files` entry, and `links` are the links in that HTML, before any script runs.
    FRAMEWORK = "framework"
    # HTML served byte for byte the same by every site that has it, without the site's
    # chrome or links: a licence or a press release many sites host (issue 19's cross-site
    # exact copies). Its body depends on its title and text only.
    DOCUMENT = "document"


class Form(StrEnum):
    """How a link's URL is written."""

    RELATIVE = "relative"  # "3.html", "../docs/a/3.html", "./" (same host only)
    ABSOLUTE_PATH = "absolute_path"  # "/docs/a/3.html" (same host only)
    ABSOLUTE_URL = "absolute_url"  # "http://site0007.test:PORT/docs/a/3.html"
    UPPER_HOST = "upper_host"  # "http://SITE0007.TEST:PORT/docs/a/3.html"


class Decoration(StrEnum):
    """What is appended to a link's URL that the normaliser must drop."""

    NONE = "none"
    FRAGMENT = "fragment"  # "#sec-3"
    TRACKING = "tracking"  # "?utm_source=x&utm_medium=y"
    BOTH = "both"


class Place(StrEnum):
    NAV = "nav"
    BODY = "body"
    ASIDE = "aside"


@dataclass(frozen=True, slots=True)
class Link:
    """One `<a href>` on a page: its canonical target and how it is spelled."""

    host: str
    path: str
    form: Form
    decoration: Decoration
    anchor: str
    place: Place


@dataclass(frozen=True, slots=True)
class Page:
    """A canonical URL on one host; paths absent from a site answer 404."""

    host: str
    path: str
    kind: PageKind
    title: str = ""
    text_seed: int = 0
    paragraphs: int = 0
    links: tuple[Link, ...] = ()
    nofollow: bool = False
    noindex: bool = False
    base_dir: str | None = None  # <base href> directory on the same host
    base_absolute: bool = False  # <base href> written as a full URL
    next_path: str | None = None  # <link rel="next"> (also linked by an <a>)
    redirect_to: str | None = None  # a path on `redirect_host`
    redirect_status: int = 0
    redirect_host: str | None = None  # None: the page's own host (only scope_cases leave it)
    canonical: tuple[str, str] | None = None  # (host, path) of <link rel="canonical">
    topic: tuple[str, ...] = ()  # words only this page's text uses (see text.topic_words)


# Written in a `SiteFile` body wherever the port belongs; the server puts the port there.
PORT_MARK = b"__TESTWEB_PORT__"


@dataclass(frozen=True, slots=True)
class SiteFile:
    """A body served as written, whatever its type: the script cases' HTML, scripts, JSON
    and images (`script_cases.py`). `PORT_MARK` in it stands for the port."""

    content_type: str
    body: bytes

    def body_at(self, port: int) -> bytes:
        return self.body.replace(PORT_MARK, str(port).encode())


@dataclass(frozen=True, slots=True)
class Site:
    """One registered domain (`site0007.test`) with its hostnames and pages."""

    index: int
    domain: str
    hosts: tuple[str, ...]  # apex first
    ips: tuple[str, ...]  # parallel to hosts
    robots: RobotsVariant
    gzip: bool
    weight: float  # popularity: share of cross-site links pointing here
    pages: dict[tuple[str, str], Page] = field(hash=False)
    sitemaps: dict[tuple[str, str], Sitemap] = field(default_factory=dict, hash=False)
    robots_sitemaps: tuple[str, ...] = ()  # apex paths named by `Sitemap:` lines in robots.txt
    # REDIRECT_OTHER_SITE: the apex of the site whose /robots.txt this site's redirects to.
    robots_redirect_host: str | None = None
    # Served before `pages` (which still hold the HTML ones, for the link graph).
    files: dict[tuple[str, str], SiteFile] = field(default_factory=dict, hash=False)

    @property
    def apex(self) -> str:
        return self.hosts[0]

    @property
    def crawl_delay_s(self) -> float:
        return crawl_delay_s(self.robots)

    def ip_of(self, host: str) -> str:
        return self.ips[self.hosts.index(host)]
