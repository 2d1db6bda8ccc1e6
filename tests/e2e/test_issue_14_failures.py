"""Issue 14 (2): refusals and failures are named and counted, in the summary and /metrics.

A seed on a loopback IP without --allow-private used to end with 0 pages, exit 0 and only
`robots:unreachable`; a name that does not resolve and a refused connection counted as
`errors 0` everywhere. Real processes here: `trawl crawl` against a running test web (which
must see no request), and `trawl serve` with seeds that fail, read through /metrics.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import urllib.error
from typing import TYPE_CHECKING, Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.e2e.serve_support import free_port, get_json, http_get
from tests.e2e.support import CONTACT

from trawl.testweb.process import TestWebProcess

if TYPE_CHECKING:
    from pathlib import Path

# (the summary printed at exit, /metrics trawl_fetch_errors_total by kind, /v1/stats)
Failing = tuple[str, dict[str, float], dict[str, Any]]


def test_issue_14_loopback_seed_refusal_is_named_in_one_line(tmp_path: Path) -> None:
    with TestWebProcess(sites=1, pages=2, seed=3, workdir=tmp_path / "web") as web:
        result = subprocess.run(
            [sys.executable, "-m", "trawl", "crawl", f"http://127.0.0.1:{web.port}/",
             "--data", str(tmp_path / "data"), "--contact", CONTACT, "--max-time", "30"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert web.requests() == []  # the guard refused before any connection
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "errors 1 (blocked_address 1)" in lines
    why = [line for line in lines if line.startswith("fetched nothing:")]
    assert len(why) == 1, result.stdout
    assert "1 request refused by the address guard" in why[0]
    assert f"127.0.0.1:{web.port}/robots.txt: 127.0.0.1 is not a public address" in why[0]
    assert "(loopback)" in why[0]
    assert "pass --allow-private or map the name with --resolve" in why[0]


def _samples(base: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    body = http_get(base, "/metrics")[1].decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(body)
        for s in family.samples
    }


@pytest.fixture(scope="module")
def failing_serve(tmp_path_factory: pytest.TempPathFactory) -> Failing:
    """`trawl serve` of a name that does not resolve and a port nobody listens on: the
    /metrics error counts and /v1/stats once both failed, and the summary printed at exit."""
    tmp = tmp_path_factory.mktemp("failing")
    closed, api = free_port(), free_port()  # nothing listens on `closed` (TCP nor UDP)
    proc = subprocess.Popen(
        [sys.executable, "-m", "trawl", "serve", "http://nxdomain.test/",
         f"http://refused.test:{closed}/", "--resolve", "refused.test:127.0.0.1",
         "--dns-server", f"127.0.0.1:{closed}", "--data", str(tmp / "data"),
         "--contact", CONTACT, "--listen", f"127.0.0.1:{api}", "--max-time", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{api}"
    try:
        deadline = time.monotonic() + 40
        while True:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            try:
                samples = _samples(base)
                stats = get_json(base, "/v1/stats")
            except (urllib.error.URLError, ConnectionError):
                samples, stats = {}, {}  # not listening yet
            dns = samples.get(("trawl_fetch_errors_total", (("kind", "dns"),)), 0)
            connect = samples.get(("trawl_fetch_errors_total", (("kind", "connect"),)), 0)
            same = stats.get("snapshotAt") == samples.get(("trawl_snapshot_timestamp_seconds", ()))
            if dns and connect and same:
                break
            assert time.monotonic() < deadline, (samples, stats)
            time.sleep(0.3)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    errors = {k[1][0][1]: v for k, v in samples.items() if k[0] == "trawl_fetch_errors_total"}
    return out, errors, stats


def test_issue_14_dns_and_refused_are_errors_in_metrics_and_stats(
    failing_serve: Failing,
) -> None:
    _, errors, stats = failing_serve
    assert errors["dns"] >= 1
    assert errors["connect"] >= 1
    assert "blocked_address" in errors  # every reason has its series, zeros too
    nonzero = {kind: n for kind, n in errors.items() if n}
    assert stats["errorsByKind"] == nonzero
    assert stats["errors"] == sum(nonzero.values())


def test_issue_14_dns_and_refused_are_errors_in_the_summary(
    failing_serve: Failing,
) -> None:
    out, _, _ = failing_serve
    [line] = [line for line in out.splitlines() if line.startswith("errors ")]
    assert "errors 0" not in line
    assert "dns " in line
    assert "connect " in line
    assert "fetched nothing: " in out
