"""kill -9 at any moment, rerun with the same --data: nothing committed is lost or torn.

The crawler runs as a subprocess in its own process group and is SIGKILLed (with its worker
processes) at random moments and during a WARC rotation, a checkpoint and a commit
(soak_support: the CI-sized crash soak of issue 13; `python -m bench.crash_soak` runs it
with twenty kills); the test web's request log is the witness for what was fetched and how
politely, and the read-back commands and warcio for what was kept.
"""

from __future__ import annotations

import gzip
import os
import random
import signal
import subprocess
import sys
import time
from typing import TYPE_CHECKING

from tests.e2e.crash_support import check_store, reap_group
from tests.e2e.soak_support import SoakPlan, run_soak
from tests.e2e.support import crawl_command

from trawl.testweb.politeness import check_politeness
from trawl.testweb.process import TestWebProcess

if TYPE_CHECKING:
    from pathlib import Path

# The CI-sized crash soak: one kill at each kind of moment (see soak_support for how each is
# seen, and for the refetch bound: 2 pages per site per kill).
CI_SOAK = SoakPlan(
    sites=6, pages=6, kills=4, web_seed=3, random_kill_s=(1.5, 4.0), aim_timeout_s=4.0
)


def test_repeated_kill_9_loses_nothing(tmp_path: Path) -> None:
    """Issue 13: kill -9 at random moments and during a WARC rotation, a checkpoint and a
    commit; every invariant is checked in soak_support.check_soak."""
    seed = int(os.environ.get("TRAWL_CRASH_SEED", random.randrange(1 << 30)))
    print(f"crash test seed {seed} (rerun with TRAWL_CRASH_SEED={seed})", file=sys.stderr)
    report = run_soak(CI_SOAK, tmp_path, seed)
    print("\n".join(report.lines()), file=sys.stderr)
    assert sum(k.killed for k in report.kills) >= 2, "the crawl ended before most kills"


def test_torn_warc_tail_is_cut_on_startup(tmp_path: Path) -> None:
    with TestWebProcess(sites=2, pages=4, seed=5, workdir=tmp_path / "web") as web:
        data = tmp_path / "data"
        command = crawl_command(web, data)
        first = subprocess.run(command, capture_output=True, timeout=120, check=False)
        assert first.returncode == 0, first.stderr.decode()
        records_before = check_store(web, data)
        newest = max((data / "warc").glob("*.warc.gz"), key=lambda p: p.stat().st_mtime_ns)
        good_size = newest.stat().st_size
        member = gzip.compress(b"WARC/1.1\r\nWARC-Type: response\r\n" + b"x" * 4000)
        with newest.open("ab") as fh:
            fh.write(member[: len(member) // 2])  # a member cut off mid-write
        torn_size = newest.stat().st_size
        requests_before = len(web.requests())

        second = subprocess.run(command, capture_output=True, timeout=120, check=False)
        assert second.returncode == 0, second.stderr.decode()
        assert newest.stat().st_size == good_size, (
            f"{newest.name}: {torn_size} bytes with a torn tail, {newest.stat().st_size} after "
            f"restart, {good_size} before the tear"
        )
        assert len(web.requests()) == requests_before, "the rerun refetched finished work"
        assert check_store(web, data) == records_before

        # Garbage that is not gzip at all is cut the same way.
        with newest.open("ab") as fh:
            fh.write(b"\x00garbage after the last record\n" * 10)
        third = subprocess.run(command, capture_output=True, timeout=120, check=False)
        assert third.returncode == 0, third.stderr.decode()
        assert newest.stat().st_size == good_size
        assert check_store(web, data) == records_before


def test_kill_before_the_first_commit_keeps_the_site_gap(tmp_path: Path) -> None:
    """A kill within a commit interval of a site's first request: the restart still waits."""
    with TestWebProcess(sites=3, pages=1, seed=5, workdir=tmp_path / "web") as web:
        command = [*crawl_command(web, tmp_path / "data")[:-1], "3"]  # --max-time 3
        with (tmp_path / "run.err").open("wb") as err:
            proc = subprocess.Popen(command, stdout=err, stderr=err, start_new_session=True)
            try:
                deadline = time.monotonic() + 30
                while not web.requests() and time.monotonic() < deadline:
                    time.sleep(0.01)
                time.sleep(0.1)  # the first robots.txt requests are done, not yet committed
            finally:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        assert web.requests(), "no request before the kill"
        # Restart at once, as a supervisor would (workers are reaped afterwards).
        rerun = subprocess.run(command, capture_output=True, timeout=60, check=False)
        reap_group(proc.pid)
        assert rerun.returncode == 0, rerun.stderr.decode()
        requests = web.requests()
        violations = check_politeness(requests, **web.web.politeness_inputs())
        assert violations == [], (
            "the restart requested sites again within their gap: a site first requested after "
            "the last commit has no host record, so site_state() gives it no restart gap"
        )
