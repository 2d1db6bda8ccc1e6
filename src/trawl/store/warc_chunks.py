"""WARC records in object storage: each commit batch becomes one .warc.gz object, a "chunk".

How this works:

- `append(record)` adds the record's finished gzip member (see warc_record.py) to the open
  chunk in memory and returns its storage key `"<object key>:<offset>:<length>"` at once: the
  object's name and the member's place in it are fixed when the record is appended, before
  anything is uploaded. No I/O, so the event loop may call it.
- Each chunk opens with its own warcinfo record and holds one gzip member per record, exactly
  as `WarcWriter` writes a file, so every object is a complete .warc.gz that warcio, FastWARC
  or `warcio index` read as it is, and a key's byte range is one whole member.
- `seal()` closes the open chunk and returns everything not yet uploaded as a `ChunkBatch`
  (no I/O); `upload(batch)` PUTs each chunk as one object (blocking: call it from a worker
  thread). `flush()` does both. A chunk is also sealed when the next record would push it past
  `max_chunk_bytes`, so objects stay bounded; `wants_flush` then tells the caller to flush
  early rather than let sealed chunks pile up in memory.
- Names: `<prefix>/<node-id>/<yyyy>/<mm>/<dd>/<epoch-ms>-<seq>-<token>.warc.gz`, UTC date of
  the chunk's first record. Epoch milliseconds are zero-padded, so a node's objects sort by
  time; the node id keeps nodes apart; the random per-writer token keeps a restarted node
  (whose clock may have stepped back) from reusing a name and overwriting committed bodies.

Crash safety (issue 7): a page record may only point at a body already durable in object
storage. The caller keeps this order:

1. `key = writer.append(record)`; build the page record with `key`, but do not commit it.
2. `batch = writer.seal()`, and in the same step (no await between) take the page records
   built since the previous seal: exactly the ones whose bodies are in `batch`.
3. `writer.upload(batch)` returns only after the store acknowledged every PUT (durable; and
   atomic, so no reader ever sees half a chunk).
4. Only then commit those page records (and their page.fetched events).

A kill -9 before step 3 ends loses the chunks and the uncommitted records together: those
URLs are fetched again when their leases expire. A kill -9 between 3 and 4 leaves objects no
record points to: wasted bytes, never a dangling key. If `upload` raises DataError, do not
commit that batch's records; retrying `upload(batch)` is safe (same names, same bytes).
Objects are written once and never changed, so a committed key's bytes never move.
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from trawl.errors import DataError, UsageError
from trawl.store.blobs import check_key
from trawl.store.warc import DEFAULT_SOFTWARE, SUFFIX, StorageKey
from trawl.store.warc_record import encode_warcinfo_record, gunzip_member, parse_stored

if TYPE_CHECKING:
    from collections.abc import Callable

    from trawl.store.blobs import BlobStore
    from trawl.store.warc_record import EncodedRecord, StoredBody

DEFAULT_PREFIX = "warc"
# A node stores ~10 MB/s (400 pages/s x ~25 KB gzipped): 64 MB is 6 s of crawling, longer
# than the commit interval, so in steady state each commit uploads one object.
DEFAULT_MAX_CHUNK_BYTES = 64 * 1024 * 1024
_NODE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


class SealedChunk(NamedTuple):
    """One finished object: its key and its bytes, still as the list of members."""

    key: str
    parts: tuple[bytes, ...]
    size: int
    records: int  # response and revisit records, not counting warcinfo and request records


@dataclass(frozen=True, slots=True)
class ChunkBatch:
    """The chunks one `seal()` closed; upload them before committing their records."""

    chunks: tuple[SealedChunk, ...]

    @property
    def records(self) -> int:
        return sum(c.records for c in self.chunks)

    @property
    def size(self) -> int:
        return sum(c.size for c in self.chunks)


@dataclass(frozen=True, slots=True)
class WarcChunkStats:
    chunks_uploaded: int
    records_uploaded: int
    bytes_uploaded: int
    records_waiting: int  # appended, not yet uploaded
    bytes_waiting: int


@dataclass(slots=True)
class _OpenChunk:
    key: str
    parts: list[bytes] = field(default_factory=list)
    size: int = 0
    records: int = 0

    def add(self, data: bytes) -> int:
        """Append one member; returns its offset."""
        offset = self.size
        self.parts.append(data)
        self.size += len(data)
        return offset

    def seal(self) -> SealedChunk:
        return SealedChunk(self.key, tuple(self.parts), self.size, self.records)


class WarcChunkWriter:
    """Collects encoded records into chunks and uploads each chunk as one object.

    Threads: one owner calls append/seal (the event loop); `upload` may run in a worker
    thread meanwhile, while appends fill the next chunk. A lock guards the shared counters.
    """

    def __init__(
        self,
        blobs: BlobStore,
        *,
        node_id: str,
        prefix: str = DEFAULT_PREFIX,
        max_chunk_bytes: int = DEFAULT_MAX_CHUNK_BYTES,
        software: str = DEFAULT_SOFTWARE,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not _NODE_ID.fullmatch(node_id):
            raise UsageError(f"node id {node_id!r} must be 1-64 letters, digits, '.', '_', '-'")
        if max_chunk_bytes <= 0:
            raise UsageError(f"max_chunk_bytes must be > 0, got {max_chunk_bytes}")
        self._blobs = blobs
        self._prefix = f"{check_key(prefix)}/{node_id}"
        self._max_chunk_bytes = max_chunk_bytes
        self._software = software
        self._clock = clock
        self._token = secrets.token_hex(3)
        self._seq = 0
        self._open: _OpenChunk | None = None
        self._sealed: list[SealedChunk] = []
        self._lock = threading.Lock()
        self._uploaded = (0, 0, 0)  # chunks, records, bytes
        self._closed = False

    def __repr__(self) -> str:
        s = self.stats()
        state = "closed" if self._closed else f"{s.records_waiting} records waiting"
        return (
            f"<WarcChunkWriter {self._prefix} on {self._blobs!r}: {state}, "
            f"{s.chunks_uploaded} chunks uploaded>"
        )

    def stats(self) -> WarcChunkStats:
        with self._lock:
            waiting = [*self._sealed, *([self._open.seal()] if self._open else [])]
            chunks, records, size = self._uploaded
        return WarcChunkStats(
            chunks, records, size, sum(c.records for c in waiting), sum(c.size for c in waiting)
        )

    @property
    def wants_flush(self) -> bool:
        """True when a chunk was sealed for size and waits for the next flush."""
        return bool(self._sealed)

    def append(self, record: EncodedRecord, request: EncodedRecord | None = None) -> str:
        """Add `record` (and right after it the `request` record that asked for it) to the
        open chunk; returns the storage key of `record` (valid once uploaded)."""
        if self._closed:
            raise UsageError("WarcChunkWriter.append after close()")
        data = record.data
        both = data if request is None else data + request.data
        with self._lock:
            chunk = self._open
            if (
                chunk is not None
                and chunk.records
                and chunk.size + len(both) > self._max_chunk_bytes
            ):
                self._sealed.append(chunk.seal())
                chunk = None
            if chunk is None:
                chunk = self._open = self._open_chunk()
            offset = chunk.add(both)
            chunk.records += 1
        return f"{chunk.key}:{offset}:{len(data)}"

    def seal(self) -> ChunkBatch:
        """Close the open chunk and take every chunk not yet uploaded (no I/O)."""
        with self._lock:
            if self._open is not None:
                self._sealed.append(self._open.seal())
                self._open = None
            batch = ChunkBatch(tuple(self._sealed))
            self._sealed.clear()
        return batch

    def upload(self, batch: ChunkBatch) -> None:
        """PUT each chunk of `batch` as one object; blocks. Raises DataError on failure."""
        for chunk in batch.chunks:
            self._blobs.put(chunk.key, b"".join(chunk.parts))
            with self._lock:
                chunks, records, size = self._uploaded
                self._uploaded = (chunks + 1, records + chunk.records, size + chunk.size)

    def flush(self) -> ChunkBatch:
        """`upload(seal())`: every record appended so far is durable when this returns."""
        batch = self.seal()
        self.upload(batch)
        return batch

    def sync(self) -> None:
        """Nothing to do: a chunk is durable once `upload` returns (the WarcSink port's
        checkpoint step; the node's publisher uploads every sealed chunk)."""

    def sync_handle(self) -> Callable[[], None]:
        """Nothing to do, as `sync`."""
        return self.sync

    def writeback_handle(self) -> Callable[[], None]:
        """Nothing to do: chunks are held in memory until their upload."""
        return self.sync

    def close(self) -> None:
        """Flush and refuse further appends; idempotent."""
        if self._closed:
            return
        self.flush()
        self._closed = True

    def _open_chunk(self) -> _OpenChunk:
        now = self._clock()
        self._seq += 1
        day = time.strftime("%Y/%m/%d", time.gmtime(now))
        name = f"{round(now * 1000):013d}-{self._seq:06d}-{self._token}{SUFFIX}"
        chunk = _OpenChunk(f"{self._prefix}/{day}/{name}")
        info = encode_warcinfo_record(filename=chunk.key, created_at=now, software=self._software)
        chunk.add(info.data)
        return chunk


def parse_chunk_key(key: str) -> StorageKey:
    """Parse `"<object key>:<offset>:<length>"`; raises DataError when malformed."""
    parts = key.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        raise DataError(f"storage key {key!r} is not <object key>:<offset>:<length>")
    name, offset, length = parts[0], int(parts[1]), int(parts[2])
    try:
        check_key(name)
    except UsageError as exc:
        raise DataError(f"storage key {key!r} names no object: {exc}") from None
    if length == 0:
        raise DataError(f"storage key {key!r} has length 0")
    return StorageKey(name, offset, length)


def read_record_from_blobs(blobs: BlobStore, key: str) -> StoredBody:
    """Read the response record at storage `key` with one range GET.

    Raises BlobNotFound when the object is missing, DataError when the key is malformed, the
    object is shorter than the key says, or the range is not one intact response record.
    """
    sk = parse_chunk_key(key)
    data = blobs.get_range(sk.file, sk.offset, sk.length)
    if len(data) != sk.length:
        raise DataError(f"storage key {key!r}: the object ends {sk.length - len(data)} bytes short")
    try:
        return parse_stored(gunzip_member(data))
    except DataError as exc:
        raise DataError(f"storage key {key!r}: {exc}") from None
