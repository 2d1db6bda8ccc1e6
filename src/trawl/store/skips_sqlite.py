"""The skip log in the embedded database: the last N skips and the counts by reason.

The bound is a rolling rowid window: `skipped.seq` is the table's rowid, and SQLite gives a
new row the largest rowid plus one; the newest row is never deleted, so seq only grows.
After a batch is appended, one range delete on the primary key (`seq <= newest - N`)
drops what left the window: O(rows dropped + log N) a commit, no count(*), no trigger,
no second index. The table holds at most N rows after every write, whatever the batch size.

`skip_counts` holds each reason's whole count (an upsert of the value, not an increment),
so a resumed crawl reads them back into its SkipTally and goes on counting.

Reads with a reason scan the (at most N) kept rows newest first; at N = 10,000 that is a
few milliseconds, and an index on reason would cost every write for a read-only command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trawl.frontier.skips import DEFAULT_SAMPLE_SIZE, Skip

if TYPE_CHECKING:
    import sqlite3

    from trawl.frontier.skips import SkipBatch


class SqliteSkipLog:
    """The SkipLog port on a trawl database connection; writes join the open transaction."""

    def __init__(self, conn: sqlite3.Connection, *, keep: int = DEFAULT_SAMPLE_SIZE) -> None:
        if keep < 1:
            raise ValueError(f"keep must be >= 1, got {keep}")
        self._conn = conn
        self._keep = keep
        # A read-only connection to a data directory from before issue 16 has no tables
        # yet (only a writable open adds them): it has skipped nothing that was recorded.
        self._present = (
            conn.execute(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
                " AND name IN ('skipped', 'skip_counts')"
            ).fetchone()[0]
            == 2
        )

    @property
    def keep(self) -> int:
        return self._keep

    def write(self, batch: SkipBatch) -> None:
        if batch.is_empty:
            return
        if not self._conn.in_transaction:
            self._conn.execute("BEGIN")
        # Only the newest `keep` of a batch can stay, so the rest are never written.
        skips = batch.skips[-self._keep :]
        if skips:
            self._conn.executemany(
                "INSERT INTO skipped(url, reason, rule, referrer, at) VALUES (?, ?, ?, ?, ?)",
                [(s.url, s.reason, s.rule, s.referrer, s.at) for s in skips],
            )
            newest = self._conn.execute("SELECT max(seq) FROM skipped").fetchone()[0]
            self._conn.execute("DELETE FROM skipped WHERE seq <= ?", (newest - self._keep,))
        self._conn.executemany(
            "INSERT INTO skip_counts(reason, n) VALUES (?, ?)"
            " ON CONFLICT(reason) DO UPDATE SET n = excluded.n",
            list(batch.counts.items()),
        )

    def counts(self) -> dict[str, int]:
        if not self._present:
            return {}
        rows = self._conn.execute("SELECT reason, n FROM skip_counts ORDER BY reason")
        return {reason: n for reason, n in rows}

    def recent(self, limit: int, reason: str | None = None) -> list[Skip]:
        if not self._present or limit <= 0:
            return []
        columns = "SELECT url, reason, rule, referrer, at FROM skipped"
        if reason is None:
            rows = self._conn.execute(f"{columns} ORDER BY seq DESC LIMIT ?", (limit,))
        else:
            rows = self._conn.execute(
                f"{columns} WHERE reason = ? ORDER BY seq DESC LIMIT ?", (reason, limit)
            )
        return [Skip(*row) for row in rows]

    def __repr__(self) -> str:
        return f"<SqliteSkipLog keep={self._keep} present={self._present}>"
