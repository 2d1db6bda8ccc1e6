"""Scope over the API (issue 16), against a real `trawl serve` crawling the local test web:
the scope in force, a URL's check, a run-time exclusion read against the test web's request
log, the skipped report, and a change that survives the process.

The tests share one crawl and run in file order: the exclusion test leaves its pattern in
force for the restart test, which lifts it.
"""

from __future__ import annotations

import json
import re
import time
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest
from tests.e2e.serve_support import Served, get_json, http_get, run_serve, send_json

from trawl.testweb.process import TestWebProcess
from trawl.urls.registered_domain import site_of

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

CONFIG_EXCLUDE = "/private/"
SCOPE_FLAGS = ("--scope", "domain", "--exclude", CONFIG_EXCLUDE)
EXCLUSIONS = "/v1/scope/exclusions"
CHECKED_ONLY = "/checked-only.html"  # a URL only ever checked: a check queues nothing


@dataclass
class Crawl:
    served: Served
    tmp: Path
    pattern: str = ""  # the run-time exclusion the exclusion test added


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Crawl]:
    tmp = tmp_path_factory.mktemp("scope")
    # Enough pages that every site still has work queued while the tests run.
    with (
        TestWebProcess(sites=8, pages=90, seed=11, workdir=tmp / "web") as web,
        run_serve(web, tmp, extra=SCOPE_FLAGS, max_time_s=150, min_stored=10) as served,
    ):
        yield Crawl(served, tmp)


def _post(served: Served, path: str, body: Any, token: str | None = "") -> tuple[int, Any]:
    data = json.dumps(body).encode()
    if token == "":
        return send_json(served.base, path, data)
    return send_json(served.base, path, data, token=token)


def _delete(served: Served, pattern: str, token: str | None = "") -> tuple[int, Any]:
    path = f"{EXCLUSIONS}?pattern={urllib.parse.quote(pattern, safe='')}"
    if token == "":
        return send_json(served.base, path, b"", method="DELETE")
    return send_json(served.base, path, b"", token=token, method="DELETE")


def _url(served: Served, host: str, path: str) -> str:
    return f"http://{host}:{served.web.port}{path}"


def test_scope_shows_the_command_line_scope(crawl: Crawl) -> None:
    served = crawl.served
    scope = get_json(served.base, "/v1/scope")
    assert scope["exclude"] == [CONFIG_EXCLUDE]
    assert scope["exclusions"] == []
    assert scope["open"] is False
    assert {s["url"] for s in scope["seeds"]} == set(served.web.seeds)
    assert {s["type"] for s in scope["seeds"]} == {"domain"}
    assert scope["summary"] == f"scope domain x{len(served.web.seeds)}, 1 exclude"
    assert get_json(served.base, "/v1/stats")["scope"] == scope["summary"]


def test_check_answers_in_or_out_with_the_rule_and_seed(crawl: Crawl) -> None:
    served = crawl.served
    seed = served.web.seeds[0]
    host = urllib.parse.urlsplit(seed).hostname
    assert host is not None

    def check(url: str) -> Any:
        status, answer = _post(served, "/v1/scope/check", {"url": url}, token=None)
        assert status == 200, (url, answer)  # no token needed: it changes nothing
        return answer

    assert check(seed) == {"url": seed, "inScope": True, "rule": "seed", "seed": seed}
    page = check(_url(served, host.upper(), "/docs/x.html#part"))
    assert page == {
        "url": _url(served, host, "/docs/x.html"), "inScope": True, "rule": "scope", "seed": seed,
    }  # fmt: skip
    private = check(_url(served, host, "/private/1.html"))
    assert (private["inScope"], private["rule"]) == (False, "exclude")
    outside = check("http://elsewhere.example/")
    assert outside == {
        "url": "http://elsewhere.example/", "inScope": False, "rule": "scope", "seed": None,
    }  # fmt: skip
    assert _post(served, "/v1/scope/check", {"url": "ftp://x/"}, token=None)[0] == 422
    assert _post(served, "/v1/scope/check", {"url": "not a url"}, token=None)[0] == 422
    assert _post(served, "/v1/scope/check", {}, token=None)[0] == 422
    # In scope but linked from nowhere: the exclusion test, later, finds it never fetched.
    assert check(_url(served, host, CHECKED_ONLY))["inScope"] is True


def test_bad_patterns_are_422_and_tokens_are_required(crawl: Crawl) -> None:
    served = crawl.served
    for pattern in ("(", "(?=lookahead)", r"(a)\1", ""):
        status, answer = _post(served, EXCLUSIONS, {"pattern": pattern})
        assert status == 422, (pattern, answer)
        assert answer["detail"], pattern
    status, answer = _post(served, EXCLUSIONS, {"pattern": "("})
    assert "not a valid RE2 pattern" in answer["detail"]
    assert "\n" not in answer["detail"]
    assert _post(served, EXCLUSIONS, {"pattern": "x"}, token=None)[0] == 401
    assert _post(served, EXCLUSIONS, {"pattern": "x"}, token="wrong")[0] == 403
    assert _delete(served, "x", token=None)[0] == 401
    assert _delete(served, "x", token="wrong")[0] == 403
    assert get_json(served.base, "/v1/scope")["exclusions"] == []
    # Nested quantifiers are fine: RE2 runs in linear time, so no pattern can stall the loop.
    slow_elsewhere = "(a+)+$"
    assert _post(served, EXCLUSIONS, {"pattern": slow_elsewhere})[0] == 201
    status, answer = _post(served, EXCLUSIONS, {"pattern": slow_elsewhere})
    assert (status, answer) == (200, {"pattern": slow_elsewhere, "dropped": 0, "already": True})
    assert _delete(served, slow_elsewhere) == (200, {"pattern": slow_elsewhere, "removed": True})
    status, answer = _delete(served, CONFIG_EXCLUDE)
    assert status == 404
    assert "config" in answer["detail"]
    assert _delete(served, "never-added")[0] == 404


def _busiest_site(served: Served) -> str:
    """The site with the most URLs queued, among the seeds' sites (the others are out of
    the `domain` scope: never loaded, no host record) without a robots Crawl-delay."""
    seeded = {site_of(seed) for seed in served.web.seeds}
    plain = [s.domain for s in served.web.web.sites if s.crawl_delay_s == 0 and s.domain in seeded]
    queued = {d: get_json(served.base, f"/v1/hosts/{d}")["queueLength"] for d in plain}
    site = max(queued, key=queued.__getitem__)
    assert queued[site] > 5, queued
    return site


def test_a_run_time_exclusion_empties_the_queue_of_what_it_matches(crawl: Crawl) -> None:
    served = crawl.served
    site = _busiest_site(served)
    # The site's articles and docs: most of what it has left, and never its robots.txt.
    pattern = rf"^http://([a-z]+\.)?{re.escape(site)}:\d+/(articles|docs)/"
    status, answer = _post(served, EXCLUSIONS, {"pattern": pattern})
    answered_at = time.time()
    assert status == 201, answer
    assert answer["pattern"] == pattern
    assert answer["dropped"] > 0
    crawl.pattern = pattern
    assert get_json(served.base, "/v1/scope")["exclusions"] == [pattern]
    time.sleep(6)  # the crawl goes on meanwhile: the other sites, this one's other pages
    matcher = re.compile(pattern)
    log = served.web.requests()
    late = [
        r for r in log if r.t_start >= answered_at and matcher.search(_url(served, r.host, r.path))
    ]
    assert late == []
    assert any(r.t_start >= answered_at for r in log), "the crawl stopped: nothing to learn"
    assert [r for r in log if r.path == CHECKED_ONLY] == []
    check = _post(served, "/v1/scope/check", {"url": _url(served, site, "/docs/")}, token=None)
    assert check[1]["rule"] == "exclude"

    skipped = get_json(served.base, "/v1/skipped?reason=exclude&limit=10000")
    matched = [s for s in skipped["skipped"] if matcher.search(s["url"])]
    assert len(matched) >= answer["dropped"]  # the dropped ones, then links found later
    assert {s["reason"] for s in skipped["skipped"]} == {"exclude"}
    assert {s["rule"] for s in matched} == {f"exclude {pattern}"}
    assert skipped["counts"]["exclude"] >= len(matched)
    ats = [s["at"] for s in skipped["skipped"]]
    assert ats == sorted(ats, reverse=True)  # newest first
    dropped_urls = {s["url"] for s in matched if s["referrer"] == ""}
    fetched = {_url(served, r.host, r.path) for r in log if r.t_start >= answered_at}
    assert dropped_urls
    assert not dropped_urls & fetched


def test_skipped_limits_and_metrics(crawl: Crawl) -> None:
    served = crawl.served
    every = get_json(served.base, "/v1/skipped")
    assert len(every["skipped"]) <= 100
    assert len(get_json(served.base, "/v1/skipped?limit=3")["skipped"]) <= 3
    assert get_json(served.base, "/v1/skipped?reason=no-such-reason")["skipped"] == []
    for bad in ("limit=0", "limit=10001", "limit=x"):
        assert http_get(served.base, f"/v1/skipped?{bad}")[0] == 422, bad
    time.sleep(1.2)  # the next snapshot
    status, body, _ = http_get(served.base, "/metrics")
    assert status == 200
    text = body.decode()
    assert "trawl_scope_exclusions 1.0" in text
    found = re.search(r'^trawl_skipped_total\{reason="exclude"\} (\S+)$', text, re.MULTILINE)
    assert found is not None
    assert float(found.group(1)) >= 1


def test_seeds_take_a_scope_object(crawl: Crawl) -> None:
    served = crawl.served
    host = urllib.parse.urlsplit(served.web.seeds[1]).hostname
    assert host is not None
    url = _url(served, host, "/docs/a/")
    body = {"urls": [url], "scope": {"type": "prefix", "maxDepth": 2, "exclude": ["/b/"]}}
    status, answer = _post(served, "/v1/seeds", body)
    assert status == 200, answer
    seeds = {s["url"]: s for s in get_json(served.base, "/v1/scope")["seeds"]}
    queued = seeds[url].pop("queued")
    assert queued >= (1 if answer["queued"] else 0)  # URLs queued for it: itself, if new
    assert seeds[url] == {
        "url": url, "type": "prefix", "include": [], "exclude": ["/b/"], "maxDepth": 2,
        "extraHops": 0, "maxPages": 0,
    }  # fmt: skip
    check = _post(served, "/v1/scope/check", {"url": url}, token=None)[1]
    assert (check["rule"], check["seed"]) == ("seed", url)
    default = _url(served, host, "/docs/c/")
    assert _post(served, "/v1/seeds", {"urls": [default]})[0] == 200
    seeds = {s["url"]: s for s in get_json(served.base, "/v1/scope")["seeds"]}
    assert seeds[default]["type"] == "domain"  # the crawl's --scope
    for scope in ({"type": "nope"}, {"maxDepth": -1}, {"extraHops": 256}, {"include": ["("]},
                  {"maxDepth": "2"}, {"other": 1}):  # fmt: skip
        status, answer = _post(served, "/v1/seeds", {"urls": [url], "scope": scope})
        assert status == 422, (scope, answer)
    assert _post(served, "/v1/seeds", body, token=None)[0] == 401


def test_the_exclusion_survives_a_restart_and_delete_lifts_it(crawl: Crawl) -> None:
    served, pattern = crawl.served, crawl.pattern
    assert pattern, "the exclusion test did not run"
    served.proc.terminate()
    assert served.proc.wait(timeout=60) == 0
    with run_serve(served.web, crawl.tmp, extra=SCOPE_FLAGS, min_stored=0) as again:
        scope = get_json(again.base, "/v1/scope")
        assert scope["exclusions"] == [pattern]
        assert scope["exclude"] == [CONFIG_EXCLUDE]
        assert any(s["type"] == "prefix" for s in scope["seeds"])  # the API seed's, stored
        status, answer = _delete(again, pattern)
        assert (status, answer) == (200, {"pattern": pattern, "removed": True})
        assert get_json(again.base, "/v1/scope")["exclusions"] == []
        assert _delete(again, pattern)[0] == 404
