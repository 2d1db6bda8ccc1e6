"""No WAL restart on the crawl loop while the checkpoint's fsyncs run on threads (issue 17).

Why: the restart fdatasyncs the WAL and the database on the crawl's own connection, on the
event loop. Beside the checkpoint's WARC fsync (tens of MB) the disk's queue held them for
660 ms in the API bench, and every API call that changes the crawl waited as long. A
restart asked for meanwhile is left to the next thread's checkpoint, which asks again.
Through the crawl's real context on SQLite, the WARC's sync held open by the test.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import TYPE_CHECKING

from tests.integration.test_cluster_override_gap import StoppedClock
from tests.integration.test_operator_changes import SETTINGS

from trawl.clock import SystemClock
from trawl.wiring.embedded import build_context

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from trawl.store.ports import WarcSink


class HeldSync:
    """A WARC sink whose checkpoint sync waits until the test lets it go."""

    def __init__(self, sink: WarcSink) -> None:
        self._sink = sink
        self.started = threading.Event()
        self.release = threading.Event()
        self.writebacks = 0
        self.on_writeback: Callable[[], None] | None = None

    def sync_handle(self) -> Callable[[], None]:
        sync = self._sink.sync_handle()

        def held() -> None:
            self.started.set()
            assert self.release.wait(10)
            sync()

        return held

    def writeback_handle(self) -> Callable[[], None]:
        self.writebacks += 1
        if self.on_writeback is not None:
            self.on_writeback()
        return self._sink.writeback_handle()

    def __getattr__(self, name: str) -> object:
        return getattr(self._sink, name)


def test_a_restart_waits_for_the_checkpoints_fsyncs_then_runs(tmp_path: Path) -> None:
    ctx = build_context(SETTINGS, tmp_path, StoppedClock(1000.0))
    durability = ctx.durability
    wal = durability._wal
    assert wal is not None
    assert wal.restart_soon is not None
    held = HeldSync(durability._warc)
    durability._warc = held  # type: ignore[assignment]

    async def run() -> tuple[int, int]:
        try:
            checkpoint = asyncio.create_task(durability.checkpoint())
            assert await asyncio.to_thread(held.started.wait, 10)
            wal.frames = wal._restart_frames  # the thread's copy ended past the bound
            wal.restart_soon()
            during = wal.restarts
            held.release.set()
            await checkpoint
            wal.frames = wal._restart_frames
            wal.restart_soon()
            return during, wal.restarts
        finally:
            held.release.set()
            await durability.close()

    during, after = asyncio.run(run())
    assert during == 0
    assert after == 1


def test_each_commit_of_the_commit_loop_sends_the_warcs_bytes_on(tmp_path: Path) -> None:
    ctx = build_context(SETTINGS, tmp_path, SystemClock())
    durability = ctx.durability
    sink = HeldSync(durability._warc)
    sink.release.set()
    durability._warc = sink  # type: ignore[assignment]
    interval = ctx.policy.commit_interval_s

    async def run() -> float:
        try:
            third = asyncio.Event()
            sink.on_writeback = lambda: third.set() if sink.writebacks >= 3 else None
            started = time.monotonic()
            loop = asyncio.create_task(durability.commit_loop())
            await asyncio.wait_for(third.wait(), 20 * interval)
            took = time.monotonic() - started
            ctx.run.request_stop()
            await loop
            return took
        finally:
            await durability.close()

    took = asyncio.run(run())
    assert sink.writebacks >= 3  # one a commit
    assert took >= 2.5 * interval  # the third commit comes after 3 intervals, not before
