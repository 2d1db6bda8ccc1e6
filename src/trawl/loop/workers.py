"""The worker processes for page work: deaf to stop signals, replaced when one dies.

How this works (issue 13):
- SIGINT/SIGTERM sent to trawl's whole process group (systemd's `KillMode=control-group`,
  Ctrl-C in a terminal) reach every worker too. Workers ignore both: the parent, which
  checkpoints first, shuts them down. The forkserver that forks the workers must ignore
  them as well: when it dies, the pool reads every worker's status pipe as closed and
  declares the whole pool broken. So the forkserver's preload module
  (`loop.forkserver_preload`, imported by nothing else) ignores the signals there; each
  worker forked from it inherits SIG_IGN from birth (no window before the pool initializer
  runs), and the initializer sets it again for pools started some other way.
- Any other death of a worker (kill -9, the OOM killer) breaks a ProcessPoolExecutor for
  good: every pending call fails with BrokenProcessPool. `WorkerPool.run` then starts a
  fresh pool (once per broken pool, however many calls saw it), logs one line, and redoes
  the call there. A call that breaks `MAX_ATTEMPTS` pools in a row is a bug of ours (work
  that kills its worker every time), raised as `WorkerCrashed` (for a page, its outcome
  records the error and the crawl goes on: loop.outcomes). The broken pool's other
  workers are SIGKILLed: they would ignore the SIGTERM the executor ends them with.
- Pools are started whole before use (`start_process_pool`), a replacement on a thread:
  spawning a worker blocks, and the event loop must not (see there why).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import multiprocessing
import os
import signal
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar, TypeVarTuple

from trawl.loop.gc_tuning import tune_gc

if TYPE_CHECKING:
    from collections.abc import Callable
    from concurrent.futures import Executor

log = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
MAX_ATTEMPTS = 3  # pools one call may break before it is taken for a bug
WARM_UP_S = 0.02
WORKER_NICENESS = 10
MAX_PAGE_WORKERS = 2

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


class WorkerCrashed(RuntimeError):
    """One call killed its worker process `MAX_ATTEMPTS` times: a bug, not a bad page."""


def ignore_stop_signals() -> None:
    """SIGINT and SIGTERM are ignored by this process (a worker or the forkserver)."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)


def die_with_parent() -> None:
    """SIGKILL this process when its parent dies (Linux; elsewhere a no-op).

    Workers and their forkserver ignore SIGTERM, and each worker holds open both the pipe
    the forkserver waits on and its own call queue's writing end: when the crawl was
    killed with SIGKILL they waited on each other for ever (three orphans per kill -9).
    The forkserver dies with the crawl, each worker with the forkserver. A parent that died
    while this was being set up ends this process at once."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        return  # refused: the old behaviour, no worse
    if os.getppid() != parent:
        os._exit(0)


def usable_cpus() -> int:
    """The cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def page_workers(cpus: int) -> int:
    """How many page workers a crawl starts with `cpus` usable cores: one a core, at most
    `MAX_PAGE_WORKERS` (niced, so the crawl loop still gets a core when it wants one).

    On 2 cores one worker was once the better choice: the loop cost ~3 ms a page and set
    the pace, and a second worker only took turns on the cores with it (issue 17, thirteenth
    session: 8.5 % less CPU a page, as many pages a second). Since then the loop's share fell
    to ~1.2 ms a page while a page costs a worker ~1.4 ms on the bench web and ~2 ms with a
    real web's vocabulary, so one worker set the pace. Two, measured again (twenty-fifth
    session, `python -m bench.speed --skip-scrapy --max-time 90`, two pairs each): 595 / 619
    -> 709 / 707 pages/s on the bench web and 428 / 433 -> 563 / 583 with Zipf prose
    (`--zipf-text`), at the same CPU a page and lag p99 <= 30 ms in all eight runs."""
    return max(1, min(MAX_PAGE_WORKERS, cpus))


def yield_cpu_to_the_loop() -> None:
    """Lower this worker's CPU priority (nice +WORKER_NICENESS).

    The crawl loop is latency work and page work is throughput work: with the loop, the
    workers and a web server runnable on 2 cores, the kernel shared the CPU evenly, and
    most of the loop's lag was time it spent runnable but not running (issue 17: 292 of 502
    late ticks had the loop thread on the CPU less than 70 % of the time). Niced workers
    still get every cycle the loop does not want."""
    with contextlib.suppress(OSError):
        os.nice(WORKER_NICENESS)


def _init_worker(initializer: Callable[[*Ts], None], initargs: tuple[*Ts]) -> None:
    ignore_stop_signals()
    die_with_parent()
    yield_cpu_to_the_loop()
    initializer(*initargs)
    tune_gc()


def _started() -> None:
    time.sleep(WARM_UP_S)  # busy, so that each warm-up call gets a worker of its own


def start_process_pool(
    workers: int, initializer: Callable[[*Ts], None], initargs: tuple[*Ts]
) -> ProcessPoolExecutor:
    """A started forkserver process pool whose workers ignore the stop signals. Blocks.

    Started: the forkserver and every worker are running when it returns. A pool spawns
    its workers on demand, in `submit`, which waits for the forkserver to start and fork;
    on the event loop that stalled every connection for a few hundred milliseconds, and a
    request written late reached its server closer to the previous one on its IP than
    the IP gate had spaced them.
    """
    context = multiprocessing.get_context("forkserver")
    # Takes effect when the forkserver starts (once per process, on the first pool).
    context.set_forkserver_preload(["trawl.loop.forkserver_preload"])
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=context,
        initializer=_init_worker,
        initargs=(initializer, initargs),
    )
    for started in [pool.submit(_started) for _ in range(workers)]:
        started.result()
    return pool


@dataclass(frozen=True, slots=True)
class WorkerPoolStats:
    replaced: int  # pools started because a worker of the previous one died
    redone: int  # calls run again on a fresh pool


class WorkerPool:
    """`await run(fn, *args)` runs `fn(*args)` in a worker process. Event loop only.

    Who writes what: `_pool`, `_replacing` and the counters are written by `run` on the
    event loop; `start_pool` runs on a thread of its own when replacing (it blocks while
    processes start), and the executor's own threads never touch this object.
    """

    def __init__(
        self, start_pool: Callable[[], Executor], *, max_attempts: int = MAX_ATTEMPTS
    ) -> None:
        self._start_pool = start_pool
        self._pool = start_pool()
        self._replacing: asyncio.Task[Executor] | None = None
        self._max_attempts = max_attempts
        self._replaced = 0
        self._redone = 0

    async def run(self, fn: Callable[[*Ts], T], *args: *Ts) -> T:
        """`fn(*args)` in a worker; raises what `fn` raises, or WorkerCrashed."""
        loop = asyncio.get_running_loop()
        for attempt in range(self._max_attempts):
            if attempt:
                self._redone += 1
            pool = await self._current_pool()
            try:
                # submit() itself raises BrokenProcessPool once the pool is known broken.
                return await loop.run_in_executor(pool, fn, *args)
            except BrokenProcessPool as exc:
                self._replace(pool, exc)
        raise WorkerCrashed(
            f"{getattr(fn, '__name__', fn)!r} killed its worker process "
            f"{self._max_attempts} times in a row"
        )

    async def _current_pool(self) -> Executor:
        replacing = self._replacing
        if replacing is None:
            return self._pool
        try:
            pool = await replacing  # every caller that saw the broken pool waits for this one
        finally:
            if self._replacing is replacing:
                self._replacing = None
        self._pool = pool
        return pool

    def _replace(self, broken: Executor, exc: BrokenProcessPool) -> None:
        if broken is not self._pool or self._replacing is not None:
            return  # another call saw it first
        self._replacing = asyncio.ensure_future(asyncio.to_thread(self._start_pool))
        self._replaced += 1
        _discard(broken)
        log.warning("trawl: a worker process died (%s): started a new pool, redoing its work", exc)

    def stats(self) -> WorkerPoolStats:
        return WorkerPoolStats(self._replaced, self._redone)

    def shutdown(self) -> None:
        """Stop the workers once their calls are done (the parent's side of a stop signal)."""
        if getattr(self._pool, "_broken", False):
            _discard(self._pool)  # broken since its last call
        else:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def __repr__(self) -> str:
        return f"<WorkerPool replaced={self._replaced} redone={self._redone} pool={self._pool!r}>"


def _discard(broken: Executor) -> None:
    """Shut a broken pool down, SIGKILLing its surviving workers.

    ProcessPoolExecutor ends the survivors of a broken pool with SIGTERM, which our workers
    ignore, and then joins them: its manager thread, and at exit the interpreter waiting
    for that thread, would hang. `_processes` is private, but the only handle on them.
    """
    processes = getattr(broken, "_processes", None) or {}
    for process in list(processes.values()):
        process.kill()
    broken.shutdown(wait=False, cancel_futures=True)
