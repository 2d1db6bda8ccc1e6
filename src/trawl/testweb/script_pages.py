"""Bodies of the script cases (`script_cases.py`): HTML, scripts and images as apps serve them.

The HTML is shaped like what the frameworks really send: create-react-app's and Vue CLI's
`index.html`, a Next.js page with `__NEXT_DATA__`, a Nuxt 2 page with `window.__NUXT__`,
a React 16 `renderToString` page with `data-reactroot`. Scripts are small and plain ES5, so
any browser runs them; they build their text and links from data written into them (or
fetched as JSON), keyed by `location.pathname`. Every body is text with `PORT_MARK` where
the port goes (absolute URLs to another site), except the images. Nothing here is random:
the callers pass the prose in.
"""

from __future__ import annotations

import json
import struct
import zlib
from html import escape

from trawl.testweb.layout import PORT_MARK

PORT = PORT_MARK.decode()
JS = "text/javascript; charset=utf-8"  # RFC 9239 §6
JSON_TYPE = "application/json"
HTML = "text/html; charset=utf-8"

# The shell every page of the app site serves, byte for byte (create-react-app's shape).
APP_SHELL = (
    '<!doctype html><html><head><title>App</title><script src="/static/app.js" defer>'
    '</script></head><body><div id="root"></div><noscript>You need to enable JavaScript to'
    " run this app.</noscript></body></html>"
)

# A view, as the scripts read it: {"title": str, "paragraphs": [str], "links": [[href, text]]}.
View = dict[str, object]


def json_for_script(value: object) -> str:
    """JSON safe inside a `<script>` element: no `</` can end it early (HTML §4.12.1.3)."""
    return json.dumps(value, separators=(",", ":")).replace("</", "<\\/")


def url(host: str, path: str) -> str:
    """An absolute URL on the test web, the port left as `PORT_MARK`."""
    return f"http://{host}:{PORT}{path}"


def _links_html(links: list[tuple[str, str]]) -> str:
    return "".join(f'<li><a href="{escape(h)}">{escape(t)}</a></li>' for h, t in links)


def _article(title: str, paragraphs: list[str], links: list[tuple[str, str]]) -> str:
    body = "".join(f"<p>{escape(p)}</p>" for p in paragraphs)
    return (
        f"<article><h1>{escape(title)}</h1>{body}</article><nav><ul>{_links_html(links)}</ul></nav>"
    )


# --- the app site: one shell, one bundle ------------------------------------------------

_APP_BUNDLE = r"""/*! script-app 1.4.2 | (c) 2024 Harbour Supply | bundle: router, views */
(function () {
  "use strict";
  var ROUTES = __ROUTES__;
  var NAV = [["/", "Home"], ["/guides/", "Guides"], ["/about", "About"]];
  var NOT_FOUND = {title: "Not found", paragraphs: ["There is no page at this address."],
                   links: [["/", "Back to the home page"]]};
  function h(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    children.forEach(function (c) {
      node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return node;
  }
  function a(pair) { return h("a", {href: pair[0]}, [pair[1]]); }
  function render(view) {
    var root = document.getElementById("root");
    document.title = view.title + " | Harbour Supply";
    root.textContent = "";
    root.appendChild(h("header", {}, [h("nav", {}, NAV.map(a))]));
    var main = h("main", {}, [h("h1", {}, [view.title])]);
    view.paragraphs.forEach(function (p) { main.appendChild(h("p", {}, [p])); });
    main.appendChild(h("ul", {}, view.links.map(function (pair) {
      return h("li", {}, [a(pair)]);
    })));
    root.appendChild(main);
    root.appendChild(h("footer", {}, [h("p", {}, ["\u00a9 2024 Harbour Supply"])]));
  }
  function getJson(path, done) {
    var xhr = new XMLHttpRequest();
    xhr.open("GET", path);
    xhr.setRequestHeader("Accept", "application/json");
    xhr.onload = function () {
      done(xhr.status === 200 ? JSON.parse(xhr.responseText) : NOT_FOUND);
    };
    xhr.onerror = function () { done(NOT_FOUND); };
    xhr.send();
  }
  var path = window.location.pathname;
  var note = /^\/notes\/(\d+)$/.exec(path);
  if (Object.prototype.hasOwnProperty.call(ROUTES, path)) {
    render(ROUTES[path]);
  } else if (note) {
    getJson("/api/notes/" + note[1] + ".json", render);
  } else {
    render(NOT_FOUND);
  }
})();
"""


def app_bundle(routes: dict[str, View]) -> str:
    """`/static/app.js`: the views of `routes` written in; `/notes/N` fetches its JSON."""
    return _APP_BUNDLE.replace("__ROUTES__", json.dumps(routes, indent=1))


# --- a Vue CLI app on an ordinary site ----------------------------------------------------


def vue_shell(name: str, vendors_path: str, app_path: str) -> str:
    return (
        '<!DOCTYPE html><html lang=""><head><meta charset="utf-8">'
        '<meta http-equiv="X-UA-Compatible" content="IE=edge">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f'<title>{escape(name)}</title><script defer="defer" src="{vendors_path}"></script>'
        f'<script defer="defer" src="{app_path}"></script></head><body><noscript><strong>'
        f"We're sorry but {escape(name)} doesn't work properly without JavaScript enabled."
        ' Please enable it to continue.</strong></noscript><div id="app"></div></body></html>'
    )


VUE_VENDORS = r"""/*! chunk-vendors: a very small Vue-like runtime (createApp, h) */
(self["webpackChunkboard"] = self["webpackChunkboard"] || []).push([["chunk-vendors"], {}]);
window.MiniVue = {
  h: function (tag, children) {
    var node = document.createElement(tag.split(".")[0]);
    if (tag.indexOf(".") > 0) { node.className = tag.split(".")[1]; }
    (children || []).forEach(function (c) {
      node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return node;
  },
  createApp: function (component) {
    return {
      mount: function (selector) {
        var el = document.querySelector(selector);
        el.appendChild(component.render(window.MiniVue.h));
        el.setAttribute("data-v-app", "");
        return el;
      }
    };
  }
};
"""

_VUE_APP = r"""/*! board app */
(function () {
  "use strict";
  var VIEWS = __VIEWS__;
  var view = VIEWS[window.location.pathname] || VIEWS[Object.keys(VIEWS)[0]];
  window.MiniVue.createApp({
    render: function (h) {
      var links = view.links.map(function (pair) {
        var a = h("a", [pair[1]]);
        a.setAttribute("href", pair[0]);
        return h("li", [a]);
      });
      return h("div.board", [h("h1", [view.title])].concat(
        view.paragraphs.map(function (p) { return h("p", [p]); }), [h("ul", links)]));
    }
  }).mount("#app");
})();
"""


def vue_app(views: dict[str, View]) -> str:
    return _VUE_APP.replace("__VIEWS__", json.dumps(views, indent=1))


# --- a page with another site's script and images -------------------------------------------


def widgets_shell(title: str, script_path: str, cdn_host: str) -> str:
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title>"
        f'<script async src="{url(cdn_host, "/js/analytics.js")}"></script>'
        f'<script defer src="{script_path}"></script></head><body>'
        f'<img src="{url(cdn_host, "/img/logo.png")}" alt="" width="120" height="40">'
        '<div id="root"></div></body></html>'
    )


_WIDGETS_APP = r"""/*! widgets page */
(function () {
  "use strict";
  var VIEW = __VIEW__;
  var root = document.getElementById("root");
  var h1 = document.createElement("h1");
  h1.textContent = VIEW.title;
  root.appendChild(h1);
  VIEW.paragraphs.forEach(function (text) {
    var p = document.createElement("p");
    p.textContent = text;
    root.appendChild(p);
  });
  var banner = document.createElement("img");
  banner.src = "__BANNER__";
  banner.alt = "";
  root.appendChild(banner);
  var ul = document.createElement("ul");
  VIEW.links.forEach(function (pair) {
    var li = document.createElement("li");
    var a = document.createElement("a");
    a.href = pair[0];
    a.textContent = pair[1];
    li.appendChild(a);
    ul.appendChild(li);
  });
  root.appendChild(ul);
})();
"""


def widgets_app(view: View, cdn_host: str) -> str:
    body = _WIDGETS_APP.replace("__VIEW__", json.dumps(view, indent=1))
    return body.replace("__BANNER__", url(cdn_host, "/img/banner.png"))


def cdn_analytics(cdn_host: str) -> str:
    """The other site's script: it asks its own site for a tracking pixel."""
    pixel = url(cdn_host, "/img/pixel.gif")
    return (
        "/*! analytics 2.1 */\n(function () {\n  var beacon = new Image();\n"
        f'  beacon.src = "{pixel}?page=" + encodeURIComponent(window.location.pathname);\n'
        "})();\n"
    )


# --- a page whose rendering never settles --------------------------------------------------


def ticker_shell(title: str, script_path: str) -> str:
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f'<title>{escape(title)}</title><script defer src="{script_path}"></script></head>'
        '<body><div id="root"></div><noscript>This live board needs JavaScript.</noscript>'
        "</body></html>"
    )


_TICKER_APP = r"""/*! live board: timers, a socket that keeps reconnecting, endless polling */
(function () {
  "use strict";
  var VIEW = __VIEW__;
  var root = document.getElementById("root");
  var h1 = document.createElement("h1");
  h1.textContent = VIEW.title;
  root.appendChild(h1);
  VIEW.paragraphs.forEach(function (text) {
    var p = document.createElement("p");
    p.textContent = text;
    root.appendChild(p);
  });
  var clock = document.createElement("p");
  root.appendChild(clock);
  var seen = document.createElement("p");
  root.appendChild(seen);
  var polls = 0;
  setInterval(function () { clock.textContent = "Now: " + new Date().toISOString(); }, 250);
  setInterval(function () { root.setAttribute("data-beat", String(Date.now())); }, 1000);
  function connect() {
    var ws = new WebSocket("ws://" + window.location.host + "__SOCKET__");
    ws.onclose = function () { setTimeout(connect, 1000); };
  }
  connect();
  function poll() {
    fetch("__POLL__?n=" + polls, {cache: "no-store"})
      .then(function (r) { return r.json(); })
      .then(function (data) { polls += 1; seen.textContent = data.status + " " + polls; })
      .catch(function () { polls += 1; })
      .then(function () { setTimeout(poll, 250); });
  }
  poll();
})();
"""


def ticker_app(view: View, socket_path: str, poll_path: str) -> str:
    body = _TICKER_APP.replace("__VIEW__", json.dumps(view, indent=1))
    return body.replace("__SOCKET__", socket_path).replace("__POLL__", poll_path)


# --- pages rendered on the server: never to be rendered again --------------------------------


def next_page(
    title: str, paragraphs: list[str], links: list[tuple[str, str]], route: str, slug: str
) -> str:
    chunks = "/_next/static/chunks"
    data = {
        "props": {"pageProps": {"story": {"slug": slug, "title": title}}, "__N_SSG": True},
        "page": route,
        "query": {"slug": slug},
        "buildId": "q3Xb7mKf2LwQe9",
        "isFallback": False,
        "gsp": True,
        "scriptLoader": [],
    }
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charSet="utf-8"/>'
        '<meta name="viewport" content="width=device-width"/>'
        f'<title>{escape(title)}</title><meta name="next-head-count" content="3"/>'
        f'<script src="{chunks}/main-4c1e8a2f.js" defer=""></script>'
        f'<script src="{chunks}/pages/_app-9b2e1d7c.js" defer=""></script>'
        '</head><body><div id="__next"><div class="layout">'
        f"{_article(title, paragraphs, links)}</div></div>"
        f'<script id="__NEXT_DATA__" type="application/json">{json_for_script(data)}</script>'
        "</body></html>"
    )


NEXT_SCRIPTS = {
    "/_next/static/chunks/main-4c1e8a2f.js": (
        "(self.webpackChunk_N_E=self.webpackChunk_N_E||[]).push([[179],{}]);\n"
        'window.__NEXT_HYDRATED=JSON.parse(document.getElementById("__NEXT_DATA__")'
        ".textContent).page;\n"
    ),
    "/_next/static/chunks/pages/_app-9b2e1d7c.js": (
        "(self.webpackChunk_N_E=self.webpackChunk_N_E||[]).push([[888],{}]);\n"
    ),
}


def nuxt_page(title: str, paragraphs: list[str], links: list[tuple[str, str]], route: str) -> str:
    state = (
        f'(function(a,b){{return {{layout:"default",data:[{{guide:{{title:a}}}}],fetch:{{}},'
        f'error:b,serverRendered:true,routePath:"{route}",config:{{_app:{{basePath:"/",'
        f'assetsPath:"/_nuxt/",cdnURL:b}}}}}}}}({json_for_script(title)},null))'
    )
    return (
        '<!doctype html><html data-n-head-ssr lang="en"><head>'
        f'<title>{escape(title)}</title><meta data-n-head="ssr" charset="utf-8">'
        '<meta data-n-head="ssr" name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="preload" href="/_nuxt/runtime.3b1a9c.js" as="script">'
        '</head><body><div data-server-rendered="true" id="__nuxt"><div id="__layout"><div>'
        f"{_article(title, paragraphs, links)}</div></div></div>"
        f"<script>window.__NUXT__={state};</script>"
        '<script src="/_nuxt/runtime.3b1a9c.js" defer></script>'
        '<script src="/_nuxt/app.8c41b2.js" defer></script></body></html>'
    )


NUXT_SCRIPTS = {
    "/_nuxt/runtime.3b1a9c.js": "!function(){window.__NUXT_RUNTIME__=true}();\n",
    "/_nuxt/app.8c41b2.js": "!function(){window.__NUXT_APP__=window.__NUXT__.routePath}();\n",
}


def react_ssr_page(title: str, paragraphs: list[str], links: list[tuple[str, str]]) -> str:
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{escape(title)}</title><script src="/assets/js/client.4d5e6f.js" defer>'
        '</script></head><body><div id="root"><div data-reactroot="">'
        f"{_article(title, paragraphs, links)}</div></div>"
        f"<script>window.__INITIAL_STATE__={json_for_script({'review': {'title': title}})}"
        "</script></body></html>"
    )


REACT_SCRIPTS = {
    "/assets/js/client.4d5e6f.js": (
        '!function(){var r=document.querySelector("[data-reactroot]");'
        'if(r){r.setAttribute("data-hydrated","true")}}();\n'
    ),
}


def login_page(site: str, links: list[tuple[str, str]]) -> str:
    """A sparse page: a heading, a few words, a form; no mount point, no script."""
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Sign in | {escape(site)}</title></head><body><main><h1>Sign in</h1>"
        "<p>Members sign in to see their orders.</p>"
        '<form method="post" action="/account/session">'
        '<label>Email <input type="email" name="email" autocomplete="username" required>'
        '</label><label>Password <input type="password" name="password" required></label>'
        '<button type="submit">Sign in</button></form>'
        f"<ul>{_links_html(links)}</ul></main></body></html>"
    )


# --- images ---------------------------------------------------------------------------------


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A valid PNG of one colour (PNG spec: signature, IHDR, IDAT, IEND)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    row = b"\x00" + bytes(rgb) * width  # filter byte 0, then the pixels
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


# The usual 1x1 transparent GIF of tracking pixels.
PIXEL_GIF = bytes.fromhex(
    "47494638396101000100800000000000ffffff21f90401000000002c00000000010001000002024401003b"
)
