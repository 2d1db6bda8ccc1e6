"""The seen set: a Bloom filter for all URLs, an exact table for must-not-miss ones.

A Bloom filter only errs towards "seen", so about 1 new link in 100 (at the default rate) is
skipped; that is fine for discovered links, which are usually found again, but not for seeds
and operator-added URLs, which go through the exact table (`must_crawl`) instead.

Checkpoint and resume: at checkpoints a copy of the filter, taken right after a commit, is
saved to a file (atomic rename). On start the filter is loaded and every urlHash in the page
and queue tables is added again, so URLs recorded after the last checkpoint are never treated
as new, and the saved filter holds none the tables lack.
"""

from __future__ import annotations

import os
from functools import partial
from typing import TYPE_CHECKING

from trawl.errors import DataError
from trawl.seen.bloom import BloomFilter

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable
    from pathlib import Path


class SeenSet:
    def __init__(
        self, conn: sqlite3.Connection, checkpoint_path: Path, *, capacity: int, fp_rate: float
    ) -> None:
        self._conn = conn
        self._path = checkpoint_path
        self._capacity = capacity
        self._fp_rate = fp_rate
        self._bloom = BloomFilter(capacity, fp_rate)
        self.checks = 0
        self.load_error: str | None = None  # set when a damaged checkpoint was rebuilt

    def load(self) -> None:
        """Load the checkpoint (if any) and re-add every hash the database knows."""
        if self._path.exists():
            try:
                self._bloom = BloomFilter.from_bytes(self._path.read_bytes())
            except (ValueError, OSError) as exc:
                # The database is the source of truth; a damaged filter is rebuilt from it.
                self._bloom = BloomFilter(self._capacity, self._fp_rate)
                self.load_error = f"{self._path}: damaged seen-set checkpoint rebuilt ({exc})"
        for table in ("pages", "queue", "must_crawl"):
            for (url_hash,) in self._conn.execute(f"SELECT url_hash FROM {table}"):
                self._bloom.add(url_hash)

    def add_if_new(self, url_hash: str) -> bool:
        """True when the URL was definitely not seen; it is seen from now on."""
        self.checks += 1
        return self._bloom.add_if_new(url_hash)

    def add_must_crawl_if_new(self, url_hash: str) -> bool:
        """Exact check for seeds and operator URLs: never a false 'seen'."""
        self.checks += 1
        row = self._conn.execute(
            "SELECT 1 FROM must_crawl WHERE url_hash = ?", (url_hash,)
        ).fetchone()
        if row is not None:
            return False
        if not self._conn.in_transaction:
            self._conn.execute("BEGIN")
        self._conn.execute("INSERT INTO must_crawl(url_hash) VALUES (?)", (url_hash,))
        self._bloom.add(url_hash)
        return True

    def snapshot(self) -> Callable[[], None]:
        """Copy the set now (one memcpy of the filter) and return the call that writes the copy
        durably, which may run on a thread. Take it right after a commit: a saved filter must
        hold no URL whose queue row the database lacks, or a crash leaves that URL "seen"
        and never queued (issue 13's crash soak caught a snapshot taken later)."""
        header, body = self._bloom.to_parts()
        return partial(self._write, header, body)

    def _write(self, header: bytes, body: bytes) -> None:
        tmp = self._path.with_suffix(".tmp")
        try:
            with tmp.open("wb") as fh:
                fh.write(header)
                fh.write(body)
                fh.flush()
                os.fsync(fh.fileno())
            tmp.replace(self._path)
        except OSError as exc:
            raise DataError(f"{self._path}: cannot write the seen-set checkpoint ({exc})") from None

    @property
    def size_bytes(self) -> int:
        return self._bloom.size_bytes

    def __repr__(self) -> str:
        return f"<SeenSet {self._bloom!r} checks={self.checks}>"
