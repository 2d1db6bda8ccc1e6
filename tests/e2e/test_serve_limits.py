"""Per-site limits over the API, against a real `trawl serve` crawling the local test web:
an override shows up in the test web's request log at once and survives the process."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

import pytest
from tests.e2e.serve_support import Served, get_json, run_serve, send_json

from trawl.testweb.politeness import check_politeness
from trawl.testweb.process import TestWebProcess

if TYPE_CHECKING:
    from collections.abc import Iterator

    from trawl.testweb.request_log import RequestLogRecord


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("limits")
    # Enough pages that every site still has work while the test runs (about a minute).
    with (
        TestWebProcess(sites=8, pages=90, seed=11, workdir=tmp / "web") as web,
        run_serve(web, tmp, max_time_s=150, min_stored=10) as served,
    ):
        yield served


def _busy_sites(served: Served, n: int) -> list[str]:
    """`n` sites with no robots Crawl-delay of their own and pages still queued."""
    plain = [s.domain for s in served.web.web.sites if s.crawl_delay_s == 0]
    queued = [d for d in plain if get_json(served.base, f"/v1/hosts/{d}")["queueLength"] > 5]
    assert len(queued) >= n, queued
    return queued[:n]


def _put(served: Served, host: str, body: Any, token: str | None = None) -> tuple[int, Any]:
    data = json.dumps(body).encode()
    if token is None:
        return send_json(served.base, f"/v1/hosts/{host}/limits", data, method="PUT")
    return send_json(served.base, f"/v1/hosts/{host}/limits", data, token=token, method="PUT")


def _site_requests(served: Served, site: str, after: float) -> list[RequestLogRecord]:
    return [r for r in served.web.requests() if r.site == site and r.t_start > after]


def test_bad_limits_are_422_and_bad_tokens_change_nothing(served: Served) -> None:
    (site,) = _busy_sites(served, 1)
    for body in ({"crawlDelay": 0.5}, {"crawlDelay": "5"}, {"maxPagesPerDay": -1},
                 {"maxPagesPerDay": 1.5}, {"paused": "yes"}, {}, {"crawlDelay": 5, "x": 1},
                 [5]):  # fmt: skip
        status, answer = _put(served, site, body)
        assert status == 422, (body, answer)
        assert answer["detail"], body
    status, answer = _put(served, site, {"crawlDelay": 0.5})
    assert "between 1 and 86400" in answer["detail"]
    assert _put(served, site, {"paused": True}, token="")[0] == 401
    assert _put(served, site, {"paused": True}, token="wrong")[0] == 403
    path = f"/v1/hosts/{site}/limits"
    assert send_json(served.base, path, b"", token="wrong", method="DELETE")[0] == 403
    assert get_json(served.base, f"/v1/hosts/{site}")["override"] is None
    assert _put(served, "not%20a%20host!", {"paused": True})[0] == 422


def test_a_slower_gap_applies_to_the_very_next_request(served: Served) -> None:
    site = _busy_sites(served, 1)[0]
    host = f"www.{site}"  # a hostname acts on its registered domain
    put_at = time.time()
    status, answer = _put(served, host, {"crawlDelay": 4})
    assert status == 200, answer
    assert answer["host"] == site
    assert answer["override"]["crawlDelay"] == 4.0
    assert answer["inForce"] == {**answer["inForce"], "crawlDelay": 4.0, "paused": False}
    assert get_json(served.base, f"/v1/hosts/{site}")["override"]["crawlDelay"] == 4.0
    time.sleep(10)
    log = [r for r in served.web.requests() if r.site == site]
    after = [i for i, r in enumerate(log) if r.t_start > put_at]
    assert len(after) >= 2, "the site was not crawled after the override"
    for i in after:  # measured from the end of the one before, as the clock does
        assert log[i].t_start - log[i - 1].t_end >= 4.0 - 0.05, (log[i - 1], log[i])
    status, answer = send_json(served.base, f"/v1/hosts/{site}/limits", b"", method="DELETE")
    assert status == 200
    assert answer["override"] is None
    assert answer["inForce"]["crawlDelay"] < 4.0


def test_pause_stops_a_site_until_lifted_and_a_cap_holds(served: Served) -> None:
    paused, capped = _busy_sites(served, 3)[1:]
    assert _put(served, paused, {"paused": True})[0] == 200
    pages_today = get_json(served.base, f"/v1/hosts/{capped}")["pagesToday"]
    status, answer = _put(served, capped, {"maxPagesPerDay": pages_today})
    assert status == 200
    assert answer["inForce"]["maxPagesPerDay"] == pages_today
    settled = time.time() + 1.5  # a request already in flight may finish
    time.sleep(6)
    assert _site_requests(served, paused, settled) == []
    assert [r.path for r in _site_requests(served, capped, settled)
            if r.path != "/robots.txt"] == []  # fmt: skip
    lifted_at = time.time()
    assert send_json(served.base, f"/v1/hosts/{paused}/limits", b"", method="DELETE")[0] == 200
    deadline = time.monotonic() + 10
    while not _site_requests(served, paused, lifted_at):
        assert time.monotonic() < deadline, "the site stayed paused after DELETE"
        time.sleep(0.25)
    first = _site_requests(served, paused, lifted_at)[0]
    assert first.t_start - lifted_at < 3.0  # woken at once, not at the next re-check


def test_overrides_survive_the_process(served: Served) -> None:
    site = _busy_sites(served, 1)[0]
    assert _put(served, site, {"crawlDelay": 7, "maxPagesPerDay": 123})[0] == 200
    served.proc.terminate()
    assert served.proc.wait(timeout=60) == 0
    out = subprocess.run(
        [sys.executable, "-m", "trawl", "host", site, "--data", str(served.data)],
        capture_output=True, check=True, timeout=60,
    )  # fmt: skip
    override = json.loads(out.stdout)["override"]
    assert (override["crawlDelay"], override["maxPagesPerDay"], override["paused"]) == (
        7.0, 123, False,
    )  # fmt: skip
    served.web.stop()
    assert check_politeness(served.web.requests(), **served.web.web.politeness_inputs()) == []
