"""The fingerprint index's values, and what both of its adapters share (pure).

The index (exact copies by content hash, near copies by the simhash of the main text) has
two adapters with one contract (tests/contract/test_fingerprints.py): the embedded
database's (`fingerprints_sqlite`, one machine's pages) and PostgreSQL's
(`fingerprints_postgres`, the whole cluster's, so a copy of a page first stored by another
node is found too).

Both keep the simhash of each main copy in four 16-bit blocks: two fingerprints at most 3
bits apart agree exactly on at least one block (pigeonhole), so the candidates are the union
of four indexed lookups, checked by popcount (Manku et al. 2007, with d + 1 = 4 tables).
Fingerprints are stored as signed 64-bit integers, the SQL integer both databases have.
"""

from __future__ import annotations

from typing import NamedTuple

MAX_DISTANCE = 3  # a 4-block index finds every fingerprint at most this many bits off
_MASK16 = 0xFFFF
_MASK64 = (1 << 64) - 1
_SIGN = 1 << 63
# Candidates read per block. Fingerprints of one template or one vocabulary cluster (on the
# bench web, 1,500 pages used only ~500-900 values of a block), so a block's bucket can
# hold thousands of pages; reading them all cost 0.4 ms a page. Each block's index is
# sorted by the whole fingerprint, so the candidates read are the bucket's numerically
# nearest on either side of the page's own fingerprint (Manku et al.'s sorted tables):
# they share the most high-order bits with it.
CANDIDATES_PER_SIDE = 16


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


def closest(found: list[tuple[int, str, str, str]]) -> NearMatch | None:
    """The nearest of (distance, url hash, url, site) candidates; ties go to the smallest
    url hash, so every adapter names the same original."""
    if not found:
        return None
    bits, url_hash, url, site = min(found)
    return NearMatch(url_hash, url, site, bits)


def simhash_blocks(simhash: int) -> tuple[int, int, int, int]:
    return (
        simhash & _MASK16,
        (simhash >> 16) & _MASK16,
        (simhash >> 32) & _MASK16,
        (simhash >> 48) & _MASK16,
    )


def to_sql(simhash: int) -> int:
    """The signed 64-bit integer SQL stores for an unsigned fingerprint."""
    return simhash - (1 << 64) if simhash & _SIGN else simhash


def distance(stored: int, simhash: int) -> int:
    """Bits apart of a stored (signed) fingerprint and an unsigned one."""
    return ((stored & _MASK64) ^ simhash).bit_count()


def check_distance(max_distance: int) -> None:
    if not 0 <= max_distance <= MAX_DISTANCE:
        raise ValueError(
            f"max_distance must be 0..{MAX_DISTANCE} for a 4-block index, got {max_distance}"
        )


def near_query(placeholder: str, columns: str, limit: int = CANDIDATES_PER_SIDE) -> str:
    """The candidates' query: for each block, the `limit` fingerprints of the page's bucket
    nearest on either side of its own. Takes (block, value, block, value) per block."""
    return " UNION ALL ".join(
        f"SELECT * FROM (SELECT {columns} FROM simhashes WHERE b{i} = {placeholder}"
        f" AND simhash {op} {placeholder} ORDER BY simhash {order} LIMIT {limit}) AS c{i}{side}"
        for i in range(4)
        for side, (op, order) in enumerate(((">=", "ASC"), ("<", "DESC")))
    )


def near_params(simhash: int) -> list[int]:
    value = to_sql(simhash)
    return [p for block in simhash_blocks(simhash) for p in (block, value, block, value)]
