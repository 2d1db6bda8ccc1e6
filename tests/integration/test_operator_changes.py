"""An operator's change is durable when its API call answers, without committing the crawl's
batch, and a crash before the crawl's next commit loses none of it (issue 17).

Why: the calls that change the crawl (a site's limits, run-time excludes, seeds) committed
the crawl's open transaction, up to `commit_interval_s` of its writes, and under a
full-speed crawl that set their p99 past 100 ms. They now go to the operator log
(store.operator_log), and start-up replays what the database's last commit lacks. Through
the crawl's real context on real SQLite files, and a real kill -9 of the process that made
the changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from tests.integration.test_cluster_override_gap import StoppedClock

from trawl.config import Settings, with_overrides
from trawl.errors import DataError
from trawl.loop.operator_changes import add_operator_seeds
from trawl.politeness.site_limits import SiteLimits
from trawl.store.layout import DB_NAME, OPERATOR_LOG_NAME
from trawl.store.operator_log import OperatorLog, applied_seq
from trawl.store.sqlite_db import open_database
from trawl.urls.normalise import url_hash
from trawl.wiring.embedded import build_context

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = with_overrides(Settings(), crawl={"contact_url": "https://trawl.invalid/t"})

# Made in a child process that is then killed: a discovered URL (the crawl's own batch,
# never committed) and three operator changes, answered as the API's calls would be: once
# their writes to the log are done (`Durability.kept`).
_CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from tests.integration.test_cluster_override_gap import StoppedClock
    from tests.integration.test_operator_changes import SETTINGS
    from trawl.loop.operator_changes import add_operator_seeds
    from trawl.politeness.site_limits import SiteLimits
    from trawl.wiring.embedded import build_context
    from trawl.urls.normalise import url_hash

    ctx = build_context(SETTINGS, Path(sys.argv[1]), StoppedClock(1000.0))
    ctx.records.begin()  # the crawl's batch, open as it is between commits
    ctx.intake.add_seed("http://b.test/", url_hash("http://b.test/"), "b.test", seed_id=0)
    ctx.set_site_limits("a.test", SiteLimits(crawl_delay_s=5.0, set_at=1000.0))
    ctx.add_exclusion("/private/")
    added = add_operator_seeds(ctx, ["http://c.test/"], "normal")
    assert added.queued == 1, added
    ctx.durability.kept().result(timeout=30)  # what an API call waits for before answering
    print("made", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def _host_override(data: Path, site: str) -> object:
    conn = open_database(data / DB_NAME, readonly=True)
    try:
        row = conn.execute("SELECT record FROM hosts WHERE site = ?", (site,)).fetchone()
        return None if row is None else json.loads(row[0]).get("override")
    finally:
        conn.close()


def _queued(data: Path, site: str) -> int:
    conn = open_database(data / DB_NAME, readonly=True)
    try:
        return int(conn.execute("SELECT count(*) FROM queue WHERE site = ?", (site,)).fetchone()[0])
    finally:
        conn.close()


def test_changes_survive_a_kill_before_the_crawls_commit(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "src")])}
    # Output to files, not pipes, and a session of its own: the child's page workers'
    # forkserver outlives its kill -9 holding the child's stdout and stderr, and a pipe
    # then stays open until it exits (the run waited out its timeout, a flaky failure).
    out, err = tmp_path / "child.out", tmp_path / "child.err"
    with out.open("w") as stdout, err.open("w") as stderr:
        child = subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(data)],
            cwd=ROOT, env=env, stdout=stdout, stderr=stderr, start_new_session=True,
        )  # fmt: skip
        try:
            returncode = child.wait(timeout=120)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)  # its forkserver, if one outlived it
    assert returncode == -signal.SIGKILL, err.read_text()
    assert out.read_text().strip() == "made"

    # The calls did not commit the crawl's batch: neither the discovered URL nor the changes'
    # own writes are in the database; the log holds the three changes.
    assert _queued(data, "b.test") == 0
    assert _queued(data, "c.test") == 0
    assert _host_override(data, "a.test") is None

    ctx = build_context(SETTINGS, data, StoppedClock(2000.0))
    try:
        limits = ctx.sites.state("a.test").limits
        assert limits is not None
        assert limits.crawl_delay_s == 5.0
        assert ctx.scope.current.is_excluded("http://d.test/private/x")
        assert ctx.frontier.queued_for("c.test") == 1
        assert ctx.frontier.queued_for("b.test") == 0  # the crawl's own batch: not replayed
    finally:
        asyncio.run(ctx.durability.close())
    assert _host_override(data, "a.test") == {
        "crawlDelay": 5.0, "maxPagesPerDay": None, "paused": False, "setAt": 1000.0,
    }  # fmt: skip
    assert _queued(data, "c.test") == 1

    # Committed: a third start replays nothing, and the log keeps only its newest row.
    conn = open_database(data / DB_NAME, readonly=True)
    try:
        held = applied_seq(conn)
    finally:
        conn.close()
    log = OperatorLog(data / OPERATOR_LOG_NAME)
    try:
        assert held == log.last_seq() == 3
        assert [seq for seq, _ in log.after(0)] == [3]
    finally:
        log.close()


def test_an_api_change_does_not_commit_the_crawls_batch(tmp_path: Path) -> None:
    ctx = build_context(SETTINGS, tmp_path, StoppedClock(1000.0))
    try:
        ctx.records.begin()  # the crawl's batch, open as it is between commits
        ctx.intake.add_seed("http://b.test/", url_hash("http://b.test/"), "b.test", seed_id=0)
        ctx.set_site_limits("a.test", SiteLimits(paused=True, set_at=1000.0))
        add_operator_seeds(ctx, ["http://c.test/"], "high")
        assert _queued(tmp_path, "b.test") == 0, "the crawl's batch is left to its commit"
        ctx.durability.commit()
        assert _queued(tmp_path, "b.test") == 1
    finally:
        asyncio.run(ctx.durability.close())


def test_a_replay_skips_what_it_cannot_read_and_applies_the_rest(tmp_path: Path) -> None:
    ctx = build_context(SETTINGS, tmp_path, StoppedClock(1000.0))
    asyncio.run(ctx.durability.close())
    log = OperatorLog(tmp_path / OPERATOR_LOG_NAME)
    log.append({"op": "limits", "site": "a.test", "override": {"crawlDelay": "soon"}})
    log.append({"op": "teleport"})
    log.append({"op": "exclude", "pattern": "/never/"})
    scope = {"url": "", "type": "domain", "include": [], "exclude": [], "maxDepth": 2,
             "extraHops": 0, "maxPages": 0}  # fmt: skip
    log.append({"op": "seeds", "urls": ["http://e.test/"], "priority": "low", "scope": scope})
    log.append({"op": "seeds", "urls": "http://f.test/", "priority": "high", "scope": None})
    log._conn.execute("INSERT INTO changes(change) VALUES ('{not json')")
    log.close()
    ctx = build_context(SETTINGS, tmp_path, StoppedClock(2000.0))
    try:
        assert ctx.sites.state("a.test").limits is None
        assert ctx.scope.current.is_excluded("http://a.test/never/1")
        assert ctx.frontier.queued_for("e.test") == 1
        seeds = {seed.url: seed for seed in ctx.scope.seeds}
        assert seeds["http://e.test/"].type.value == "domain"
        assert seeds["http://e.test/"].max_depth == 2
        assert "http://f.test/" not in seeds  # its urls were not a list: skipped
        assert ctx.frontier.queued_for("f.test") == 0
    finally:
        asyncio.run(ctx.durability.close())


def test_the_log_keeps_order_forgets_what_is_held_and_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / OPERATOR_LOG_NAME
    log = OperatorLog(path)
    seqs = [log.append({"op": "lift", "pattern": f"/p{n}/"}) for n in range(4)]
    assert seqs == sorted(seqs)
    assert len(set(seqs)) == 4
    log.forget_through(seqs[3])  # the newest row stays: sequence numbers keep growing
    log.close()
    log = OperatorLog(path)
    try:
        assert log.after(0) == [(seqs[3], {"op": "lift", "pattern": "/p3/"})]
        assert log.append({"op": "lift", "pattern": "/p4/"}) == seqs[3] + 1
        log.forget_through(seqs[0])  # nothing that old is left
        assert [s for s, _ in log.after(0)] == [seqs[3], seqs[3] + 1]
    finally:
        log.close()


def test_a_damaged_log_is_a_clear_error_and_is_left_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / OPERATOR_LOG_NAME
    path.write_bytes(b"this is not a database, but someone's data" * 100)
    before = path.read_bytes()
    with pytest.raises(DataError, match="operator change log unreadable"):
        OperatorLog(path)
    assert path.read_bytes() == before


def test_the_log_is_written_off_the_crawl_loops_thread_in_the_order_applied(
    tmp_path: Path,
) -> None:
    """The crawl loop only numbers a change and queues its write: on the loop, the log's
    small commit waited behind the crawl's writeback (3 of 10 samples of its stalls over
    100 ms at ~950 pages/s, issue 17). The caller waits for `kept()` instead."""
    ctx = build_context(SETTINGS, tmp_path, StoppedClock(1000.0))
    writers: list[str] = []
    log = ctx.durability._operator_log
    assert log is not None
    real_append = log.append

    def append(change: dict[str, object], seq: int | None = None) -> int:
        writers.append(threading.current_thread().name)
        return real_append(change, seq)

    log.append = append  # type: ignore[method-assign]
    try:
        ctx.set_site_limits("a.test", SiteLimits(crawl_delay_s=3.0, set_at=1000.0))
        ctx.add_exclusion("/one/")
        ctx.set_site_limits("a.test", SiteLimits(crawl_delay_s=7.0, set_at=1001.0))
        ctx.durability.kept().result(timeout=30)
        assert len(writers) == 3
        assert threading.current_thread().name not in writers
        changes = [change for _, change in OperatorLog(tmp_path / OPERATOR_LOG_NAME).after(0)]
        assert changes == [
            {"op": "limits", "site": "a.test", "override": {
                "crawlDelay": 3.0, "maxPagesPerDay": None, "paused": False, "setAt": 1000.0}},
            {"op": "exclude", "pattern": "/one/"},
            {"op": "limits", "site": "a.test", "override": {
                "crawlDelay": 7.0, "maxPagesPerDay": None, "paused": False, "setAt": 1001.0}},
        ]  # fmt: skip
    finally:
        asyncio.run(ctx.durability.close())


def test_a_failed_log_write_reaches_the_caller_as_a_data_error(tmp_path: Path) -> None:
    ctx = build_context(SETTINGS, tmp_path, StoppedClock(1000.0))
    log = ctx.durability._operator_log
    assert log is not None
    try:
        log.append({"op": "lift", "pattern": "/taken/"}, 1)  # number 1 is taken now
        ctx.add_exclusion("/two/")  # numbered 1 by the crawl, which read the log before
        with pytest.raises(DataError, match="cannot write operator change 1"):
            ctx.durability.kept().result(timeout=30)
    finally:
        asyncio.run(ctx.durability.close())


def test_numbers_go_on_past_a_change_the_database_holds_and_the_log_lost(
    tmp_path: Path,
) -> None:
    """The crawl's commit may hold a change whose write to the log a kill cut short: the
    next changes must be numbered past it, or a replay (`after(applied_seq)`) skips them."""
    ctx = build_context(SETTINGS, tmp_path, StoppedClock(1000.0))
    asyncio.run(ctx.durability.close())
    conn = open_database(tmp_path / DB_NAME)
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('operator_seq', '5')")
    conn.commit()
    conn.close()
    ctx = build_context(SETTINGS, tmp_path, StoppedClock(2000.0))
    try:
        ctx.add_exclusion("/after/")
        ctx.durability.kept().result(timeout=30)
        log = OperatorLog(tmp_path / OPERATOR_LOG_NAME)
        try:
            assert log.after(5) == [(6, {"op": "exclude", "pattern": "/after/"})]
        finally:
            log.close()
    finally:
        asyncio.run(ctx.durability.close())
