"""Pages built by JavaScript, crawled with the real Chromium (issue 18).

The test web's script cases (`build_web(script_cases=True)`): an app whose pages are
shells, server-rendered framework pages and a login page (not to be rendered), a page
loading another site's script and images, one that never settles. The test web's request
log is the witness for what was requested, by the crawl or by the browser.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from collections import Counter
from typing import TYPE_CHECKING

from tests.e2e.crash_support import reap_group, trawl_output
from tests.e2e.serve_support import get_json, http_get, run_serve
from tests.e2e.support import crawl_command, crawl_in_process, web_settings
from warcio.archiveiterator import ArchiveIterator

from trawl.model import PAGE_RENDERED
from trawl.render.process_tree import find_process
from trawl.store.layout import DB_NAME, WARC_DIR
from trawl.store.records_sqlite import SqliteRecords
from trawl.store.sqlite_db import open_database
from trawl.store.warc import read_record
from trawl.testweb.politeness import check_politeness
from trawl.testweb.process import TestWebProcess

if TYPE_CHECKING:
    from pathlib import Path

    from trawl.model import PageRecord
    from trawl.testweb.script_cases import ScriptCases

# Every page of the app is a shell, and so are site 2's /apps/ pages: the per-site share
# (tested in tests/unit/test_render_policy.py) would leave some unrendered, so the operator
# forces them on, as an operator who knows the sites would.
FORCE_ON = ("script-app.test", r"^http://site0002\.test:\d+/apps/")
# The browser's CPU budget (tested in tests/unit/test_cpu_budget.py) is opened up: these
# tests are about politeness and what is stored, and at the default they take twice as long.
CPU_SHARE = 2.0
RENDER = {"force_on": FORCE_ON, "cpu_share": CPU_SHARE}
MARKER = "--trawl-render"  # render.browser's switch on the browser it launches


def _web(tmp_path: Path) -> TestWebProcess:
    return TestWebProcess(sites=4, pages=5, script_cases=True, workdir=tmp_path / "web")


def _by_url(pages: list[PageRecord]) -> dict[str, PageRecord]:
    return {page.url: page for page in pages}


def _warc_records(data: Path) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """Response and revisit records by id (their target URI; an app's pages are one shell,
    stored once and revisited), and each conversion's (target, refers-to); every digest
    checked by warcio."""
    responses: dict[str, str] = {}
    conversions: list[tuple[str, str]] = []
    for path in sorted((data / WARC_DIR).glob("*.warc.gz")):
        with path.open("rb") as fh:
            for record in ArchiveIterator(fh, check_digests="raise"):
                head = record.rec_headers
                target = head.get_header("WARC-Target-URI")
                if record.rec_type in ("response", "revisit"):
                    responses[head.get_header("WARC-Record-ID")] = target
                elif record.rec_type == "conversion":
                    conversions.append((target, head.get_header("WARC-Refers-To")))
                record.content_stream().read()
    return responses, conversions


def _check_rendered(cases: ScriptCases, port: int, pages: dict[str, PageRecord]) -> None:
    for key in (*cases.render_urls, *cases.render_only_urls):
        render = pages[cases.url(key, port)].render
        assert render.get("state") in ("done", "timeout"), (key, render)
    for key in cases.never_settles_urls:
        assert pages[cases.url(key, port)].render["state"] == "timeout"
    for key in cases.no_render_urls:
        assert pages[cases.url(key, port)].render == {}, key


def test_script_built_pages_are_rendered_politely_and_archived(tmp_path: Path) -> None:
    with _web(tmp_path) as web:
        cases, port = web.web.script_cases(), web.port
        data = tmp_path / "data"
        summary, records = crawl_in_process(web_settings(web, 240, render=RENDER), data, web.seeds)
        log = web.requests()
    pages = _by_url(records)
    fetched = Counter((r.host, r.path) for r in log if r.path != "/robots.txt")
    # The links only rendering finds were crawled: the whole expectation with them.
    missing = web.web.expected_fetches_with_rendering(port) - set(fetched)
    assert not missing, sorted(missing)
    assert not [r for r in log if r.site == cases.foreign_site], "the other site was asked"
    twice = [k for k in (*cases.render_urls, *cases.render_only_urls) if fetched[k] != 1]
    assert not twice, f"main documents not requested exactly once: {twice}"
    assert check_politeness(log, **web.web.politeness_inputs()) == []
    _check_rendered(cases, port, pages)
    responses, conversions = _warc_records(data)
    assert conversions, "no conversion record"
    for target, refers_to in conversions:
        assert responses.get(refers_to) == target, (target, refers_to)
    # A DOM identical to one stored before is named (duplicateOf), not stored again.
    rendered = {p.render["storageKey"] for p in records if p.render.get("storageKey")}
    assert len(conversions) == len(rendered)
    _check_rendered_hand_off(data, pages, [cases.url(k, port) for k in cases.render_only_urls])
    st = summary.stats
    assert st.renders.get("done", 0) >= len(cases.render_only_urls)
    assert st.render_requests.get("fetched", 0) > 0
    assert find_process(MARKER) is None, "a browser outlived its crawl"


def _check_rendered_hand_off(data: Path, pages: dict[str, PageRecord], urls: list[str]) -> None:
    """Each stored render went out as a page.rendered event naming its copy, and the copy
    reads back (`trawl page --body --rendered`) as a DOM with more text than the shell."""
    records = SqliteRecords(open_database(data / DB_NAME, readonly=True))
    events = [e for e in records.read_events(0, 10_000) if e.kind == PAGE_RENDERED]
    announced = {e.url: e.storage_key for e in events}
    for page in pages.values():
        if page.render.get("storageKey") and not page.render.get("duplicateOf"):
            assert announced.get(page.url) == page.render["storageKey"], page.url
    for url in urls:
        plain = read_record(data / WARC_DIR, pages[url].storage_key).payload
        rendered = trawl_output(["page", url, "--data", str(data), "--body", "--rendered"])
        assert rendered == read_record(data / WARC_DIR, pages[url].rendered_key).payload
        assert b"<h1>" in rendered, url
        assert b"<h1>" not in plain, url


def test_a_kill_9_while_rendering_loses_no_queued_render(tmp_path: Path) -> None:
    config = tmp_path / "render.toml"
    literals = ", ".join(f"'{pattern}'" for pattern in FORCE_ON)  # TOML keeps \ in '...'
    config.write_text(f"[render]\nforce_on = [{literals}]\ncpu_share = {CPU_SHARE}\n")
    with _web(tmp_path) as web:
        cases, port = web.web.script_cases(), web.port
        data = tmp_path / "data"
        command = [*crawl_command(web, data), "--config", str(config)]
        with (tmp_path / "run.err").open("wb") as err:
            proc = subprocess.Popen(command, stdout=err, stderr=err, start_new_session=True)
            try:
                queued = _wait_for_a_leased_render(data / DB_NAME, proc)
            finally:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
                reap_group(proc.pid)
        assert queued, (tmp_path / "run.err").read_text()[-2000:]
        assert find_process(MARKER) is None, "the browser outlived its killed crawl"
        settings = web_settings(web, 240, render=RENDER)
        _, records = crawl_in_process(settings, data, web.seeds)
        log = web.requests()
    pages = _by_url(records)
    for url in queued:
        assert pages[url].render.get("state") in ("done", "timeout"), url
    _check_rendered(cases, port, pages)
    assert check_politeness(log, **web.web.politeness_inputs()) == []


def _wait_for_a_leased_render(db: Path, proc: subprocess.Popen[bytes]) -> list[str]:
    """The render queue's committed URLs once one of them is leased (a render in flight)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
        if not db.exists():
            continue
        try:
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            try:
                rows = conn.execute("SELECT url, leased_until FROM render_queue").fetchall()
            finally:
                conn.close()
        except sqlite3.OperationalError:
            continue  # the table is not there yet
        if any(leased > 0 for _, leased in rows):
            return [url for url, _ in rows]
    return []


def test_without_chromium_the_crawl_goes_on_plainly_with_one_notice(tmp_path: Path) -> None:
    with TestWebProcess(sites=3, pages=3, script_cases=True, workdir=tmp_path / "web") as web:
        command = crawl_command(web, tmp_path / "data", max_time_s=60)
        env = {**os.environ, "PATH": "/nonexistent"}  # no chromium on it
        done = subprocess.run(command, capture_output=True, env=env, timeout=120, check=False)
        log = web.requests()
    err, out = done.stderr.decode(), done.stdout.decode()
    assert done.returncode == 0, err
    assert err.count("no Chromium found") == 1, err
    assert "pages built by JavaScript are not rendered" in err
    assert "pages that look built by JavaScript {'empty-mount': " in out, out
    assert not [r for r in log if r.path.endswith(".js")], "a script was fetched without a browser"


def test_the_api_hands_off_rendered_copies(tmp_path: Path) -> None:
    """`trawl serve`: page.rendered over /v1/events, and the body endpoint's rendered copy."""
    config = tmp_path / "render.toml"
    config.write_text("[render]\nforce_on = ['script-app.test']\n")
    with (
        _web(tmp_path) as web,
        run_serve(web, tmp_path, extra=("--config", str(config)), min_stored=5) as served,
    ):
        base = served.base
        deadline = time.monotonic() + 90
        while True:  # the event is readable once the crawl's next commit made it durable
            events = get_json(base, "/v1/events?from=0&limit=1000")["events"]
            rendered = [e for e in events if e["type"] == "page.rendered"]
            if rendered:
                break
            assert time.monotonic() < deadline, get_json(base, "/v1/stats")["renders"]
            time.sleep(0.5)
        event = rendered[0]
        assert event["renderState"] in ("done", "timeout")
        assert event["renderedAt"] > 0
        record = get_json(base, f"/v1/pages/{event['urlHash']}")
        assert record["render"]["storageKey"] == event["storageKey"]
        body = f"/v1/pages/{event['urlHash']}/body"
        status, dom, media = http_get(base, body + "?copy=rendered")
        assert status == 200, (status, dom[:200])
        assert media.startswith("text/html")
        status, plain, _ = http_get(base, body)
        assert status == 200
        assert b"<h1>" in dom
        assert b"<h1>" not in plain
        never = next(
            e for e in events if e["type"] == "page.fetched" and "script-app" not in e["url"]
        )
        status, answer, _ = http_get(base, f"/v1/pages/{never['urlHash']}/body?copy=rendered")
        assert status == 404
        assert b"no rendered copy stored" in answer, answer
        status, _, _ = http_get(base, body + "?copy=pretty")
        assert status == 422
