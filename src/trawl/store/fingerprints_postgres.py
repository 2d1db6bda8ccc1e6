"""The fingerprint index in PostgreSQL: exact and near copies across every node of a cluster.

Same methods and meaning as `SqliteFingerprints` (one contract suite runs on both). With
this one, a body any node stored before becomes a revisit record of that first copy
(`duplicateOf`), and a near copy of a page another node stored names it (`nearDuplicateOf`).

How this works
- Writes join `PostgresRecords`' pending batch, so they commit in the same transaction as
  the page records that name them — in cluster mode only once the WARC chunk holding the
  body is uploaded (cluster_records). No node can find an original whose body is not stored.
- Until then, reads see this process's own writes through the batch's notes; other nodes see
  them once committed (within a publish interval, 0.5 s).
- Two nodes that store one body within that interval both store it, and the later row is
  ignored (`ON CONFLICT DO NOTHING`): the first committed stays the original for everyone
  after. Claiming the hash before the fetch's write would cost a round trip of its own
  on every page; a copy fetched at the same moment on two machines is rare.
- Reads are one round trip each: `original_of` for every body, `near_copy_of` for every
  new body with enough text (the 8 candidate lists in one UNION ALL).
- While PostgreSQL cannot be reached (an outage the node rides out: cluster.store_outages),
  a read answers "not known": the page's body is stored as new and its text indexed as a
  main copy, in the batch that commits when the server is back. A copy stored then is a
  duplicate body, not a lost page.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from trawl.errors import DataError
from trawl.store.fingerprints import (
    NearMatch,
    Original,
    check_distance,
    closest,
    distance,
    near_params,
    near_query,
    simhash_blocks,
    to_sql,
)
from trawl.store.records_postgres import MISSING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from trawl.store.records_postgres import PostgresRecords

log = logging.getLogger(__name__)
_WARN_EVERY_S = 10.0  # an outage's failed lookups are logged at most this often

# Kinds of notes on the records' pending batch (see PostgresRecords.note)
_ORIGINAL = "fingerprints.original"  # content hash → Original
_SIMHASH = "fingerprints.simhash"  # url hash → (url, site, simhash), or None once dropped
_NEAR_COPY = "fingerprints.near_copy"  # url hash → main url hash, or None once removed

_ADD_ORIGINAL = (
    "INSERT INTO contents (content_hash, url_hash, url, storage_key, record_id, fetched_at,"
    " payload_digest) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING"
)
_PUT_SIMHASH = (
    "INSERT INTO simhashes (url_hash, url, site, simhash, b0, b1, b2, b3)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (url_hash) DO UPDATE SET"
    " url = EXCLUDED.url, site = EXCLUDED.site, simhash = EXCLUDED.simhash,"
    " b0 = EXCLUDED.b0, b1 = EXCLUDED.b1, b2 = EXCLUDED.b2, b3 = EXCLUDED.b3"
)
_DROP_SIMHASH = "DELETE FROM simhashes WHERE url_hash = %s"
_NOTE_NEAR_COPY = (
    "INSERT INTO near_copies (url_hash, main_url_hash) VALUES (%s, %s)"
    " ON CONFLICT (url_hash) DO UPDATE SET main_url_hash = EXCLUDED.main_url_hash"
)
_MOVE_NEAR_COPIES = "UPDATE near_copies SET main_url_hash = %s WHERE main_url_hash = %s"
_FORGET_NEAR_COPY = "DELETE FROM near_copies WHERE url_hash = %s"
_NEAR_QUERY = near_query("%s", "url_hash, url, site, simhash")


class PostgresFingerprints:
    """The `Fingerprints` port over the cluster database, writing through `records`' batches."""

    def __init__(self, records: PostgresRecords) -> None:
        self._records = records
        self.unanswered = 0  # lookups PostgreSQL could not answer (taken as "not known")
        self._warned_at = float("-inf")

    def __repr__(self) -> str:
        return f"<PostgresFingerprints {self._records!r}>"

    def original_of(self, content_hash: str) -> Original | None:
        noted = self._records.noted(_ORIGINAL, content_hash)
        if isinstance(noted, Original):
            return noted
        rows = self._read(
            "SELECT url_hash, url, storage_key, record_id, fetched_at, payload_digest"
            " FROM contents WHERE content_hash = %s",
            (content_hash,),
        )
        return Original(*rows[0]) if rows else None

    def add_original(self, content_hash: str, original: Original) -> None:
        if self._records.noted(_ORIGINAL, content_hash) is MISSING:
            self._records.note(_ORIGINAL, content_hash, original)
        self._records.queue(_ADD_ORIGINAL, (content_hash, *original))

    def near_copy_of(
        self, simhash: int, *, max_distance: int, exclude_url_hash: str
    ) -> NearMatch | None:
        check_distance(max_distance)
        pending = self._records.all_noted(_SIMHASH)
        found = [
            (bits, url_hash, url, site)
            for url_hash, url, site, other in self._read(_NEAR_QUERY, near_params(simhash))
            # a row with a note changed or left since (its note is looked at below)
            if url_hash not in pending and url_hash != exclude_url_hash
            and (bits := distance(other, simhash)) <= max_distance
        ]  # fmt: skip
        # Uncommitted fingerprints: a publish interval's pages, fewer than the candidates.
        for url_hash, row in pending.items():
            if isinstance(row, tuple) and url_hash != exclude_url_hash:
                url, site, other = row
                bits = distance(other, simhash)
                if bits <= max_distance:
                    found.append((bits, url_hash, str(url), str(site)))
        return closest(found)

    def _read(self, sql: str, params: Sequence[object]) -> list[tuple[Any, ...]]:
        """The committed rows, or none while the server can't be reached."""
        try:
            return self._records.query(sql, params)
        except DataError as exc:
            self.unanswered += 1
            now = time.monotonic()
            if now - self._warned_at >= _WARN_EVERY_S:
                self._warned_at = now
                log.warning(
                    "duplicate index: lookups unanswered (%d so far), bodies stored as new: %s",
                    self.unanswered, exc,
                )  # fmt: skip
            return []

    def put_simhash(self, url_hash: str, url: str, site: str, simhash: int) -> None:
        self._records.note(_SIMHASH, url_hash, (url, site, simhash))
        self._records.queue(
            _PUT_SIMHASH, (url_hash, url, site, to_sql(simhash), *simhash_blocks(simhash))
        )

    def drop_simhash(self, url_hash: str) -> None:
        self._records.note(_SIMHASH, url_hash, None)
        self._records.queue(_DROP_SIMHASH, (url_hash,))

    def note_near_copy(self, url_hash: str, main_url_hash: str) -> None:
        self._records.note(_NEAR_COPY, url_hash, main_url_hash)
        self._records.queue(_NOTE_NEAR_COPY, (url_hash, main_url_hash))

    def move_near_copies(self, old_main: str, new_main: str) -> list[str]:
        rows = self._read("SELECT url_hash FROM near_copies WHERE main_url_hash = %s", (old_main,))
        group: dict[str, object] = {url_hash: old_main for (url_hash,) in rows}
        group.update(self._records.all_noted(_NEAR_COPY))  # newer than any committed row
        moved = [h for h, main in group.items() if main == old_main and h != new_main]
        for url_hash in moved:
            self._records.note(_NEAR_COPY, url_hash, new_main)
        self._records.queue(_MOVE_NEAR_COPIES, (new_main, old_main))
        self._records.note(_NEAR_COPY, new_main, None)
        self._records.queue(_FORGET_NEAR_COPY, (new_main,))
        self.note_near_copy(old_main, new_main)
        return [*moved, old_main]
