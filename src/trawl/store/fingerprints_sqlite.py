"""The fingerprint index in the embedded database: one machine's exact and near copies.

Exact: `contents` maps a body's content hash to the first stored copy (its WARC record),
so a later copy — at another URL, or the same page unchanged — is written as a revisit
record pointing there instead of storing the body again.

Near: `simhashes` holds the 64-bit simhash of each main copy's main text in four 16-bit
blocks, searched as `store.fingerprints` says. Candidate lists grow with N / 65,536 per
block; at tens of millions of pages per machine, Manku et al.'s larger tables (more, longer
blocks) would be the next step. A cluster's nodes share one index in PostgreSQL
(`fingerprints_postgres`); this one is the reference of their contract.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    import sqlite3

_NEAR_QUERY = near_query("?", "rowid, simhash")
# The same candidates' fingerprints alone: most pages have no near copy, and these say so
# for less (a row's id is one more integer object to make for each of the tens of
# candidates a clustered bucket gives). On the bench web's main texts, where ~2 % of pages
# have a candidate within 3 bits, `near_copy_of` took 112-114 against 90-97 us a page;
# the rows of a page that has one are read again, with their ids, as before.
_NEAR_VALUES = near_query("?", "simhash")


class SqliteFingerprints:
    """Exact and near-duplicate lookups; writes join the open transaction."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def original_of(self, content_hash: str) -> Original | None:
        row = self._conn.execute(
            "SELECT url_hash, url, storage_key, record_id, fetched_at, payload_digest"
            " FROM contents WHERE content_hash = ?",
            (content_hash,),
        ).fetchone()
        return None if row is None else Original(*row)

    def add_original(self, content_hash: str, original: Original) -> None:
        """Remember the first stored copy of `content_hash` (a later one never replaces it)."""
        self._begin()
        self._conn.execute(
            "INSERT OR IGNORE INTO contents(content_hash, url_hash, url, storage_key, record_id,"
            " fetched_at, payload_digest) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (content_hash, *original),
        )

    def near_copy_of(
        self, simhash: int, *, max_distance: int, exclude_url_hash: str
    ) -> NearMatch | None:
        """The closest indexed main copy within `max_distance` (≤ 3) bits, if any; ties go
        to the smallest url hash."""
        check_distance(max_distance)
        params = near_params(simhash)
        for (other,) in self._conn.execute(_NEAR_VALUES, params):
            if distance(other, simhash) <= max_distance:
                break
        else:
            return None
        near: dict[int, int] = {}  # rowid → distance (a row may come from several blocks)
        for rowid, other in self._conn.execute(_NEAR_QUERY, params):
            bits = distance(other, simhash)
            if bits <= max_distance:
                near[rowid] = bits
        # Names are read for the matches only, which are few: the candidates' query reads
        # the covering indexes alone.
        found = []
        for rowid, bits in near.items():
            url_hash, url, site = self._conn.execute(
                "SELECT url_hash, url, site FROM simhashes WHERE rowid = ?", (rowid,)
            ).fetchone()
            if url_hash != exclude_url_hash:
                found.append((bits, url_hash, url, site))
        return closest(found)

    def put_simhash(self, url_hash: str, url: str, site: str, simhash: int) -> None:
        self._begin()
        self._conn.execute(
            "INSERT OR REPLACE INTO simhashes(url_hash, url, site, simhash, b0, b1, b2, b3)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (url_hash, url, site, to_sql(simhash), *simhash_blocks(simhash)),
        )

    def note_near_copy(self, url_hash: str, main_url_hash: str) -> None:
        self._begin()
        self._conn.execute(
            "INSERT OR REPLACE INTO near_copies(url_hash, main_url_hash) VALUES (?, ?)",
            (url_hash, main_url_hash),
        )

    def move_near_copies(self, old_main: str, new_main: str) -> list[str]:
        """Re-point every near copy of `old_main` (and `old_main` itself) at `new_main`;
        returns the url hashes re-pointed."""
        moved = [
            row[0]
            for row in self._conn.execute(
                "SELECT url_hash FROM near_copies WHERE main_url_hash = ?", (old_main,)
            )
            if row[0] != new_main
        ]
        self._begin()
        self._conn.execute(
            "UPDATE near_copies SET main_url_hash = ? WHERE main_url_hash = ?",
            (new_main, old_main),
        )
        self._conn.execute("DELETE FROM near_copies WHERE url_hash = ?", (new_main,))
        self.note_near_copy(old_main, new_main)
        return [*moved, old_main]

    def drop_simhash(self, url_hash: str) -> None:
        self._begin()
        self._conn.execute("DELETE FROM simhashes WHERE url_hash = ?", (url_hash,))

    def _begin(self) -> None:
        if not self._conn.in_transaction:
            self._conn.execute("BEGIN")
