"""The crawl's scope in the embedded database: seed scopes and run-time excludes.

Seeds are keyed by seed id (frontier.scope.seed_id_of), so a seed given again on a resumed
crawl updates its row in place and keeps its position; queued URLs name their seed by that
id. A row that does not read back (edited by hand, written by a future version) is skipped
and counted in `damaged`, never fatal: its seed's URLs fall back to the crawl's default.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from trawl.errors import ConfigError
from trawl.frontier.scope import SeedScope

if TYPE_CHECKING:
    import sqlite3


class SqliteScopeStore:
    """The ScopeStore port on a trawl database connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self.damaged = 0
        # A read-only connection to a data directory from before issue 16 has no tables.
        self._present = (
            conn.execute(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
                " AND name IN ('scope_seeds', 'scope_exclusions', 'scope_pages')"
            ).fetchone()[0]
            == 3
        )

    def seeds(self) -> list[tuple[int, SeedScope]]:
        if not self._present:
            return []
        out: list[tuple[int, SeedScope]] = []
        self.damaged = 0
        for seed_id, text in self._conn.execute(
            "SELECT seed_id, scope FROM scope_seeds ORDER BY position, seed_id"
        ):
            try:
                out.append((int(seed_id), SeedScope.from_json(json.loads(text), "scope_seeds")))
            except (ValueError, TypeError, ConfigError):
                self.damaged += 1
        return out

    def put_seeds(self, seeds: list[tuple[int, SeedScope]]) -> None:
        if not seeds:
            return
        self._begin()
        (last,) = self._conn.execute(
            "SELECT coalesce(max(position), -1) FROM scope_seeds"
        ).fetchone()
        self._conn.executemany(
            "INSERT INTO scope_seeds(seed_id, position, scope) VALUES (?, ?, ?)"
            " ON CONFLICT(seed_id) DO UPDATE SET scope = excluded.scope",
            [
                (seed_id, last + 1 + n, json.dumps(seed.to_json(), separators=(",", ":")))
                for n, (seed_id, seed) in enumerate(seeds)
            ],
        )

    def credits(self) -> dict[int, int]:
        if not self._present:
            return {}
        rows = self._conn.execute("SELECT seed_id, pages FROM scope_pages")
        return {int(seed_id): int(n) for seed_id, n in rows}

    def put_credits(self, pages: dict[int, int]) -> None:
        if not pages:
            return
        self._begin()
        self._conn.executemany(
            "INSERT INTO scope_pages(seed_id, pages) VALUES (?, ?)"
            " ON CONFLICT(seed_id) DO UPDATE SET pages = excluded.pages",
            list(pages.items()),
        )

    def exclusions(self) -> list[str]:
        if not self._present:
            return []
        rows = self._conn.execute("SELECT pattern FROM scope_exclusions ORDER BY added_at")
        return [pattern for (pattern,) in rows]

    def add_exclusion(self, pattern: str, at: float) -> bool:
        self._begin()
        cursor = self._conn.execute(
            "INSERT OR IGNORE INTO scope_exclusions(pattern, added_at) VALUES (?, ?)",
            (pattern, at),
        )
        return cursor.rowcount == 1

    def remove_exclusion(self, pattern: str) -> bool:
        self._begin()
        cursor = self._conn.execute("DELETE FROM scope_exclusions WHERE pattern = ?", (pattern,))
        return cursor.rowcount == 1

    def _begin(self) -> None:
        if not self._conn.in_transaction:
            self._conn.execute("BEGIN")

    def __repr__(self) -> str:
        return f"<SqliteScopeStore present={self._present} damaged={self.damaged}>"
