"""WARC files on local disk: append encoded records, read one back by storage key, recover.

How this works:

- `encode_response_record` (warc_record.py) does the CPU work (digests, gzip) off the event
  loop; `WarcWriter.append` only writes the finished member at the end of the current file and
  returns a storage key `"<file>:<offset>:<length>"`, the byte slice holding that one member.
- Each writer opens new files only (`open(..., "xb")`): a restart never appends to a file an
  earlier process may have left with a torn tail. Names carry time, sequence, pid and a random
  token, so two processes sharing a directory cannot collide.
- Durability rule: the caller calls `sync()` before committing page records whose keys point
  into the file. Leaving a file at rotation (its fsync, close and CDXJ index: 0.1-0.4 s for
  a 1 GB file, which held the crawl's event loop, issue 17) runs on a thread of the writer's
  own; `sync()`, its handle and `close()` wait for every file left so far, so keys into a
  left file are as durable as before once they return. Between syncs, `writeback_handle`
  (run on a thread after each commit) starts the file's new whole pages on their way to
  disk, so that a sync, or any other fsync, does not queue behind a minute of them
  (store.writeback).
- After a crash, `recover_tail` cuts a torn last member off the newest files; it hops over
  members using the gzip "sl" length field and inflates only the tail to check it.
- A capture is its response (or revisit) record followed by the request record that asked
  for it, written by one `append`, so both land in the same file.
- Each file gets a CDXJ index, `<name>.cdxj` next to it (store/cdxj.py), written when the
  writer leaves the file (rotation, close). A file a crash left without one (a run's last
  file, or one being left when it came) gets its tail checked and its index rebuilt
  (`recover_tail`, `ensure_index`; store.layout.recover_warc_tails).
"""

from __future__ import annotations

import functools
import os
import secrets
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO

from isal import isal_zlib

from trawl import __version__
from trawl.errors import DataError, UsageError
from trawl.store.cdxj import cdx_entry, cdx_line, index_path, write_index
from trawl.store.warc_record import (
    INFLATE_ERROR,
    MEMBER_HEAD_BYTES,
    EncodedRecord,
    StoredBody,
    encode_warcinfo_record,
    gunzip_member,
    member_length_from_head,
    parse_record,
    parse_response,
    parse_stored,
)
from trawl.store.writeback import start_writeback, whole_pages

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

SUFFIX = ".warc.gz"
DEFAULT_SOFTWARE = f"trawl/{__version__}"
DEFAULT_MAX_FILE_BYTES = 1_000_000_000
# recover_tail inflates and checks the members in this many bytes before the end; whatever
# was not yet fsynced at a crash lies there (callers sync at least every commit).
DEFAULT_CHECK_BYTES = 64 * 1024 * 1024
_READ_CHUNK = 256 * 1024


@dataclass(frozen=True, slots=True)
class StorageKey:
    """Where one record lives: a file name relative to the WARC directory, offset, length."""

    file: str
    offset: int
    length: int

    def __str__(self) -> str:
        return f"{self.file}:{self.offset}:{self.length}"


def parse_storage_key(key: str) -> StorageKey:
    """Parse `"<file>:<offset>:<length>"`; raises DataError when malformed."""
    parts = key.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        raise DataError(f"storage key {key!r} is not <file>:<offset>:<length>")
    name, offset, length = parts[0], int(parts[1]), int(parts[2])
    if not name or "/" in name or "\\" in name or name.startswith(".") or length == 0:
        raise DataError(f"storage key {key!r} names no record in the WARC directory")
    return StorageKey(name, offset, length)


@dataclass(frozen=True, slots=True)
class WarcWriterStats:
    files_opened: int
    records: int
    bytes_written: int
    current_file: str
    current_bytes: int


class WarcWriter:
    """Appends encoded records to rotating WARC files in `directory`.

    Not thread-safe: one owner (the event loop thread) calls append/sync/close. `append` is one
    write() syscall; compression happens before, in `encode_response_record`.
    """

    def __init__(
        self,
        directory: Path,
        *,
        prefix: str = "trawl",
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        software: str = DEFAULT_SOFTWARE,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if max_file_bytes <= 0:
            raise UsageError(f"max_file_bytes must be > 0, got {max_file_bytes}")
        if not prefix or any(c in prefix for c in "/\\:"):
            raise UsageError(f"WARC prefix {prefix!r} must be a plain name without ':' or '/'")
        self._dir = directory
        self._prefix = prefix
        self._max_file_bytes = max_file_bytes
        self._software = software
        self._clock = clock
        self._token = f"{os.getpid()}-{secrets.token_hex(2)}"
        self._seq = 0
        self._records = 0
        self._bytes = 0
        self._file: BinaryIO | None = None
        self._name = ""
        self._size = 0
        self._records_in_file = 0
        self._index: list[str] = []  # CDXJ lines of the current file, unsorted
        self._dir_dirty = False
        self._closed = False
        # Files left at rotation, being finished on a thread (fsync, close, index).
        self._finisher: ThreadPoolExecutor | None = None
        self._leaving: list[Future[None]] = []
        directory.mkdir(parents=True, exist_ok=True)
        self._open_next()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{self._name} at {self._size} bytes"
        return f"<WarcWriter {self._dir} {state}, {self._records} records>"

    def __enter__(self) -> WarcWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def current_file(self) -> str:
        return self._name

    def stats(self) -> WarcWriterStats:
        return WarcWriterStats(self._seq, self._records, self._bytes, self._name, self._size)

    def append(self, record: EncodedRecord, request: EncodedRecord | None = None) -> str:
        """Write `record` (and the `request` record that asked for it, right after it) at the
        end of the current file; returns the storage key of `record`.

        Rotates first when the records would push the file past max_file_bytes (a file holding
        only its warcinfo takes any record). Raises DataError when the disk write fails.
        """
        if self._closed:
            raise UsageError("WarcWriter.append after close()")
        data = record.data
        both = data if request is None else data + request.data
        if self._size + len(both) > self._max_file_bytes and self._records_in_file > 0:
            self._rotate()
        offset = self._size
        self._write(both)
        added = 1 if request is None else 2
        self._records += added
        self._records_in_file += added
        if record.cdx is not None:
            self._index.append(
                cdx_line(record.cdx, offset=offset, length=len(data), filename=self._name)
            )
        return f"{self._name}:{offset}:{len(data)}"

    def sync(self) -> None:
        """Flush the current file (and its directory entry, if new) to stable storage."""
        self.sync_handle()()

    def sync_handle(self) -> Callable[[], None]:
        """`sync()` with its fsyncs in the returned call, which may run on another thread:
        the crawl's checkpoint no longer holds its event loop for them (issue 17). The call
        fsyncs a duplicate of the current file's descriptor, so a rotation meanwhile cannot
        close the file under it. The directory counts as synced from this call on: a failed
        fsync raises DataError, which ends the crawl."""
        leaving, self._leaving = self._leaving, []
        if self._file is None:
            return functools.partial(_wait_left, leaving)
        directory, name = self._dir, self._name
        try:
            fd = os.dup(self._file.fileno())
        except OSError as exc:
            raise DataError(f"{directory / name}: fsync failed: {exc}") from exc
        dir_dirty, self._dir_dirty = self._dir_dirty, False

        def sync() -> None:
            try:
                _wait_left(leaving)
                os.fsync(fd)
                if dir_dirty:
                    _fsync_dir(directory)
            except OSError as exc:
                raise DataError(f"{directory / name}: fsync failed: {exc}") from exc
            finally:
                os.close(fd)

        return sync

    def writeback_handle(self) -> Callable[[], None]:
        """A call, for another thread, that starts writing the current file's new bytes to
        disk without waiting for them (store.writeback says why); on a duplicate of its
        descriptor, as `sync_handle`. Makes nothing durable: `sync` still does that."""
        end = whole_pages(self._size)
        if self._file is None or end == 0:
            return _nothing
        try:
            fd = os.dup(self._file.fileno())
        except OSError:
            return _nothing  # only a hint: the next sync reports a file gone bad

        def writeback() -> None:
            try:
                start_writeback(fd, end)
            finally:
                os.close(fd)

        return writeback

    def close(self) -> None:
        """Sync and close the current file; idempotent."""
        if self._closed:
            return
        try:
            self.sync()
        finally:
            if self._finisher is not None:
                self._finisher.shutdown(wait=True)
        if self._file is not None:
            self._file.close()
            self._file = None
            self._write_index()
        self._closed = True

    def _rotate(self) -> None:
        # Keys already handed out point into this file: it is made durable and indexed on the
        # finisher thread, and the next sync() waits for that.
        if self._file is not None:
            if self._finisher is None:
                self._finisher = ThreadPoolExecutor(1, thread_name_prefix="warc-leave")
            left = _leave_file(self._file, self._dir / self._name, self._index)
            self._leaving.append(self._finisher.submit(left))
            self._file = None
            self._index = []
        self._open_next()

    def _write_index(self) -> None:
        path = self._dir / self._name
        try:
            write_index(index_path(path), self._index)
        except OSError as exc:
            raise DataError(f"{index_path(path)}: cannot write the CDXJ index: {exc}") from exc
        self._index = []

    def _open_next(self) -> None:
        now = self._clock()
        self._seq += 1
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
        name = f"{self._prefix}-{stamp}-{self._seq:05d}-{self._token}{SUFFIX}"
        path = self._dir / name
        try:
            # Unbuffered: each append is one write() of a whole member, nothing held back.
            self._file = open(path, "xb", buffering=0)  # noqa: SIM115 - kept open across calls
        except OSError as exc:
            raise DataError(f"{path}: cannot create WARC file: {exc}") from exc
        self._name, self._size, self._records_in_file = name, 0, 0
        self._index = []
        self._dir_dirty = True
        info = encode_warcinfo_record(filename=name, created_at=now, software=self._software)
        self._write(info.data)

    def _write(self, data: bytes) -> None:
        assert self._file is not None
        try:
            view = memoryview(data)
            while view:
                written = self._file.write(view)
                view = view[written or 0 :]
        except OSError as exc:
            self._undo_partial_write()
            raise DataError(f"{self._dir / self._name}: write failed: {exc}") from exc
        self._size += len(data)
        self._bytes += len(data)

    def _undo_partial_write(self) -> None:
        # Keep the file a clean sequence of members so later appends stay readable.
        assert self._file is not None
        try:
            self._file.truncate(self._size)
            self._file.seek(self._size)
        except OSError:
            # The file is in an unknown state: stop writing to it; recover_tail fixes it.
            self._file.close()
            self._file = None
            self._closed = True


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_record(directory: Path, key: str) -> StoredBody:
    """Read the response record (or a render's conversion record) at storage `key` under
    `directory`.

    Raises DataError when the key is malformed, the file or slice is missing, or the slice is
    not one intact gzip member holding a WARC response or conversion record.
    """
    sk = parse_storage_key(key)
    path = directory / sk.file
    try:
        with open(path, "rb") as f:
            f.seek(sk.offset)
            data = f.read(sk.length)
    except OSError as exc:
        raise DataError(f"storage key {key!r}: cannot read {path}: {exc}") from exc
    if len(data) != sk.length:
        raise DataError(f"storage key {key!r}: {path} ends {sk.length - len(data)} bytes short")
    try:
        return parse_stored(gunzip_member(data))
    except DataError as exc:
        raise DataError(f"storage key {key!r}: {exc}") from None


def iter_records(path: Path) -> Iterator[tuple[int, int, StoredBody]]:
    """Yield (offset, length, body) for each response record in one WARC.gz file.

    Other record types (warcinfo, request) are skipped. Raises DataError at the first damaged
    member, naming its offset; run `recover_tail` first to cut a torn tail.
    """
    for pos, length, headers, raw, _block in _records(path):
        if headers.get("WARC-Type") == "response":
            yield pos, length, parse_response(raw)


def _records(path: Path) -> Iterator[tuple[int, int, dict[str, str], bytes, bytes]]:
    """(offset, length, headers, inflated record, block) of every record of a WARC.gz file;
    raises DataError at the first damaged member, naming its offset."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        pos = 0
        while pos < size:
            found = _member_at(f, pos, size)
            if found is None:
                raise DataError(f"{path}:{pos}: damaged or cut-off gzip member")
            length, raw = found
            if raw is None:
                f.seek(pos)
                raw = _inflate_checked(f.read(length), path, pos)
            headers, block = _parse_checked(raw, path, pos)
            yield pos, length, headers, raw, block
            pos += length


def recover_tail(path: Path, *, check_bytes: int | None = DEFAULT_CHECK_BYTES) -> int:
    """Cut a torn or garbage tail off a WARC.gz file; returns the number of bytes removed.

    Hops over members by their "sl" length, then fully inflates and parses every member that
    starts within `check_bytes` of the end (None: all of them) and cuts at the first bad one.
    """
    size = path.stat().st_size
    with open(path, "r+b") as f:
        members: list[tuple[int, int]] = []
        pos = 0
        while pos < size:
            found = _member_at(f, pos, size)
            if found is None:
                break
            members.append((pos, found[0]))
            pos += found[0]
        good_end = pos
        check_from = 0 if check_bytes is None else good_end - check_bytes
        for start, length in members:
            if start + length <= check_from:
                continue
            f.seek(start)
            try:
                parse_record(gunzip_member(f.read(length)))
            except DataError:
                good_end = start
                break
        if good_end < size:
            f.truncate(good_end)
            os.fsync(f.fileno())
    return size - good_end


def ensure_index(path: Path) -> bool:
    """Write the CDXJ index of WARC file `path` if it has none (a crashed run's last file);
    returns True when one was written. Run `recover_tail` first."""
    target = index_path(path)
    if target.exists():
        return False
    write_index(target, index_lines(path))
    return True


def index_lines(path: Path) -> list[str]:
    """The CDXJ lines of one WARC.gz file, read back from its response and revisit records."""
    lines: list[str] = []
    for pos, length, headers, _raw, block in _records(path):
        kind = headers.get("WARC-Type")
        if kind in ("response", "revisit"):
            entry = cdx_entry(
                url=headers.get("WARC-Target-URI", ""),
                warc_date=headers.get("WARC-Date", ""),
                http_head=block[: block.find(b"\r\n\r\n") + 4],
                digest=headers.get("WARC-Payload-Digest", "-"),
                revisit=kind == "revisit",
            )
            lines.append(cdx_line(entry, offset=pos, length=length, filename=path.name))
    return lines


def _member_at(f: BinaryIO, pos: int, size: int) -> tuple[int, bytes | None] | None:
    """Length of the gzip member at `pos` (and its inflated bytes if they had to be read).

    Uses the "sl" field when present; otherwise inflates to find the member's end. None when
    there is no intact member at `pos` (garbage or cut off).
    """
    f.seek(pos)
    head = f.read(MEMBER_HEAD_BYTES)
    length = member_length_from_head(head)
    if length is not None:
        return (length, None) if length >= MEMBER_HEAD_BYTES and pos + length <= size else None
    if not head.startswith(b"\x1f\x8b\x08"):
        return None
    return _inflate_one(f, pos)


def _inflate_one(f: BinaryIO, pos: int) -> tuple[int, bytes] | None:
    # Members from other writers carry no length: inflate until the deflate stream ends.
    d = isal_zlib.decompressobj(wbits=31)
    f.seek(pos)
    consumed = 0
    out: list[bytes] = []
    try:
        while not d.eof:
            chunk = f.read(_READ_CHUNK)
            if not chunk:
                return None
            consumed += len(chunk)
            out.append(d.decompress(chunk))
    except INFLATE_ERROR:
        return None
    return consumed - len(d.unused_data), b"".join(out)


def _inflate_checked(data: bytes, path: Path, pos: int) -> bytes:
    try:
        return gunzip_member(data)
    except DataError as exc:
        raise DataError(f"{path}:{pos}: {exc}") from None


def _parse_checked(raw: bytes, path: Path, pos: int) -> tuple[dict[str, str], bytes]:
    try:
        return parse_record(raw)
    except DataError as exc:
        raise DataError(f"{path}:{pos}: {exc}") from None


def _leave_file(file: BinaryIO, path: Path, index: list[str]) -> Callable[[], None]:
    """The work of leaving a full file, for the finisher thread: fsync, close, index."""

    def leave() -> None:
        try:
            os.fsync(file.fileno())
        except OSError as exc:
            raise DataError(f"{path}: fsync failed: {exc}") from exc
        finally:
            file.close()
        try:
            write_index(index_path(path), index)
        except OSError as exc:
            raise DataError(f"{index_path(path)}: cannot write the CDXJ index: {exc}") from exc

    return leave


def _nothing() -> None:
    pass


def _wait_left(leaving: list[Future[None]]) -> None:
    """Wait until the files left so far are durable and indexed; the first failure (a
    DataError) is raised."""
    for future in leaving:
        future.result()
