"""glibc's heap, tuned for the crawl's process (issue 17).

Why: by default glibc hands the top of its heap back to the kernel (brk) as soon as more
than 128 KiB lie free there, and takes it back with the next large allocation, the kernel
zeroing every page again. The crawl loop makes and frees such blocks for every page: a
gzipped body's inflater (ISA-L's state is ~85 KB, fetch/decode.py), the body itself, the
batches handed to the page workers. On `python -m bench.fetch_bench --gzip` (the web's
usual gzipped pages) the loop made ~2 brk calls a page, and its system time outgrew what
ISA-L's inflate saves over zlib's. Kept: 4 MiB of slack at the top of the heap, given back
only past 16 MiB free, and blocks under 4 MiB from the heap rather than from mmap (setting
any of these turns off glibc's own adjustment of the mmap threshold, which would otherwise
have risen to the largest block freed). The crawl process holds a few hundred MB; this adds
at most ~20 MB of pages kept mapped.

Only glibc has `mallopt`; elsewhere (musl, macOS) nothing changes.
"""

from __future__ import annotations

import ctypes
import ctypes.util

# mallopt's parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3

HEAP_SETTINGS = {
    _M_TOP_PAD: 4 << 20,
    _M_TRIM_THRESHOLD: 16 << 20,
    _M_MMAP_THRESHOLD: 4 << 20,
}


def tune_heap() -> bool:
    """Apply `HEAP_SETTINGS` to this process's heap; True when glibc took them all.
    Process-wide: call once, from the crawl's own process, not from a library or a test."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return all(mallopt(param, value) == 1 for param, value in HEAP_SETTINGS.items())
