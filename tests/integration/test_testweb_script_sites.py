"""The test web's script-built sites (issue 18) over real loopback sockets.

Each case URL is served with its content type; the app's bundle and JSON, the shells of
the pages only rendering reaches, the other site's script and images, robots.txt that
lets trawl fetch all of it; a WebSocket handshake is refused; the request log names every
request, the other site's included.
"""

from __future__ import annotations

import gzip
import json
import time
from typing import TYPE_CHECKING

import pytest
from tests.integration.testweb_client import fetch

from trawl.politeness.robots_txt import RobotsTxt
from trawl.testweb.process import TestWebProcess
from trawl.testweb.script_pages import APP_SHELL

if TYPE_CHECKING:
    from collections.abc import Iterator

    from trawl.testweb.script_cases import ScriptCases

Key = tuple[str, str]
IDENTITY = {"Accept-Encoding": "identity"}


@pytest.fixture(scope="module")
def proc() -> Iterator[TestWebProcess]:
    with TestWebProcess(sites=12, pages=8, seed=7, script_cases=True) as running:
        yield running


@pytest.fixture(scope="module")
def cases(proc: TestWebProcess) -> ScriptCases:
    return proc.web.script_cases()


def get(
    proc: TestWebProcess, key: Key, headers: dict[str, str] | None = None
) -> tuple[int, str, bytes]:
    status, head, body = fetch(proc, *key, {**IDENTITY, **(headers or {})})
    return status, head.get("Content-Type", ""), body


def test_the_ready_line_and_hosts_file_name_the_case_sites(
    proc: TestWebProcess, cases: ScriptCases
) -> None:
    hosts = proc.hosts_file.read_text().split()
    assert cases.app_site in hosts
    assert cases.foreign_site in hosts


def test_case_pages_are_html(proc: TestWebProcess, cases: ScriptCases) -> None:
    for key in (*cases.render_urls, *cases.no_render_urls, *cases.never_settles_urls):
        status, content_type, body = get(proc, key)
        assert status == 200, key
        assert content_type == "text/html; charset=utf-8", key
        assert body.lstrip().lower().startswith(b"<!doctype html>"), key


def test_app_pages_and_render_only_pages_serve_the_shell(
    proc: TestWebProcess, cases: ScriptCases
) -> None:
    for key in cases.app_pages:
        status, _, body = get(proc, key)
        assert status == 200, key
        assert body == APP_SHELL.encode(), key
    for key in cases.render_only_urls:
        status, _, body = get(proc, key)
        assert status == 200, key
        assert b'<div id="root"></div>' in body or b'<div id="app"></div>' in body, key


def test_the_bundle_and_scripts_are_javascript(proc: TestWebProcess, cases: ScriptCases) -> None:
    for key in cases.scripts:
        status, content_type, body = get(proc, key)
        assert status == 200, key
        assert content_type == "text/javascript; charset=utf-8", key
        assert b"__TESTWEB_PORT__" not in body
    status, head, body = fetch(proc, *cases.app_bundle, {"Accept-Encoding": "gzip"})
    assert status == 200
    assert head["Content-Encoding"] == "gzip"  # bundles usually come compressed
    assert b"var ROUTES = " in gzip.decompress(body)


def test_the_app_json_is_served(proc: TestWebProcess, cases: ScriptCases) -> None:
    for key in (*cases.api_urls, cases.poll_url):
        status, content_type, body = get(proc, key, {"Accept": "application/json"})
        assert status == 200, key
        assert content_type == "application/json", key
        json.loads(body)
    status, _, body = get(proc, (cases.poll_url[0], cases.poll_url[1] + "?n=41"))
    assert status == 200  # the endless poll's query changes nothing
    assert json.loads(body)["status"] == "waiting"


def test_the_foreign_sites_script_and_images_exist(
    proc: TestWebProcess, cases: ScriptCases
) -> None:
    types = {".js": "text/javascript; charset=utf-8", ".png": "image/png", ".gif": "image/gif"}
    for key in cases.foreign_urls:
        assert key[0] == cases.foreign_site
        status, content_type, body = get(proc, key)
        assert status == 200, key
        assert content_type == types[key[1][key[1].rindex(".") :]], key
        if key[1].endswith(".png"):
            assert body.startswith(b"\x89PNG\r\n\x1a\n")
    _, _, page = get(proc, cases.foreign_page)
    assert f"http://{cases.foreign_site}:{proc.port}/js/analytics.js".encode() in page


def test_robots_allows_every_case_url(proc: TestWebProcess, cases: ScriptCases) -> None:
    keys = (
        *cases.render_urls, *cases.render_only_urls, *cases.no_render_urls,
        *cases.scripts, *cases.api_urls, *cases.foreign_urls, cases.poll_url,
    )  # fmt: skip
    rules: dict[str, RobotsTxt] = {}
    for host in {host for host, _ in keys}:
        status, _, body = get(proc, (host, "/robots.txt"))
        assert status in (200, 404), host  # 404: no robots.txt, everything allowed
        rules[host] = RobotsTxt.parse(body.decode() if status == 200 else "")
    for host, path in keys:
        assert rules[host].is_allowed(f"http://{host}:{proc.port}{path}", "trawl"), (host, path)


def test_the_first_seed_links_every_case_a_plain_crawl_fetches(
    proc: TestWebProcess, cases: ScriptCases
) -> None:
    status, _, home = get(proc, cases.linked_from[0])
    assert status == 200
    for host, path in (*cases.render_urls, *cases.no_render_urls):
        assert f'href="http://{host}:{proc.port}{path}"'.encode() in home, (host, path)
    for host, path in cases.render_only_urls:
        assert f'http://{host}:{proc.port}{path}"'.encode() not in home


def test_a_websocket_handshake_is_refused(proc: TestWebProcess, cases: ScriptCases) -> None:
    upgrade = {
        "Connection": "Upgrade",
        "Upgrade": "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    }
    status, _, _ = get(proc, cases.websocket_url, upgrade)
    assert status == 404
    assert get(proc, cases.never_settles_urls[0])[0] == 200  # the server goes on serving


def test_the_request_log_names_the_case_sites(proc: TestWebProcess, cases: ScriptCases) -> None:
    since = time.time()
    get(proc, cases.foreign_urls[1])
    get(proc, cases.app_bundle)
    deadline = time.monotonic() + 2.0
    wanted = {(cases.foreign_site, cases.foreign_urls[1][1]), (cases.app_site, cases.app_bundle[1])}
    while True:
        seen = {(r.site, r.path) for r in proc.requests() if r.t_start >= since}
        if wanted <= seen or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    assert wanted <= seen
