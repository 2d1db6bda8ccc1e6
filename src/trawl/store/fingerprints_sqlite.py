"""The fingerprint index in the embedded database: exact copies and near-copies.

Exact: `contents` maps a body's content hash to the first stored copy (its WARC record),
so a later copy — at another URL, or the same page unchanged — is written as a revisit
record pointing there instead of storing the body again.

Near: `simhashes` holds the 64-bit simhash of each main copy's main text in four 16-bit
blocks. Two fingerprints at most 3 bits apart agree exactly on at least one block, so the
candidates are the union of four indexed lookups (a bounded number from each: see
`_CANDIDATES_PER_SIDE`), checked by popcount. Candidate lists grow
with N / 65,536 per block; at tens of millions of pages per machine, Manku et al.'s larger
tables (more, longer blocks) would be the next step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import sqlite3

_MASK16 = 0xFFFF
_MASK64 = (1 << 64) - 1
# Candidates read per block. Fingerprints of one template or one vocabulary cluster (on the
# bench web, 1,500 pages used only ~500-900 values of a block), so a block's bucket can
# hold thousands of pages; reading them all cost 0.4 ms a page. Each block's index is
# sorted by the whole fingerprint, so the candidates read are the bucket's numerically
# nearest on either side of the page's own fingerprint (Manku et al.'s sorted tables):
# they share the most high-order bits with it.
_CANDIDATES_PER_SIDE = 16
_NEAR_QUERY = " UNION ALL ".join(
    f"SELECT * FROM (SELECT rowid, simhash FROM simhashes WHERE b{i} = ? AND simhash {op} ?"
    f" ORDER BY simhash {order} LIMIT {_CANDIDATES_PER_SIDE})"
    for i in range(4)
    for op, order in ((">=", "ASC"), ("<", "DESC"))
)
_SIGN = 1 << 63


class Original(NamedTuple):
    """The first stored copy of a body."""

    url_hash: str
    url: str
    storage_key: str
    record_id: str
    fetched_at: float
    payload_digest: str


class NearMatch(NamedTuple):
    url_hash: str
    url: str
    site: str
    distance: int


def simhash_blocks(simhash: int) -> tuple[int, int, int, int]:
    return (
        simhash & _MASK16,
        (simhash >> 16) & _MASK16,
        (simhash >> 32) & _MASK16,
        (simhash >> 48) & _MASK16,
    )


def _to_sql(simhash: int) -> int:
    """SQLite integers are signed 64-bit."""
    return simhash - (1 << 64) if simhash & _SIGN else simhash


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
        """The closest indexed main copy within `max_distance` (≤ 3) bits, if any."""
        if not 0 <= max_distance <= 3:
            raise ValueError(f"max_distance must be 0..3 for a 4-block index, got {max_distance}")
        value = _to_sql(simhash)
        params = [p for block in simhash_blocks(simhash) for p in (block, value, block, value)]
        near: dict[int, int] = {}  # rowid → distance (a row may come from several blocks)
        for rowid, other in self._conn.execute(_NEAR_QUERY, params):
            distance = ((other & _MASK64) ^ simhash).bit_count()
            if distance <= max_distance:
                near[rowid] = distance
        # The page's own row (a refetch) is told apart only among the matches, which are
        # few: looking it up first cost a statement on every page.
        for rowid in sorted(near, key=near.__getitem__):
            url_hash, url, site = self._conn.execute(
                "SELECT url_hash, url, site FROM simhashes WHERE rowid = ?", (rowid,)
            ).fetchone()
            if url_hash != exclude_url_hash:
                return NearMatch(url_hash, url, site, near[rowid])
        return None

    def put_simhash(self, url_hash: str, url: str, site: str, simhash: int) -> None:
        self._begin()
        self._conn.execute(
            "INSERT OR REPLACE INTO simhashes(url_hash, url, site, simhash, b0, b1, b2, b3)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (url_hash, url, site, _to_sql(simhash), *simhash_blocks(simhash)),
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
