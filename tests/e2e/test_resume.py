"""SIGTERM mid-crawl checkpoints and exits 0; rerunning with the same --data finishes the work."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from typing import TYPE_CHECKING

from tests.e2e.support import crawl_command

from trawl.testweb.politeness import check_politeness
from trawl.testweb.process import TestWebProcess
from trawl.testweb.robots_variants import RobotsVariant

if TYPE_CHECKING:
    from pathlib import Path

# Not pages: robots.txt (and its redirect target), and the sitemap trawl guesses per host.
ROBOTS_PATHS = {"/robots.txt", "/robots-rules.txt", "/sitemap.xml"}


def wait_for_requests(web: TestWebProcess, n: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if web.log_path.exists() and len(web.log_path.read_text().splitlines()) >= n:
            return
        time.sleep(0.2)
    raise AssertionError(f"fewer than {n} requests after {timeout_s}s")


def test_sigterm_then_rerun_finishes_the_same_work_once(tmp_path: Path) -> None:
    with TestWebProcess(sites=12, pages=8, seed=11, workdir=tmp_path / "web") as web:
        data = tmp_path / "data"
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        first = subprocess.Popen(
            crawl_command(web, data), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        try:
            wait_for_requests(web, 40, timeout_s=60)
            first.send_signal(signal.SIGTERM)
            out, err = first.communicate(timeout=30)
        finally:
            first.kill()
        assert first.returncode == 0, err.decode()
        interrupted_at = len(web.log_path.read_text().splitlines())
        assert b"pages fetched" in out

        second = subprocess.run(
            crawl_command(web, data), capture_output=True, timeout=300, env=env, check=False
        )
        assert second.returncode == 0, second.stderr.decode()
        web.stop()
        requests = web.requests()

        assert len(requests) > interrupted_at  # the rerun did the rest
        fetched = Counter((r.host, r.path) for r in requests if r.path not in ROBOTS_PATHS)
        assert set(fetched) == web.web.expected_fetches(web.port)
        assert [k for k, n in fetched.items() if n > 1] == []
        robots = Counter(r.host for r in requests if r.path == "/robots.txt")
        failing = {
            host
            for site in web.web.sites
            if site.robots is RobotsVariant.SERVER_ERROR
            for host in site.hosts
        }
        # Rules survive the restart (24 h cache); a 503 is retried after 60 s at the earliest.
        assert {h: n for h, n in robots.items() if n > 1 and h not in failing} == {}
        assert all(robots[h] <= 2 for h in failing)
        assert check_politeness(requests, **web.web.politeness_inputs()) == []

        pages = subprocess.run(
            [sys.executable, "-m", "trawl", "pages", "--data", str(data)],
            capture_output=True, check=True, timeout=60,
        )  # fmt: skip
        records = [json.loads(line) for line in pages.stdout.splitlines()]
        records = [r for r in records if r["kind"] == "page"]  # sitemaps have records too
        assert len(records) == len(fetched)
