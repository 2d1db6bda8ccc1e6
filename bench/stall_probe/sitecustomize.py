"""Loop-stall probe for `python -m bench.loop_stalls`: loaded through PYTHONPATH by every
Python process of a bench run, active only in the `trawl crawl` process.

A watchdog thread looks every 5 ms at when trawl's lag watch last ticked (loop.lag ticks
every 20 ms). While a tick is more than $LOOP_STALLS_MS (default 40) ms overdue, the loop
is stalled, and the thread samples every thread's stack: the main thread's under its
innermost frame and trawl's frames, the others' under their innermost frame. Per stall it
keeps when it began, how far overdue the tick got, its samples, its wall time, and the CPU
time the main thread and the whole process spent in it: a stall whose main thread was
mostly off CPU was preemption or a lock, not work; which other threads were busy in it
(their commonest frames); and the garbage collections that ran during it (a collection
holds the GIL in C, where a sample cannot see it). Over the whole run it also counts
where the main thread was whenever a look found it in disk I/O (state D), and its block-I/O
delay by delay accounting (`sysctl kernel.task_delayacct=1`). Written as one JSON line to
$LOOP_STALLS_OUT at exit.
"""

import os

from bench.probe_target import is_crawl

if os.environ.get("LOOP_STALLS_OUT") and is_crawl():
    import atexit
    import gc
    import json
    import sys
    import threading
    import time
    from collections import Counter

    STALL_MS = float(os.environ.get("LOOP_STALLS_MS", "40"))
    _tick_ms = [20.0]  # loop.lag.TICK_S, read when patched
    _main = threading.main_thread().ident or 0
    _task = f"/proc/self/task/{threading.main_thread().native_id}/"
    _kernel: Counter[str] = Counter()  # the main thread's state and wait channel, per sample
    _disk_waits: Counter[str] = Counter()  # the main thread in state D: wchan | trawl frames
    _blkio_trace: list[tuple[float, float | None]] = []  # (s since the first tick, blkio ms)
    # The current stall's samples: main thread, other threads, kernel state. Added to the
    # totals when the stall ends, so the crawl's shutdown (the lag watch stops ticking while
    # the loop still runs) is left out.
    _pending: tuple[Counter[str], Counter[str], Counter[str]] = (Counter(), Counter(), Counter())
    _last = [0.0]
    _samples: Counter[str] = Counter()
    _others: Counter[str] = Counter()
    # (start s since the first tick, most overdue ms, samples, wall ms, main CPU ms, process CPU
    # ms, the main thread's 3 commonest trawl stacks in it)
    # ..., then the other threads' 3 commonest busy frames, the collections (generation, ms)
    # and the main thread's 3 commonest kernel states
    _stalls: list[tuple[object, ...]] = []
    # Garbage collections: (start, end) by perf_counter, generation; the last 64 are kept.
    _collections: list[tuple[float, float, int]] = []
    _gc_start = [0.0]
    _IDLE = ("_worker (thread.py:", "wait (threading.py:", "select (selectors.py:")

    def _on_gc(phase: str, info: dict) -> None:  # type: ignore[type-arg]
        if phase == "start":
            _gc_start[0] = time.perf_counter()
        else:
            _collections.append((_gc_start[0], time.perf_counter(), info["generation"]))
            del _collections[:-64]

    gc.callbacks.insert(0, _on_gc)

    def _patch() -> None:
        from trawl.loop import lag

        _tick_ms[0] = lag.TICK_S * 1000
        original = lag.LoopLag.observe

        def observe(self, lag_s):  # type: ignore[no-untyped-def]
            _last[0] = time.perf_counter()
            original(self, lag_s)

        lag.LoopLag.observe = observe  # type: ignore[method-assign]

    def _where(frame) -> str:  # type: ignore[no-untyped-def]
        inner = None
        names: list[str] = []
        while frame is not None and len(names) < 4:
            code = frame.f_code
            path = code.co_filename
            if inner is None:
                inner = f"{code.co_name} ({path.rsplit('/', 2)[-1]}:{frame.f_lineno})"
            if "/trawl/" in path:
                names.append(f"{code.co_qualname}:{frame.f_lineno}")
            frame = frame.f_back
        return f"{inner} | " + " < ".join(names)

    def _kernel_state() -> str:
        """The main thread's scheduler state (R running, S sleeping, D in I/O) and the
        kernel function it waits in: a futex is the GIL (or a lock), not the disk."""
        try:
            with open(_task + "stat") as f:
                state = f.read().rpartition(")")[2].split()[0]
            with open(_task + "wchan") as f:
                return f"{state} {f.read().strip() or '-'}"
        except OSError:
            return "?"

    def _kernel_stack(depth: int = 10) -> str:
        """The main thread's kernel stack, innermost first, without the scheduler's own
        frames: wchan names only the innermost, which does not tell a read from a flush."""
        try:
            with open(_task + "stack") as f:
                names = [line.split()[-1].split("+")[0] for line in f if line.strip()]
        except OSError:
            return ""
        names = [n for n in names if not n.startswith(("__schedule", "schedule", "io_schedule"))]
        return "<".join(names[:depth])

    def _sample(busy: Counter[str], kernel_state: str) -> str:
        """Count every thread's stack; the main thread's trawl frames, innermost first."""
        _pending[2][kernel_state] += 1
        frames = sys._current_frames()
        me = threading.get_ident()
        main = ""
        for ident, frame in frames.items():
            if ident == _main:
                where = _where(frame)
                _pending[0][where] += 1
                main = where.partition(" | ")[2] or where
            elif ident != me:
                where = _where(frame)
                _pending[1][where] += 1
                if not where.startswith(_IDLE):
                    busy[where.partition(" | ")[2] or where.partition(" | ")[0]] += 1
        return main

    def _collections_in(t0: float, t1: float) -> list[tuple[int, float]]:
        return [
            (g, round((e - s) * 1000, 1)) for s, e, g in list(_collections) if e > t0 and s < t1
        ]

    def _note_disk_wait(kernel_state: str) -> None:
        """At every watchdog wake-up: if the main thread is in disk I/O (state D), where
        in the kernel and in trawl. Counted over the whole run, stall or not."""
        state, _, wchan = kernel_state.partition(" ")
        if state != "D":
            return
        wchan = _kernel_stack() or wchan
        frame = sys._current_frames().get(_main)
        _disk_waits[f"{wchan} | {_where(frame).partition(' | ')[2] if frame else '?'}"] += 1

    def _watch() -> None:
        main_clock = time.pthread_getcpuclockid(_main)
        t0 = 0.0
        stall: list[float] | None = None  # start, overdue, samples, wall t0, main CPU, CPU
        next_io = 0.0
        while True:
            time.sleep(0.005)
            last = _last[0]
            if not last:
                continue
            t0 = t0 or last
            now = time.perf_counter()
            overdue = (now - last) * 1000 - _tick_ms[0]
            kernel_state = _kernel_state()  # one read a wake-up, for both uses below
            _note_disk_wait(kernel_state)
            if now >= next_io and overdue <= STALL_MS:  # once a second while the loop ticks
                next_io = now + 1.0
                _blkio_trace.append((now - t0, _blkio_ms(_task + "stat")))
            if overdue > STALL_MS:
                if stall is None:
                    for part in _pending:
                        part.clear()
                    cpu = time.clock_gettime(main_clock)
                    stall = [last - t0, 0.0, 0, time.perf_counter(), cpu, time.process_time()]
                    stall_where: Counter[str] = Counter()
                    stall_busy: Counter[str] = Counter()
                    began = last
                main = _sample(stall_busy, kernel_state)
                stall[1] = overdue
                stall[2] += 1
                stall_where[main] += 1
            elif stall is not None:
                wall = (time.perf_counter() - stall[3]) * 1000
                main_cpu = (time.clock_gettime(main_clock) - stall[4]) * 1000
                cpu = (time.process_time() - stall[5]) * 1000
                start, most, n = stall[:3]
                _stalls.append((round(start, 2), round(most, 1), int(n), round(wall, 1),
                                round(main_cpu, 1), round(cpu, 1),
                                stall_where.most_common(3), stall_busy.most_common(3),
                                _collections_in(began, time.perf_counter()),
                                _pending[2].most_common(3)))  # fmt: skip
                for total, part in zip((_samples, _others, _kernel), _pending, strict=True):
                    total.update(part)
                    part.clear()
                stall = None

    def _blkio_ms(stat_path: str) -> float | None:
        """A thread's time blocked on disk I/O so far (delay accounting: field 42 of its
        stat, clock ticks), None while `kernel.task_delayacct` is off."""
        try:
            with open("/proc/sys/kernel/task_delayacct") as f:
                if f.read().strip() != "1":
                    return None
            with open(stat_path) as f:
                ticks = int(f.read().rpartition(")")[2].split()[39])
        except (OSError, IndexError, ValueError):
            return None
        return ticks * 1000 / os.sysconf("SC_CLK_TCK")

    def _dump() -> None:
        ticking = [(t, ms) for t, ms in _blkio_trace if ms is not None]
        record = {
            "main_blkio_ms": _blkio_ms(_task + "stat"),
            # from the first to the last second the loop ticked: start-up and shutdown left out
            "main_blkio_ticking": (
                [round(ticking[-1][0] - ticking[0][0], 1), ticking[-1][1] - ticking[0][1]]
                if len(ticking) > 1
                else None
            ),
            "stalls": _stalls,
            "samples": _samples.most_common(80),
            "others": _others.most_common(40),
            "kernel": _kernel.most_common(20),
            "disk_waits": _disk_waits.most_common(20),
        }
        with open(os.environ["LOOP_STALLS_OUT"], "a") as f:
            f.write(json.dumps(record) + "\n")

    _patch()
    threading.Thread(target=_watch, daemon=True, name="stall-probe").start()
    atexit.register(_dump)
