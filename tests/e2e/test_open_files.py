"""A crawl of more sites than its open-files limit has descriptors for (fetch/open_files.py).

With the then default cap of 2,000 connections under a soft `ulimit -n` of 1,024 (many systems'
default), a crawl of more sites ran out of descriptors: connects failed with EMFILE and
counted against the sites, WAL checkpoints failed, and a WARC fsync ended the crawl
(seen on the quick bench web under `ulimit -n 256`: exit 2 after 601 errors). Here
`trawl crawl` runs as a real process under a hard limit of 128 on a web of 150 sites.
"""

from __future__ import annotations

import resource
import subprocess
from collections import Counter
from typing import TYPE_CHECKING

from tests.e2e.support import crawl_command

from trawl.config import FetchSettings
from trawl.fetch.open_files import RESERVED_FDS
from trawl.testweb.process import TestWebProcess

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

CAP = FetchSettings().max_connections
ROBOTS_PATHS = {"/robots.txt", "/robots-rules.txt", "/sitemap.xml"}


def _open_files_limit(soft: int, hard: int) -> Callable[[], None]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    return limit


def test_a_crawl_of_more_sites_than_open_files_completes_within_its_limit(
    tmp_path: Path,
) -> None:
    with TestWebProcess(sites=150, pages=3, seed=5, workdir=tmp_path / "web") as web:
        result = subprocess.run(
            crawl_command(web, tmp_path / "data", max_time_s=150),
            capture_output=True,
            text=True,
            timeout=240,
            preexec_fn=_open_files_limit(128, 128),
        )
        web.stop()
        requests = web.requests()
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    assert "Too many open files" not in output
    fetched = Counter((r.host, r.path) for r in requests if r.path not in ROBOTS_PATHS)
    assert set(fetched) == web.web.expected_fetches(web.port)
    assert [page for page, n in fetched.items() if n > 1] == []
    assert "errors 0" in result.stdout.splitlines(), result.stdout[-3000:]
    # 128 descriptors: half kept for the crawl's own files, the rest for sockets.
    said = f"open-files limit 128 (hard 128): at most 64 connections at once, not {CAP}"
    assert said in output


def test_the_soft_limit_is_raised_to_what_the_connections_need(tmp_path: Path) -> None:
    hard = min(8192, resource.getrlimit(resource.RLIMIT_NOFILE)[1])
    assert hard >= CAP + RESERVED_FDS, "this machine's hard limit is too low for the test"
    with TestWebProcess(sites=3, pages=2, seed=5, workdir=tmp_path / "web") as web:
        command = crawl_command(web, tmp_path / "data", max_time_s=30)
        # The crawl's limits, read by a child it starts: its page worker inherits them.
        result = subprocess.run(
            [command[0], "-c", _SHOW_LIMITS, *command[3:]],  # not "-m trawl"
            capture_output=True,
            text=True,
            timeout=60,
            preexec_fn=_open_files_limit(128, hard),
        )
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"limits after the crawl: {CAP + RESERVED_FDS} {hard}" in result.stdout
    assert "connections at once" not in result.stdout + result.stderr


# `python -m trawl crawl ...`, then the process's open-files limits.
_SHOW_LIMITS = """
import resource, runpy, sys
sys.argv = ["trawl", *sys.argv[1:]]
try:
    runpy.run_module("trawl", run_name="__main__")
except SystemExit as exit:
    print("limits after the crawl:", *resource.getrlimit(resource.RLIMIT_NOFILE))
    raise
"""
