"""`trawl serve` as a real process crawling the local test web: the API's read side.

Issue 6 is under way; this covers what is built so far: page records by urlHash and by URL,
stored bodies, host state by hostname or registered domain, events from an offset (and
long-polling), stats, the OpenAPI schema, a busy --listen address, and SIGTERM.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.e2e.serve_support import TOKEN, Served, get_json, http_get, run_serve, send_json
from tests.e2e.support import CONTACT

from trawl.api.crawl_view import PUBLISH_INTERVAL_S
from trawl.frontier.traps import TrapReason
from trawl.testweb.politeness import check_politeness
from trawl.testweb.process import TestWebProcess
from trawl.urls.normalise import normalise_url, url_hash

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("serve")
    with (
        TestWebProcess(sites=12, pages=8, seed=7, workdir=tmp / "web") as web,
        run_serve(web, tmp) as served,
    ):
        yield served


def test_page_records_by_hash_and_by_url(served: Served) -> None:
    seed = served.web.seeds[0]
    by_url = get_json(served.base, "/v1/pages?url=" + urllib.request.quote(seed, safe=""))
    assert by_url["urlHash"] == url_hash(normalise_url(seed))
    assert by_url["httpStatus"] == 200
    by_hash = get_json(served.base, f"/v1/pages/{by_url['urlHash']}")
    assert by_hash["url"] == by_url["url"]
    for field in ("lastFetchedAt", "contentHash", "simhash", "etag", "lastModified",
                  "changeRate", "nextFetchAt", "storageKey"):  # fmt: skip
        assert field in by_hash
    status, body, content_type = http_get(served.base, f"/v1/pages/{by_url['urlHash']}/body")
    assert status == 200
    assert content_type.startswith("text/html")
    assert b"<html" in body.lower()


def test_unknown_and_malformed_lookups_are_clear_errors(served: Served) -> None:
    assert http_get(served.base, "/v1/pages/" + "0" * 32)[0] == 404
    assert http_get(served.base, "/v1/pages/" + "0" * 32 + "/body")[0] == 404
    assert http_get(served.base, "/v1/pages?url=mailto%3Ax%40y.z")[0] == 422
    assert http_get(served.base, "/v1/pages")[0] == 422  # url is required
    assert http_get(served.base, "/v1/events?from=-1")[0] == 422
    assert http_get(served.base, "/v1/hosts/never-crawled.example")[0] == 404


def test_host_state_by_hostname_or_registered_domain(served: Served) -> None:
    site = next(s for s in served.web.web.sites if s.domain in served.web.seeds[0])
    by_domain = get_json(served.base, f"/v1/hosts/{site.domain}")
    assert by_domain["host"] == site.domain
    for field in ("nextAllowedAt", "crawlDelay", "robotsRules", "robotsFetchedAt",
                  "errorCount", "avgResponseMs", "pagesToday", "queueLength"):  # fmt: skip
        assert field in by_domain
    other_host = next((h for h in site.hosts if h != site.domain), None)
    if other_host is not None:
        assert get_json(served.base, f"/v1/hosts/{other_host}")["host"] == site.domain


def test_events_over_http_match_trawl_events(served: Served) -> None:
    first = get_json(served.base, "/v1/events?from=0&limit=5")
    assert len(first["events"]) == 5
    assert [e["offset"] for e in first["events"]] == sorted(e["offset"] for e in first["events"])
    rest = get_json(served.base, f"/v1/events?from={first['next']}&limit=5")
    assert rest["events"][0]["offset"] == first["next"]
    out = subprocess.run(
        [sys.executable, "-m", "trawl", "events", "--data", str(served.data)],
        capture_output=True, check=True, timeout=60,
    )  # fmt: skip
    local = [json.loads(line) for line in out.stdout.splitlines()][:10]
    assert first["events"] + rest["events"] == local
    # Long-poll past the end: an empty answer after about `wait` seconds.
    start = time.monotonic()
    far = get_json(served.base, "/v1/events?from=100000000&wait=1")
    assert far == {"events": [], "next": 100000000}
    assert 0.9 <= time.monotonic() - start < 5


def test_stats_and_openapi(served: Served) -> None:
    stats = get_json(served.base, "/v1/stats")
    assert stats["pagesFetched"] >= stats["pagesStored"] > 0
    assert set(stats["frontier"]) == {"fast", "slow", "refresh"}
    assert stats["sites"]["known"] >= stats["sites"]["active"] + stats["sites"]["waiting"]
    assert stats["sites"]["paused"] == 0
    assert isinstance(stats["errorsByKind"], dict)
    schema = get_json(served.base, "/openapi.json")
    assert {"/v1/pages/{url_hash}", "/v1/pages", "/v1/hosts/{host}", "/v1/events"} <= set(
        schema["paths"]
    )


def test_metrics_parse_as_prometheus_text(served: Served) -> None:
    status, body, content_type = http_get(served.base, "/metrics")
    assert status == 200
    assert content_type.startswith("text/plain; version=0.0.4")
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in families.values()
        for s in family.samples
    }
    assert samples[("trawl_fetches_total", (("class", "2xx"),))] > 0
    assert samples[("trawl_robots_fetches_total", (("outcome", "rules"),))] > 0
    assert samples[("trawl_downloaded_bytes_total", ())] > 0
    assert samples[("trawl_events_written_total", ())] >= samples[("trawl_pages_stored_total", ())]
    buckets = [s for s in families["trawl_fetch_seconds"].samples if s.name.endswith("_bucket")]
    assert [b.value for b in buckets] == sorted(b.value for b in buckets)
    assert buckets[-1].labels["le"] == "+Inf"
    assert buckets[-1].value == samples[("trawl_fetch_seconds_count", ())] > 0
    lines = {s.labels["line"] for s in families["trawl_frontier_urls"].samples}
    assert lines == {"fast", "slow", "refresh"}
    states = {s.labels["state"] for s in families["trawl_sites"].samples}
    assert {"active", "waiting", "backingOff", "parked", "paused"} <= states
    for name in ("trawl_politeness_waits", "trawl_fetch_errors", "trawl_trap_hits"):
        assert name in families
    # Issue 13: every trap rule has its counter, containment's included (zeros too).
    rules = {s.labels["rule"] for s in families["trawl_trap_hits"].samples}
    assert {r.value for r in TrapReason} <= rules
    assert {"copy_page_links", "contained_copies", "contained_similar_pages"} <= rules


def _metric_samples(base: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """Every family's samples, by sample name and then labels."""
    body = http_get(base, "/metrics")[1].decode()
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(body):
        assert family.samples, f"{family.name} is declared but has no sample"
        for s in family.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def _events_written(base: str) -> int:
    offset, count = 0, 0
    while events := get_json(base, f"/v1/events?from={offset}&limit=1000")["events"]:
        count, offset = count + len(events), events[-1]["offset"] + 1
    return count


def test_issue_14_metrics_agree_with_what_the_crawl_did(served: Served) -> None:
    """Each counter against an outside record of the crawl, read in a quiet moment: the
    test web's request log, the events the API serves (issue 14: events_written was one
    high; the politeness waits and fetch errors families had no value)."""
    deadline = time.monotonic() + 40
    while True:
        before = served.web.requests()
        time.sleep(PUBLISH_INTERVAL_S * 1.5)  # a snapshot taken after the log's last request
        m = _metric_samples(served.base)
        events = _events_written(served.base)
        log = served.web.requests()
        stats = get_json(served.base, "/v1/stats")
        requests = m["trawl_fetch_seconds_count"][()]
        if len(before) == len(log) == requests and events == m["trawl_events_written_total"][()]:
            break
        assert time.monotonic() < deadline, (len(before), len(log), requests, events, m)
    # Every request reached the test web (nothing failed before sending), robots.txt too.
    assert sum(m["trawl_fetch_errors_total"].values()) == stats["errors"] == 0
    assert {k for ((_, k),) in m["trawl_fetch_errors_total"]} >= {"dns", "connect", "timeout"}
    robots = sum(1 for r in log if r.path == "/robots.txt")
    assert sum(m["trawl_robots_fetches_total"].values()) == robots
    assert sum(m["trawl_fetches_total"].values()) == stats["pagesFetched"]
    assert stats["pagesFetched"] < len(log) - robots  # sitemaps are not pages
    assert events > 0
    # Twelve sites of eight pages: their clocks held requests back. A wait is counted per
    # turn that left work waiting (a turn may end without a request), so at most about one
    # per request; the gaps here are 0.25-2 s.
    waits = {k: v for ((_, k),), v in m["trawl_politeness_waits_total"].items()}
    seconds = {k: v for ((_, k),), v in m["trawl_politeness_wait_seconds_total"].items()}
    assert waits["site_clock"] > 0
    assert seconds["site_clock"] > 0
    assert waits["site_clock"] <= 2 * len(log)
    assert seconds["site_clock"] <= waits["site_clock"] * 10
    assert waits["paused"] == 0


def test_busy_listen_address_is_a_one_line_error(served: Served, tmp_path: Path) -> None:
    port = served.base.rsplit(":", 1)[1]
    result = subprocess.run(
        [sys.executable, "-m", "trawl", "serve", "http://a.test/", "--data", str(tmp_path / "d"),
         "--contact", CONTACT, "--listen", f"127.0.0.1:{port}"],
        capture_output=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert b"cannot listen there" in result.stderr
    assert b"Traceback" not in result.stderr
    assert not (tmp_path / "d").exists()  # nothing started


def test_seeds_need_the_token_and_change_nothing_without_it(served: Served) -> None:
    site = next(s for s in served.web.web.sites if s.domain in served.web.seeds[0])
    url = f"http://{site.domain}:{served.web.port}/api-seeded-1.html"
    body = json.dumps({"urls": [url]}).encode()
    assert send_json(served.base, "/v1/seeds", body, token=None)[0] == 401
    assert send_json(served.base, "/v1/seeds", body, token="wrong")[0] == 403
    assert send_json(served.base, "/v1/seeds", b"{not json", token=TOKEN)[0] == 422
    bad_priority = json.dumps({"urls": [url], "priority": "urgent"}).encode()
    assert send_json(served.base, "/v1/seeds", bad_priority)[0] == 422
    assert send_json(served.base, "/v1/seeds", json.dumps({"urls": []}).encode())[0] == 422
    time.sleep(1.5)
    assert not any(r.path == "/api-seeded-1.html" for r in served.web.requests())


def test_seeds_are_queued_rejected_with_reasons_and_fetched(served: Served) -> None:
    site = next(s for s in served.web.web.sites if s.domain in served.web.seeds[0])
    new = f"http://{site.domain}:{served.web.port}/api-seeded-2.html"
    known = served.web.seeds[0]
    body = {"urls": [new, known, "mailto:ops@example.org", "http://"], "priority": "high"}
    status, answer = send_json(served.base, "/v1/seeds", json.dumps(body).encode())
    assert status == 200
    assert answer["queued"] == 1
    assert answer["known"] == 1  # the command line's seed: crawled or queued already
    assert [r["url"] for r in answer["rejected"]] == ["mailto:ops@example.org", "http://"]
    assert all(r["reason"] for r in answer["rejected"])
    deadline = time.monotonic() + 30
    while not any(r.path == "/api-seeded-2.html" for r in served.web.requests()):
        assert time.monotonic() < deadline, "the high-priority seed was not fetched in 30 s"
        time.sleep(0.5)


def test_issue_17_a_long_seed_list_is_answered_as_one(served: Served) -> None:
    # Added a chunk at a time on the crawl loop (api.app.SEED_CHUNK): the answer sums them.
    # Only URLs that queue nothing new, so the rest of the module's crawl is unchanged.
    known = served.web.seeds[0]
    urls = [f"mailto:ops{i}@example.org" for i in range(1_200)]
    urls[700] = known
    status, answer = send_json(served.base, "/v1/seeds", json.dumps({"urls": urls}).encode())
    assert status == 200
    assert (answer["queued"], answer["known"]) == (0, 1)
    assert [r["url"] for r in answer["rejected"]] == [u for u in urls if u != known]


def test_issue_14_a_crawled_unchanged_seed_is_known_not_refetched_nor_announced(
    served: Served,
) -> None:
    # A page the crawl found as a link, fetched and announced (test web pages never change).
    site = next(s for s in served.web.web.sites if s.domain in served.web.seeds[0])
    deadline = time.monotonic() + 30
    while not (announced := _announced_pages(served, site.domain)):
        assert time.monotonic() < deadline, "no page of the site beyond its home in 30 s"
        time.sleep(0.5)
    path, hashed = announced[0]
    url = f"http://{site.domain}:{served.web.port}{path}"
    body = {"urls": [url], "priority": "high"}
    status, answer = send_json(served.base, "/v1/seeds", json.dumps(body).encode())
    assert status == 200
    assert (answer["queued"], answer["known"], answer["rejected"]) == (0, 1, [])
    # A high-priority seed goes at the site's next turn: wait several of its gaps.
    delay = served.web.web.politeness_inputs()["crawl_delays"].get(site.domain, 1.0)
    time.sleep(max(4.0, 3 * delay))
    requests = [r for r in served.web.requests() if r.host == site.domain and r.path == path]
    assert len(requests) == 1, "the known seed was fetched again"
    mine = [e for e in _all_events(served) if e["urlHash"] == hashed]
    assert len(mine) == 1, mine


def _all_events(served: Served) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    offset = 0
    while (page := get_json(served.base, f"/v1/events?from={offset}&limit=1000"))["events"]:
        events += page["events"]
        offset = page["next"]
    return events


def _announced_pages(served: Served, host: str) -> list[tuple[str, str]]:
    """(path, urlHash) of pages beyond the home that `host` answered and an event named."""
    announced = {e["urlHash"] for e in _all_events(served)}
    out = []
    for r in served.web.requests():
        if r.host != host or r.status != 200 or r.path in ("/", "/robots.txt"):
            continue
        hashed = url_hash(normalise_url(f"http://{host}:{served.web.port}{r.path}"))
        if hashed in announced:
            out.append((r.path, hashed))
    return out


def test_sigterm_stops_it_cleanly_and_politely(served: Served) -> None:
    served.proc.send_signal(signal.SIGTERM)
    assert served.proc.wait(timeout=60) == 0
    served.web.stop()
    requests = served.web.requests()
    assert check_politeness(requests, **served.web.web.politeness_inputs()) == []
