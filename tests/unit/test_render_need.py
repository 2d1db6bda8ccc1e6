"""Which plainly fetched pages look built by JavaScript (parse.render_need, issue 18).

The fixtures are shaped like what the frameworks really serve: create-react-app's and Vue
CLI's index.html, Angular's, a Flutter web build, Next.js and Nuxt pages rendered on the
server, a sparse login page.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trawl.parse.fingerprint import main_text_fingerprint
from trawl.parse.links import parse_html
from trawl.parse.render_need import RenderReason, render_reason

PROSE = (
    "The council met on Tuesday to discuss the harbour plan, and residents asked"
    " for more time to read the report before the vote."
)
ARTICLE = f"<h1>Harbour plan</h1>{''.join(f'<p>{PROSE} Part {i}.</p>' for i in range(6))}"
NAV = '<nav><a href="/">Home</a> <a href="/news">News</a> <a href="/about">About</a></nav>'

CRA_SHELL = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<link rel="icon" href="/favicon.ico"><title>React App</title>
<script defer="defer" src="/static/js/main.8c3b1f2e.js"></script>
<link href="/static/css/main.0f3a.css" rel="stylesheet"></head>
<body><noscript>You need to enable JavaScript to run this app.</noscript>
<div id="root"></div></body></html>"""

VUE_SHELL = """<!DOCTYPE html><html lang=""><head><meta charset="utf-8"><title>shop</title>
<script defer="defer" src="/js/chunk-vendors.1e3f.js"></script>
<script defer="defer" src="/js/app.7a2b.js"></script></head>
<body><noscript><strong>We're sorry but shop doesn't work properly without JavaScript
enabled. Please enable it to continue.</strong></noscript><div id="app"></div></body></html>"""

ANGULAR_SHELL = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Portal</title><base href="/"></head>
<body><app-root></app-root><script src="runtime.js" type="module"></script>
<script src="main.js" type="module"></script></body></html>"""

LOADING_SHELL = f"""<html><head><title>Dashboard</title></head><body>{NAV}
<div id="root"><div class="spinner">Loading…</div></div>
<script src="/bundle.js"></script></body></html>"""

NEXT_CLIENT_ONLY = """<!DOCTYPE html><html><head><title>Search</title></head><body>
<div id="__next"></div><script id="__NEXT_DATA__" type="application/json">
{"props":{"pageProps":{}},"page":"/search","query":{},"buildId":"b1"}</script>
<script src="/_next/static/chunks/main.js" defer></script></body></html>"""

NOSCRIPT_ONLY = """<html><head><title>Tickets</title></head><body>
<noscript>Please turn on JavaScript to buy tickets.</noscript>
<script src="/app.bundle.js"></script></body></html>"""

FLUTTER = """<!DOCTYPE html><html><head><base href="/"><meta charset="UTF-8">
<title>my_app</title><link rel="manifest" href="manifest.json"></head>
<body><script src="flutter_bootstrap.js" async></script></body></html>"""

NEXT_SSR = f"""<!DOCTYPE html><html><head><title>Harbour plan</title></head><body>
<div id="__next"><main>{ARTICLE}</main></div>
<script id="__NEXT_DATA__" type="application/json">{{"props":{{"pageProps":{{"id":7}}}},
"page":"/news/[id]","buildId":"b1"}}</script></body></html>"""

NEXT_SSR_SPARSE = """<!DOCTYPE html><html><head><title>Contact</title></head><body>
<div id="__next"><main><h1>Contact us</h1><p>Write to the harbour office at the address
below, or call during opening hours.</p><noscript>Enable JavaScript to see the map.</noscript>
</main></div><script id="__NEXT_DATA__" type="application/json">{"page":"/contact"}</script>
</body></html>"""

NUXT_SSR = f"""<!doctype html><html><head><title>Harbour</title></head><body>
<div id="__nuxt"><div id="__layout">{ARTICLE}</div></div>
<script>window.__NUXT__={{layout:"default",data:[{{}}],serverRendered:true}}</script>
<script src="/_nuxt/app.js" defer></script></body></html>"""

REACT_SSR = f"""<html><body><div id="root"><div data-reactroot="">{ARTICLE}</div></div>
<script src="/client.js"></script></body></html>"""

LOGIN = """<html><head><title>Sign in</title></head><body><h1>Sign in</h1>
<form method="post" action="/login"><label>Email <input name="email"></label>
<label>Password <input type="password" name="password"></label>
<button>Sign in</button></form><a href="/forgot">Forgot your password?</a></body></html>"""

ARTICLE_PAGE = f"""<html><head><title>Harbour plan</title></head><body>{NAV}
<article>{ARTICLE}</article><noscript>This site works best with JavaScript.</noscript>
<div id="root"></div></body></html>"""

LINK_LISTS = f"""<html><body>{NAV}<div id="app"></div><ul>{
    "".join(f'<li><a href="/tag/{i}">Tag number {i} of the archive</a></li>' for i in range(40))
}</ul></body></html>"""


def _reason(html: str) -> RenderReason | None:
    body = html.encode()
    _, tokens = main_text_fingerprint(body)
    return render_reason(parse_html(body), tokens)


@pytest.mark.parametrize(
    ("page", "reason"),
    [
        (CRA_SHELL, RenderReason.EMPTY_MOUNT),
        (VUE_SHELL, RenderReason.EMPTY_MOUNT),
        (ANGULAR_SHELL, RenderReason.EMPTY_MOUNT),
        (LOADING_SHELL, RenderReason.EMPTY_MOUNT),
        (NEXT_CLIENT_ONLY, RenderReason.EMPTY_MOUNT),
        (NOSCRIPT_ONLY, RenderReason.NOSCRIPT_NOTICE),
        (FLUTTER, RenderReason.SCRIPT_ONLY_BODY),
    ],
    ids=[
        "create-react-app",
        "vue-cli",
        "angular",
        "loading",
        "next-client-only",
        "noscript",
        "flutter",
    ],
)
def test_script_built_shells_are_named_with_their_reason(page: str, reason: RenderReason) -> None:
    assert _reason(page) is reason


@pytest.mark.parametrize(
    "page",
    [NEXT_SSR, NEXT_SSR_SPARSE, NUXT_SSR, REACT_SSR, LOGIN, ARTICLE_PAGE, LINK_LISTS],
    ids=[
        "next-ssr",
        "next-ssr-sparse",
        "nuxt-ssr",
        "react-ssr",
        "login",
        "article",
        "link-lists",
    ],
)
def test_pages_that_show_their_content_without_scripts_are_not_sent(page: str) -> None:
    assert _reason(page) is None


@pytest.mark.parametrize(
    "page", ["", "<html></html>", "<html><body></body></html>", "<p>Hi</p>", "\x00\xff<"]
)
def test_empty_and_bare_pages_are_not_sent(page: str) -> None:
    assert _reason(page) is None


def test_prose_in_the_main_text_ends_the_check_before_the_tree_is_read() -> None:
    # A shell's tree with the prose count of an article: the count alone decides.
    assert render_reason(parse_html(CRA_SHELL.encode()), text_tokens=500) is None


def test_the_check_leaves_the_tree_as_it_was() -> None:
    tree = parse_html(LOADING_SHELL.encode())
    before = tree.html
    render_reason(tree, 0)
    assert tree.html == before


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ['<div id="root">', "</div>", "<noscript>", "</noscript>", "JavaScript",
             '<script src="a.js">', "</script>", "<body>", "word ", "<template>", "&amp;",
             '<div id="__next">', "<app-root>", "\x00", "é"]
        ),
        max_size=40,
    )
)  # fmt: skip
def test_any_markup_gets_an_answer_and_no_exception(parts: list[str]) -> None:
    answer = _reason("".join(parts))
    assert answer is None or isinstance(answer, RenderReason)
