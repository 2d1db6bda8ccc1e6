"""The render queue in the embedded database: pages waiting for a browser (issue 18).

How this works. A page the render policy sends is offered as a row naming its plain
response's WARC record (storage key and record id): the browser is served those bytes, so
the page is never fetched twice, and the conversion record refers to that response. Rows
are written in the crawl's open transaction and committed with it, so a queued render
survives a kill -9 as the frontier's rows do. Leases work like the frontier's: a leased row
is not handed out again until its lease runs out, and a restarted crawl, which has no
render in flight, ends every lease when it opens the queue (`reset_leases`).

Politeness: at most one page of a site is leased at a time. The browser's requests go
through the site clock anyway, but two renders of one site would only queue behind each
other there while holding two browser pages.

Re-offering a queued URL (the page was fetched again and still looks built by JavaScript)
points its row at the newest response and keeps its place, lease and attempts.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trawl.render.ports import RenderItem
from trawl.store.sqlite_db import in_chunks

if TYPE_CHECKING:
    import sqlite3


@dataclass(frozen=True, slots=True)
class RenderQueueStats:
    queued: int  # rows, leased ones included
    leased: int


_COLUMNS = (
    "url, url_hash, site, reason, storage_key, record_id, fetched_at, queued_at, attempts,"
    " depth, standing, score"
)


class SqliteRenderQueue:
    """Writes join the connection's open transaction; the crawl's commit makes them durable."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def __repr__(self) -> str:
        st = self.stats()
        return f"<SqliteRenderQueue queued={st.queued} leased={st.leased}>"

    def offer(self, item: RenderItem, now: float) -> None:
        """Queue `item` (the caller bounds the queue: see `stats`)."""
        self._begin()
        self._conn.execute(
            f"INSERT INTO render_queue({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?)"
            " ON CONFLICT(url_hash) DO UPDATE SET reason = excluded.reason,"
            " storage_key = excluded.storage_key, record_id = excluded.record_id,"
            " fetched_at = excluded.fetched_at",
            (item.url, item.url_hash, item.site, item.reason, item.storage_key,
             item.record_id, item.fetched_at, now, item.depth, item.standing, item.score),
        )  # fmt: skip

    def lease(self, now: float, lease_s: float, limit: int) -> list[RenderItem]:
        """Up to `limit` items, oldest first, at most one a site and none of a site that
        holds a lease already; each leased until `now + lease_s`, its attempts counted."""
        if limit < 1:
            return []
        rows = self._conn.execute(
            f"SELECT {_COLUMNS} FROM render_queue AS q INDEXED BY render_queue_order"
            " WHERE leased_until <= ? AND not_before <= ?"
            " AND NOT EXISTS (SELECT 1 FROM render_queue AS o"
            "   WHERE o.site = q.site AND o.leased_until > ?)"
            " ORDER BY queued_at",
            (now, now, now),
        )
        chosen: dict[str, RenderItem] = {}
        for row in rows:  # read lazily, in queue order: it stops at `limit` sites
            item = RenderItem(*row)
            if item.site not in chosen:
                chosen[item.site] = item
                if len(chosen) == limit:
                    break
        rows.close()
        if chosen:
            self._begin()
            self._conn.executemany(
                "UPDATE render_queue SET leased_until = ?, attempts = attempts + 1"
                " WHERE url_hash = ?",
                [(now + lease_s, item.url_hash) for item in chosen.values()],
            )
        return [_leased(item) for item in chosen.values()]

    def done(self, url_hash: str) -> None:
        """The render ended (rendered, cut or given up): the row goes."""
        self._begin()
        self._conn.execute("DELETE FROM render_queue WHERE url_hash = ?", (url_hash,))

    def retry(self, url_hash: str, not_before: float, *, uncounted: bool = False) -> None:
        """End the lease; the item is leased again from `not_before` on. `uncounted`: the
        lease never reached the browser (the site's partition was moving, a shared store
        was out of reach), so it gives back the attempt its lease counted."""
        self._begin()
        self._conn.execute(
            "UPDATE render_queue SET leased_until = 0, not_before = ?,"
            " attempts = max(attempts - ?, 0) WHERE url_hash = ?",
            (not_before, int(uncounted), url_hash),
        )

    def reset_leases(self) -> int:
        """End every lease (a crawl starting has no render in flight); returns how many."""
        self._begin()
        cur = self._conn.execute("UPDATE render_queue SET leased_until = 0 WHERE leased_until > 0")
        return cur.rowcount

    # -- a cluster node's partitions (cluster.node): rows move with their sites -------------
    def sites(self) -> set[str]:
        """Every site with a queued row."""
        return {site for (site,) in self._conn.execute("SELECT DISTINCT site FROM render_queue")}

    def rows_of(self, sites: list[str]) -> list[RenderItem]:
        """The queued rows of `sites`, leased ones included (as a checkpoint carries them:
        a new owner has no render in flight), in queue order."""
        out: list[RenderItem] = []
        for chunk, marks in in_chunks(sites):
            sql = f"SELECT {_COLUMNS} FROM render_queue WHERE site IN ({marks})"
            out.extend(RenderItem(*row) for row in self._conn.execute(sql, chunk))
        out.sort(key=lambda item: item.queued_at)
        return out

    def restore(self, items: list[RenderItem]) -> None:
        """Queue rows another owner checkpointed, with their place and attempts; a row of a
        URL queued here already keeps this one."""
        self._begin()
        self._conn.executemany(
            f"INSERT OR IGNORE INTO render_queue({_COLUMNS})"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [dataclasses.astuple(item) for item in items],
        )

    def drop_sites(self, sites: list[str]) -> None:
        """Forget the rows of `sites` (their partition was handed over, rows checkpointed)."""
        self._begin()
        self._conn.executemany(
            "DELETE FROM render_queue WHERE site = ?", [(site,) for site in sites]
        )

    def stats(self, now: float | None = None) -> RenderQueueStats:
        """`leased` counts leases running at `now` (any lease when None)."""
        at = 0.0 if now is None else now
        queued, leased = self._conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE leased_until > ?) FROM render_queue",
            (at,),
        ).fetchone()
        return RenderQueueStats(queued, leased or 0)

    def _begin(self) -> None:
        if not self._conn.in_transaction:
            self._conn.execute("BEGIN")


def _leased(item: RenderItem) -> RenderItem:
    return dataclasses.replace(item, attempts=item.attempts + 1)
