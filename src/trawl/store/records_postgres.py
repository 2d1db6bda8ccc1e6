"""Page records, host records and the page.fetched outbox in PostgreSQL, shared by the nodes.

Same methods and meaning as `SqliteRecords` (the reference; one contract suite runs on both).

How this works
- Writes are buffered. put_page, put_host, take_due, make_due and set_near_duplicate_of add
  statements to a pending batch and update an overlay of the rows they touch; `commit()` sends
  BEGIN, the batch, the events and COMMIT in one pipeline: one round trip. Reads look at the overlay
  first, so this process sees its own uncommitted writes as SqliteRecords' callers do, and no
  server transaction stays open (holding locks) between commits.
- A batch is all or nothing: its page records and their events commit in one transaction. A
  failed `commit()` loses the batch whole, as a crash would, and raises DataError; a failed
  `commit_batch` keeps it for another try (issue 19: a PostgreSQL outage loses nothing).
  Sending a batch again is safe: page and host statements upsert or set absolute values, and
  a rolled-back batch took no offsets. One case is not a rollback: the connection dropped
  after COMMIT was sent, so the batch may have committed. The retry then first looks for the
  batch's last event (its JSON, fetch time included, is unique) and drops the batch if it is
  there, so no event is written twice.
- A lost connection (the server restarted) is opened again, with `connect`, by the next call.
- Events are read only once committed. They get their offsets inside the committing
  transaction, from the one row of `event_offsets`, updated as the batch's last statement: the
  row lock is held until COMMIT, so a second committer waits for it and takes the next offsets
  only after the first is visible (PostgreSQL shows a commit before it releases its locks). So
  offsets become visible in order, with no holes (a rolled-back batch rolls its offsets back
  too), and a follower reading `offset >= n` either sees n or nothing after it: it can never
  skip an event that commits later with a smaller offset, the classic gap of a sequence (whose
  values are taken at insert, in one order, and committed in another).
- Partitions: given `partition_of(site)`, each page row carries its site's partition, and
  take_due, due_count and next_due_at can keep to the partitions a node owns. `partition_of`
  must be the same function on every node and map to a fixed space (say 1024 slots), so
  ownership can move between nodes without rewriting rows.

- Cluster nodes split a commit in two (`take_batch`, later `commit_batch`): the batch is cut
  when its WARC chunk is sealed and committed only once the chunk is uploaded and the links
  its pages found are sent. Meanwhile reads still see it (`get_page`, `get_host`).

Used from one thread (the crawl's event loop); reads are one round trip each.
"""

from __future__ import annotations

import heapq
import json
import time
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import psycopg

from trawl.errors import DataError, StoreUnavailable, UsageError
from trawl.model import UrlKind
from trawl.store.postgres_db import first_line
from trawl.store.records_sqlite import DuePage, events_from_rows, loads_record, page_from_json

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence

    from trawl.model import PageFetchedEvent, PageRecord

    Connection = psycopg.Connection[tuple[Any, ...]]

MISSING = object()  # `noted`'s answer when nothing uncommitted is noted
READ_PAGE_ROWS = 1000  # rows per query when iterating pages or hosts

_PAGE_COLUMNS = "url_hash, url, site, kind, last_fetched_at, record::text, due_at, partition"
_UPSERT_PAGE = (
    "INSERT INTO pages (url_hash, url, site, last_fetched_at, http_status, storage_key, record,"
    " due_at, kind, partition) VALUES (%s, %s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s)"
    " ON CONFLICT (url_hash) DO UPDATE SET url = EXCLUDED.url, site = EXCLUDED.site,"
    " last_fetched_at = EXCLUDED.last_fetched_at, http_status = EXCLUDED.http_status,"
    " storage_key = EXCLUDED.storage_key, record = EXCLUDED.record, due_at = EXCLUDED.due_at,"
    " kind = EXCLUDED.kind, partition = EXCLUDED.partition"
)
_HOLD_DUE = "UPDATE pages SET due_at = %s WHERE url_hash = ANY(%s)"
_MAKE_DUE = "UPDATE pages SET due_at = %s WHERE url_hash = ANY(%s) AND due_at > %s"
_SET_NEAR_DUPLICATE = (
    "UPDATE pages SET record = jsonb_set(record, '{nearDuplicateOf}', to_jsonb(%s::text))"
    " WHERE url_hash = %s"
)
_UPSERT_HOST = (
    "INSERT INTO hosts (site, record) VALUES (%s, %s::jsonb)"
    " ON CONFLICT (site) DO UPDATE SET record = EXCLUDED.record"
)
# One statement: take the offsets (locking the counter row until COMMIT) and insert the events
# numbered in put_page order. They travel as one JSON array: a text[] parameter would be
# escaped element by element in Python, which cost more than the rest of the commit.
_APPEND_EVENTS = """
WITH taken AS (
    UPDATE event_offsets SET next_offset = next_offset + %(n)s
    RETURNING next_offset - %(n)s AS first_offset
)
INSERT INTO events (event_offset, url_hash, event)
SELECT taken.first_offset + e.n - 1, e.event ->> 'urlHash', e.event
FROM taken, jsonb_array_elements(%(events)s::jsonb) WITH ORDINALITY AS e(event, n)
"""


@dataclass(slots=True)
class _PageRow:
    """A pages row as this process will have written it at commit."""

    url_hash: str
    url: str
    site: str
    kind: int
    last_fetched_at: float
    record: str  # JSON text: callers get a fresh PageRecord each read, as from SQLite
    due_at: float | None
    partition: int | None

    def is_due(self, now: float, partitions: Collection[int] | None) -> bool:
        return (
            self.due_at is not None
            and self.due_at <= now
            and (partitions is None or self.partition in partitions)
        )

    def due_page(self) -> DuePage:
        record = page_from_json(loads_record(self.record, "page record"))
        return DuePage(
            self.url,
            self.url_hash,
            self.site,
            record.depth,
            UrlKind(self.kind),
            record.importance,
            record.change_rate,
            record.last_fetched_at,
            len(record.visits),
        )


@dataclass(slots=True)
class _Batch:
    """The uncommitted writes and the rows they touch.

    Page statements keep their call order (an update may follow an upsert of the same row);
    hosts are whole-record upserts, so only each site's last record is sent."""

    statements: list[tuple[str, list[Sequence[object]]]] = field(default_factory=list)
    events: list[str] = field(default_factory=list)  # JSON texts, without offsets
    pages: dict[str, _PageRow] = field(default_factory=dict)
    hosts: dict[str, str] = field(default_factory=dict)  # site -> JSON text
    # What other tables' queued statements write, by kind then key (see `PostgresRecords.note`)
    notes: dict[str, dict[str, object]] = field(default_factory=dict)
    maybe_committed: bool = False  # a try lost its connection after sending COMMIT

    def add(self, sql: str, params: Sequence[object]) -> None:
        """Queue a page statement; a run of the same one goes out as one executemany."""
        if self.statements and self.statements[-1][0] is sql:
            self.statements[-1][1].append(params)
        else:
            self.statements.append((sql, [params]))

    def size(self) -> int:
        return sum(len(rows) for _, rows in self.statements) + len(self.hosts) + len(self.events)


@dataclass(frozen=True, slots=True)
class PostgresRecordsStats:
    commits: int
    events_written: int
    pending_writes: int  # statements and events waiting for commit()
    last_commit_s: float  # wall time of the last commit's round trip


class PostgresRecords:
    """PageRecords, HostRecords and EventLog over one PostgreSQL connection (from
    `postgres_db.open_postgres`); `partition_of` maps a site to its partition."""

    def __init__(
        self,
        conn: Connection,
        *,
        partition_of: Callable[[str], int] | None = None,
        connect: Callable[[], Connection] | None = None,
    ) -> None:
        self._conn = conn
        self._connect = connect
        self._partition_of = partition_of
        self._batch = _Batch()
        self._sending: list[_Batch] = []  # cut by take_batch, not yet committed
        self._commits = 0
        self._events_written = 0
        self._last_commit_s = 0.0
        info = conn.info
        self._where = f"{info.host}:{info.port}/{info.dbname}"

    def __repr__(self) -> str:
        return (
            f"<PostgresRecords {self._where} pending={self._batch.size()}"
            f" commits={self._commits} events_written={self._events_written}>"
        )

    def stats(self) -> PostgresRecordsStats:
        return PostgresRecordsStats(
            self._commits, self._events_written, self._batch.size(), self._last_commit_s
        )

    def close(self) -> None:
        """Close the connection (a reader's; the crawl's closes with the node)."""
        self._conn.close()

    # -- transactions -------------------------------------------------------------------
    def begin(self) -> None:
        """Nothing to do: a batch is always open, and goes to the server at commit()."""

    def commit(self) -> None:
        """Send the batch and its events in one transaction (one round trip); raises
        DataError if it failed, and then the batch is lost whole."""
        batch = self._take_batch()
        try:
            self.commit_batch(batch)
        except DataError:
            self._sending.remove(batch)
            raise

    def take_batch(self) -> object:
        """Cut the pending writes off into a batch of their own, for `commit_batch` later
        (reads keep seeing it until then); a later batch must not be committed before it."""
        return self._take_batch()

    def _take_batch(self) -> _Batch:
        batch, self._batch = self._batch, _Batch()
        self._sending.append(batch)
        return batch

    def commit_batch(self, batch: object) -> None:
        """`commit()` for a batch from `take_batch`. On failure (DataError) the batch stays
        cut, seen by reads, to be committed again (before any later batch)."""
        assert isinstance(batch, _Batch)
        if batch.size() and not self._committed_before(batch):
            self._commit_batch(batch)
        self._sending.remove(batch)

    def _committed_before(self, batch: _Batch) -> bool:
        """Whether an earlier try whose answer was lost committed the batch after all."""
        if not batch.maybe_committed:
            return False
        if not batch.events:
            return False  # statements only: sending them again changes nothing
        last = batch.events[-1]
        url_hash = loads_record(last, "page.fetched event").get("urlHash")
        rows = self._query(
            "SELECT 1 FROM events WHERE url_hash = %s AND event = %s::jsonb LIMIT 1",
            (url_hash, last),
        )
        batch.maybe_committed = False
        return bool(rows)

    def _commit_batch(self, batch: _Batch) -> None:
        started = time.perf_counter()
        with self._errors("commit"):
            self._reconnect_if_lost()
            try:
                self._send(batch)
            except psycopg.Error:
                # Lost mid-commit: COMMIT may have reached the server (see the header).
                batch.maybe_committed = self._conn.broken
                self._rollback()
                raise
        self._last_commit_s = time.perf_counter() - started
        self._commits += 1
        self._events_written += len(batch.events)

    def _send(self, batch: _Batch) -> None:
        # BEGIN and COMMIT are statements of the pipeline, not `conn.transaction()`, which
        # waits for BEGIN's answer and checks for errors before COMMIT: 4 round trips, not 1.
        # After an error the server skips the rest, COMMIT included, up to the pipeline's end.
        with self._conn.pipeline():
            cur = self._conn.cursor()
            cur.execute("BEGIN")
            for sql, rows in batch.statements:
                cur.executemany(sql, rows)
            if batch.hosts:
                cur.executemany(_UPSERT_HOST, list(batch.hosts.items()))
            if batch.events:
                events = f"[{','.join(batch.events)}]"
                cur.execute(_APPEND_EVENTS, {"n": len(batch.events), "events": events})
            cur.execute("COMMIT")

    def _reconnect_if_lost(self) -> None:
        """Open a new connection when the old one is lost (raises psycopg's error when the
        server still cannot be reached: the caller maps it)."""
        if (self._conn.broken or self._conn.closed) and self._connect is not None:
            with suppress(psycopg.Error):
                self._conn.close()
            self._conn = self._connect()

    def _rollback(self) -> None:
        """End the failed transaction, if the connection still works, so the next batch
        starts clean (a lost connection is reported by the caller's error)."""
        if self._conn.broken or self._conn.closed:
            return
        if self._conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            with suppress(psycopg.Error):
                self._conn.execute("ROLLBACK")

    # -- pages and events ---------------------------------------------------------------
    def put_page(self, record: PageRecord, event: PageFetchedEvent | None) -> None:
        text = _dumps(record.to_json(), f"page record of {record.url}")
        due_at = record.next_fetch_at if record.next_fetch_at > 0 else None
        partition = None if self._partition_of is None else self._partition_of(record.site)
        row = _PageRow(
            record.url_hash,
            record.url,
            record.site,
            int(record.kind),
            record.last_fetched_at,
            text,
            due_at,
            partition,
        )
        self._batch.pages[record.url_hash] = row
        self._batch.add(
            _UPSERT_PAGE,
            (
                *(row.url_hash, row.url, row.site, row.last_fetched_at, record.http_status),
                *(record.storage_key, text, due_at, row.kind, partition),
            ),
        )
        if event is not None:
            payload = event.to_json()
            del payload["offset"]  # the outbox assigns it at commit
            self._batch.events.append(_dumps(payload, f"page.fetched event of {event.url}"))

    def get_page(self, url_hash: str) -> PageRecord | None:
        row = self._batch.pages.get(url_hash)
        for sending in reversed(self._sending):
            row = row or sending.pages.get(url_hash)
        if row is not None:
            return page_from_json(loads_record(row.record, "page record"))
        rows = self._query("SELECT record::text FROM pages WHERE url_hash = %s", (url_hash,))
        return page_from_json(loads_record(rows[0][0], "page record")) if rows else None

    def iter_pages(self) -> Iterator[PageRecord]:
        """Every page record, oldest lastFetchedAt first (ties by urlHash)."""
        pending = sorted(
            (row.last_fetched_at, row.url_hash, row.record) for row in self._batch.pages.values()
        )
        merged = heapq.merge(self._stored_pages(list(self._batch.pages)), pending)
        for _, _, text in merged:
            yield page_from_json(loads_record(text, "page record"))

    def _stored_pages(self, skip: list[str]) -> Iterator[tuple[float, str, str]]:
        # Keyset pages, not one open cursor: the caller may query between two rows.
        after: tuple[float, str] = (float("-inf"), "")
        while True:
            rows = self._query(
                "SELECT last_fetched_at, url_hash, record::text FROM pages"
                " WHERE (last_fetched_at, url_hash) > (%s, %s) AND url_hash <> ALL(%s)"
                " ORDER BY last_fetched_at, url_hash LIMIT %s",
                (*after, skip, READ_PAGE_ROWS),
            )
            yield from ((float(at), h, text) for at, h, text in rows)
            if len(rows) < READ_PAGE_ROWS:
                return
            after = (float(rows[-1][0]), rows[-1][1])

    # -- recrawl ------------------------------------------------------------------------
    def take_due(
        self,
        now: float,
        limit: int,
        partitions: Collection[int] | None = None,
        *,
        hold_s: float | None = None,
    ) -> list[DuePage]:
        """Up to `limit` pages whose nextFetchAt has come, earliest first (of `partitions`
        only, when given); they leave the due index (the caller queues them in the same
        batch). With `hold_s` they come due again `hold_s` later instead of leaving it: a
        cluster node's queue is not in this transaction, and a node that dies with the page
        queued must not lose its refetch (the fetch's record sets the next due time)."""
        where, params = self._due_filter(partitions)
        stored = self._query(
            f"SELECT {_PAGE_COLUMNS} FROM pages WHERE due_at <= %s {where}"
            " ORDER BY due_at, url_hash LIMIT %s",
            (now, *params, limit),
        )
        candidates = [_PageRow(*row) for row in stored]
        candidates += [r for r in self._batch.pages.values() if r.is_due(now, partitions)]
        candidates.sort(key=lambda r: (r.due_at, r.url_hash))
        taken = candidates[:limit]
        if not taken:
            return []
        held = None if hold_s is None else now + hold_s
        for row in taken:
            row.due_at = held
            self._batch.pages[row.url_hash] = row
        self._batch.add(_HOLD_DUE, (held, [row.url_hash for row in taken]))
        return [row.due_page() for row in taken]

    def due_count(self, now: float, partitions: Collection[int] | None = None) -> int:
        where, params = self._due_filter(partitions)
        rows = self._query(f"SELECT count(*) FROM pages WHERE due_at <= %s {where}", (now, *params))
        pending = sum(r.is_due(now, partitions) for r in self._batch.pages.values())
        return int(rows[0][0]) + pending

    def next_due_at(self, partitions: Collection[int] | None = None) -> float | None:
        where, params = self._due_filter(partitions)
        rows = self._query(
            f"SELECT min(due_at) FROM pages WHERE due_at IS NOT NULL {where}", params
        )
        times = [r.due_at for r in self._batch.pages.values() if r.is_due(float("inf"), partitions)]
        if rows[0][0] is not None:
            times.append(float(rows[0][0]))
        return min((t for t in times if t is not None), default=None)

    def _due_filter(self, partitions: Collection[int] | None) -> tuple[str, tuple[object, ...]]:
        """SQL (and parameters) keeping stored rows out that the overlay replaces, and rows
        of other partitions."""
        skip = list(self._batch.pages)
        if partitions is None:
            return "AND url_hash <> ALL(%s)", (skip,)
        if self._partition_of is None:
            raise UsageError("take_due(partitions=...) needs PostgresRecords(partition_of=...)")
        return "AND url_hash <> ALL(%s) AND partition = ANY(%s)", (skip, list(partitions))

    def last_fetched(self, url_hashes: list[str]) -> dict[str, float]:
        """lastFetchedAt of those of `url_hashes` that have a page record."""
        pages = self._batch.pages
        out = {h: pages[h].last_fetched_at for h in url_hashes if h in pages}
        rest = [h for h in url_hashes if h not in pages]
        if rest:
            rows = self._query(
                "SELECT url_hash, last_fetched_at FROM pages WHERE url_hash = ANY(%s)", (rest,)
            )
            out.update((h, float(at)) for h, at in rows)
        return out

    def fetched_since(self, since: Mapping[int, float]) -> dict[int, list[str]]:
        """urlHashes of each partition's pages fetched at or after its `since` time
        (committed ones), in one query: what partitions' new owner must count as seen
        beyond their checkpoints."""
        out: dict[int, list[str]] = {}
        for partition, url_hash in self._fetched_since("p.url_hash", "", since):
            out.setdefault(partition, []).append(url_hash)
        return out

    def waiting_renders(self, since: Mapping[int, float]) -> dict[int, list[PageRecord]]:
        """Each partition's pages fetched at or after its `since` whose record says a
        render was queued and has not ended (issue 18: what a partition's new owner
        re-queues beyond its checkpoint), in one query."""
        out: dict[int, list[PageRecord]] = {}
        where = " WHERE p.record->'render' ? 'queuedAt'"
        for partition, text in self._fetched_since("p.record::text", where, since):
            out.setdefault(partition, []).append(page_from_json(loads_record(text, "page record")))
        return out

    def _fetched_since(
        self, column: str, where: str, since: Mapping[int, float]
    ) -> list[tuple[Any, ...]]:
        """(partition, `column`) of each partition's pages fetched at or after its time."""
        return self._query(
            f"SELECT p.partition, {column} FROM pages p"
            " JOIN unnest(%s::int[], %s::float8[]) AS s(partition, since)"
            f" ON p.partition = s.partition AND p.last_fetched_at >= s.since{where}",
            (list(since), list(since.values())),
        )

    def make_due(self, url_hashes: list[str], at: float) -> int:
        """Bring the refetch of waiting pages forward to `at` (a sitemap's lastmod said so)."""
        if not url_hashes:
            return 0
        self._load_rows(url_hashes)
        changed = 0
        for url_hash in url_hashes:
            row = self._batch.pages.get(url_hash)
            if row is not None and row.due_at is not None and row.due_at > at:
                row.due_at = at
                changed += 1
        self._batch.add(_MAKE_DUE, (at, url_hashes, at))
        return changed

    def set_near_duplicate_of(self, url_hash: str, main_url: str) -> None:
        """Point a stored page at the main copy that replaced it (its other fields, and its
        place in the due index, stay as they are)."""
        self._load_rows([url_hash])
        row = self._batch.pages.get(url_hash)
        if row is None:
            return
        data = loads_record(row.record, "page record")
        data["nearDuplicateOf"] = main_url
        row.record = _dumps(data, f"page record {url_hash}")
        self._batch.add(_SET_NEAR_DUPLICATE, (main_url, url_hash))

    def _load_rows(self, url_hashes: Iterable[str]) -> None:
        """Bring stored rows into the overlay, so reads see the change about to be queued."""
        missing = [h for h in url_hashes if h not in self._batch.pages]
        if missing:
            for row in self._query(
                f"SELECT {_PAGE_COLUMNS} FROM pages WHERE url_hash = ANY(%s)", (missing,)
            ):
                self._batch.pages[row[0]] = _PageRow(*row)

    def read_events(self, from_offset: int, limit: int) -> list[PageFetchedEvent]:
        """Committed events with offset >= from_offset, oldest first."""
        rows = self._query(
            "SELECT event_offset, event::text FROM events WHERE event_offset >= %s"
            " ORDER BY event_offset LIMIT %s",
            (from_offset, limit),
        )
        return events_from_rows(rows)

    def last_offset(self) -> int:
        """The offset of the last committed event, -1 when there is none."""
        rows = self._query("SELECT max(event_offset) FROM events", ())
        return -1 if rows[0][0] is None else int(rows[0][0])

    # -- other tables' writes, in the same transactions (store.fingerprints_postgres) -----
    def queue(self, sql: str, params: Sequence[object]) -> None:
        """Add a statement to the pending batch: it commits with the page records."""
        self._batch.add(sql, params)

    def note(self, kind: str, key: str, value: object) -> None:
        """Remember what a queued statement writes, for reads before it commits."""
        self._batch.notes.setdefault(kind, {})[key] = value

    def noted(self, kind: str, key: str) -> object:
        """The newest uncommitted note of (kind, key); `MISSING` when there is none."""
        for batch in (self._batch, *reversed(self._sending)):
            notes = batch.notes.get(kind)
            if notes is not None and key in notes:
                return notes[key]
        return MISSING

    def all_noted(self, kind: str) -> dict[str, object]:
        """Every uncommitted note of `kind`, the newest of each key, oldest key first."""
        merged: dict[str, object] = {}
        for batch in (*self._sending, self._batch):
            merged.update(batch.notes.get(kind, {}))
        return merged

    def query(self, sql: str, params: Sequence[object]) -> list[tuple[Any, ...]]:
        """Rows of a read (committed rows only: `noted` has the rest)."""
        return self._query(sql, params)

    # -- hosts --------------------------------------------------------------------------
    def put_host(self, site: str, record: dict[str, object]) -> None:
        self._batch.hosts[site] = _dumps(record, f"host record of {site}")

    def get_host(self, site: str) -> dict[str, object] | None:
        text = self._batch.hosts.get(site)
        for sending in reversed(self._sending):
            text = text or sending.hosts.get(site)
        if text is None:
            rows = self._query("SELECT record::text FROM hosts WHERE site = %s", (site,))
            text = rows[0][0] if rows else None
        return None if text is None else loads_record(text, "host record")

    def iter_hosts(self) -> Iterator[tuple[str, dict[str, object]]]:
        pending = sorted(self._batch.hosts.items())
        for site, text in heapq.merge(self._stored_hosts(list(self._batch.hosts)), pending):
            yield site, loads_record(text, "host record")

    def _stored_hosts(self, skip: list[str]) -> Iterator[tuple[str, str]]:
        after = ""
        while True:
            rows = self._query(
                "SELECT site, record::text FROM hosts WHERE site > %s AND site <> ALL(%s)"
                " ORDER BY site LIMIT %s",
                (after, skip, READ_PAGE_ROWS),
            )
            yield from ((site, text) for site, text in rows)
            if len(rows) < READ_PAGE_ROWS:
                return
            after = rows[-1][0]

    # -- the driver ---------------------------------------------------------------------
    def _query(self, sql: str, params: Sequence[object]) -> list[tuple[Any, ...]]:
        with self._errors("query"):
            self._reconnect_if_lost()
            return self._conn.execute(sql, params).fetchall()

    def ping(self) -> None:
        """One round trip (reconnecting if need be): raises DataError while the server is
        unreachable."""
        self._query("SELECT 1", ())

    @contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        """Driver errors as one-line DataErrors (a lost server stops the crawl, cleanly)."""
        try:
            yield
        except psycopg.OperationalError as exc:  # the server or the connection is gone
            raise StoreUnavailable(
                f"PostgreSQL {self._where}: {doing} failed: {first_line(exc)}"
            ) from None
        except psycopg.Error as exc:
            raise DataError(
                f"PostgreSQL {self._where}: {doing} failed: {first_line(exc)}"
            ) from None


def _dumps(data: dict[str, object], what: str) -> str:
    """JSON text for a JSONB column. NaN and Infinity (which Python's json writes, and the
    SQLite store keeps) fail here, naming the record, rather than failing the whole batch at
    commit: PostgreSQL's JSON has no such numbers."""
    try:
        return json.dumps(data, separators=(",", ":"), allow_nan=False)
    except ValueError as exc:
        raise UsageError(f"{what}: {exc} (PostgreSQL JSON has no NaN or Infinity)") from None
