"""Page records, host records and the page.fetched outbox in the embedded SQLite database.

Writes join the connection's open transaction; `commit()` makes a batch durable. The caller
flushes the WARC files first, so a committed record never points at bytes not yet written.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, NamedTuple

from trawl.errors import DataError
from trawl.model import PAGE_FETCHED, PageFetchedEvent, PageRecord, UrlKind
from trawl.store.json_text import compact_json
from trawl.store.sqlite_db import in_chunks

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Iterable, Iterator

_PAGE_FIELDS = {
    "urlHash": "url_hash",
    "url": "url",
    "lastFetchedAt": "last_fetched_at",
    "httpStatus": "http_status",
    "contentHash": "content_hash",
    "simhash": "simhash",
    "etag": "etag",
    "lastModified": "last_modified",
    "changeRate": "change_rate",
    "nextFetchAt": "next_fetch_at",
    "storageKey": "storage_key",
    "site": "site",
    "depth": "depth",
    "contentType": "content_type",
    "redirectTo": "redirect_to",
    "error": "error",
    "lastStatus": "last_status",
    "visits": "visits",
    "importance": "importance",
    "bodyBytes": "body_bytes",
    "warcRecordId": "warc_record_id",
    "duplicateOf": "duplicate_of",
    "nearDuplicateOf": "near_duplicate_of",
}


_OWN_KEYS = frozenset({"kind", "render"})  # read apart from _PAGE_FIELDS


def page_from_json(data: dict[str, object]) -> PageRecord:
    known: dict[str, object] = {
        attr: data[name] for name, attr in _PAGE_FIELDS.items() if name in data
    }
    kind = data.get("kind")
    if isinstance(kind, str) and kind.upper() in UrlKind.__members__:
        known["kind"] = UrlKind[kind.upper()]
    render = data.get("render")
    if isinstance(render, dict):
        known["render"] = render
    extra = {k: str(v) for k, v in data.items() if k not in _PAGE_FIELDS and k not in _OWN_KEYS}
    return PageRecord(**known, extra=extra)  # type: ignore[arg-type]  # values come from to_json


class DuePage(NamedTuple):
    url: str
    url_hash: str
    site: str
    depth: int
    kind: UrlKind
    importance: float
    change_rate: float
    last_fetched_at: float
    visits: int  # refetches in the record's history


def event_from_json(data: dict[str, object]) -> PageFetchedEvent:
    return PageFetchedEvent(
        url=str(data["url"]),
        url_hash=str(data["urlHash"]),
        storage_key=str(data["storageKey"]),
        content_hash=str(data["contentHash"]),
        http_status=int(data["httpStatus"]),  # type: ignore[call-overload]  # JSON int
        fetched_at=float(data["fetchedAt"]),  # type: ignore[arg-type]  # JSON number
        offset=int(data.get("offset", -1)),  # type: ignore[call-overload]  # JSON int
        kind=str(data.get("type", PAGE_FETCHED)),
        rendered_at=float(data.get("renderedAt", 0.0)),  # type: ignore[arg-type]  # JSON number
        render_state=str(data.get("renderState", "")),
    )


class SqliteRecords:
    """PageRecords, HostRecords and EventLog over one SQLite connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def close(self) -> None:
        self._conn.close()

    # -- transactions -------------------------------------------------------------------
    def begin(self) -> None:
        if not self._conn.in_transaction:
            self._conn.execute("BEGIN")

    def commit(self) -> None:
        if self._conn.in_transaction:
            self._conn.execute("COMMIT")

    # -- pages and events ---------------------------------------------------------------
    def put_page(self, record: PageRecord, event: PageFetchedEvent | None) -> None:
        self.begin()
        self._conn.execute(
            "INSERT OR REPLACE INTO pages(url_hash, url, site, last_fetched_at, http_status,"
            " storage_key, record, due_at, kind) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                record.url_hash,
                record.url,
                record.site,
                record.last_fetched_at,
                record.http_status,
                record.storage_key,
                compact_json(record.to_json()),
                record.next_fetch_at if record.next_fetch_at > 0 else None,
                int(record.kind),
            ),
        )
        if event is not None:
            payload = event.to_json()
            del payload["offset"]  # the outbox assigns it
            self._conn.execute(
                "INSERT INTO events(url_hash, event) VALUES (?, ?)",
                (event.url_hash, compact_json(payload)),
            )

    def get_page(self, url_hash: str) -> PageRecord | None:
        row = self._conn.execute(
            "SELECT record FROM pages WHERE url_hash = ?", (url_hash,)
        ).fetchone()
        return None if row is None else page_from_json(loads_record(row[0], "page record"))

    def iter_pages(self) -> Iterator[PageRecord]:
        for (text,) in self._conn.execute("SELECT record FROM pages ORDER BY last_fetched_at"):
            yield page_from_json(loads_record(text, "page record"))

    # -- recrawl ------------------------------------------------------------------------
    def take_due(self, now: float, limit: int) -> list[DuePage]:
        """Up to `limit` pages whose nextFetchAt has come, earliest first; they leave the
        due index (the caller queues them in the same transaction)."""
        rows = self._conn.execute(
            "SELECT url_hash, url, site, kind, record FROM pages"
            " WHERE due_at IS NOT NULL AND due_at <= ? ORDER BY due_at LIMIT ?",
            (now, limit),
        ).fetchall()
        if not rows:
            return []
        self.begin()
        self._conn.executemany(
            "UPDATE pages SET due_at = NULL WHERE url_hash = ?", [(row[0],) for row in rows]
        )
        out = []
        for url_hash, url, site, kind, text in rows:
            record = page_from_json(loads_record(text, "page record"))
            out.append(
                DuePage(
                    url,
                    url_hash,
                    site,
                    record.depth,
                    UrlKind(kind),
                    record.importance,
                    record.change_rate,
                    record.last_fetched_at,
                    len(record.visits),
                )
            )
        return out

    def due_count(self, now: float) -> int:
        row = self._conn.execute(
            "SELECT count(*) FROM pages WHERE due_at IS NOT NULL AND due_at <= ?", (now,)
        ).fetchone()
        return int(row[0])

    def next_due_at(self) -> float | None:
        row = self._conn.execute(
            "SELECT min(due_at) FROM pages WHERE due_at IS NOT NULL"
        ).fetchone()
        return None if row[0] is None else float(row[0])

    def last_fetched(self, url_hashes: list[str]) -> dict[str, float]:
        """lastFetchedAt of those of `url_hashes` that have a page record."""
        out: dict[str, float] = {}
        for chunk, marks in in_chunks(url_hashes):
            for url_hash, at in self._conn.execute(
                f"SELECT url_hash, last_fetched_at FROM pages WHERE url_hash IN ({marks})", chunk
            ):
                out[url_hash] = float(at)
        return out

    def make_due(self, url_hashes: list[str], at: float) -> int:
        """Bring the refetch of waiting pages forward to `at` (a sitemap's lastmod said so)."""
        if not url_hashes:
            return 0
        self.begin()
        cur = self._conn.executemany(
            "UPDATE pages SET due_at = ? WHERE url_hash = ? AND due_at > ?",
            [(at, h, at) for h in url_hashes],
        )
        return int(cur.rowcount)

    def set_near_duplicate_of(self, url_hash: str, main_url: str) -> None:
        """Point a stored page at the main copy that replaced it (its other fields, and its
        place in the due index, stay as they are)."""
        self.begin()
        self._conn.execute(
            "UPDATE pages SET record = json_set(record, '$.nearDuplicateOf', ?) WHERE url_hash = ?",
            (main_url, url_hash),
        )

    def read_events(self, from_offset: int, limit: int) -> list[PageFetchedEvent]:
        rows = self._conn.execute(
            "SELECT offset, event FROM events WHERE offset >= ? ORDER BY offset LIMIT ?",
            (from_offset, limit),
        ).fetchall()
        return events_from_rows(rows)

    def last_offset(self) -> int:
        row = self._conn.execute("SELECT max(offset) FROM events").fetchone()
        return -1 if row[0] is None else int(row[0])

    # -- hosts --------------------------------------------------------------------------
    def put_host(self, site: str, record: dict[str, object]) -> None:
        self.begin()
        self._conn.execute(
            "INSERT OR REPLACE INTO hosts(site, record) VALUES (?, ?)",
            (site, compact_json(record)),
        )

    def get_host(self, site: str) -> dict[str, object] | None:
        row = self._conn.execute("SELECT record FROM hosts WHERE site = ?", (site,)).fetchone()
        return None if row is None else loads_record(row[0], "host record")

    def iter_hosts(self) -> Iterator[tuple[str, dict[str, object]]]:
        for site, text in self._conn.execute("SELECT site, record FROM hosts ORDER BY site"):
            yield site, loads_record(text, "host record")


def events_from_rows(rows: Iterable[tuple[int, str]]) -> list[PageFetchedEvent]:
    """Events from (offset, JSON text) rows, as both record stores read them."""
    out = []
    for offset, text in rows:
        data = loads_record(text, "event")
        data["offset"] = offset
        out.append(event_from_json(data))
    return out


def loads_record(text: str, what: str) -> dict[str, object]:
    """A stored JSON object; DataError naming `what` when it is damaged."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"damaged {what} in the database: {exc}") from None
    if not isinstance(data, dict):
        raise DataError(f"damaged {what} in the database: not a JSON object")
    return data
