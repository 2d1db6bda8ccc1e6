"""Issue 13: SIGINT/SIGTERM to trawl's whole process group (systemd's default
`KillMode=control-group`, Ctrl-C in a terminal) checkpoints and exits 0, for `crawl`,
`serve`, `demo` and `node`; a worker process killed for any other reason is replaced.

Each command runs as a real process leading its own process group (start_new_session) so
that `os.killpg` reaches its forkserver, workers and, for the demo, its test web too. The
test web's request log says what was fetched; the read-back commands, warcio and the
database say what was kept.
"""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest
from tests.e2e.cluster_support import running_cluster
from tests.e2e.crash_support import (
    check_store,
    fetched_pages,
    group_members,
    has_exited,
    host_path,
    kill_group,
    queue_rows,
    read_lines,
    reap_group,
    start_in_group,
    wait_until,
    worker_pids,
)
from tests.e2e.serve_support import free_port
from tests.e2e.support import crawl_command

from trawl.testweb.politeness import check_politeness
from trawl.testweb.process import TestWebProcess

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from tests.servers.redis import RedisServer
    from tests.servers.s3 import S3Server

STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}
PAGES_BEFORE_SIGNAL = 8


@pytest.fixture
def web(tmp_path: Path) -> Iterator[TestWebProcess]:
    # 6 sites, ~90 pages: the slowest site needs ~22 s, so a signal after a few seconds
    # always comes mid-crawl.
    with TestWebProcess(sites=6, pages=6, seed=3, workdir=tmp_path / "web") as running:
        yield running


def signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals, timeout_s: float = 60) -> int:
    """Send `sig` to the whole process group of `proc`; its exit code once all of it ended."""
    try:
        os.killpg(proc.pid, sig)
        code = proc.wait(timeout_s)
        reap_group(proc.pid)
    finally:
        kill_group(proc)  # only if something hung
    return code


def assert_clean_exit(code: int, err: str) -> None:
    assert code == 0, err[-3000:]
    assert "Traceback" not in err, err[-3000:]


def assert_helpers_ignore_stop_signals(pgid: int) -> None:
    """The forkserver, the resource tracker and the workers: their parent stops them."""
    members = group_members(pgid)
    helpers = [m for m in members if m.pid != pgid and "trawl.testweb" not in m.cmdline]
    assert worker_pids(pgid), members
    for m in helpers:
        assert m.ignored >= STOP_SIGNALS, f"{m.cmdline[:120]} does not ignore SIGINT/SIGTERM"


@pytest.mark.parametrize(
    ("command", "sig", "rerun"),
    [
        pytest.param("crawl", signal.SIGTERM, True, id="crawl-SIGTERM-then-rerun"),
        pytest.param("crawl", signal.SIGINT, False, id="crawl-SIGINT"),
        pytest.param("serve", signal.SIGTERM, False, id="serve-SIGTERM"),
    ],
)
def test_issue_13_a_group_signal_checkpoints_and_exits_0(
    tmp_path: Path, web: TestWebProcess, command: str, sig: signal.Signals, rerun: bool
) -> None:
    data = tmp_path / "data"
    argv = crawl_command(web, data)
    if command == "serve":
        argv[argv.index("crawl")] = "serve"
        argv += ["--listen", f"127.0.0.1:{free_port()}"]
    proc = start_in_group(argv, tmp_path, command)
    try:
        wait_until("pages", lambda: len(fetched_pages(web)) >= PAGES_BEFORE_SIGNAL, 60)
        assert_helpers_ignore_stop_signals(proc.pid)
    except BaseException:
        kill_group(proc)
        raise
    code = signal_group(proc, sig)
    assert_clean_exit(code, (tmp_path / f"{command}.err").read_text())
    assert "pages fetched" in (tmp_path / f"{command}.out").read_text()

    # The checkpoint: every page the web answered has its record, event and WARC record.
    check_store(web, data, complete=False)
    # The frontier rows are intact: work is left for a rerun, and no lease is left open.
    rows = queue_rows(data)
    assert rows, "the signal came after the crawl's end: nothing left to check"
    assert {leased for _, leased in rows} == {0}, "a lease outlived the stop"
    if not rerun:
        return
    again = subprocess.run(argv, capture_output=True, timeout=180, check=False)
    assert_clean_exit(again.returncode, again.stderr.decode())
    check_store(web, data)
    # A clean stop loses nothing: no page is fetched twice across the two runs.
    fetched = fetched_pages(web)
    assert {p: n for p, n in fetched.items() if n > 1} == {}
    violations = check_politeness(web.requests(), **web.web.politeness_inputs())
    assert violations == [], violations[:5]


def _stored_pages(data: Path) -> int:
    try:
        conn = sqlite3.connect(f"file:{data / 'trawl.db'}?mode=ro", uri=True)
    except sqlite3.OperationalError:
        return 0
    try:
        # Stored bodies, as the test asserts after the stop: a record without one (a 404,
        # a redirect) once made the wait end at 8 records and 7 stored pages.
        query = "SELECT count(*) FROM pages WHERE storage_key != ''"
        return int(conn.execute(query).fetchone()[0])
    except sqlite3.OperationalError:
        return 0  # not created yet
    finally:
        conn.close()


def _port(err: str) -> int:
    match = re.search(r"loopback port (\d+)", err)
    assert match, err[-2000:]
    return int(match.group(1))


def test_issue_13_demo_survives_its_web_dying_first_and_a_rerun_brings_it_back(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    argv = [sys.executable, "-m", "trawl", "demo", "--sites", "6", "--pages", "4",
            "--data", str(data), "--max-time", "60"]  # fmt: skip
    proc = start_in_group(argv, tmp_path, "demo")
    try:
        wait_until("pages stored", lambda: _stored_pages(data) >= PAGES_BEFORE_SIGNAL, 60, 0.2)
        webs = [m for m in group_members(proc.pid) if "trawl.testweb" in m.cmdline]
        assert len(webs) == 1, webs
        # The worst order a group SIGINT can give: the demo's web is gone first.
        os.kill(webs[0].pid, signal.SIGINT)
        wait_until("the web's exit", lambda: has_exited(webs[0].pid), 10)
    except BaseException:
        kill_group(proc)
        raise
    code = signal_group(proc, signal.SIGINT)
    err, out = (tmp_path / "demo.err").read_text(), (tmp_path / "demo.out").read_text()
    assert_clean_exit(code, err)
    assert "politeness violations: 0" in out, out
    records = read_lines(["pages", "--data", str(data)])
    stored = {r["urlHash"] for r in records if r["storageKey"]}
    assert len(stored) >= PAGES_BEFORE_SIGNAL
    events = read_lines(["events", "--data", str(data)])
    assert sorted(e["urlHash"] for e in events) == sorted(stored), "one event per stored page"
    assert {leased for _, leased in queue_rows(data)} <= {0}, "a lease outlived the stop"

    again = subprocess.run(
        [*argv[:-1], "5"], capture_output=True, text=True, timeout=120, check=False
    )
    assert_clean_exit(again.returncode, again.stderr)
    assert _port(again.stderr) == _port(err), "the rerun's web is not back on its port"
    assert "politeness violations: 0" in again.stdout, again.stdout
    assert _stored_pages(data) >= len(stored)


def test_issue_13_a_node_checkpoints_on_a_group_sigterm(
    tmp_path: Path, web: TestWebProcess, redis_single: RedisServer, s3_server: S3Server,
    postgres_dsn: str,
) -> None:  # fmt: skip
    with running_cluster(tmp_path, web, redis_single, s3_server, postgres_dsn) as cluster:
        proc = cluster.start_node("n1", *web.seeds, new_session=True)
        try:
            cluster.wait_for("pages", lambda: len(fetched_pages(web)) >= PAGES_BEFORE_SIGNAL, 90)
            assert_helpers_ignore_stop_signals(proc.pid)
        except BaseException:
            kill_group(proc)
            raise
        code = signal_group(proc, signal.SIGTERM)
        log = cluster.log_of("n1")
        assert_clean_exit(code, log)
        summary = re.search(r"partitions taken (\d+), handed over (\d+)", log)
        assert summary, log[-2000:]
        assert summary.group(1) == summary.group(2) != "0", "every partition handed over"
        # The node's last checkpoint: every page the web answered has its record.
        stored = {host_path(str(url)) for (url,) in cluster.query("SELECT url FROM pages")}
        assert set(fetched_pages(web)) - stored == set(), "fetched pages without a record"


def test_issue_13_a_worker_killed_mid_crawl_is_replaced(
    tmp_path: Path, web: TestWebProcess
) -> None:
    data = tmp_path / "data"
    proc = start_in_group(crawl_command(web, data), tmp_path, "crawl")
    try:
        wait_until("pages", lambda: len(fetched_pages(web)) >= PAGES_BEFORE_SIGNAL, 60)
        os.kill(worker_pids(proc.pid)[0], signal.SIGKILL)
        code = proc.wait(180)
        reap_group(proc.pid)
    finally:
        kill_group(proc)
    err, out = (tmp_path / "crawl.err").read_text(), (tmp_path / "crawl.out").read_text()
    assert_clean_exit(code, err)
    assert err.count("a worker process died") == 1, err[-3000:]
    assert "worker processes died and were replaced 1 times" in out, out
    # The dead worker's batch was redone, not lost: every page stored, each fetched once.
    check_store(web, data)
    fetched = fetched_pages(web)
    assert {p: n for p, n in fetched.items() if n > 1} == {}
    violations = check_politeness(web.requests(), **web.web.politeness_inputs())
    assert violations == [], violations[:5]
