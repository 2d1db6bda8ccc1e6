"""The embedded database: one SQLite file (WAL) holding records, outbox and frontier.

Why one file: a fetched page's record, its page.fetched event, the links it adds to the
frontier and the end of its lease commit in ONE transaction, so a crash (kill -9 included)
can never leave a stored page without its event or lose the links it discovered.

Durability: WAL with synchronous=NORMAL survives a killed process (the OS keeps what was
written); checkpoints add an fsync for power loss. The connection is used only from the event
loop thread: each statement is microseconds, and one writer avoids lock waits.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from trawl.errors import DataError

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from pathlib import Path

SCHEMA_VERSION = 1
CACHE_KIB = 65_536
IN_CHUNK = 500  # values per `IN (...)` list: far below SQLite's bound on parameters

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS pages (
    url_hash TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    site TEXT NOT NULL,
    last_fetched_at REAL NOT NULL,
    http_status INTEGER NOT NULL,
    storage_key TEXT NOT NULL,
    record TEXT NOT NULL,
    due_at REAL,  -- nextFetchAt while the page waits for its refetch; NULL once queued
    kind INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS pages_site ON pages(site);
CREATE TABLE IF NOT EXISTS hosts (
    site TEXT PRIMARY KEY,
    record TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    offset INTEGER PRIMARY KEY AUTOINCREMENT,
    url_hash TEXT NOT NULL,
    event TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS queue (
    id INTEGER PRIMARY KEY,
    site TEXT NOT NULL,
    line INTEGER NOT NULL,
    url TEXT NOT NULL,
    url_hash TEXT NOT NULL,
    depth INTEGER NOT NULL,
    discovered_at REAL NOT NULL,
    leased_until REAL NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    kind INTEGER NOT NULL DEFAULT 0,
    score REAL NOT NULL DEFAULT 0,
    score_parts TEXT NOT NULL DEFAULT '',
    redirects INTEGER NOT NULL DEFAULT 0,
    not_before REAL NOT NULL DEFAULT 0,
    standing INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS must_crawl (url_hash TEXT PRIMARY KEY);
-- The fingerprint index: the first stored copy of each body (exact duplicates) ...
CREATE TABLE IF NOT EXISTS contents (
    content_hash TEXT PRIMARY KEY,
    url_hash TEXT NOT NULL,
    url TEXT NOT NULL,
    storage_key TEXT NOT NULL,
    record_id TEXT NOT NULL,
    fetched_at REAL NOT NULL,
    payload_digest TEXT NOT NULL
);
-- ... and the simhash of each main copy, split in four 16-bit blocks: two fingerprints at
-- most 3 bits apart agree on at least one block (pigeonhole), so four indexed lookups
-- find every candidate (Manku et al. 2007 with d + 1 = 4 tables).
CREATE TABLE IF NOT EXISTS simhashes (
    url_hash TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    site TEXT NOT NULL,
    simhash INTEGER NOT NULL,
    b0 INTEGER NOT NULL, b1 INTEGER NOT NULL, b2 INTEGER NOT NULL, b3 INTEGER NOT NULL
);
-- Covering (block, simhash): a candidate costs one index step, not a table lookup.
CREATE INDEX IF NOT EXISTS simhashes_b0s ON simhashes(b0, simhash);
CREATE INDEX IF NOT EXISTS simhashes_b1s ON simhashes(b1, simhash);
CREATE INDEX IF NOT EXISTS simhashes_b2s ON simhashes(b2, simhash);
CREATE INDEX IF NOT EXISTS simhashes_b3s ON simhashes(b3, simhash);
-- Which main copy each near copy names, so a new main copy can take the group over.
CREATE TABLE IF NOT EXISTS near_copies (
    url_hash TEXT PRIMARY KEY,
    main_url_hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS near_copies_main ON near_copies(main_url_hash);
-- What was skipped (issue 16, store/skips_sqlite.py): the last N skips in a rolling rowid
-- window, and the counts by reason over the whole crawl.
CREATE TABLE IF NOT EXISTS skipped (
    seq INTEGER PRIMARY KEY,
    url TEXT NOT NULL,
    reason TEXT NOT NULL,
    rule TEXT NOT NULL,
    referrer TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS skip_counts (reason TEXT PRIMARY KEY, n INTEGER NOT NULL);
-- The crawl's scope (issue 16, store/scope_sqlite.py): every seed's scope by seed id, in the
-- order seeds were first given, and the crawl-wide excludes added at run time.
CREATE TABLE IF NOT EXISTS scope_seeds (
    seed_id INTEGER PRIMARY KEY,
    position INTEGER NOT NULL,
    scope TEXT NOT NULL
);
-- A seed added to a crawl goes after the last (max(position)): without this index, a scan
-- of every seed on the crawl loop, 12 ms a seed added through the API with 100,000 seeds.
CREATE INDEX IF NOT EXISTS scope_seeds_position ON scope_seeds(position);
CREATE TABLE IF NOT EXISTS scope_exclusions (pattern TEXT PRIMARY KEY, added_at REAL NOT NULL);
-- URLs queued per seed id, for per-seed max_pages (a seed queued before its row exists, or
-- a URL of no known seed, still counts here).
CREATE TABLE IF NOT EXISTS scope_pages (seed_id INTEGER PRIMARY KEY, pages INTEGER NOT NULL);
-- Pages waiting for a browser (issue 18, render/queue_sqlite.py): one row a URL, pointing
-- at the plain response's WARC record, whose bytes the browser is served.
CREATE TABLE IF NOT EXISTS render_queue (
    url_hash TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    site TEXT NOT NULL,
    reason TEXT NOT NULL,
    storage_key TEXT NOT NULL,
    record_id TEXT NOT NULL,
    fetched_at REAL NOT NULL,
    queued_at REAL NOT NULL,
    leased_until REAL NOT NULL DEFAULT 0,
    not_before REAL NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    depth INTEGER NOT NULL DEFAULT 0,  -- the page's, for the links its render finds
    standing INTEGER NOT NULL DEFAULT 0,
    score REAL NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS render_queue_order ON render_queue(queued_at);
CREATE INDEX IF NOT EXISTS render_queue_site ON render_queue(site, leased_until);
"""

# Indexes on columns that `_add_missing_columns` may have just added.
_INDEXES = """
CREATE INDEX IF NOT EXISTS queue_head ON queue(site, leased_until, line, score DESC, id);
CREATE INDEX IF NOT EXISTS queue_url ON queue(url_hash);
CREATE INDEX IF NOT EXISTS pages_due ON pages(due_at) WHERE due_at IS NOT NULL;
DROP INDEX IF EXISTS queue_site;
"""


def in_chunks(values: Sequence[str]) -> Iterator[tuple[Sequence[str], str]]:
    """`values` in slices of `IN_CHUNK`, each with its "?,?,…" placeholders for `IN (…)`."""
    for at in range(0, len(values), IN_CHUNK):
        chunk = values[at : at + IN_CHUNK]
        yield chunk, ",".join("?" * len(chunk))


def open_database(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    """Open (creating when allowed) the trawl database; damaged files raise DataError."""
    if readonly and not path.exists():
        raise DataError(f"{path}: no trawl database here (wrong --data directory?)")
    try:
        if readonly:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA busy_timeout = 5000")
        if not readonly:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            # 64 MiB of page cache, not SQLite's 2 MB: with the default, the crawl loop's
            # statements (queue head, re-scores, page records) read most B-tree pages back
            # from the OS, and that was most of what held the loop when it ran late
            # (issue 17).
            conn.execute(f"PRAGMA cache_size = {-CACHE_KIB}")
            conn.executescript(_SCHEMA)
            _check_version(conn, path)
            _add_missing_columns(conn)
            conn.executescript(_INDEXES)
        else:
            conn.execute("SELECT count(*) FROM meta").fetchone()
    except sqlite3.DatabaseError as exc:
        raise DataError(f"{path}: damaged or not a trawl database ({exc})") from None
    return conn


def _check_version(conn: sqlite3.Connection, path: Path) -> None:
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is None:
        conn.execute(
            "INSERT INTO meta(key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
        )
    elif row[0] != str(SCHEMA_VERSION):
        raise DataError(f"{path}: schema version {row[0]}, this trawl understands {SCHEMA_VERSION}")


def _add_missing_columns(conn: sqlite3.Connection) -> None:
    """Columns added within schema version 1 (data directories from before they existed)."""
    added = {
        "queue": (
            ("attempts", "INTEGER NOT NULL DEFAULT 0"),
            ("kind", "INTEGER NOT NULL DEFAULT 0"),
            ("score", "REAL NOT NULL DEFAULT 0"),
            ("score_parts", "TEXT NOT NULL DEFAULT ''"),
            ("redirects", "INTEGER NOT NULL DEFAULT 0"),
            ("not_before", "REAL NOT NULL DEFAULT 0"),
            ("standing", "INTEGER NOT NULL DEFAULT 0"),
        ),
        "pages": (("due_at", "REAL"), ("kind", "INTEGER NOT NULL DEFAULT 0")),
    }
    for table, columns in added.items():
        present = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        for name, decl in columns:
            if name not in present:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {decl}")
