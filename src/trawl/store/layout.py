"""An embedded crawl's data directory: its names, its lock, and recovery of what a crash
left in it.

    trawl.db      SQLite (WAL): pages, hosts, events outbox, frontier queue, must-crawl set
    warc/         WARC/1.1 files, one gzip member per record (each with a CDXJ index)
    seen.bloom    seen-set checkpoint
    inlinks.bin   the in-link counter (frontier.inlinks), saved at checkpoints
    operator.db   the operator's changes not yet in trawl.db's last commit (store.operator_log)
    LOCK          held while a crawl runs, so two crawls never share a directory

Apart from the wiring so the read-back commands can open a data directory without importing
the crawl's machinery (issue 14: start-up time).
"""

from __future__ import annotations

import fcntl
from typing import IO, TYPE_CHECKING

from trawl.errors import DataError

if TYPE_CHECKING:
    from pathlib import Path

DB_NAME = "trawl.db"
WARC_DIR = "warc"
BLOOM_NAME = "seen.bloom"
INLINKS_NAME = "inlinks.bin"
OPERATOR_LOG_NAME = "operator.db"


def lock_data_dir(data_dir: Path) -> IO[str]:
    """Hold the directory's lock for the life of the returned file."""
    data_dir.mkdir(parents=True, exist_ok=True)
    fh = (data_dir / "LOCK").open("a+")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.close()
        raise DataError(f"{data_dir}: another trawl process is using this directory") from None
    return fh


def recover_warc_tails(warc_dir: Path) -> int:
    """Cut torn tails off WARC files left by a crash, and index files left without their
    CDXJ index; returns bytes cut.

    Each run writes files named `<prefix>-<stamp>-<seq>-<run token>.warc.gz`. A file is
    finished (fsynced, then indexed) when the writer leaves it, on a thread of its own: a
    crash can tear only a run's last file or one it was leaving, and either lacks its index.
    Those are the files checked.
    """
    from trawl.store.cdxj import index_path
    from trawl.store.warc import ensure_index, recover_tail  # isal: not for read-back

    if not warc_dir.exists():
        return 0
    last_of_run: dict[str, Path] = {}
    unindexed: list[Path] = []
    for path in sorted(warc_dir.glob("*.warc.gz")):
        parts = path.name.removesuffix(".warc.gz").split("-")
        run, seq = "-".join(parts[3:]), parts[2] if len(parts) > 3 else ""
        best = last_of_run.get(run)
        if best is None or seq >= best.name.split("-")[2]:
            last_of_run[run] = path
        if not index_path(path).exists():
            unindexed.append(path)
    check = sorted({*last_of_run.values(), *unindexed})
    cut = sum(recover_tail(path) for path in check)
    for path in check:
        ensure_index(path)
    return cut
