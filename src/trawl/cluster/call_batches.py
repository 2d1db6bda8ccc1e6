"""Calls that arrive together, served as one batch: a node taking over or handing over a
thousand partitions lists its checkpoints, asks PostgreSQL and commits once, not a
thousand times.

How this works: `join(key, value)` adds the call to the waiting batch and waits for it.
One runner task serves batches one after another; it yields once before taking the waiting
batch, so calls made in the same event loop pass (the answers of one pipelined acquire, a
stop handing every partition over) land in the same batch. A batch's error is raised in
each of its calls. A call cancelled while it waits leaves the batch to run without it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

K = TypeVar("K")
V = TypeVar("V")


class CallBatches(Generic[K, V]):
    """Serves `join` calls in batches through `work(batch)` (see the module docstring).
    A key is joined once at a time (the ownership shell runs one callback per partition)."""

    def __init__(self, work: Callable[[dict[K, V]], Awaitable[None]]) -> None:
        self._work = work
        self._waiting: dict[K, tuple[V, asyncio.Future[None]]] = {}
        self._runner: asyncio.Task[None] | None = None
        self.batches = 0

    def __repr__(self) -> str:
        running = self._runner is not None and not self._runner.done()
        return f"<CallBatches waiting={len(self._waiting)} running={running}>"

    async def join(self, key: K, value: V) -> None:
        if key in self._waiting:
            raise AssertionError(f"CallBatches: {key!r} joined twice")
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting[key] = (value, future)
        if self._runner is None or self._runner.done():
            self._runner = asyncio.get_running_loop().create_task(self._run())
        await future

    async def _run(self) -> None:
        while self._waiting:
            await asyncio.sleep(0)  # the calls of this loop pass join the batch
            batch, self._waiting = self._waiting, {}
            self.batches += 1
            try:
                await self._work({key: value for key, (value, _) in batch.items()})
            except asyncio.CancelledError:
                for _, future in batch.values():
                    future.cancel()
                for _, future in self._waiting.values():
                    future.cancel()
                self._waiting = {}
                raise
            except Exception as exc:  # each caller gets it, as if it had run alone
                for _, future in batch.values():
                    if not future.done():
                        future.set_exception(exc)
            else:
                for _, future in batch.values():
                    if not future.done():
                        future.set_result(None)
