"""The script-built cases of the test web (`build_web(script_cases=True)`, issue 18).

How this works: `add_script_cases` takes the finished web and returns it with two sites
added and pages added to sites 1 and 2, plus a `ScriptCases` that names the URLs a test
checks. The base sites and their pages stay as they were, except the home pages that link
the cases. Nothing random: the prose comes from `text.py` with fixed seeds. Bodies are
written by `script_pages.py` and served as written (`Site.files`); the HTML ones are also
`PageKind.FRAMEWORK` pages whose `links` are the links in the HTML as served, so
`TestWeb.expected_fetches` stays a plain crawl's expectation.

What it adds (needs `MIN_SITES`: sites 1 and 2 carry cases):
1. `script-app.test` (127.4.0.1, gzip): every page is the same create-react-app shell
   (`script_pages.APP_SHELL`); `/static/app.js` builds each page's text and links from
   `location.pathname`, and `/notes/N` from `/api/notes/N.json` (an XMLHttpRequest). Only
   `/` and `/about` are linked in plain HTML; the rest are reached only by rendering.
2. On site 1: a Next.js page, a Nuxt 2 page and a React `data-reactroot` page, all with
   their article text and links rendered on the server, and a sparse login page: none is
   to be rendered.
3. On site 2: a Vue CLI shell (`<div id="app">`, `/apps/board/`, whose rendering links a
   second Vue route that nothing else links), a page whose own script builds its text but
   that loads a script and images from `script-cdn.test` (127.4.0.2: another registered
   domain, linked by no `<a>` anywhere, so any request there came from a browser), and a
   page that never settles: timers forever, a WebSocket to a same-site path the server
   answers 404 (it speaks no WebSocket) and reconnects to every second, and a fetch() that
   polls every 250 ms.
The first seed's home page links every page a plain crawl should fetch, and so do the
home pages of sites 1 and 2 (their own). Every case site's robots.txt lets trawl fetch all
of it, with no crawl delay.
"""

from __future__ import annotations

import dataclasses
import json
import random
from dataclasses import dataclass, field

from trawl.testweb import script_pages as sp
from trawl.testweb import text
from trawl.testweb.layout import Decoration, Form, Link, Page, PageKind, Place, Site, SiteFile
from trawl.testweb.robots_variants import RobotsVariant

Key = tuple[str, str]  # (host, path)

MIN_SITES = 3
SSR_INDEX = 1  # robots.txt "Disallow: /private/" only; no crawl delay
WIDGETS_INDEX = 2  # robots.txt missing (404): everything allowed
APP_DOMAIN, APP_IP = "script-app.test", "127.4.0.1"
CDN_DOMAIN, CDN_IP = "script-cdn.test", "127.4.0.2"

_APP_PLAIN = ("/", "/about")
# App route -> its own links (besides the nav: Home, Guides, About). /notes/N come from JSON.
_APP_ROUTES: dict[str, tuple[str, ...]] = {
    "/": ("/guides/", "/notes/1", "/about"),
    "/about": ("/", "/guides/"),
    "/guides/": ("/guides/1", "/guides/2", "/guides/3"),
    "/guides/1": ("/guides/", "/guides/2"),
    "/guides/2": ("/guides/", "/guides/3"),
    "/guides/3": ("/guides/", "/notes/2"),
}
_APP_NOTES: dict[str, tuple[str, ...]] = {"/notes/1": ("/", "/notes/2"), "/notes/2": ("/notes/1",)}
_APP_NAV = ("/", "/guides/", "/about")


@dataclass(frozen=True, slots=True)
class ScriptCases:
    """Which URLs play which script case (keys are (host, path); `url(key, port)` spells one)."""

    app_site: str
    app_bundle: Key  # /static/app.js
    app_pages: tuple[Key, ...]  # every app route: all serve the same shell
    api_urls: tuple[Key, ...]  # the JSON the bundle fetches for /notes/N
    vue_page: Key
    foreign_page: Key  # builds its text with its own script, loads the other site's
    foreign_site: str  # that other registered domain: no `<a>` anywhere leads there
    foreign_urls: tuple[Key, ...]  # its script and images the foreign page loads
    websocket_url: Key  # answered 404, never upgraded
    poll_url: Key  # JSON the never-settling page polls
    # Shells a plain crawl from the seeds reaches: a renderer should render them.
    render_urls: tuple[Key, ...]
    # Pages linked only from rendered pages: no plain HTML anywhere links them.
    render_only_urls: tuple[Key, ...]
    no_render_urls: tuple[Key, ...]  # Next.js, Nuxt, React SSR, login: text without scripts
    never_settles_urls: tuple[Key, ...]
    scripts: tuple[Key, ...]  # every same-site script the case pages load
    linked_from: tuple[Key, ...]  # the plain pages that link the cases (first seed home first)
    # Page -> the same-site and cross-site targets of the links in its rendered DOM.
    rendered_links: dict[Key, tuple[Key, ...]] = field(hash=False)

    @staticmethod
    def url(key: Key, port: int) -> str:
        return f"http://{key[0]}:{port}{key[1]}"


def add_script_cases(sites: list[Site], first_seed: str) -> tuple[list[Site], ScriptCases]:
    """`sites` with the cases added (see the module docstring); ValueError below `MIN_SITES`."""
    if len(sites) < MIN_SITES:
        raise ValueError(f"script_cases needs >= {MIN_SITES} sites, got {len(sites)}")
    builder = _Builder(sites, first_seed)
    return builder.build()


def _prose(seed: str, n: int) -> list[str]:
    """`n` paragraphs with words of their own (rendered pages feed near-duplicate checks)."""
    rng = random.Random(f"script-cases:{seed}")
    topic = text.topic_words(rng.getrandbits(32))
    return [text.paragraph(rng, topic) for _ in range(n)]


def _title(seed: str) -> str:
    return text.title(random.Random(f"script-title:{seed}"))


def _view(title: str, paragraphs: list[str], links: list[tuple[str, str]]) -> sp.View:
    return {"title": title, "paragraphs": paragraphs, "links": [list(pair) for pair in links]}


def _link(target: Key, anchor: str, source_host: str) -> Link:
    form = Form.ABSOLUTE_PATH if target[0] == source_host else Form.ABSOLUTE_URL
    return Link(target[0], target[1], form, Decoration.NONE, anchor, Place.BODY)


def _href(target: Key, source_host: str) -> str:
    return target[1] if target[0] == source_host else sp.url(*target)


class _Builder:
    """Writes the cases; owns copies of the sites' page and file tables while it runs."""

    def __init__(self, sites: list[Site], first_seed: str) -> None:
        self._sites = list(sites)
        self._seed_home: Key = (first_seed, "/")
        self._ssr = sites[SSR_INDEX]
        self._widgets = sites[WIDGETS_INDEX]
        self._pages: dict[str, dict[Key, Page]] = {}
        self._files: dict[str, dict[Key, SiteFile]] = {}
        self._rendered: dict[Key, tuple[Key, ...]] = {}
        self._anchors: dict[Key, str] = {}

    def build(self) -> tuple[list[Site], ScriptCases]:
        app_pages, api_urls = self._app()
        no_render, ssr_scripts = self._server_rendered()
        board, vue_scripts = self._vue()
        foreign_page, foreign_urls, widget_script = self._foreign()
        ticker, ticker_script, socket, poll = self._never_settles()
        bundle = (APP_DOMAIN, "/static/app.js")
        plain_app = [(APP_DOMAIN, p) for p in _APP_PLAIN]
        render_urls = (*plain_app, board[0], foreign_page, ticker)
        render_only = tuple(k for k in (*app_pages, *board) if k not in render_urls)
        linked = (self._seed_home, (self._ssr.apex, "/"), (self._widgets.apex, "/"))
        self._link_cases(linked[0], (*render_urls, *no_render))
        self._link_cases(linked[1], no_render)
        self._link_cases(linked[2], (board[0], foreign_page, ticker))
        cases = ScriptCases(
            app_site=APP_DOMAIN,
            app_bundle=bundle,
            app_pages=app_pages,
            api_urls=api_urls,
            vue_page=board[0],
            foreign_page=foreign_page,
            foreign_site=CDN_DOMAIN,
            foreign_urls=foreign_urls,
            websocket_url=socket,
            poll_url=poll,
            render_urls=render_urls,
            render_only_urls=render_only,
            no_render_urls=no_render,
            never_settles_urls=(ticker,),
            scripts=(bundle, *vue_scripts, widget_script, ticker_script, *ssr_scripts),
            linked_from=tuple(dict.fromkeys(linked)),
            rendered_links=dict(self._rendered),
        )
        return self._finish(), cases

    # --- the app site -------------------------------------------------------------------

    def _app(self) -> tuple[tuple[Key, ...], tuple[Key, ...]]:
        host = APP_DOMAIN
        views: dict[str, sp.View] = {}
        for path, targets in _APP_ROUTES.items():
            views[path] = self._app_view(path, targets)
        pages = {(host, p): Page(host, p, PageKind.FRAMEWORK, title="App") for p in _APP_ROUTES}
        files = {key: SiteFile(sp.HTML, sp.APP_SHELL.encode()) for key in pages}
        api: list[Key] = []
        for path, targets in _APP_NOTES.items():
            pages[(host, path)] = Page(host, path, PageKind.FRAMEWORK, title="App")
            files[(host, path)] = SiteFile(sp.HTML, sp.APP_SHELL.encode())
            key = (host, f"/api{path}.json")
            api.append(key)
            view = self._app_view(path, targets)
            files[key] = SiteFile(sp.JSON_TYPE, json.dumps(view).encode())
        files[(host, "/static/app.js")] = SiteFile(sp.JS, sp.app_bundle(views).encode())
        self._pages[host] = pages
        self._files[host] = files
        self._anchors[(host, "/")] = "Harbour Supply, the shop"
        self._anchors[(host, "/about")] = "About Harbour Supply"
        return tuple(pages), tuple(api)

    def _app_view(self, path: str, targets: tuple[str, ...]) -> sp.View:
        host = APP_DOMAIN
        title = "Welcome" if path == "/" else _title(f"app{path}")
        links = [((host, t), _title(f"app{t}") if t != "/" else "Home") for t in targets]
        if path == "/":  # a link off the site, to the page that links the app
            links.append((self._seed_home, f"Back to {self._seed_home[0]}"))
        nav = [((host, t), "Home" if t == "/" else _title(f"app{t}")) for t in _APP_NAV]
        self._rendered[(host, path)] = tuple(dict.fromkeys(k for k, _ in nav + links))
        pairs = [(_href(k, host), anchor) for k, anchor in links]
        return _view(title, _prose(f"app{path}", 3 if path == "/" else 4), pairs)

    # --- site 1: rendered on the server -------------------------------------------------

    def _server_rendered(self) -> tuple[tuple[Key, ...], tuple[Key, ...]]:
        site = self._ssr
        host = site.apex
        titles = {kind: _title(f"ssr-{kind}") for kind in ("next", "nuxt", "react")}
        slugs = {kind: title.lower().replace(" ", "-") for kind, title in titles.items()}
        keys = {
            "next": (host, f"/stories/{slugs['next']}"),
            "nuxt": (host, f"/guides/{slugs['nuxt']}"),
            "react": (host, f"/reviews/{slugs['react']}"),
            "login": (host, "/account/login"),
        }
        chrome = [((host, "/"), "Home"), ((host, "/articles/"), "Articles")]
        chrome += [((host, "/docs/"), "Docs"), (keys["login"], "Sign in")]
        for kind, title in titles.items():
            others = [(keys[k], titles[k]) for k in titles if k != kind]
            targets = chrome + others
            pairs = [(_href(k, host), a) for k, a in targets]
            paragraphs = _prose(f"ssr-{kind}", 6)
            key = keys[kind]
            if kind == "next":
                body = sp.next_page(title, paragraphs, pairs, "/stories/[slug]", slugs[kind])
            elif kind == "nuxt":
                body = sp.nuxt_page(title, paragraphs, pairs, key[1])
            else:
                body = sp.react_ssr_page(title, paragraphs, pairs)
            self._add_html(site, key, title, targets, body)
        login_targets = [((host, "/"), "Back to the home page")]
        login = sp.login_page(site.domain, [(_href(k, host), a) for k, a in login_targets])
        self._add_html(site, keys["login"], "Sign in", login_targets, login)
        scripts = {**sp.NEXT_SCRIPTS, **sp.NUXT_SCRIPTS, **sp.REACT_SCRIPTS}
        for path, body in scripts.items():
            self._add_file(site, (host, path), SiteFile(sp.JS, body.encode()))
        for key, title in zip(keys.values(), [*titles.values(), "Sign in"], strict=True):
            self._anchors[key] = title
        return tuple(keys.values()), tuple((host, p) for p in scripts)

    # --- site 2: a Vue app, a page with another site's assets, a page never done ----------

    def _vue(self) -> tuple[tuple[Key, ...], tuple[Key, ...]]:
        site = self._widgets
        host = site.apex
        routes = ("/apps/board/", "/apps/board/archive/")
        vendors, app = "/apps/board/js/chunk-vendors.5d2c1a.js", "/apps/board/js/app.9f3e4b.js"
        views: dict[str, sp.View] = {}
        for n, path in enumerate(routes):
            other = routes[1 - n]
            targets = [((host, other), "Archive" if n == 0 else "Board")]
            targets += [((host, "/"), "Home"), ((host, "/articles/"), "Articles")]
            self._rendered[(host, path)] = tuple(k for k, _ in targets)
            pairs = [(_href(k, host), a) for k, a in targets]
            views[path] = _view(_title(f"vue{path}"), _prose(f"vue{path}", 3), pairs)
            shell = sp.vue_shell("board", vendors, app)
            self._add_html(site, (host, path), "board", [], shell)
        self._add_file(site, (host, vendors), SiteFile(sp.JS, sp.VUE_VENDORS.encode()))
        self._add_file(site, (host, app), SiteFile(sp.JS, sp.vue_app(views).encode()))
        self._anchors[(host, routes[0])] = "Project board"
        return tuple((host, p) for p in routes), ((host, vendors), (host, app))

    def _foreign(self) -> tuple[Key, tuple[Key, ...], Key]:
        site = self._widgets
        host = site.apex
        key, script = (host, "/apps/widgets/"), (host, "/apps/widgets/main.2b7d0e.js")
        title = _title("widgets")
        targets = [((host, "/"), "Home"), ((host, "/articles/"), "Articles")]
        self._rendered[key] = tuple(k for k, _ in targets)
        view = _view(title, _prose("widgets", 4), [(_href(k, host), a) for k, a in targets])
        self._add_html(site, key, title, [], sp.widgets_shell(title, script[1], CDN_DOMAIN))
        self._add_file(site, script, SiteFile(sp.JS, sp.widgets_app(view, CDN_DOMAIN).encode()))
        self._anchors[key] = title
        cdn = {
            "/js/analytics.js": SiteFile(sp.JS, sp.cdn_analytics(CDN_DOMAIN).encode()),
            "/img/logo.png": SiteFile("image/png", sp.png(120, 40, (24, 90, 140))),
            "/img/banner.png": SiteFile("image/png", sp.png(320, 60, (230, 180, 40))),
            "/img/pixel.gif": SiteFile("image/gif", sp.PIXEL_GIF),
        }
        self._files[CDN_DOMAIN] = {(CDN_DOMAIN, path): file for path, file in cdn.items()}
        return key, tuple(self._files[CDN_DOMAIN]), script

    def _never_settles(self) -> tuple[Key, Key, Key, Key]:
        site = self._widgets
        host = site.apex
        key, script = (host, "/apps/ticker/"), (host, "/apps/ticker/live.7c1e55.js")
        socket, poll = (host, "/apps/ticker/socket"), (host, "/apps/ticker/api/updates.json")
        title = _title("ticker")
        view = _view(title, _prose("ticker", 2), [])
        self._rendered[key] = ()
        self._add_html(site, key, title, [], sp.ticker_shell(title, script[1]))
        body = sp.ticker_app(view, socket[1], poll[1])
        self._add_file(site, script, SiteFile(sp.JS, body.encode()))
        self._add_file(site, poll, SiteFile(sp.JSON_TYPE, b'{"status":"waiting","items":[]}'))
        self._anchors[key] = title
        return key, script, socket, poll

    # --- plumbing -----------------------------------------------------------------------

    def _add_html(
        self, site: Site, key: Key, title: str, targets: list[tuple[Key, str]], body: str
    ) -> None:
        links = tuple(_link(k, a, key[0]) for k, a in targets)
        page = Page(key[0], key[1], PageKind.FRAMEWORK, title=title, links=links)
        self._pages.setdefault(site.domain, dict(site.pages))[key] = page
        self._add_file(site, key, SiteFile(sp.HTML, body.encode()))

    def _add_file(self, site: Site, key: Key, file: SiteFile) -> None:
        self._files.setdefault(site.domain, dict(site.files))[key] = file

    def _link_cases(self, home: Key, targets: tuple[Key, ...]) -> None:
        """The home page `home` (of any site) gains an aside link to each of `targets`."""
        site = next(s for s in self._sites if home[0] in s.hosts)
        pages = self._pages.setdefault(site.domain, dict(site.pages))
        known = {(link.host, link.path) for link in pages[home].links}
        extra = tuple(
            Link(*t, Form.ABSOLUTE_URL, Decoration.NONE, self._anchors[t], Place.ASIDE)
            for t in targets
            if t not in known
        )
        pages[home] = dataclasses.replace(pages[home], links=pages[home].links + extra)

    def _finish(self) -> list[Site]:
        out = []
        for site in self._sites:
            pages = self._pages.get(site.domain, site.pages)
            files = self._files.get(site.domain, site.files)
            out.append(dataclasses.replace(site, pages=pages, files=files))
        index = len(self._sites)
        for n, (domain, ip) in enumerate(((APP_DOMAIN, APP_IP), (CDN_DOMAIN, CDN_IP))):
            out.append(
                Site(
                    index=index + n,
                    domain=domain,
                    hosts=(domain,),
                    ips=(ip,),
                    robots=RobotsVariant.ALLOW_ALL,
                    gzip=domain == APP_DOMAIN,  # bundles usually come compressed
                    weight=0.0,
                    pages=self._pages.get(domain, {}),
                    files=self._files[domain],
                )
            )
        return out
