"""Only the page workers' forkserver ignores SIGINT/SIGTERM (loop.forkserver_preload).

Issue 15: `loop.workers` guessed from `sys.argv == ["-c"]` that it was being imported by the
forkserver, so any `python -c` process that had imported multiprocessing.forkserver first
(a pytest-xdist worker) ignored both signals, and so did every process it started: a
`trawl events --follow` started from it could not be stopped with Ctrl-C.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from trawl.loop.workers import start_process_pool


def _dispositions(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return out.stdout.strip()


def test_issue_15_a_python_c_process_importing_the_workers_keeps_its_signals() -> None:
    # Compared before and after the import: what the process inherited (a shell's
    # background job starts with SIGINT ignored) is not this test's business.
    code = (
        "import multiprocessing.forkserver, signal; "
        "before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM); "
        "import trawl.loop.workers; "
        "after = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM); "
        "print(before == after)"
    )
    assert _dispositions(code) == "True"


def _worker_dispositions() -> tuple[int, int]:
    import signal

    return int(signal.getsignal(signal.SIGINT)), int(signal.getsignal(signal.SIGTERM))


def _no_init() -> None:
    return None


@pytest.mark.timeout(120)
def test_workers_forked_from_the_forkserver_ignore_both() -> None:
    pool = start_process_pool(1, _no_init, ())
    try:
        assert pool.submit(_worker_dispositions).result(timeout=60) == (1, 1)  # SIG_IGN
    finally:
        pool.shutdown()
