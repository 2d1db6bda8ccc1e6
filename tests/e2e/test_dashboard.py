"""The live dashboard of `trawl serve`, in a real headless Chromium (Debian's `chromium` and
`chromium-driver`, which .ci/run installs), on a real crawl of the local test web, whose
script cases give trawl pages to render (the Rendering panel, issue 18).

The browser runs with the network otherwise gone: every name but 127.0.0.1 fails to resolve
and every non-loopback request goes to a dead proxy. So a dashboard that drew anything
needed nothing but trawl, and the browser's own network log must show only loopback URLs.
A screenshot goes to $TRAWL_ARTIFACTS (default: artifacts/ in the repository).
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import subprocess
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.wait import WebDriverWait
from tests.e2e.serve_support import Served, free_port, get_json, http_get, run_serve

from trawl.testweb.process import TestWebProcess

if TYPE_CHECKING:
    from collections.abc import Iterator

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
REPO = Path(__file__).resolve().parents[2]
CHARTS = ("chart-rate", "chart-status", "chart-frontier", "chart-turns")
WAIT_S = 40
# Swagger UI's vendored files hold URLs in their code (JSON Schema and OpenAPI ids, links,
# the validator /docs tells it not to use): test_issue_14_docs_work_offline checks instead
# that loading /docs asks for nothing outside.
SWAGGER_UI_FILES = {"swagger-ui-bundle.js", "swagger-ui.css"}

# What the page shows once it has data: read in one script, so the test waits on one value.
PAGE_STATE_JS = """
const charts = {};
for (const id of arguments[0]) {
  const el = document.getElementById(id);
  charts[id] = {points: Number(el.dataset.points), max: Number(el.dataset.max),
                canvases: el.querySelectorAll("canvas").length};
}
const rows = (id) => document.querySelectorAll(`#${id} tbody tr:not(.empty)`).length;
return {ready: document.body.dataset.ready === "1", charts,
        busy: rows("busy"), troubled: rows("troubled"), skipped: rows("skipped"),
        skipReasons: document.querySelectorAll("#skip-counts li").length,
        scope: document.getElementById("scope-line").textContent,
        fetched: document.getElementById("t-fetched").textContent,
        live: document.getElementById("live").className};
"""

# The Rendering panel (issue 18) as a reader sees it: the text shown, and which parts show.
RENDER_PANEL_JS = """
const text = (id) => document.getElementById(id).textContent;
const visible = (id) => document.getElementById(id).getClientRects().length > 0;
const bars = (id) => [...document.querySelectorAll(`#${id} li`)].map(
  (li) => [li.querySelector(".code").textContent, li.querySelector(".n").textContent]);
return {none: visible("render-none") ? text("render-none") : null,
        groups: visible("render-groups"), waiting: text("render-waiting"),
        candidates: text("r-candidates"), sent: text("r-sent"), ended: text("r-ended"),
        requests: text("r-requests"), candidateBars: bars("render-candidates"),
        decisionBars: bars("render-decisions"), endBars: bars("render-ends"),
        requestBars: bars("render-requests")};
"""
DRAW_RENDERING_JS = "drawRendering(arguments[0]);" + RENDER_PANEL_JS
# /v1/stats as the page gets it, drawn and read back in one go (no poll in between).
LIVE_RENDERING_JS = (
    "const done = arguments[arguments.length - 1];"
    "const read = () => {" + RENDER_PANEL_JS + "};"
    'const before = read(); getJSON("v1/stats").then((stats) => {'
    "drawRendering(stats); done({before, stats, after: read()}); });"
)
RENDER_BARS = (  # the panel's bar lists, and the /v1/stats counts each shows
    ("candidateBars", "renderCandidates"),
    ("decisionBars", "renderDecisions"),
    ("endBars", "renders"),
    ("requestBars", "renderRequests"),
)
NO_RENDERING = {"renderCandidates": {}, "renderDecisions": {}, "renders": {}, "renderRequests": {}}


@dataclass
class LoadedDashboard:
    served: Served
    page: dict[str, Any]  # PAGE_STATE_JS's answer once the charts had data
    request_urls: list[str]  # every URL the browser asked for, from its network log
    console_errors: list[str]
    screenshot: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("dashboard")
    with (
        # The script cases: pages built by JavaScript, so the Rendering panel has renders.
        TestWebProcess(sites=12, pages=8, seed=7, workdir=tmp / "web", script_cases=True) as web,
        # An exclude the test web's pages link to: the Skipped panel has rows to show.
        run_serve(web, tmp, extra=("--exclude", "/private/")) as served,
    ):
        yield served


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.skip("Debian's chromium and chromium-driver are not installed (.ci/run does it)")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    dead_proxy = f"127.0.0.1:{free_port()}"  # nothing listens there: no way out
    for arg in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--window-size=1440,1000", "--hide-scrollbars", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-default-apps", "--disable-extensions",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        f"--proxy-server=http://{dead_proxy}",  # loopback bypasses proxies by default
    ):  # fmt: skip
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    # An explicit driver path: Selenium Manager (which downloads drivers) never runs.
    service = Service(executable_path=str(CHROMEDRIVER), log_output=subprocess.DEVNULL)
    driver = webdriver.Chrome(options=options, service=service)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def loaded(served: Served, browser: webdriver.Chrome) -> LoadedDashboard:
    browser.get(served.base + "/")
    page: dict[str, Any] = {}

    def has_data(driver: webdriver.Chrome) -> bool:
        page.update(driver.execute_script(PAGE_STATE_JS, CHARTS))
        charts = page["charts"]
        return bool(
            page["ready"]
            and all(charts[c]["max"] > 0 and charts[c]["points"] >= 2 for c in CHARTS[:3])
            and page["busy"]
            and page["troubled"]
            and page["skipped"]
        )

    WebDriverWait(browser, WAIT_S, poll_frequency=0.5).until(
        has_data, f"the dashboard showed no data in {WAIT_S} s: {page}"
    )
    # A few more polls, so the screenshot shows lines rather than their first two points.
    WebDriverWait(browser, WAIT_S, poll_frequency=0.5).until(
        lambda d: d.execute_script(PAGE_STATE_JS, CHARTS)["charts"][CHARTS[0]]["points"] >= 6
    )
    screenshot = save_screenshot(browser)
    urls = [
        message["params"]["request"]["url"]
        for entry in browser.get_log("performance")
        if (message := json.loads(entry["message"])["message"])["method"]
        == "Network.requestWillBeSent"
    ]
    errors = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    return LoadedDashboard(served, page, urls, errors, screenshot)


def save_screenshot(driver: webdriver.Chrome) -> Path:
    """The whole page as a PNG in $TRAWL_ARTIFACTS (default: artifacts/ in the repository)."""
    height = int(driver.execute_script("return document.documentElement.scrollHeight"))
    metrics = {"width": 1440, "height": height, "deviceScaleFactor": 1, "mobile": False}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    # Let the charts follow the resize (a ResizeObserver) and the next poll land.
    driver.execute_script("return new Promise((done) => setTimeout(done, 600))")
    directory = Path(os.environ.get("TRAWL_ARTIFACTS") or REPO / "artifacts")
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "dashboard.png"
    assert driver.save_screenshot(str(path)), f"no screenshot written to {path}"
    return path


def test_charts_show_the_crawl(loaded: LoadedDashboard) -> None:
    charts = loaded.page["charts"]
    for chart in CHARTS:
        assert charts[chart]["canvases"] >= 1, chart  # uPlot drew it
    assert charts["chart-rate"]["max"] > 0  # pages/s
    assert charts["chart-status"]["max"] > 0  # pages per interval by status class
    assert charts["chart-frontier"]["max"] > 0  # URLs queued
    assert charts["chart-turns"]["max"] > 0  # site turns (discovery, at the start)
    assert loaded.page["live"] == "live ok"
    assert int(loaded.page["fetched"].replace(",", "")) > 0
    assert loaded.screenshot.stat().st_size > 10_000
    assert loaded.console_errors == []


def test_site_tables_have_rows(loaded: LoadedDashboard) -> None:
    assert loaded.page["busy"] >= 1
    # The test web's robots-503 site: its robots.txt failure backs the site off.
    assert loaded.page["troubled"] >= 1


def test_issue_16_skipped_panel_and_scope(loaded: LoadedDashboard) -> None:
    assert loaded.page["skipped"] >= 1
    assert loaded.page["skipReasons"] >= 1
    assert loaded.page["scope"].startswith("scope any x")
    assert loaded.page["scope"].endswith(", 1 exclude")


@pytest.fixture
def dashboard(loaded: LoadedDashboard, browser: webdriver.Chrome) -> webdriver.Chrome:
    """The browser on the dashboard again (another test may have gone to /docs)."""
    if urllib.parse.urlsplit(browser.current_url).path != "/":
        browser.get(loaded.served.base + "/")
        WebDriverWait(browser, WAIT_S, poll_frequency=0.5).until(
            lambda d: d.execute_script("return document.body.dataset.ready === '1'")
        )
    return browser


def test_issue_18_rendering_panel_shows_the_counters(dashboard: webdriver.Chrome) -> None:
    # "unreadable" and "not-ours" are keys the page does not know: shown after the known ones.
    stats = {
        "renderCandidates": {"empty-mount": 7, "noscript-notice": 2, "script-only-body": 1234},
        "renderDecisions": {"site_share": 1230, "detected": 9, "forced_off": 3, "forced": 1},
        "renders": {"done": 6, "timeout": 2, "cut": 1, "failed": 1, "failed-retry": 4,
                    "unreadable": 1},
        "renderRequests": {"fetched": 1500, "robots": 3, "site-busy": 5, "failed": 2,
                           "not-ours": 1},
        "rendersWaiting": 3,
    }  # fmt: skip
    panel = dashboard.execute_script(DRAW_RENDERING_JS, stats)
    assert panel["none"] is None
    assert panel["groups"]
    assert panel["waiting"] == " · 3 waiting"
    assert panel["candidates"] == "1,243"
    assert panel["sent"] == "10"  # detected and forced: the decisions that render
    assert panel["ended"] == "11"  # a failed-retry went back to the queue: not an end
    assert panel["requests"] == "1,500 made · 9 refused · 2 failed"
    assert panel["candidateBars"] == [
        ["empty-mount", "7"], ["noscript-notice", "2"], ["script-only-body", "1,234"],
    ]  # fmt: skip
    assert panel["decisionBars"] == [
        ["detected", "9"], ["forced", "1"], ["site_share", "1,230"], ["forced_off", "3"],
    ]  # fmt: skip
    assert panel["endBars"] == [
        ["done", "6"], ["timeout", "2"], ["cut", "1"], ["failed", "1"], ["failed-retry", "4"],
        ["unreadable", "1"],
    ]  # fmt: skip
    assert panel["requestBars"] == [
        ["fetched", "1,500"], ["robots", "3"], ["site-busy", "5"], ["failed", "2"],
        ["not-ours", "1"],
    ]  # fmt: skip
    # Known keys not counted yet show as zeros, as /metrics shows them.
    panel = dashboard.execute_script(DRAW_RENDERING_JS, {**NO_RENDERING, "renders": {"cut": 2}})
    assert panel["none"] is None
    assert panel["waiting"] == ""  # /v1/stats without rendersWaiting: nothing said
    assert panel["ended"] == "2"
    assert panel["endBars"] == [["done", "0"], ["timeout", "0"], ["cut", "2"], ["failed", "0"]]
    assert panel["candidates"] == "0"
    assert panel["requests"] == "0 made · 0 refused · 0 failed"


def test_issue_18_rendering_panel_says_when_no_page_needed_a_browser(
    dashboard: webdriver.Chrome,
) -> None:
    dashboard.execute_script(DRAW_RENDERING_JS, {**NO_RENDERING, "renders": {"done": 1}})
    zeros = {
        "renderCandidates": {"empty-mount": 0}, "renderDecisions": {}, "renders": {"done": 0},
        "renderRequests": {"fetched": 0}, "rendersWaiting": 0,
    }  # fmt: skip
    for stats in (zeros, NO_RENDERING, {}):
        panel = dashboard.execute_script(DRAW_RENDERING_JS, stats)
        assert panel["none"] == "no page needed a browser", stats
        assert not panel["groups"], stats
    # Pages still queued from an earlier run: rendering is under way, not unneeded.
    panel = dashboard.execute_script(DRAW_RENDERING_JS, {**NO_RENDERING, "rendersWaiting": 2})
    assert panel["none"] is None
    assert panel["waiting"] == " · 2 waiting"


def test_issue_18_rendering_panel_follows_the_crawl(
    loaded: LoadedDashboard, browser: webdriver.Chrome
) -> None:
    """The page's own polls draw the panel, and it shows what /v1/stats says."""
    WebDriverWait(browser, WAIT_S, poll_frequency=0.5).until(
        lambda _: get_json(loaded.served.base, "/v1/stats")["renders"].get("done", 0) > 0,
        f"the script cases had no render done in {WAIT_S} s",
    )
    browser.get(loaded.served.base + "/")  # drop what the other tests drew
    WebDriverWait(browser, WAIT_S, poll_frequency=0.5).until(
        lambda d: d.execute_script("return document.body.dataset.ready === '1'")
    )
    answer = browser.execute_async_script(LIVE_RENDERING_JS)
    before, stats, panel = answer["before"], answer["stats"], answer["after"]
    assert before["groups"]  # the first poll drew it: renders were done by then
    assert before["none"] is None
    assert int(before["ended"].replace(",", "")) > 0
    requests = stats["renderRequests"]
    made, failed = requests.get("fetched", 0), requests.get("failed", 0)
    refused = sum(requests.values()) - made - failed
    assert panel["groups"]
    assert panel["candidates"] == f"{sum(stats['renderCandidates'].values()):,}"
    sent = sum(n for why, n in stats["renderDecisions"].items() if why in {"detected", "forced"})
    assert panel["sent"] == f"{sent:,}"
    ended = sum(n for how, n in stats["renders"].items() if how != "failed-retry")
    assert panel["ended"] == f"{ended:,}"
    assert panel["requests"] == f"{made:,} made · {refused:,} refused · {failed:,} failed"
    for bars, key in RENDER_BARS:
        shown = {k: int(n.replace(",", "")) for k, n in panel[bars]}
        assert {k: n for k, n in shown.items() if n} == {
            k: n for k, n in stats[key].items() if n
        }, bars


def test_the_page_asks_nothing_of_any_host_but_trawl(loaded: LoadedDashboard) -> None:
    assert loaded.request_urls, "the browser's network log is empty"
    outside = [u for u in loaded.request_urls if not is_loopback(u)]
    assert outside == []
    asked = {urllib.parse.urlsplit(u).path for u in loaded.request_urls}
    assert {"/", "/static/uPlot.iife.min.js", "/static/dashboard.js", "/v1/stats/history",
            "/v1/skipped"} <= asked  # fmt: skip


def is_loopback(url: str) -> bool:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "data":
        return True
    try:
        return ipaddress.ip_address(parts.hostname or "").is_loopback
    except ValueError:
        return False


def test_static_files_name_no_outside_url() -> None:
    """Beyond what one page load asks for: no file the page may use names another host."""
    static = REPO / "src" / "trawl" / "api" / "static"
    assets = [
        p
        for p in static.iterdir()
        if p.suffix in {".html", ".js", ".css"} and p.name not in SWAGGER_UI_FILES
    ]
    assert len(assets) >= 5
    for path in assets:
        text = path.read_text(encoding="utf-8")
        text = re.sub(r"^/\*!.*?\*/", "", text, flags=re.DOTALL)  # a vendored file's banner
        assert re.findall(r"(?:[a-z]+:)?//[\w.-]+\.[a-z]{2,}", text, flags=re.IGNORECASE) == []


def test_history_and_sites_json(served: Served) -> None:
    rows = get_json(served.base, "/v1/stats/history")["rows"]
    assert len(rows) >= 2
    assert [r["at"] for r in rows] == sorted(r["at"] for r in rows)
    assert sum(r["pagesPerSecond"] * r["intervalS"] for r in rows) > 0
    newer = get_json(served.base, f"/v1/stats/history?since={rows[-2]['at']}")["rows"]
    assert newer[0]["at"] == rows[-1]["at"]
    busy = get_json(served.base, "/v1/sites?sort=busy&limit=3")
    assert 1 <= len(busy) <= 3
    assert busy == sorted(busy, key=lambda s: (s["pagesToday"], s["queueLength"]), reverse=True)
    assert isinstance(get_json(served.base, "/v1/errors?limit=5"), list)
    for bad in ("/v1/sites?sort=loud", "/v1/sites?limit=0", "/v1/sites?limit=x",
                "/v1/stats/history?since=nan", "/v1/stats/history?since=-1",
                "/v1/errors?limit=1001"):  # fmt: skip
        assert http_get(served.base, bad)[0] == 422, bad
    assert http_get(served.base, "/static/..%2Fdashboard.py")[0] == 404
    assert http_get(served.base, "/static/missing.js")[0] == 404


def test_issue_14_docs_work_offline(served: Served, browser: webdriver.Chrome) -> None:
    """/docs loaded Swagger UI from a CDN, so it was blank on a machine with no way out."""
    status, body, _ = http_get(served.base, "/docs")
    assert status == 200
    html = body.decode()
    assert "//" not in html  # no URL with a host: not http://, https:// nor //cdn...
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert len(assets) == 3  # script, stylesheet, icon
    for asset in assets:
        assert http_get(served.base, "/" + asset)[0] == 200, asset
    browser.get_log("performance")  # drop the dashboard's requests
    browser.get(served.base + "/docs")
    title_js = (
        "const t = document.querySelector('.swagger-ui .info .title'); return t && t.textContent"
    )
    WebDriverWait(browser, WAIT_S, poll_frequency=0.5).until(
        lambda d: "trawl" in (d.execute_script(title_js) or ""), "Swagger UI drew no title"
    )
    assert browser.execute_script("return document.querySelectorAll('.opblock').length") >= 5
    urls = [
        message["params"]["request"]["url"]
        for entry in browser.get_log("performance")
        if (message := json.loads(entry["message"])["message"])["method"]
        == "Network.requestWillBeSent"
    ]
    assert [u for u in urls if not is_loopback(u)] == []
    assert {"/docs", "/static/swagger-ui-bundle.js", "/openapi.json"} <= {
        urllib.parse.urlsplit(u).path for u in urls
    }
