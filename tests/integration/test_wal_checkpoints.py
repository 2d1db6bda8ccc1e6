"""WAL checkpoints on a thread (store.wal_checkpoints), on a real SQLite file."""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
from typing import TYPE_CHECKING

from trawl.store.sqlite_db import open_database
from trawl.store.wal_checkpoints import WalCheckpoints

if TYPE_CHECKING:
    from pathlib import Path


def _table_with_wal(db: Path, *, restart_frames: int) -> tuple[sqlite3.Connection, WalCheckpoints]:
    conn = open_database(db)
    conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)")
    wal = WalCheckpoints.take_over(conn)
    assert wal is not None
    wal._restart_frames = restart_frames
    return conn, wal


def _commit_rows(conn: sqlite3.Connection) -> None:
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO t(v) VALUES (?)", [(bytes(2000),) for _ in range(50)]
    )  # ~25 pages a commit
    conn.execute("COMMIT")


async def _thread_checkpoint_ended(wal: WalCheckpoints) -> None:
    """The crawl's next outcome takes a few milliseconds, and the thread's checkpoint ends
    meanwhile. Under a loaded disk its fsync can take far longer, the WAL grows past what
    the test bounds, and that is not what it is about: wait for the end (and its callback)."""
    await asyncio.sleep(0.005)
    running = wal._running
    if running is not None:
        await asyncio.wait_for(asyncio.gather(running, return_exceptions=True), 10.0)
    await asyncio.sleep(0)


def test_the_wal_is_copied_on_the_thread_and_starts_over_past_its_bound(tmp_path: Path) -> None:
    db = tmp_path / "crawl.db"

    async def crawl_like() -> tuple[WalCheckpoints, list[int]]:
        conn, wal = _table_with_wal(db, restart_frames=64)
        sizes = []
        for batch in range(40):
            _commit_rows(conn)
            wal.after_commit(conn)
            wal.start()
            await asyncio.sleep(0.01)
            sizes.append((tmp_path / "crawl.db-wal").stat().st_size // 4096)
            assert batch < 5 or wal.background > 0
        await wal.close()
        conn.close()
        return wal, sizes

    wal, sizes = asyncio.run(crawl_like())
    assert wal.background > 0
    assert wal.restarts > 0
    # Without the restarts the WAL would hold all 40 x ~25 pages; with them it stays near
    # the bound (plus a commit or two written while a checkpoint ran).
    assert max(sizes) < 4 * 64
    check = sqlite3.connect(db)
    assert check.execute("SELECT count(*) FROM t").fetchone()[0] == 40 * 50
    check.close()


def test_an_in_memory_database_has_no_checkpoints_to_take_over() -> None:
    conn = sqlite3.connect(":memory:")
    assert WalCheckpoints.take_over(conn) is None
    conn.close()


def test_the_automatic_checkpoint_is_turned_off(tmp_path: Path) -> None:
    conn = open_database(tmp_path / "crawl.db")
    assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
    assert WalCheckpoints.take_over(conn) is not None
    assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    conn.close()


def test_a_checkpoint_on_the_thread_copies_every_commit_so_far(tmp_path: Path) -> None:
    db = tmp_path / "crawl.db"

    async def commit_then_checkpoint() -> tuple[int, int]:
        conn = open_database(db)
        conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)")
        wal = WalCheckpoints.take_over(conn)
        assert wal is not None
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO t(v) VALUES (?)", [(bytes(2000),) for _ in range(100)])
        conn.execute("COMMIT")
        await wal.checkpoint()
        # A reader of the database file alone (immutable: the WAL, still open, unread) sees
        # every row: the checkpoint copied them.
        plain = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
        rows = plain.execute("SELECT count(*) FROM t").fetchone()[0]
        plain.close()
        await wal.close()
        conn.close()
        return rows, wal.background

    rows, background = asyncio.run(commit_then_checkpoint())
    assert rows == 100
    assert background == 1


def test_a_restart_starts_the_wal_over_at_the_first_try(tmp_path: Path) -> None:
    """The crawl's rhythm: commit, restart check, thread checkpoint, and its next
    transaction at once. A thread checkpoint started right after a restart kept the WAL from
    starting over, so every restart (a copy and two fsyncs on the crawl's loop) ran twice,
    on two commits in a row."""
    db = tmp_path / "crawl.db"

    async def crawl_like() -> list[int]:
        conn, wal = _table_with_wal(db, restart_frames=200)
        ran = []
        for _ in range(120):
            _commit_rows(conn)
            before = wal.restarts
            wal.after_commit(conn)
            ran.append(wal.restarts - before)
            wal.start()
            conn.execute("BEGIN")  # the crawl's next outcome writes at once
            conn.execute("INSERT INTO t(v) VALUES (?)", (b"x",))
            await asyncio.sleep(0.005)  # the thread's checkpoint runs meanwhile
            conn.execute("COMMIT")
        await wal.close()
        conn.close()
        return ran

    ran = asyncio.run(crawl_like())
    assert sum(ran) >= 5
    pairs = sum(1 for a, b in itertools.pairwise(ran) if a and b)
    assert pairs == 0, ran


def test_the_restart_comes_right_after_the_threads_copy_with_a_small_commit(tmp_path: Path) -> None:
    """With `restart_soon` set, the owner commits as soon as a thread's checkpoint has copied
    the WAL past its bound, and the restart copies only that commit's pages: the crawl's
    regular commits (each ~25 pages here) no longer restart the WAL themselves."""
    db = tmp_path / "crawl.db"

    async def crawl_like() -> tuple[WalCheckpoints, list[int], int, int]:
        conn, wal = _table_with_wal(db, restart_frames=200)
        early: list[int] = []
        largest = 0

        def commit_now() -> None:  # what Durability does: commit, then the restart check
            if conn.in_transaction:
                conn.execute("COMMIT")
            before = wal.restarts
            wal.after_commit(conn)
            early.append(wal.restarts - before)

        wal.restart_soon = commit_now
        regular = 0
        for _ in range(120):
            _commit_rows(conn)
            before = wal.restarts
            wal.after_commit(conn)
            regular += wal.restarts - before
            wal.start()
            conn.execute("BEGIN")  # the crawl's next outcome writes at once
            conn.execute("INSERT INTO t(v) VALUES (?)", (b"x",))
            await _thread_checkpoint_ended(wal)
            if conn.in_transaction:
                conn.execute("COMMIT")
            largest = max(largest, (tmp_path / "crawl.db-wal").stat().st_size // 4096)
        await wal.close()
        conn.close()
        return wal, early, regular, largest

    wal, early, regular, largest = asyncio.run(crawl_like())
    assert sum(early) >= 5
    assert regular == 0
    assert wal.restarts == sum(early)
    assert largest < 4 * 200  # pages: near the bound, as with restarts at the commits
    check = sqlite3.connect(db)
    assert check.execute("SELECT count(*) FROM t").fetchone()[0] == 120 * 51
    check.close()
