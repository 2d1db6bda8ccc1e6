"""The frontier on SQLite (the Frontier port's embedded adapter): queued URLs on disk,
per-site scheduling in memory.

Queued URLs live only in the `queue` table (one row each; nothing per URL in RAM), ordered
per site by line, then score (highest first), then age; each row keeps its score's parts
so an operator can see why a URL waits where it does. A row sent back for a retry, or
waiting on a failing origin, carries `not_before`: until then the site's other ready URLs
go first, and after it the row competes as before (so it is fetched in the end; issue 13).
Memory holds one small slot per site with work (SiteSchedule) and the open leases. A leased
row stays in the table with `leased_until` set until its page commits, so a crash returns it
to line on the next start.

Writes join the database's open transaction and are committed by the crawl loop together
with the page records, so "page stored" and "its links queued" are one atomic step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trawl.frontier.leases import LeaseBook
from trawl.frontier.ports import QueuedUrl
from trawl.frontier.site_schedule import ScheduleStats, SiteSchedule
from trawl.model import CrawlUrl, Lease, Line, UrlKind
from trawl.store.sqlite_db import in_chunks

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable, Iterable, Sequence


_HEAD_COLUMNS = (
    "id, url, url_hash, depth, line, discovered_at, attempts, kind, score, score_parts,"
    " redirects, not_before, standing"
)


class SqliteFrontier:
    """Disk-backed two-layer frontier; used from the event loop thread only."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        lease_s: float,
        fast_share: float,
        refresh_share: float = 0.6,
    ) -> None:
        self._conn = conn
        self._schedule = SiteSchedule(fast_share=fast_share, refresh_share=refresh_share)
        self._leases = LeaseBook(lease_s)
        self._attempts: dict[int, int] = {}  # by lease id, for open leases only

    def load(self) -> int:
        """Return every lease left by a previous run to line and count the queue per site."""
        self._begin()
        self._conn.execute("UPDATE queue SET leased_until = 0 WHERE leased_until > 0")
        total = 0
        for site, line, n in self._conn.execute(
            "SELECT site, line, count(*) FROM queue GROUP BY site, line"
        ):
            self._schedule.add_work(site, Line(line), n)
            total += n
        return total

    # -- adding -------------------------------------------------------------------------
    def enqueue(self, item: CrawlUrl, ready_at: float = 0.0, attempts: int = 0) -> None:
        self._begin()
        self._conn.execute(
            "INSERT INTO queue(site, line, url, url_hash, depth, discovered_at, kind, score,"
            " score_parts, attempts, redirects, standing)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                item.site,
                int(item.line),
                item.url,
                item.url_hash,
                item.depth,
                item.discovered_at,
                int(item.kind),
                item.score,
                item.score_parts,
                attempts,
                item.redirects,
                item.standing,
            ),
        )
        self._schedule.add_work(item.site, item.line, 1, ready_at=ready_at)

    def rescore(
        self,
        url_hashes: Sequence[str],
        update: Callable[[str, str], tuple[float, str, Line] | None],
    ) -> int:
        """Re-score the waiting discovery URLs among `url_hashes` (one page's links whose
        in-link counts crossed a power of two): `update(url_hash, stored parts JSON)` gives
        a URL's new (score, parts JSON, line), or None to leave it. How many changed.

        One SELECT for the page's batch, not one per URL: most of them are already fetched,
        and the statement, not the index lookup, was the cost."""
        rows: list[tuple[int, str, str, int, str]] = []
        for chunk, marks in in_chunks(url_hashes):
            rows += self._conn.execute(
                "SELECT id, url_hash, site, line, score_parts FROM queue"
                f" WHERE url_hash IN ({marks}) AND leased_until = 0 AND line != ?",
                (*chunk, int(Line.REFRESH)),
            ).fetchall()
        changes: list[tuple[float, str, int, int]] = []
        done: set[str] = set()
        for row_id, url_hash, site, old_line, parts in rows:
            if url_hash in done:
                continue  # one row per URL, as a LIMIT 1 lookup would take
            done.add(url_hash)
            new = update(url_hash, parts)
            if new is None:
                continue
            score, parts, line = new
            changes.append((score, parts, int(line), row_id))
            if old_line != line:
                self._schedule.take_work(site, Line(old_line))
                self._schedule.add_work(site, line)
        if changes:
            self._begin()
            self._conn.executemany(
                "UPDATE queue SET score = ?, score_parts = ?, line = ? WHERE id = ?", changes
            )
        return len(changes)

    # -- handing out --------------------------------------------------------------------
    def pop_ready_site(self, now: float) -> tuple[str, Line] | None:
        """A site whose turn has come, and the line (refresh or discovery) to serve."""
        return self._schedule.pop_ready(now)

    def head(self, site: str, line: Line | None = None, now: float = 0.0) -> QueuedUrl | None:
        """The site's next URL: from `line`'s kind of work (refresh or discovery) when it
        has some, else any; discovery goes fast line first, highest score, then oldest.

        Rows whose `not_before` is after `now` come only when the site has nothing else
        ready, the one due soonest first.
        """
        # Due pages go by refresh priority (recrawl.schedule.refresh_priority), then age.
        wheres: tuple[str, ...]
        if line is Line.REFRESH:
            wheres = ("line = 2", "line < 2")
        elif line is not None:
            wheres = ("line < 2", "line = 2")
        else:
            wheres = ("1",)
        for where in wheres:
            if found := self._head(site, where, now):
                return found
        return self._head_deferred(site)

    def head_within_depth(self, site: str, max_depth: int, now: float) -> QueuedUrl | None:
        """The site's next ready discovery URL at link depth <= `max_depth` (a contained
        site's vouched URLs, frontier.containment). Walks the site's discovery rows in line
        order until one is shallow enough: call it once per turn, not per URL."""
        return self._head(site, "line < 2 AND depth <= ?", now, (max_depth,))

    def _head(
        self, site: str, where: str, now: float, params: tuple[int, ...] = ()
    ) -> QueuedUrl | None:
        row = self._conn.execute(
            f"SELECT {_HEAD_COLUMNS} FROM queue WHERE site = ? AND leased_until = 0 AND {where}"
            " AND not_before <= ? ORDER BY line, score DESC, id LIMIT 1",
            (site, *params, now),
        ).fetchone()
        return None if row is None else _queued(site, row)

    def _head_deferred(self, site: str) -> QueuedUrl | None:
        row = self._conn.execute(
            f"SELECT {_HEAD_COLUMNS} FROM queue WHERE site = ? AND leased_until = 0"
            " ORDER BY not_before, line, score DESC, id LIMIT 1",
            (site,),
        ).fetchone()
        return None if row is None else _queued(site, row)

    def defer(self, queued: QueuedUrl, until: float) -> None:
        """Let the site's other ready URLs go before this unleased one until `until`."""
        self._begin()
        self._conn.execute(
            "UPDATE queue SET not_before = max(not_before, ?) WHERE id = ?", (until, queued.row_id)
        )

    def lease(self, queued: QueuedUrl, now: float) -> Lease:
        lease = self._leases.grant(queued.row_id, queued.item, now)
        self._begin()
        self._conn.execute(
            "UPDATE queue SET leased_until = ? WHERE id = ?", (lease.expires_at, queued.row_id)
        )
        self._schedule.take_work(queued.item.site, queued.item.line)
        self._attempts[lease.lease_id] = queued.attempts
        return lease

    def attempts(self, lease: Lease) -> int:
        """How many earlier fetches of this URL ended in `retry`."""
        return self._attempts.get(lease.lease_id, 0)

    def drop(self, queued: QueuedUrl) -> None:
        """Remove an unleased URL for good (robots disallow, trap rule): outcome `skipped`."""
        self._begin()
        self._conn.execute("DELETE FROM queue WHERE id = ?", (queued.row_id,))
        self._schedule.take_work(queued.item.site, queued.item.line)

    def drop_matching_after(
        self, matches: Callable[[str], bool], after_id: int, max_rows: int
    ) -> tuple[list[CrawlUrl], int | None]:
        rows = self._conn.execute(
            f"SELECT site, {_HEAD_COLUMNS} FROM queue WHERE leased_until = 0 AND id > ?"
            " ORDER BY id LIMIT ?",
            (after_id, max_rows),
        ).fetchall()
        last = rows[-1][1] if len(rows) == max_rows else None
        dropped = [_queued(row[0], row[1:]) for row in rows if matches(row[2])]
        if dropped:
            self._begin()
            self._conn.executemany("DELETE FROM queue WHERE id = ?", [(q.row_id,) for q in dropped])
            for q in dropped:
                self._schedule.take_work(q.item.site, q.item.line)
        return [q.item for q in dropped], last

    def done(self, lease: Lease) -> None:
        self._leases.complete(lease.lease_id)
        self._attempts.pop(lease.lease_id, None)
        self._begin()
        self._conn.execute("DELETE FROM queue WHERE id = ?", (lease.lease_id,))

    def retry(self, lease: Lease, not_before: float = 0.0) -> None:
        """Put a leased URL back in line, one attempt more (outcome `retry`).

        When the site's next request comes is the site clock's business (backoff,
        Retry-After); which URL it is: the site's other ready URLs until `not_before`, so one
        failing URL cannot keep a healthy page of its site waiting (issue 13).
        """
        self._attempts.pop(lease.lease_id, None)
        if self._leases.complete(lease.lease_id):
            self._begin()
            self._conn.execute(
                "UPDATE queue SET attempts = attempts + 1, not_before = ? WHERE id = ?",
                (not_before, lease.lease_id),
            )
            self._unlease(lease)

    def put_back(self, lease: Lease) -> None:
        """Return a leased URL to line as it was: its request was never sent."""
        self._attempts.pop(lease.lease_id, None)
        if self._leases.complete(lease.lease_id):
            self._unlease(lease)

    def release_site(self, site: str, ready_at: float) -> None:
        self._schedule.release(site, ready_at)

    def is_held(self, site: str) -> bool:
        return self._schedule.is_busy(site)

    def hold_site(self, site: str) -> bool:
        """Take a site no turn holds, outside its turn (see SiteSchedule.hold)."""
        return self._schedule.hold(site)

    def move_site(self, site: str, ready_at: float) -> None:
        """A waiting site's turn comes at `ready_at` instead (earlier or later)."""
        self._schedule.move(site, ready_at)

    def requeue_expired(self, now: float) -> int:
        expired = self._leases.expired(now)
        for lease in expired:
            self._attempts.pop(lease.lease_id, None)
            self._unlease(lease)
        return len(expired)

    def next_ready_at(self) -> float | None:
        return self._schedule.next_ready_at()

    # -- moving sites between machines (cluster mode) -----------------------------------
    def queued_sites(self) -> list[str]:
        """Every site with a queued URL (leased ones included)."""
        return [site for (site,) in self._conn.execute("SELECT DISTINCT site FROM queue")]

    def rows_of(self, sites: Iterable[str]) -> list[tuple[Any, ...]]:
        """The queued rows of `sites` as (site, line, url, url_hash, depth, discovered_at,
        attempts, kind, score, score_parts, redirects, standing), leased ones included (not
        yet done)."""
        out: list[tuple[Any, ...]] = []
        for site in sites:
            out += self._conn.execute(
                "SELECT site, line, url, url_hash, depth, discovered_at, attempts, kind, score,"
                " score_parts, redirects, standing FROM queue WHERE site = ? ORDER BY id",
                (site,),
            ).fetchall()
        return out

    def drop_sites(self, sites: Iterable[str]) -> int:
        """Forget `sites` and their queued URLs (none may be leased: their partition moved
        to another machine, which now holds them). Returns the URLs dropped."""
        sites = list(sites)
        self._begin()
        self._conn.executemany("DELETE FROM queue WHERE site = ?", [(s,) for s in sites])
        return self._schedule.drop_sites(sites)

    # -- inspection ---------------------------------------------------------------------
    def queued(self) -> int:
        s = self._schedule.stats()
        return s.queued_fast + s.queued_slow + s.queued_refresh

    def forget_idle_sites(self) -> int:
        """Drop the schedule's slots of sites with nothing queued and no turn (a broad crawl
        meets millions of sites; their slots come back with their next URL). Costs the
        sites drained since the last call."""
        return self._schedule.forget_idle()

    def queued_for(self, site: str) -> int:
        return self._schedule.queued(site)

    def stats(self) -> ScheduleStats:
        return self._schedule.stats()

    def __repr__(self) -> str:
        return f"<SqliteFrontier {self._schedule!r} {self._leases!r}>"

    def _unlease(self, lease: Lease) -> None:
        self._begin()
        self._conn.execute("UPDATE queue SET leased_until = 0 WHERE id = ?", (lease.lease_id,))
        self._schedule.add_work(lease.item.site, lease.item.line, 1)

    def _begin(self) -> None:
        if not self._conn.in_transaction:
            self._conn.execute("BEGIN")


def _queued(site: str, row: tuple[Any, ...]) -> QueuedUrl:
    row_id, url, url_hash, depth, line, found_at, attempts, kind, score, parts, hops, wait = row[
        :12
    ]
    item = CrawlUrl(
        url, url_hash, site, depth, Line(line), found_at, UrlKind(kind), score, parts, hops,
        standing=row[12],
    )  # fmt: skip
    return QueuedUrl(row_id, item, attempts, wait)
