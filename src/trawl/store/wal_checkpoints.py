"""The embedded database's WAL checkpoints, off the crawl's event loop.

Why (issue 17): SQLite checkpoints automatically inside the COMMIT that takes the WAL past
1,000 pages, on the committing thread: it copies those pages into the database file and
fsyncs both files. The crawl commits every 0.5 s on its event loop and a busy crawl writes
a few hundred WAL pages a commit, so every third commit or so held the loop for 30-90 ms,
and every request, response and API call waiting behind it.

How this works:
- The crawl's connection turns the automatic checkpoint off (`take_over`).
- `start()` checkpoints (PASSIVE) on a connection of its own, on a thread: the copy
  and the fsyncs release the GIL, and a PASSIVE checkpoint neither blocks the crawl's
  writer nor waits for it. At most one runs at a time.
- SQLite starts the WAL over only when a write transaction begins after a checkpoint copied
  every frame. The crawl begins its next transaction right after each commit, before a
  thread's checkpoint can finish, so the WAL would grow without end. Once it is past
  `restart_frames`, `after_commit()` checkpoints on the crawl's own connection, between the
  commit and the next transaction: the thread has copied almost everything already, so
  this is the last commit's frames and two small fsyncs, once in a while.
- That restart's copy is of what was written since the thread's last checkpoint, and with
  a commit interval's worth (~5 MB) it held the loop for 89-133 ms, up to ~400 ms under the
  API bench (issue 17, bench.loop_steps). So when a thread's checkpoint ends with the WAL
  past its bound, `restart_soon` asks the owner to commit at once: the restart that follows
  copies only what was written while the thread worked (that commit and the restart
  together took 40-75 ms in two 90 s crawls of the bench web).
- The thread's checkpoint must not run while the crawl begins that next transaction: a
  checkpoint in progress keeps the WAL from starting over, so the restart's copy and fsyncs
  (~35 ms on the crawl's loop on the full bench web) were done twice, on two commits in a
  row, every time. `start()` right after a restart therefore skips one turn.
- `restart_frames` is 256 MiB of WAL: at full speed the crawl writes ~10 MB of WAL a second
  (a page dirties 7-10 B-tree pages with random keys), so 64 MiB meant a restart, and
  its stall, every ~6 s.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

log = logging.getLogger(__name__)

RESTART_FRAMES = 65_536  # 256 MiB of 4 KiB pages


class WalCheckpoints:
    """Checkpoints of one database file in WAL mode. Event loop only (the thread is ours)."""

    def __init__(self, path: str, *, restart_frames: int = RESTART_FRAMES) -> None:
        self._path = path
        self._restart_frames = restart_frames
        # Used on the loop's default executor, one call at a time (`_running`); the default
        # executor, so that a test's virtual clock sees the thread at work.
        self._conn: sqlite3.Connection | None = None
        self._running: asyncio.Future[tuple[int, int, int]] | None = None
        self.frames = 0  # WAL frames at the last checkpoint
        self.background = 0  # checkpoints run on the thread
        self.restarts = 0  # checkpoints run on the crawl's connection to start the WAL over
        self._restarting = False  # a restart ran: the next start() waits a turn
        # Called on the loop when a thread's checkpoint has copied the WAL past its bound:
        # the owner commits what it has written since, and `after_commit` then restarts the
        # WAL with only that little left to copy (the module's docstring says why).
        self.restart_soon: Callable[[], None] | None = None

    @classmethod
    def take_over(cls, conn: sqlite3.Connection) -> WalCheckpoints | None:
        """Checkpoints for `conn`'s database file, with its automatic ones turned off; None
        for a database without a file (in memory) or not in WAL mode."""
        row = conn.execute("PRAGMA database_list").fetchone()
        path = row[2] if row is not None else ""
        mode = conn.execute("PRAGMA journal_mode").fetchone()
        if not path or mode is None or str(mode[0]).lower() != "wal":
            return None
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        return cls(path)

    def start(self) -> None:
        """Start a checkpoint on the thread unless one is running, or a restart has just run
        (its WAL starts over when the crawl's next transaction begins). Call after a
        commit."""
        if self._restarting:
            self._restarting = False
            return
        if self._running is not None and not self._running.done():
            return
        loop = asyncio.get_running_loop()
        self._running = loop.run_in_executor(None, self._checkpoint)
        self._running.add_done_callback(self._ended)

    async def checkpoint(self) -> None:
        """A checkpoint on the thread now (after the one running, if any): every commit so
        far is in the database file and both files are fsynced when it returns."""
        if self._running is not None:
            await asyncio.gather(self._running, return_exceptions=True)
        self._restarting = False  # this one must run (at worst, a restart waits a commit)
        self.start()
        assert self._running is not None
        await self._running

    def after_commit(self, conn: sqlite3.Connection) -> None:
        """Checkpoint on the crawl's connection when the WAL is past `restart_frames`, so
        that the next transaction starts it over. Call between a commit and the next
        transaction."""
        if self.frames < self._restart_frames or conn.in_transaction:
            return
        row = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        self.restarts += 1
        self._restarting = True
        if row is not None and row[0] == 0 and row[1] == row[2]:
            self.frames = 0  # every frame copied: the next transaction starts the WAL over

    async def close(self) -> None:
        if self._running is not None:
            await asyncio.gather(self._running, return_exceptions=True)
        await asyncio.get_running_loop().run_in_executor(None, self._close)

    def _checkpoint(self) -> tuple[int, int, int]:
        if self._conn is None:
            self._conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
            self._conn.execute("PRAGMA busy_timeout = 0")  # PASSIVE never waits anyway
        row = self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        return (int(row[0]), int(row[1]), int(row[2])) if row is not None else (1, 0, 0)

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _ended(self, done: asyncio.Future[tuple[int, int, int]]) -> None:
        if done.cancelled():
            return
        error = done.exception()
        if error is not None:
            # A failed checkpoint loses nothing (the WAL keeps every commit); say so once
            # in a while rather than stop the crawl.
            log.warning("trawl: a WAL checkpoint failed (%s); the next one retries", error)
            return
        self.background += 1
        self.frames = done.result()[1]
        if self.restart_soon is not None and self.frames >= self._restart_frames:
            self.restart_soon()

    def __repr__(self) -> str:
        return (
            f"<WalCheckpoints frames={self.frames} background={self.background} "
            f"restarts={self.restarts}>"
        )
