"""Shared by the e2e tests that run `trawl crawl` as a real process."""

from __future__ import annotations

import io
import signal
import sys
from typing import TYPE_CHECKING, Any

from trawl.cli.runner import CrawlSummary, run_async, run_crawl
from trawl.config import Settings, with_overrides
from trawl.store.records_sqlite import SqliteRecords
from trawl.store.sqlite_db import open_database

if TYPE_CHECKING:
    from pathlib import Path

    from trawl.model import PageRecord
    from trawl.testweb.process import TestWebProcess

CONTACT = "https://trawl.invalid/test"


def interruptible() -> None:
    """`preexec_fn` for a child a test stops with SIGINT (Ctrl-C): a test run started as a
    shell's background job (`nohup ... &`) ignores SIGINT, and its children would inherit
    that and never see the signal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def crawl_command(web: TestWebProcess, data: Path, max_time_s: float = 240) -> list[str]:
    """`python -m trawl crawl` of the test web's seeds into `data`."""
    return [
        sys.executable, "-m", "trawl", "crawl", *web.seeds,
        "--data", str(data), "--hosts-file", str(web.hosts_file),
        "--contact", CONTACT, "--max-time", str(max_time_s),
    ]  # fmt: skip


def web_settings(web: TestWebProcess, max_time_s: float, **sections: dict[str, Any]) -> Settings:
    """Settings for an in-process crawl of the test web: the test contact, the web's hosts
    file and a time limit, plus the test's own `section={key: value}` overrides."""
    crawl = {"contact_url": CONTACT, "max_time_s": max_time_s, **sections.pop("crawl", {})}
    network = {"hosts_file": str(web.hosts_file)}
    return with_overrides(Settings(), crawl=crawl, network=network, **sections)


def crawl_in_process(
    settings: Settings, data: Path, seeds: list[str]
) -> tuple[CrawlSummary, list[PageRecord]]:
    """Run `trawl crawl` in this process to its end; the summary and every page record."""
    summary = run_async(
        run_crawl(settings, data, [(u, "test seed") for u in seeds], io.StringIO(), is_tty=False),
        freeze_survivors=False,  # this test process lives on after the crawl
    )
    pages = list(SqliteRecords(open_database(data / "trawl.db", readonly=True)).iter_pages())
    return summary, pages
