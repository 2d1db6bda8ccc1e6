"""The operator's changes, durable at once in a small journal of their own (issue 17).

An API call that changes the crawl (a site's limits, a run-time exclude, seeds) must be
durable before it answers. It is applied to the crawl's state and written into the crawl's
open transaction like any other write; committing that transaction then would make the call
wait for up to `commit_interval_s` of the crawl's own writes (4-6 MB of WAL at 300 pages/s:
its p99 went past 100 ms under a full-speed crawl, bench/RESULTS.md). Instead the change is
appended here, in a file of a few rows committed on its own (tens of microseconds), and the
crawl's transaction notes the change's sequence number in `meta.operator_seq`. After a
crash, what the database's last commit did not hold (`seq` past its `operator_seq`) is
replayed at start-up (loop.operator_changes); rows the database holds are dropped at
checkpoints. The crawl writes here from a thread of its own, not its event loop (even this
small commit waited behind the crawl's writeback there: loop.durability). Same durability
as the database: WAL with synchronous=NORMAL survives a killed process.

    operator.db   changes(seq INTEGER PRIMARY KEY, change TEXT)   -- JSON, oldest first
"""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING, Any

from trawl.errors import DataError

if TYPE_CHECKING:
    from pathlib import Path

_APPLIED_KEY = "operator_seq"


class OperatorLog:
    """Append-only journal of operator changes. Its writes may run on another thread than
    the one that opened it (the crawl's are on a thread of their own, loop.durability), one
    thread at a time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self._conn.execute("PRAGMA busy_timeout = 5000")
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = NORMAL")
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS changes (seq INTEGER PRIMARY KEY, change TEXT NOT NULL)"
            )
        except sqlite3.DatabaseError as exc:
            raise DataError(f"{path}: operator change log unreadable ({exc})") from None

    def append(self, change: dict[str, Any], seq: int | None = None) -> int:
        """Write `change` durably (its own commit) as number `seq` (None: the next one),
        which must be larger than any before it; its sequence number. DataError when the
        write fails."""
        text = json.dumps(change, separators=(",", ":"))
        try:
            cur = self._conn.execute("INSERT INTO changes(seq, change) VALUES (?, ?)", (seq, text))
        except sqlite3.Error as exc:
            raise DataError(f"{self.path}: cannot write operator change {seq} ({exc})") from None
        written = cur.lastrowid
        assert written is not None
        return written

    def after(self, seq: int) -> list[tuple[int, object]]:
        """The changes past `seq`, oldest first; a row that is not JSON comes back as its
        text, for the replay to skip with a note."""
        out: list[tuple[int, object]] = []
        rows = self._conn.execute(
            "SELECT seq, change FROM changes WHERE seq > ? ORDER BY seq", (seq,)
        )
        for row_seq, text in rows:
            try:
                out.append((row_seq, json.loads(text)))
            except ValueError:
                out.append((row_seq, text))
        return out

    def last_seq(self) -> int:
        row = self._conn.execute("SELECT max(seq) FROM changes").fetchone()
        return int(row[0] or 0)

    def forget_through(self, seq: int) -> None:
        """Drop the changes up to `seq`: the database's commit holds them. The newest row
        stays, so sequence numbers keep growing (SQLite reuses a rowid only past the
        largest)."""
        self._conn.execute(
            "DELETE FROM changes WHERE seq <= ? AND seq < (SELECT max(seq) FROM changes)", (seq,)
        )

    def close(self) -> None:
        self._conn.close()


def applied_seq(conn: sqlite3.Connection) -> int:
    """The last operator change the trawl database's commits hold (0: none)."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (_APPLIED_KEY,)).fetchone()
    try:
        return int(row[0]) if row else 0
    except ValueError:
        return 0  # replaying every change kept is safe: each is idempotent


def note_applied(conn: sqlite3.Connection, seq: int) -> None:
    """In the open transaction: its commit holds operator changes up to `seq`."""
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (_APPLIED_KEY, str(seq)))
