"""The cluster database: page records, host records, the page.fetched outbox and the
fingerprint index in PostgreSQL.

The tables mirror the embedded schema (`sqlite_db`): the record is JSONB beside the columns
that are queried (url_hash key, site, due_at, kind), plus `partition` (which node's share a
page is in) and `event_offsets`, the one-row counter that gives events their offsets at commit
(see `records_postgres` for why). Several nodes may start at once against an empty database:
schema creation holds an advisory lock, because concurrent `CREATE TABLE IF NOT EXISTS` of the
same table can still fail on PostgreSQL's catalog unique index.

Tables live in the connection's current schema: name another one with the DSN's
`options='-c search_path=...'` (the tests give each test its own).
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import IsolationLevel
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from trawl.errors import ConfigError, DataError, StoreUnavailable

SCHEMA_VERSION = 1
CONNECT_TIMEOUT_S = 10  # unless the DSN says otherwise: a black-holed host must not hang us
RECONNECT_TIMEOUT_S = 2  # a node reconnects on its event loop: keep its stall short
_SCHEMA_LOCK = 0x7472_6177_6C00  # pg_advisory_xact_lock key: "trawl\0"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS pages (
    url_hash TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    site TEXT NOT NULL,
    last_fetched_at DOUBLE PRECISION NOT NULL,
    http_status INTEGER NOT NULL,
    storage_key TEXT NOT NULL,
    record JSONB NOT NULL,
    due_at DOUBLE PRECISION,  -- nextFetchAt while the page waits for its refetch; NULL once queued
    kind SMALLINT NOT NULL DEFAULT 0,
    partition INTEGER  -- partition_of(site) of the writer; NULL when not partitioned
);
CREATE INDEX IF NOT EXISTS pages_site ON pages (site);
CREATE INDEX IF NOT EXISTS pages_due ON pages (due_at) WHERE due_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS pages_fetched ON pages (last_fetched_at, url_hash);
CREATE INDEX IF NOT EXISTS pages_partition ON pages (partition, last_fetched_at);
CREATE TABLE IF NOT EXISTS hosts (site TEXT PRIMARY KEY, record JSONB NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    event_offset BIGINT PRIMARY KEY,  -- dense from 1, in commit order
    url_hash TEXT NOT NULL,
    event JSONB NOT NULL
);
CREATE TABLE IF NOT EXISTS event_offsets (
    only_row BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (only_row),
    next_offset BIGINT NOT NULL
);
INSERT INTO event_offsets (only_row, next_offset) VALUES (TRUE, 1) ON CONFLICT DO NOTHING;
-- The cluster's fingerprint index (store.fingerprints_postgres), as the embedded one's:
-- the first stored copy of each body ...
CREATE TABLE IF NOT EXISTS contents (
    content_hash TEXT PRIMARY KEY,
    url_hash TEXT NOT NULL,
    url TEXT NOT NULL,
    storage_key TEXT NOT NULL,
    record_id TEXT NOT NULL,
    fetched_at DOUBLE PRECISION NOT NULL,
    payload_digest TEXT NOT NULL
);
-- ... the simhash of each main copy in four 16-bit blocks, each block's index sorted by the
-- whole fingerprint (store.fingerprints) ...
CREATE TABLE IF NOT EXISTS simhashes (
    url_hash TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    site TEXT NOT NULL,
    simhash BIGINT NOT NULL,
    b0 INTEGER NOT NULL, b1 INTEGER NOT NULL, b2 INTEGER NOT NULL, b3 INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS simhashes_b0s ON simhashes (b0, simhash);
CREATE INDEX IF NOT EXISTS simhashes_b1s ON simhashes (b1, simhash);
CREATE INDEX IF NOT EXISTS simhashes_b2s ON simhashes (b2, simhash);
CREATE INDEX IF NOT EXISTS simhashes_b3s ON simhashes (b3, simhash);
-- ... and which main copy each near copy names.
CREATE TABLE IF NOT EXISTS near_copies (url_hash TEXT PRIMARY KEY, main_url_hash TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS near_copies_main ON near_copies (main_url_hash);
"""


def open_postgres(dsn: str) -> psycopg.Connection[tuple[Any, ...]]:
    """Connect (autocommit: `PostgresRecords` opens its own transactions) and create or check
    the schema. A bad or unreachable DSN raises ConfigError, an incompatible schema DataError;
    messages never include the password."""
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.Error as exc:
        raise ConfigError(f"not a PostgreSQL connection string ({first_line(exc)})") from None
    where = describe(params)
    if "connect_timeout" not in params:
        dsn = make_conninfo(dsn, connect_timeout=CONNECT_TIMEOUT_S)
    try:
        conn = psycopg.connect(dsn, autocommit=True)
    except psycopg.Error as exc:
        raise ConfigError(f"PostgreSQL {where}: cannot connect ({first_line(exc)})") from None
    try:
        _prepare(conn, where)
    except psycopg.Error as exc:
        conn.close()
        raise DataError(
            f"PostgreSQL {where}: cannot set up the schema ({first_line(exc)})"
        ) from None
    except DataError:
        conn.close()
        raise
    return conn


def reconnect_postgres(dsn: str) -> psycopg.Connection[tuple[Any, ...]]:
    """A new connection to a database `open_postgres` set up, after the old one was lost
    (the server restarted): its session settings, not the schema. Raises psycopg.Error while
    the server cannot be reached, within RECONNECT_TIMEOUT_S unless the DSN says otherwise
    (the caller blocks its event loop that long)."""
    if "connect_timeout" not in conninfo_to_dict(dsn):
        dsn = make_conninfo(dsn, connect_timeout=RECONNECT_TIMEOUT_S)
    conn = psycopg.connect(dsn, autocommit=True)
    _set_session(conn)
    return conn


def reader_connection(dsn: str) -> psycopg.Connection[tuple[Any, ...]]:
    """A connection of its own for a thread that reads a database its node already set up
    (an API thread's), its session as `reconnect_postgres` sets it. The DSN worked when the
    node started, so a server that cannot be reached now is an outage: StoreUnavailable,
    which the API answers with 503, not the ConfigError of a node's start."""
    try:
        return reconnect_postgres(dsn)
    except psycopg.Error as exc:
        where = describe(conninfo_to_dict(dsn))
        raise StoreUnavailable(f"PostgreSQL {where}: cannot connect ({first_line(exc)})") from None


def _set_session(conn: psycopg.Connection[tuple[Any, ...]]) -> None:
    # Offsets rely on READ COMMITTED (a blocked counter update re-reads the row), and an
    # event must never be visible before it is durable (so no asynchronous commit).
    conn.isolation_level = IsolationLevel.READ_COMMITTED
    conn.execute("SET synchronous_commit = on")


def _prepare(conn: psycopg.Connection[tuple[Any, ...]], where: str) -> None:
    _set_session(conn)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        conn.execute(_SCHEMA)
        conn.execute(
            "INSERT INTO meta (key, value) VALUES ('schema_version', %s) ON CONFLICT DO NOTHING",
            (str(SCHEMA_VERSION),),
        )
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is None or row[0] != str(SCHEMA_VERSION):
        found = None if row is None else row[0]
        raise DataError(
            f"PostgreSQL {where}: schema version {found}, this trawl understands {SCHEMA_VERSION}"
        )


def describe(params: dict[str, Any]) -> str:
    """`host:port/dbname` for messages (the password stays out)."""
    host = params.get("host") or params.get("hostaddr") or "localhost"
    return (
        f"{host}:{params.get('port') or 5432}/{params.get('dbname') or params.get('user') or '?'}"
    )


def first_line(exc: BaseException) -> str:
    """A driver message as one line: libpq adds DETAIL/HINT lines and tabs."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = lines[0] if lines else type(exc).__name__
    return text.removeprefix("connection failed: ")
