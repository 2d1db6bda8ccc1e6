"""Issue 14, item 8: what `trawl serve --help` offers, what `trawl host` prints, and what
the summary says of the URLs left queued."""

from __future__ import annotations

import io
import json
from typing import TYPE_CHECKING

import pytest

from trawl.cli import main
from trawl.cli.readback import HOST_RECORD_FIELDS
from trawl.cli.runner import CrawlSummary, print_summary
from trawl.loop.stats import CrawlStats
from trawl.politeness.site_state import SiteState
from trawl.store.layout import DB_NAME
from trawl.store.records_sqlite import SqliteRecords
from trawl.store.sqlite_db import open_database

if TYPE_CHECKING:
    from pathlib import Path

T0 = 1_800_000_000.0


def help_of(command: str, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    return capsys.readouterr().out


def test_issue_14_serve_help_does_not_offer_continuous(capsys: pytest.CaptureFixture[str]) -> None:
    assert "--continuous" in help_of("crawl", capsys)
    serve_help = help_of("serve", capsys)
    assert "--continuous" not in serve_help
    assert "--max-pages" in serve_help  # the other crawl options stay
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", "--continuous"])
    assert exit_info.value.code == 2  # argparse: unrecognized argument


@pytest.fixture
def data(tmp_path: Path) -> Path:
    state = SiteState("a.test")
    state.count_page(T0)
    for n in range(30):  # the trap window's referrers and fingerprints: internals
        state.traps.note_referrer(f"r{n}.test")
        state.traps.note_page(n << 20)
    conn = open_database(tmp_path / DB_NAME)
    records = SqliteRecords(conn)
    records.begin()
    records.put_host("a.test", state.to_host_record("node-a"))
    records.commit()
    conn.close()
    return tmp_path


def host_line(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["host", *args]) == 0
    line: dict[str, object] = json.loads(capsys.readouterr().out)
    return line


def test_issue_14_host_prints_the_host_record_and_internals_only_with_debug(
    data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shown = host_line(["www.a.test", "--data", str(data)], capsys)
    assert list(shown) == list(HOST_RECORD_FIELDS)
    assert (shown["host"], shown["pagesToday"], shown["ownerMachine"]) == ("a.test", 1, "node-a")
    full = host_line(["a.test", "--data", str(data), "--debug"], capsys)
    assert {"clock", "day", "traps", "containment"} <= set(full)
    assert {k: full[k] for k in HOST_RECORD_FIELDS} == shown


def test_issue_14_summary_says_what_the_queued_urls_wait_for() -> None:
    out = io.StringIO()
    waiting = {"robots.txt": (2, 5), "a backoff or Retry-After": (1, 1)}
    print_summary(CrawlSummary(CrawlStats(), {}, 2.0, 3, 7, waiting_left=waiting), out)
    first = out.getvalue().splitlines()[0]
    # A crawl that ran out of work leaves only URLs of sites that wait (RunState.blocked);
    # one stopped by a limit leaves the rest too. Each says what for, and the next run
    # takes them up.
    assert first.endswith(
        "URLs left in queue 7 (5 waiting for robots.txt on 2 sites, 1 waiting for a backoff"
        " or Retry-After on 1 site, 1 not reached before the stop; the next run takes them up)"
    )
    out = io.StringIO()
    print_summary(CrawlSummary(CrawlStats(), {}, 2.0, 3, 0), out)
    assert "URLs left in queue 0\n" in out.getvalue()
    out = io.StringIO()
    print_summary(CrawlSummary(CrawlStats(), {}, 2.0, 3, 4), out)  # a limit's stop
    first = out.getvalue().splitlines()[0]
    assert first.endswith("queue 4 (4 not reached before the stop; the next run takes them up)")
