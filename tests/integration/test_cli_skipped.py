"""Issue 16: `trawl skipped` reads a data directory's skip log (filled here through the
SQLite adapter, as a crawl's commits will fill it)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from trawl.cli import main
from trawl.frontier.skips import SkipTally
from trawl.store.layout import DB_NAME
from trawl.store.skips_sqlite import SqliteSkipLog
from trawl.store.sqlite_db import open_database

if TYPE_CHECKING:
    from pathlib import Path

AT = 1_796_000_000.0  # 2026-11-30 00:53:20 UTC


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A data directory whose crawl skipped 30 URLs in two commits, 25 kept (keep=25)."""
    conn = open_database(tmp_path / DB_NAME)
    log = SqliteSkipLog(conn, keep=25)
    tally = SkipTally(sample_size=25)
    for n in range(30):
        reason = "exclude" if n % 3 == 0 else "scope"
        rule = r"/tag/" if reason == "exclude" else "domain a.test"
        tally.note(f"http://a.test/{n}", reason, rule, f"http://a.test/p{n}", AT + n)
        if n == 14:
            log.write(tally.take_unflushed())
            conn.commit()
    tally.note("http://b.test/", "hops", "", "", AT + 30)
    log.write(tally.take_unflushed())
    conn.commit()
    conn.close()
    return tmp_path


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["skipped", *args]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    return captured.out


def test_human_output_counts_then_newest_skips(
    data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = run(["--data", str(data), "--limit", "3"], capsys)
    assert out == (
        "skipped, by reason (whole crawl):\n"
        "  scope           20\n"
        "  exclude         10\n"
        "  hops             1\n"
        "  total           31\n"
        "most recent 3:\n"
        "  2026-11-30 00:53:50  hops     http://b.test/\n"
        "  2026-11-30 00:53:49  scope    http://a.test/29  rule: domain a.test"
        "  from: http://a.test/p29\n"
        "  2026-11-30 00:53:48  scope    http://a.test/28  rule: domain a.test"
        "  from: http://a.test/p28\n"
    )


def test_human_output_of_one_reason_defaults_to_twenty(
    data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = run(["--data", str(data), "--reason", "exclude"], capsys).splitlines()
    assert out[:3] == [
        "skipped, by reason (whole crawl):",
        "  exclude         10",
        "most recent 8:",
    ]
    # 10 counted, but the log keeps the last 25 skips of any reason: 8 of them excludes.
    urls = [line.split()[3] for line in out[3:]]
    assert urls == [f"http://a.test/{n}" for n in (27, 24, 21, 18, 15, 12, 9, 6)]


def test_json_lines_print_every_kept_skip(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [json.loads(line) for line in run(["--data", str(data), "--json"], capsys).splitlines()]
    assert lines[:3] == [
        {"type": "count", "reason": "scope", "count": 20},
        {"type": "count", "reason": "exclude", "count": 10},
        {"type": "count", "reason": "hops", "count": 1},
    ]
    skips = lines[3:]
    assert len(skips) == 25
    assert skips[0] == {
        "type": "skip", "url": "http://b.test/", "reason": "hops", "rule": "", "referrer": "",
        "at": AT + 30,
    }  # fmt: skip
    assert skips[1] == {
        "type": "skip", "url": "http://a.test/29", "reason": "scope", "rule": "domain a.test",
        "referrer": "http://a.test/p29", "at": AT + 29,
    }  # fmt: skip
    assert [s["url"] for s in skips[-1:]] == ["http://a.test/6"]  # 0-5 left the window


def test_json_with_reason_and_limit_zero_prints_the_count_only(
    data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = run(["--data", str(data), "--json", "--reason", "max_depth", "--limit", "0"], capsys)
    assert out == '{"type":"count","reason":"max_depth","count":0}\n'


def test_nothing_skipped_yet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    open_database(tmp_path / DB_NAME).close()
    assert run(["--data", str(tmp_path)], capsys) == "nothing skipped\n"
    assert run(["--data", str(tmp_path), "--reason", "scope"], capsys) == (
        "nothing skipped for reason 'scope'\n"
    )


def test_missing_data_directory_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["skipped", "--data", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("trawl: error: ")
    assert "no trawl database here" in err
    assert err.count("\n") == 1


def test_negative_limit_is_a_usage_error(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["skipped", "--data", str(data), "--limit", "-1"])
    assert exit_info.value.code == 2
    assert "--limit wants a count >= 0" in capsys.readouterr().err


# Runs `trawl skipped` in a fresh interpreter, then prints the trawl and heavy modules loaded.
_RUN = """
import json, sys
from trawl.cli import main
status = main(sys.argv[1:])
print(json.dumps({"status": status, "modules": sorted(sys.modules)}))
"""
HEAVY = (
    "aiohttp", "fastapi", "uvicorn", "boto3", "psycopg", "redis", "resiliparse", "selectolax",
    "warcio", "uvloop", "pydantic", "publicsuffixlist", "asyncio",
)  # fmt: skip


def test_the_command_imports_no_crawl_machinery(data: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _RUN, "skipped", "--data", str(data), "--limit", "0"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    answer = json.loads(done.stdout.splitlines()[-1])
    assert answer["status"] == 0
    modules = set(answer["modules"])
    assert sorted(m for m in modules if m.split(".")[0] in HEAVY) == []
    crawl_machinery = ("trawl.loop", "trawl.wiring", "trawl.cluster", "trawl.frontier.intake")
    assert sorted(m for m in modules if m.startswith(crawl_machinery)) == []
