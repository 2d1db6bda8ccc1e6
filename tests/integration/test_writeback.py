"""store.writeback: dirty pages sent to disk early, seen per file through Linux's cachestat(2)."""

from __future__ import annotations

import ctypes
import mmap
import os
import sys
import threading
from typing import TYPE_CHECKING

import pytest

from trawl.store.warc import WarcWriter, read_record
from trawl.store.warc_record import encode_response_record
from trawl.store.writeback import can_start_writeback, start_writeback, whole_pages

if TYPE_CHECKING:
    from pathlib import Path

_CACHESTAT = 451  # x86_64 and aarch64 alike (the syscall is newer than the split tables)


class _Range(ctypes.Structure):
    _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]


class _Stat(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_uint64)
        for name in ("cache", "dirty", "writeback", "evicted", "recently_evicted")
    ]


def dirty_pages(fd: int) -> int | None:
    """The file's dirty pages in the page cache; None where the kernel cannot tell
    (cachestat arrived in Linux 6.5)."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    stat = _Stat()
    if libc.syscall(_CACHESTAT, fd, ctypes.byref(_Range(0, 0)), ctypes.byref(stat), 0) != 0:
        return None
    return int(stat.dirty)


def _needs_cachestat(path: Path) -> None:
    path.write_bytes(b"x")
    fd = os.open(path, os.O_RDONLY)
    try:
        if dirty_pages(fd) is None or not can_start_writeback():
            pytest.skip("needs Linux 6.5+ (cachestat) and sync_file_range to see dirty pages")
    finally:
        os.close(fd)


def _dirty_before_and_after(path: Path, size: int, end: int) -> tuple[int | None, int | None]:
    """Write `size` bytes to a new file, then start the writeback of those below `end`."""
    _needs_cachestat(path.with_suffix(".probe"))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        os.write(fd, os.urandom(size))
        before = dirty_pages(fd)
        assert start_writeback(fd, end)
        return before, dirty_pages(fd)
    finally:
        os.close(fd)


def test_start_writeback_leaves_no_page_dirty(tmp_path: Path):
    before, after = _dirty_before_and_after(tmp_path / "f", 4 << 20, 0)
    assert before is not None
    assert before >= 1000  # the kernel's own writeback waits 30 s
    assert after == 0  # written, or under way: no longer dirty


def test_the_last_page_of_a_file_being_appended_to_is_left_dirty(tmp_path: Path):
    size = 64 * mmap.PAGESIZE + 100
    assert whole_pages(size) == 64 * mmap.PAGESIZE
    assert _dirty_before_and_after(tmp_path / "f", size, whole_pages(size)) == (65, 1)


def test_start_writeback_on_a_bad_descriptor_says_so_and_raises_nothing():
    if not can_start_writeback():
        pytest.skip("no sync_file_range on this system")
    assert start_writeback(-1) is False


def test_the_writers_handle_sends_the_current_files_pages_from_another_thread(tmp_path: Path):
    _needs_cachestat(tmp_path / "probe")
    body = os.urandom(200_000)  # incompressible: the file grows by about as much
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n"
    warc = tmp_path / "warc"
    with WarcWriter(warc) as writer:
        keys = [
            writer.append(
                encode_response_record(
                    url=f"http://a.test/{n}",
                    fetched_at=1.8e9,
                    ip=None,
                    http_head=head,
                    payload=body,
                    truncated=False,
                )
            )
            for n in range(20)
        ]
        fd = os.open(warc / writer.current_file, os.O_RDONLY)
        try:
            assert (dirty_pages(fd) or 0) >= 500
            handle = writer.writeback_handle()
            thread = threading.Thread(target=handle)
            thread.start()
            thread.join()
            assert (dirty_pages(fd) or 0) <= 1  # all but the last page, still being filled
        finally:
            os.close(fd)
    assert read_record(warc, keys[-1]).payload == body  # a hint only: the file is intact


def test_a_closed_writers_handle_does_nothing(tmp_path: Path):
    writer = WarcWriter(tmp_path)
    writer.close()
    writer.writeback_handle()()  # no file, no error
