"""Dirty file pages sent to the disk early, a little at a time (issue 17).

Why: the crawl appends ~8 MB of WARC a second (350 pages/s of the bench web), unbuffered,
and the kernel held those pages until its own writeback (pages older than 30 s) or the
minute checkpoint's fsync. Either put tens to hundreds of MB in the disk's queue at once,
and a cache flush asked for meanwhile waited behind them: the WAL restart's fdatasync on
the crawl loop took 660 ms while the checkpoint's WARC fsync ran beside it
(bench.loop_stalls' kernel stacks), where it takes ~1-2 ms on a quiet disk. Writing the
pages back as they come keeps the queue short, so every flush, the loop's included, waits
on little.

`start_writeback(fd)` asks Linux's sync_file_range(2) to start writing `fd`'s dirty pages
and does not wait for them, nor flush the disk's cache: it makes nothing durable (the
fsyncs do that, as before), so a failure is ignored. Elsewhere it does nothing.
"""

from __future__ import annotations

import ctypes
import mmap
import sys
from typing import Any

_SYNC_FILE_RANGE_WRITE = 2


def _load() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        call = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    call.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    call.restype = ctypes.c_int
    return call


_sync_file_range = _load()


def can_start_writeback() -> bool:
    return _sync_file_range is not None


def start_writeback(fd: int, end: int = 0) -> bool:
    """Start writing `fd`'s dirty pages below byte `end` (0: all of them) to disk without
    waiting; False if that was not possible (no sync_file_range here, or it failed: nothing
    is lost either way)."""
    if _sync_file_range is None:
        return False
    return bool(_sync_file_range(fd, 0, end, _SYNC_FILE_RANGE_WRITE) == 0)


def whole_pages(size: int) -> int:
    """`size` rounded down to whole pages: the end to write back in a file still being
    appended to. Its last page, part full, waits: the next append to a page under writeback
    waits for the disk (seen on the crawl loop, bench.loop_stalls)."""
    return size - size % mmap.PAGESIZE
