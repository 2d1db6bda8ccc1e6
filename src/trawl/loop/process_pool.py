"""Worker processes the event loop talks to over their own sockets: no threads in between.

Why not concurrent.futures.ProcessPoolExecutor (issue 17): every call went through a feeder
thread (pickling, pipe writes), a manager thread (reading, unpickling) and a concurrent
future chained to an asyncio one, and each hop took the GIL from the loop.
`python -m bench.fetch_bench --part handoff` measured 400 µs of the crawl process's CPU a
page for that machinery alone, more than a tenth of the loop's whole budget.

Here each worker holds one end of a socket pair. The loop writes a pickled `(fn, args)` as
one frame (multiprocessing.Connection's framing, so the worker side is plain
`recv_bytes`/`send_bytes`), the socket's transport flushes it from C, and the answer frame
resolves an asyncio future in `data_received`. A worker takes at most `PREFETCH` calls at
once (one running, one waiting, so it never idles while the loop is busy); the rest wait
here for the least loaded worker.

A worker that dies (kill -9, the OOM killer) closes its socket: its calls, and every call
after, fail with BrokenProcessPool, the signal loop.workers.WorkerPool replaces a pool on,
as it did for the executor. Workers ignore SIGINT/SIGTERM and die with the crawl
(loop.workers); they end when their socket closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import pickle
import socket
import struct
from collections import deque
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from collections.abc import Callable
    from multiprocessing.connection import Connection
    from multiprocessing.context import ForkServerContext, ForkServerProcess

    _Call = tuple[Callable[..., Any], tuple[Any, ...]]

PREFETCH = 2  # calls one worker holds: the one it runs and the next
START_TIMEOUT_S = 60.0
JOIN_TIMEOUT_S = 5.0
_READY = b"ready"
_SHORT = struct.Struct("!i")  # multiprocessing.Connection's frame header
_LONG = struct.Struct("!Q")  # after a header of -1: frames of 2 GiB and more


def frame_header(n: int) -> bytes:
    """The header Connection.send_bytes puts before a payload of `n` bytes."""
    if n > 0x7FFFFFFF:
        return _SHORT.pack(-1) + _LONG.pack(n)
    return _SHORT.pack(n)


def serve(conn: Connection, setup: Callable[[], None]) -> None:
    """A worker's life: `setup()`, say ready, then answer calls until the socket closes."""
    setup()
    conn.send_bytes(_READY)
    while True:
        try:
            call = conn.recv_bytes()
        except (EOFError, OSError):
            return
        fn, args = pickle.loads(call)
        try:
            answer: tuple[bool, Any] = (True, fn(*args))
        except BaseException as exc:  # raised again in the caller
            answer = (False, exc)
        try:
            out = pickle.dumps(answer, pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # an unpicklable result or exception
            out = pickle.dumps((False, RuntimeError(f"{fn!r}: unpicklable answer: {exc!r}")))
        conn.send_bytes(out)


class _Worker(asyncio.Protocol):
    """The loop's side of one worker's socket: writes calls, reads answers in order."""

    def __init__(self, pool: ProcessPool, process: ForkServerProcess) -> None:
        self.pool = pool
        self.process = process
        self.waiting: deque[asyncio.Future[Any]] = deque()
        self.transport: asyncio.Transport | None = None
        self._buffer = bytearray()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's UnixTransport quacks like asyncio.Transport without subclassing it.
        self.transport = cast("asyncio.Transport", transport)

    def send(self, call: _Call, future: asyncio.Future[Any]) -> bool:
        """Hand `call` to this worker; False when it cannot be pickled (`future` then holds
        the error). Pickled here, when a worker takes it: a call waiting in the pool holds
        no copy of its arguments (page bodies, while the workers are behind)."""
        assert self.transport is not None
        try:
            payload = pickle.dumps(call, pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            if not future.done():
                future.set_exception(exc)
            return False
        self.waiting.append(future)
        self.transport.writelines((frame_header(len(payload)), payload))
        return True

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        while len(buffer) >= 4:
            (n,) = _SHORT.unpack_from(buffer)
            start = 4
            if n == -1:
                if len(buffer) < 12:
                    return
                (n,) = _LONG.unpack_from(buffer, 4)
                start = 12
            if len(buffer) < start + n:
                return
            answer = bytes(buffer[start : start + n])
            del buffer[: start + n]
            self._answered(answer)

    def _answered(self, payload: bytes) -> None:
        if not self.waiting:
            return  # a late answer from a broken pool: its call was failed already
        future = self.waiting.popleft()
        try:
            ok, value = pickle.loads(payload)
        except Exception as exc:
            ok, value = False, exc
        if not future.done():  # else its caller was cancelled
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)
        self.pool._freed(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self.pool._lost(self)

    def fail(self, error: BaseException) -> None:
        while self.waiting:
            future = self.waiting.popleft()
            if not future.done():
                future.set_exception(error)


class ProcessPool:
    """Started worker processes; `await call(fn, *args)` on one event loop only.

    `start` blocks (it forks and waits for each worker's setup), so it may run on a thread;
    the sockets join the loop at the first call."""

    def __init__(self, processes: list[ForkServerProcess], conns: list[Connection]) -> None:
        self._processes = processes
        # Ours to close whatever the loop's state: shutting one down ends its worker.
        self._conns = conns
        self._attached = False
        self._workers: list[_Worker] = []
        self._attaching: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: deque[tuple[_Call, asyncio.Future[Any]]] = deque()
        self._next = 0
        self._broken: BrokenProcessPool | None = None
        self._closed = False

    @classmethod
    def start(
        cls, workers: int, setup: Callable[[], None], context: ForkServerContext | None = None
    ) -> ProcessPool:
        """`workers` processes from `context` (the forkserver by default), each past
        `setup()`. Raises BrokenProcessPool when one dies or hangs on its way up."""
        context = context or multiprocessing.get_context("forkserver")
        processes, conns = [], []
        try:
            for _ in range(workers):
                ours, theirs = context.Pipe(duplex=True)
                process = context.Process(target=serve, args=(theirs, setup), daemon=True)
                process.start()
                theirs.close()  # the worker's end lives only in the worker: its death is EOF
                processes.append(process)
                conns.append(ours)
            for conn in conns:
                if not conn.poll(START_TIMEOUT_S) or conn.recv_bytes() != _READY:
                    raise BrokenProcessPool("a worker process did not start")
        except (EOFError, OSError, BrokenProcessPool) as exc:
            for process in processes:
                process.kill()
            for conn in conns:
                conn.close()
            if isinstance(exc, BrokenProcessPool):
                raise
            raise BrokenProcessPool(f"a worker process died while starting: {exc!r}") from exc
        return cls(processes, conns)

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self._processes if p.pid is not None]

    @property
    def broken(self) -> bool:
        return self._broken is not None

    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """`fn(*args)` in a worker: its result, or what it raised there. BrokenProcessPool
        when a worker of this pool has died (this call's or another's)."""
        if self._broken is not None:
            raise self._broken
        if self._closed:
            raise RuntimeError("the pool is shut down")
        loop = asyncio.get_running_loop()
        if not self._attached:
            self._loop = loop
            await self._attach()
        elif loop is not self._loop:
            raise RuntimeError(f"{self!r} belongs to the event loop of its first call")
        future: asyncio.Future[Any] = loop.create_future()
        worker = self._least_loaded()
        if worker is None:
            self._queue.append(((fn, args), future))
        else:
            worker.send((fn, args), future)
        return await future

    async def _attach(self) -> None:
        if self._attaching is None:
            self._attaching = asyncio.ensure_future(self._connect())
        await asyncio.shield(self._attaching)

    async def _connect(self) -> None:
        loop = asyncio.get_running_loop()
        self._attached = True
        for process, conn in zip(self._processes, self._conns, strict=True):
            sock = socket.socket(fileno=os.dup(conn.fileno()))
            worker = _Worker(self, process)
            await loop.connect_accepted_socket(lambda w=worker: w, sock)  # type: ignore[misc]
            self._workers.append(worker)
            if worker.transport is None:  # died before we got here
                self._lost(worker)

    def _least_loaded(self) -> _Worker | None:
        workers = self._workers
        n = len(workers)
        best: _Worker | None = None
        for i in range(n):
            worker = workers[(self._next + i) % n]
            load = len(worker.waiting)
            if load < PREFETCH and (best is None or load < len(best.waiting)):
                best = worker
                if load == 0:
                    break
        self._next = (self._next + 1) % max(n, 1)
        return best

    def _freed(self, worker: _Worker) -> None:
        while self._queue and worker.transport is not None:
            call, future = self._queue.popleft()
            # A cancelled caller's call is not worth a worker's time.
            if not future.cancelled() and worker.send(call, future):
                return

    def _lost(self, worker: _Worker) -> None:
        if self._closed and not worker.waiting:
            return
        if self._broken is None:
            code = worker.process.exitcode
            self._broken = BrokenProcessPool(
                f"a worker process (pid {worker.process.pid}) ended"
                + (f" with exit code {code}" if code is not None else "")
            )
        for other in self._workers:
            other.fail(self._broken)
        while self._queue:
            _, future = self._queue.popleft()
            if not future.done():
                future.set_exception(self._broken)

    def kill(self) -> None:
        """SIGKILL every worker (a broken pool's survivors) and let go of the sockets."""
        self._closed = True
        for process in self._processes:
            process.kill()
        self._close_sockets()
        for process in self._processes:
            process.join(JOIN_TIMEOUT_S)

    def shutdown(self) -> None:
        """Cancel the calls not answered yet (as a cancelled call, not a broken pool, which
        WorkerPool would replace), close the sockets: each worker ends after its current
        call; stragglers past JOIN_TIMEOUT_S are killed."""
        self._closed = True
        while self._queue:
            _, future = self._queue.popleft()
            future.cancel()
        for worker in self._workers:
            while worker.waiting:
                worker.waiting.popleft().cancel()
        self._close_sockets()
        for process in self._processes:
            process.join(JOIN_TIMEOUT_S)
            if process.exitcode is None:
                process.kill()
                process.join(JOIN_TIMEOUT_S)

    def _close_sockets(self) -> None:
        for worker in self._workers:
            if worker.transport is not None:
                with contextlib.suppress(RuntimeError):  # its loop is closed already
                    worker.transport.abort()
        for conn in self._conns:
            with contextlib.suppress(OSError):
                # Through a copy of the descriptor: the transport's own copy may outlive its
                # closed loop, and the worker must see its end of the socket close.
                with socket.socket(fileno=os.dup(conn.fileno())) as handle:
                    handle.shutdown(socket.SHUT_RDWR)
                conn.close()

    def __repr__(self) -> str:
        state = "broken" if self._broken else "closed" if self._closed else "running"
        loads = [len(w.waiting) for w in self._workers]
        return f"<ProcessPool {state} pids={self.pids} in_flight={loads} queued={len(self._queue)}>"
