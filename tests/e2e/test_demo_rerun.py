"""`trawl demo` rerun in one directory: the rerun resumes against the same URLs, whatever
ended the last run, and is judged polite over every run's requests (issue 14).

One demo directory goes through three runs: the first is killed outright (SIGKILL to its
whole process group) mid-crawl, the second finishes it, and before the third every stored
page is made due again with real SQL, as if the rerun came after their recrawl interval.
"""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest
from tests.e2e.crash_support import kill_group, start_in_group, wait_until

if TYPE_CHECKING:
    from pathlib import Path

REQUESTS_BEFORE_KILL = 20


@dataclass(frozen=True, slots=True)
class Run:
    code: int
    out: str
    err: str

    def number(self, pattern: str) -> int:
        match = re.search(pattern, self.out + self.err)
        assert match, f"{pattern!r} not in:\n{self.out}\n{self.err[-2000:]}"
        return int(match.group(1))

    @property
    def port(self) -> int:
        return self.number(r"loopback port (\d+)")


@dataclass(frozen=True, slots=True)
class Reruns:
    killed_port: int
    killed_requests: int
    second: Run
    made_due: int
    third: Run


def _argv(data: Path) -> list[str]:
    return [sys.executable, "-m", "trawl", "demo", "--sites", "12", "--pages", "4",
            "--data", str(data), "--max-time", "15"]  # fmt: skip


def _demo(data: Path) -> Run:
    result = subprocess.run(_argv(data), capture_output=True, text=True, timeout=180, check=False)
    return Run(result.returncode, result.stdout, result.stderr)


def _lines(path: Path) -> int:
    return len(path.read_bytes().splitlines()) if path.exists() else 0


def _make_home_pages_due(data: Path) -> int:
    """Each site's home page comes due now, as if its recrawl interval had passed."""
    conn = sqlite3.connect(data / "trawl.db")
    try:
        with conn:
            cur = conn.execute(
                "UPDATE pages SET due_at = ? WHERE due_at IS NOT NULL AND url LIKE 'http://%/'"
                " AND url NOT LIKE 'http://%/%/'",
                (time.time() - 1,),
            )
        return cur.rowcount
    finally:
        conn.close()


@pytest.fixture(scope="module")
def reruns(tmp_path_factory: pytest.TempPathFactory) -> Reruns:
    tmp = tmp_path_factory.mktemp("demo-rerun")
    data = tmp / "data"
    web_log = data / "demo-web" / "requests.jsonl"
    proc = start_in_group(_argv(data), tmp, "killed")
    try:
        wait_until("requests", lambda: _lines(web_log) >= REQUESTS_BEFORE_KILL, 60, 0.05)
    finally:
        kill_group(proc)  # SIGKILL: no checkpoint, no summary, no request log copied
    killed = Run(
        proc.returncode, (tmp / "killed.out").read_text(), (tmp / "killed.err").read_text()
    )
    killed_requests = _lines(web_log)
    second = _demo(data)
    made_due = _make_home_pages_due(data)
    third = _demo(data)
    return Reruns(killed.port, killed_requests, second, made_due, third)


def test_issue_14_a_rerun_after_sigkill_comes_back_on_the_same_port(reruns: Reruns) -> None:
    run = reruns.second
    assert run.code == 0, run.err[-3000:]
    assert "Traceback" not in run.err
    assert run.port == reruns.killed_port
    assert "starts afresh" not in run.err


def test_issue_14_a_rerun_is_judged_over_every_run_including_the_killed_one(
    reruns: Reruns,
) -> None:
    run = reruns.second
    this_run = run.number(r"test web saw (\d+) requests")
    assert run.number(r"\((\d+) in every run here\)") == reruns.killed_requests + this_run
    assert "politeness violations: 0" in run.out, run.out


def test_issue_14_a_rerun_after_the_pages_are_due_refetches_them_politely(
    reruns: Reruns,
) -> None:
    run = reruns.third
    assert reruns.made_due > 0
    assert run.code == 0, run.out + run.err[-3000:]
    assert run.port == reruns.killed_port
    # The due pages were fetched again: with the robots rules kept from the first run
    # (RFC 9309 §2.4 allows 24 h), judged over the whole history.
    assert run.number(r"test web saw (\d+) requests") >= reruns.made_due
    assert "politeness violations: 0" in run.out, run.out
    # Same URLs: the rerun refetches known pages, it does not store them again as new.
    assert run.number(r"stored (\d+)") < reruns.second.number(r"stored (\d+)")


def test_issue_14_the_test_web_ends_when_its_parent_does(tmp_path: Path) -> None:
    # A parent killed alone (not its group) cannot stop its web: the closed stdin does,
    # so the port is free for the rerun.
    argv = [sys.executable, "-m", "trawl.testweb", "--sites", "2", "--pages", "2",
            "--log", str(tmp_path / "log"), "--hosts-out", str(tmp_path / "hosts"),
            "--exit-with-stdin"]  # fmt: skip
    web = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert web.stdout is not None
        assert web.stdin is not None
        assert b'"ready": true' in web.stdout.readline()
        web.stdin.close()
        assert web.wait(10) == 0
    finally:
        if web.poll() is None:
            web.kill()
            web.wait()
        if web.stdout is not None:
            web.stdout.close()
    assert os.path.exists(tmp_path / "log")
