"""A crawl killed with SIGKILL takes its page workers and their forkserver with it.

Before: the workers (and the forkserver) ignore SIGTERM by design (loop.workers), each worker
holds the pipe the forkserver waits on and its call queue's writing end, so after a kill -9
of the crawl they waited on each other for ever: three orphans per kill (found while
measuring issue 15's suite, which left them behind after every run).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

# A stand-in crawl: starts a pool as the wiring does, prints the forkserver's and the
# workers' pids, then waits to be killed.
_CRAWL = """
import multiprocessing.forkserver as fs, sys, time
from trawl.loop.workers import start_process_pool
pool = start_process_pool(2, int, ())
pids = [fs._forkserver._forkserver_pid, *pool._processes]
print(" ".join(map(str, pids)), flush=True)
time.sleep(120)
"""


def _gone(pid: int) -> bool:
    """Not running: no such process, or a zombie nobody has reaped yet."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl(PR_SET_PDEATHSIG)")
def test_issue_15_kill_9_of_the_crawl_leaves_no_worker_behind() -> None:
    crawl = subprocess.Popen([sys.executable, "-c", _CRAWL], stdout=subprocess.PIPE, text=True)
    pids: list[int] = []
    try:
        assert crawl.stdout is not None
        pids = [int(p) for p in crawl.stdout.readline().split()]
        assert len(pids) == 3, "the forkserver and two workers"
        assert not any(_gone(pid) for pid in pids)
        crawl.send_signal(signal.SIGKILL)
        crawl.wait(timeout=10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not all(_gone(pid) for pid in pids):
            time.sleep(0.05)
        assert [pid for pid in pids if not _gone(pid)] == []
    finally:
        crawl.kill()
        crawl.wait(timeout=10)
        if crawl.stdout is not None:
            crawl.stdout.close()
        for pid in pids:  # the old behaviour must not leak into other tests
            if not _gone(pid):
                os.kill(pid, signal.SIGKILL)
