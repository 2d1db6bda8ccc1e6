"""Issue 13 §4, RFC 9309 exactly: a crawl of the test web with its robots.txt cases.

`build_web(robots_cases=True)` gives one site groups named `trawlbot`, `mytrawl`,
`trawl-extra` and `traw` that disallow everything (plus `*`, which disallows only
/private/), and another a /robots.txt that answers 301 to a third site's /robots.txt,
itself a 301 to /robots-rules.txt ("Disallow: /docs/b/"). Everything is judged from the
test web's request log.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest
from tests.e2e.support import crawl_in_process, web_settings

from trawl.testweb.politeness import check_politeness
from trawl.testweb.process import TestWebProcess
from trawl.testweb.robots_variants import REDIRECT_TARGET, RobotsVariant

if TYPE_CHECKING:
    from collections.abc import Iterator

    from trawl.cli.runner import CrawlSummary
    from trawl.testweb.layout import Site
    from trawl.testweb.request_log import RequestLogRecord

ROBOTS_PATHS = {"/robots.txt", REDIRECT_TARGET, "/sitemap.xml"}
MAX_TIME_S = 35.0


@dataclass
class RobotsRun:
    web: TestWebProcess
    summary: CrawlSummary
    requests: list[RequestLogRecord]

    def site(self, variant: RobotsVariant) -> Site:
        return self.web.web.robots_cases()[variant]

    def on(self, site: Site) -> list[RequestLogRecord]:
        return [r for r in self.requests if r.host in site.hosts]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RobotsRun]:
    tmp = tmp_path_factory.mktemp("robots")
    with TestWebProcess(sites=12, pages=4, seed=5, robots_cases=True, workdir=tmp / "web") as web:
        # The three sites under test are done in ~20 s; the Crawl-delay: 2 site would
        # take ~50 s more, so the crawl is cut at a time limit.
        settings = web_settings(web, MAX_TIME_S)
        summary, _ = crawl_in_process(settings, tmp / "data", web.seeds)
        web.stop()
        yield RobotsRun(web, summary, web.requests())


def test_issue_13_groups_named_like_trawl_are_not_applied(run: RobotsRun) -> None:
    site = run.site(RobotsVariant.NAMED_LIKE_AGENT)
    pages = {(r.host, r.path) for r in run.on(site) if r.path not in ROBOTS_PATHS}
    expected = {k for k in run.web.web.expected_fetches(run.web.port) if k[0] in site.hosts}
    assert len(expected) > 10  # the site is reached and its pages are allowed
    assert pages == expected
    assert not any(path.startswith("/private/") for _, path in pages)  # `*` still applies


def test_issue_13_robots_redirect_to_another_site_is_applied(run: RobotsRun) -> None:
    site = run.site(RobotsVariant.REDIRECT_OTHER_SITE)
    requests = run.on(site)
    paths = [r.path for r in requests]
    assert paths[0] == "/robots.txt"
    assert requests[0].status == 301
    assert not [p for p in paths if p.startswith("/docs/b/")]  # the target's rule
    # The redirect was not read as "unreachable" (nothing) or "unavailable" (everything).
    expected = {k for k in run.web.web.expected_fetches(run.web.port) if k[0] in site.hosts}
    assert {(r.host, r.path) for r in requests if r.path not in ROBOTS_PATHS} == expected
    assert any(path.startswith("/docs/a/") for _, path in expected)


def test_issue_13_target_robots_txt_asked_before_the_origins_first_page(run: RobotsRun) -> None:
    origin = run.site(RobotsVariant.REDIRECT_OTHER_SITE)
    target = run.web.web.by_host[origin.robots_redirect_host or ""]
    first_page = min(r.t_start for r in run.on(origin) if r.path not in ROBOTS_PATHS)
    origin_robots = min(r.t_start for r in run.on(origin) if r.path == "/robots.txt")
    hops = [
        r
        for r in run.on(target)
        if r.path in ("/robots.txt", REDIRECT_TARGET) and origin_robots < r.t_start < first_page
    ]
    assert [r.path for r in hops] == ["/robots.txt", REDIRECT_TARGET]


def test_issue_13_no_politeness_violation(run: RobotsRun) -> None:
    assert check_politeness(run.requests, **run.web.web.politeness_inputs()) == []
