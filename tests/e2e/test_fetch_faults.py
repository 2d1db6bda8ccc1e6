"""Issue 13 §2-3: fetch faults on the hostile test web cost what they must and no more.

One short crawl, seeded with the four fault sites only (trawl.testweb.hostile): an endless
redirect chain, a page that resets mid-body on every try next to a healthy one, oversized
headers / too many headers / a malformed status line next to healthy pages, and a site whose
home links its own origin on a closed port next to healthy pages. Every figure is read from
the test web's request log, not from trawl's counters.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest
from tests.e2e.support import crawl_in_process, web_settings

from trawl.testweb.hostile import (
    BAD_HEADER_PATHS,
    CLOSED_PORT,
    FAULT_OK_PAGES,
    HostileKind,
)
from trawl.testweb.politeness import check_politeness
from trawl.testweb.process import TestWebProcess

if TYPE_CHECKING:
    from collections.abc import Iterator

    from trawl.cli.runner import CrawlSummary
    from trawl.model import PageRecord
    from trawl.testweb.request_log import RequestLogRecord

MAX_TIME_S = 60.0
MAX_REDIRECTS = 10
MAX_ATTEMPTS = 3
GAP_S = 1.0  # politeness.min_delay_s; responses here are fast, so it is the site's gap
STEP_S = 2 * GAP_S  # one backoff step (backoff factor 2)
SLACK_S = 0.6  # scheduling and loopback latency on a busy 2-core machine
FAULT_KINDS = (
    HostileKind.ENDLESS_REDIRECT,
    HostileKind.RESET_PAGE,
    HostileKind.BAD_HEADERS,
    HostileKind.CLOSED_PORT,
)


@dataclass
class FaultRun:
    web: TestWebProcess
    summary: CrawlSummary
    requests: list[RequestLogRecord]
    pages: list[PageRecord]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultRun]:
    tmp = tmp_path_factory.mktemp("faults")
    with TestWebProcess(sites=2, pages=2, seed=5, hostile=True, workdir=tmp / "web") as web:
        settings = web_settings(
            web,
            MAX_TIME_S,
            fetch={
                "total_timeout_s": 3.0,
                "max_attempts": MAX_ATTEMPTS,
                "max_redirects": MAX_REDIRECTS,
            },
            politeness={"backoff_max_s": 8.0, "slow_factor": 2.0},
        )
        seeds = [f"http://{_domain(kind)}:{web.port}/" for kind in FAULT_KINDS]
        summary, pages = crawl_in_process(settings, tmp / "data", seeds)
        web.stop()
        yield FaultRun(web, summary, web.requests(), pages)


def _domain(kind: HostileKind) -> str:
    return f"hostile-{kind.value}.test"


def _site_requests(run: FaultRun, kind: HostileKind) -> list[RequestLogRecord]:
    return sorted((r for r in run.requests if r.site == _domain(kind)), key=lambda r: r.t_start)


def _starts(requests: list[RequestLogRecord], path: str) -> list[float]:
    return [r.t_start for r in requests if r.path == path]


def _record(run: FaultRun, url_end: str) -> PageRecord:
    (page,) = [p for p in run.pages if p.url.endswith(url_end)]
    return page


def test_issue_13_the_crawl_ends_by_itself_and_stays_polite(run: FaultRun) -> None:
    assert run.summary.elapsed_s < MAX_TIME_S - 10
    assert check_politeness(run.requests, **run.web.web.politeness_inputs()) == []


def test_issue_13_an_endless_redirect_chain_stops_at_max_redirects(run: FaultRun) -> None:
    hops = [r for r in _site_requests(run, HostileKind.ENDLESS_REDIRECT) if r.path[:5] == "/inf/"]
    assert len(hops) == MAX_REDIRECTS + 1
    assert max(hops, key=lambda r: r.t_start).path == f"/inf/{MAX_REDIRECTS + 1}"
    last = _record(run, f"/inf/{MAX_REDIRECTS + 1}")
    assert last.error.startswith("too_many_redirects:")
    assert run.summary.stats.statuses.get("error:too_many_redirects") == 1


def test_issue_13_a_resetting_page_does_not_hold_back_its_healthy_neighbour(
    run: FaultRun,
) -> None:
    requests = _site_requests(run, HostileKind.RESET_PAGE)
    home = _starts(requests, "/")[0]
    resets, healthy = _starts(requests, "/resets.html"), _starts(requests, "/healthy.html")
    assert len(resets) == MAX_ATTEMPTS  # retried up to fetch.max_attempts, then recorded
    assert len(healthy) == 1
    assert healthy[0] < resets[1], "the retry went behind the healthy page"
    assert healthy[0] - home < GAP_S + STEP_S + GAP_S + SLACK_S
    assert _record(run, "/resets.html").error.startswith("reset")


def test_issue_13_deterministic_errors_are_recorded_once_without_widening_gaps(
    run: FaultRun,
) -> None:
    requests = _site_requests(run, HostileKind.BAD_HEADERS)
    for path in BAD_HEADER_PATHS:
        assert len(_starts(requests, path)) == 1, path
        assert _record(run, path).error.startswith("protocol:"), path
    for path in FAULT_OK_PAGES:
        assert len(_starts(requests, path)) == 1, path
    starts = [r.t_start for r in requests]
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert gaps
    assert max(gaps) < GAP_S + SLACK_S, gaps  # never a backoff step


def test_issue_13_a_closed_port_holds_the_other_origin_back_one_step_at_most(
    run: FaultRun,
) -> None:
    requests = _site_requests(run, HostileKind.CLOSED_PORT)
    for path in FAULT_OK_PAGES:
        assert len(_starts(requests, path)) == 1, path
    starts = [r.t_start for r in requests]
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    # Between two requests to the working origin there is at most one refused one (its
    # robots.txt, not in the log): a normal gap and one backoff step.
    assert max(gaps) < GAP_S + STEP_S + SLACK_S, gaps
    closed = [p for p in run.pages if f":{CLOSED_PORT}/" in p.url]
    assert all(p.storage_key == "" for p in closed)
