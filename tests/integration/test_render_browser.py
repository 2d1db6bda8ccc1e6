"""The Chromium renderer (render/browser.py) with the real browser: Debian's `chromium`, which
.ci/run installs (scripts/test), driven by Playwright. Without Chromium these tests fail, as
CI must never pass without them; TRAWL_ALLOW_NO_CHROMIUM=1 turns that into a skip.

Every request of the browser is routed, so no HTTP server is needed and nothing leaves the
process: the sites below are names under .test that resolve nowhere, and a `FakeSite` plays
trawl's fetch, logging what the browser asked for.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import time
from typing import TYPE_CHECKING

import pytest

from trawl.errors import ConfigError
from trawl.render.browser import ChromiumRenderer
from trawl.render.chromium import find_chromium
from trawl.render.ports import RenderJob, RenderResult, RenderState, SubresourceAnswer

if TYPE_CHECKING:
    from collections.abc import Iterator

USER_AGENT = "trawl-test/1.0 (+http://trawl.test/bot)"
JS = (("content-type", "text/javascript"),)
HTML = "text/html; charset=utf-8"
SHELL = b"<!doctype html><title>app</title><div id=root></div><script src=/app.js></script>"
# The bundle of an empty-shell app: its text and links exist only once it has run.
APP_JS = b"""
const root = document.getElementById('root');
root.innerHTML = '<h1>Built by script</h1>' +
  ['/docs', '/pricing', '/about'].map(p => `<a href="${p}">${p}</a>`).join(' ');
"""


class FakeSite:
    """trawl's fetch for the browser, answering from a dict and logging each request."""

    def __init__(self, answers: dict[str, bytes], refuse: frozenset[str] = frozenset()) -> None:
        self.answers = answers
        self.refuse = refuse
        self.log: list[tuple[str, str]] = []

    async def fetch(self, url: str, resource_type: str) -> SubresourceAnswer | None:
        self.log.append((url, resource_type))
        if url in self.refuse:
            return None
        body = self.answers.get(url)
        if body is None:
            return SubresourceAnswer(404, (("content-type", "text/plain"),), b"not found")
        return SubresourceAnswer(200, JS, body)


def job(url: str, html: bytes, **caps: float) -> RenderJob:
    site = re.sub(r"^https?://(?:[^/.]+\.)*?([^/.]+\.test)/.*$", r"\1", url)
    return RenderJob(
        url=url,
        site=site,
        html=html,
        content_type=HTML,
        timeout_s=caps.get("timeout_s", 8.0),
        max_subrequests=int(caps.get("max_subrequests", 50)),
        max_subresource_bytes=int(caps.get("max_subresource_bytes", 5_000_000)),
    )


def chromium_or_fail() -> str:
    try:
        return find_chromium()
    except ConfigError as exc:
        if os.environ.get("TRAWL_ALLOW_NO_CHROMIUM") == "1":
            pytest.skip(f"{exc} (TRAWL_ALLOW_NO_CHROMIUM=1)")
        pytest.fail(f"{exc}; .ci/run installs it, or set TRAWL_ALLOW_NO_CHROMIUM=1 to skip")


@pytest.fixture(scope="module")
def runner() -> Iterator[asyncio.Runner]:
    with asyncio.Runner() as runner:
        yield runner


@pytest.fixture(scope="module")
def renderer(runner: asyncio.Runner) -> Iterator[ChromiumRenderer]:
    """One browser for the module's tests (each render has a context of its own)."""
    chromium = ChromiumRenderer(user_agent=USER_AGENT, executable=chromium_or_fail())
    yield chromium
    runner.run(chromium.close())


def test_shell_app_renders_to_html_with_its_links(
    runner: asyncio.Runner, renderer: ChromiumRenderer
) -> None:
    site = FakeSite({"http://shell.test/app.js": APP_JS})
    result = runner.run(renderer.render(job("http://shell.test/", SHELL), site.fetch))
    assert result.state is RenderState.DONE, result.message
    assert "<h1>Built by script</h1>" in result.html
    for path in ("/docs", "/pricing", "/about"):
        assert f'<a href="{path}">' in result.html
    # The main document came from the job's bytes: fetch saw the bundle only.
    assert site.log == [("http://shell.test/app.js", "script")]
    assert (result.requests_fetched, result.bytes_fetched) == (1, len(APP_JS))
    [fetched] = result.fetched
    assert (fetched.url, fetched.resource_type, fetched.answer.body) == (
        "http://shell.test/app.js",
        "script",
        APP_JS,
    )
    assert 0.5 <= result.wall_s < 5
    assert renderer.stats().rss_bytes > 10_000_000
    # The browser's CPU while it ran (render.cpu_budget charges it): a fresh context's
    # renderer process alone costs a good part of a CPU-second.
    assert 0.05 < result.cpu_s < 20, result.cpu_s


def test_other_sites_images_fonts_sockets_and_navigations_never_reach_fetch(
    runner: asyncio.Runner, renderer: ChromiumRenderer
) -> None:
    page = b"""<!doctype html><div id=root></div>
    <script src="http://cdn.other.test/lib.js"></script>
    <link rel=stylesheet href="https://fonts.other.test/css">
    <link rel=stylesheet href="/site.css">
    <img src="/logo.png"><img src="http://www.mixed.test/photo.jpg">
    <video src="/intro.mp4"></video>
    <iframe src="/frame.html"></iframe><iframe src="http://ads.other.test/"></iframe>
    <script src=/app.js></script>"""
    app = b"""
    fetch('/api/items').then(r => r.text()).then(t => {
      document.getElementById('root').textContent = 'items: ' + t;
    });
    fetch('http://api.other.test/track', {method: 'POST', body: 'x'}).catch(() => {});
    fetch('/api/cart', {method: 'POST', body: 'add'}).catch(() => {});
    new WebSocket('ws://mixed.test/live');
    navigator.sendBeacon('/beacon', 'x');
    setTimeout(() => { location.href = '/elsewhere'; }, 50);
    """
    answers = {
        "http://www.mixed.test/app.js": app,
        "http://www.mixed.test/site.css": b"@font-face{font-family:f;src:url(/f.woff2)}"
        b" body{font-family:f}",
        "http://www.mixed.test/api/items": b"42",
        "http://www.mixed.test/frame.html": b"<p>framed</p>",
    }
    site = FakeSite(answers)
    result = runner.run(renderer.render(job("http://www.mixed.test/", page), site.fetch))
    assert result.state is RenderState.DONE, result.message
    assert sorted(site.log) == [
        ("http://www.mixed.test/api/items", "fetch"),
        ("http://www.mixed.test/app.js", "script"),
        ("http://www.mixed.test/frame.html", "document"),
        ("http://www.mixed.test/site.css", "stylesheet"),
    ]
    # The script's `location` change was held back: the DOM is the page's, with its data,
    # and the place it wanted to go is reported.
    assert "items: 42" in result.html
    assert result.navigations == ("http://www.mixed.test/elsewhere",)
    # cdn, fonts, 2 images, video, ads iframe, track, websocket, beacon, navigation, font:
    # some (the video, the font) depend on Chromium's choices, so count the sure ones.
    assert result.requests_blocked >= 8


def test_nothing_reaches_the_network_even_on_the_pages_own_host(
    runner: asyncio.Runner, renderer: ChromiumRenderer
) -> None:
    """A real server on the page's own loopback host sees no connection: same-site requests
    go through trawl's fetch, the rest fail in the browser."""
    connections: list[str] = []

    def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(str(writer.get_extra_info("peername")))
        writer.close()

    async def scenario() -> tuple[RenderResult, FakeSite]:
        server = await asyncio.start_server(accepted, "127.0.0.1", 0)
        async with server:
            base = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
            page = f"""<!doctype html><div id=root></div>
            <img src="{base}/i.png"><link rel=prefetch href="{base}/next">
            <link rel=icon href="{base}/favicon.ico"><script src="{base}/app.js"></script>
            """.encode()
            app = f"""
            document.getElementById('root').textContent = navigator.userAgent;
            new WebSocket('ws://127.0.0.1:{base.rsplit(":", 1)[1]}/ws');
            navigator.sendBeacon('{base}/beacon', 'x');
            new EventSource('{base}/events');
            """
            site = FakeSite({f"{base}/app.js": app.encode()})
            result = await renderer.render(
                RenderJob(
                    url=f"{base}/",
                    site="127.0.0.1",
                    html=page,
                    content_type=HTML,
                    timeout_s=5.0,
                    max_subrequests=10,
                    max_subresource_bytes=100_000,
                ),
                site.fetch,
            )
            await asyncio.sleep(0.2)  # a late connection would have arrived by now
        return result, site

    result, site = runner.run(scenario())
    assert result.state is RenderState.DONE, result.message
    assert connections == []
    assert [kind for _, kind in site.log] == ["script"]
    assert f'<div id="root">{USER_AGENT}</div>' in result.html
    assert result.requests_blocked >= 4  # image, websocket, beacon, eventsource (+ prefetch)


def test_second_render_of_a_site_takes_its_script_from_the_cache(
    runner: asyncio.Runner, renderer: ChromiumRenderer
) -> None:
    site = FakeSite({"http://cached.test/app.js": APP_JS})
    first = runner.run(renderer.render(job("http://cached.test/a", SHELL), site.fetch))
    second = runner.run(renderer.render(job("http://cached.test/b", SHELL), site.fetch))
    assert (first.state, second.state) == (RenderState.DONE, RenderState.DONE)
    assert site.log == [("http://cached.test/app.js", "script")]  # once, for the first
    assert (first.requests_fetched, first.requests_cached) == (1, 0)
    assert (second.requests_fetched, second.requests_cached, second.fetched) == (0, 1, ())
    assert '<a href="/docs">' in second.html


def test_page_that_never_settles_is_taken_at_the_cap(
    runner: asyncio.Runner, renderer: ChromiumRenderer
) -> None:
    page = b"""<!doctype html><div id=root>live</div><script>
    let n = 0;
    setInterval(() => {
      n += 1;
      document.getElementById('root').textContent = 'tick ' + n;
      new Image().src = '/pixel.gif?' + n;
    }, 100);
    function connect() {
      const ws = new WebSocket('ws://live.test/socket');
      ws.onclose = () => setTimeout(connect, 150);
    }
    connect();
    </script>"""
    site = FakeSite({})
    started = time.monotonic()
    result = runner.run(renderer.render(job("http://live.test/", page, timeout_s=2.0), site.fetch))
    elapsed = time.monotonic() - started
    assert result.state is RenderState.TIMEOUT, result.message
    assert "tick " in result.html
    assert site.log == []
    assert 2.0 <= result.wall_s <= elapsed < 3.0


def test_subrequest_cap_cuts_the_render(runner: asyncio.Runner, renderer: ChromiumRenderer) -> None:
    scripts = {f"http://many.test/s{i}.js": b"window.n = (window.n || 0) + 1;" for i in range(5)}
    page = b"<div id=root></div>" + b"".join(
        f"<script src=/s{i}.js></script>".encode() for i in range(5)
    )
    site = FakeSite(scripts)
    result = runner.run(
        renderer.render(job("http://many.test/", page, max_subrequests=2), site.fetch)
    )
    assert result.state is RenderState.CUT
    assert result.message == "subrequests: the cap of 2 was reached"
    assert len(site.log) == result.requests_fetched == 2
    assert result.requests_blocked == 3


def test_byte_cap_cuts_the_render(runner: asyncio.Runner, renderer: ChromiumRenderer) -> None:
    big = b"/*" + b"x" * 10_000 + b"*/"
    scripts = {f"http://heavy.test/s{i}.js": big for i in range(3)}
    page = b"<div id=root></div>" + b"".join(
        f"<script src=/s{i}.js></script>".encode() for i in range(3)
    )
    site = FakeSite(scripts)
    result = runner.run(
        renderer.render(job("http://heavy.test/", page, max_subresource_bytes=15_000), site.fetch)
    )
    assert result.state is RenderState.CUT
    assert result.message.startswith("bytes: the cap of 15000 was")
    assert result.bytes_fetched <= 2 * len(big)
    assert len(site.log) <= 2


def test_a_script_trawl_refuses_cuts_the_render(
    runner: asyncio.Runner, renderer: ChromiumRenderer
) -> None:
    site = FakeSite({}, refuse=frozenset({"http://robots.test/app.js"}))
    result = runner.run(renderer.render(job("http://robots.test/", SHELL), site.fetch))
    assert result.state is RenderState.CUT
    assert result.message == "refused: trawl did not fetch the script http://robots.test/app.js"
    assert (result.requests_fetched, result.requests_blocked) == (0, 1)


def test_concurrent_renders_keep_their_pages_apart(
    runner: asyncio.Runner, renderer: ChromiumRenderer
) -> None:
    def page(n: int) -> tuple[RenderJob, FakeSite]:
        app = f"document.getElementById('root').innerHTML = '<a href=/only-{n}>{n}</a>';"
        site = FakeSite({f"http://par{n}.test/app.js": app.encode()})
        return job(f"http://par{n}.test/", SHELL), site

    pages = [page(n) for n in range(3)]

    async def all_at_once() -> list[str]:
        results = await asyncio.gather(*(renderer.render(j, s.fetch) for j, s in pages))
        assert [r.state for r in results] == [RenderState.DONE] * 3
        return [r.html for r in results]

    for n, html in enumerate(runner.run(all_at_once())):
        assert re.findall(r"/only-\d", html) == [f"/only-{n}"]


def test_an_error_in_trawls_fetch_is_raised_not_swallowed(
    runner: asyncio.Runner, renderer: ChromiumRenderer
) -> None:
    async def broken(url: str, resource_type: str) -> SubresourceAnswer | None:
        raise RuntimeError(f"bug while fetching {url}")

    with pytest.raises(RuntimeError, match=r"bug while fetching http://bug\.test/app\.js"):
        runner.run(renderer.render(job("http://bug.test/", SHELL), broken))


def test_the_browser_is_recycled_after_n_pages(runner: asyncio.Runner) -> None:
    recycled = ChromiumRenderer(
        user_agent=USER_AGENT, executable=chromium_or_fail(), recycle_after_pages=2
    )
    site = FakeSite({"http://cycle.test/app.js": APP_JS})
    try:
        launches = []
        for n in range(3):
            result = runner.run(recycled.render(job(f"http://cycle.test/{n}", SHELL), site.fetch))
            assert result.state is RenderState.DONE
            launches.append(recycled.stats().launches)
        assert launches == [1, 1, 2]
        stats = recycled.stats()
        assert (stats.renders, stats.done, stats.crashes) == (3, 3, 0)
    finally:
        runner.run(recycled.close())
    assert runner.run(recycled.browser_processes()) == ()


def test_a_crashed_browser_fails_its_render_and_is_relaunched(runner: asyncio.Runner) -> None:
    crashing = ChromiumRenderer(user_agent=USER_AGENT, executable=chromium_or_fail())
    site = FakeSite({"http://crash.test/app.js": APP_JS})

    async def kill_browser(url: str, resource_type: str) -> SubresourceAnswer | None:
        root = (await crashing.browser_processes())[0]
        os.kill(root, signal.SIGKILL)  # the browser this renderer launched, by its id
        await asyncio.sleep(0.2)
        return await site.fetch(url, resource_type)

    try:
        crashed = runner.run(crashing.render(job("http://crash.test/", SHELL), kill_browser))
        assert crashed.state is RenderState.FAILED
        assert crashed.message.startswith("the browser died during the render ("), crashed.message
        after = runner.run(crashing.render(job("http://crash.test/", SHELL), site.fetch))
        assert after.state is RenderState.DONE, after.message
        stats = crashing.stats()
        assert (stats.launches, stats.crashes, stats.failed, stats.done) == (2, 1, 1, 1)
    finally:
        runner.run(crashing.close())


def test_a_missing_chromium_is_named() -> None:
    with pytest.raises(ConfigError, match=r"Chromium '/nowhere/chromium' is not an executable"):
        ChromiumRenderer(user_agent=USER_AGENT, executable="/nowhere/chromium")
