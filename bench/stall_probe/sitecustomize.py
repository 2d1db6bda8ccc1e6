"""Loop-stall probe for `python -m bench.loop_stalls`: loaded through PYTHONPATH by every
Python process of a bench run, active only in the `trawl crawl` process.

A watchdog thread looks every 5 ms at when trawl's lag watch last ticked (loop.lag ticks
every 20 ms). While a tick is more than $LOOP_STALLS_MS (default 40) ms overdue, the loop
is stalled, and the thread samples every thread's stack: the main thread's under its
innermost frame and trawl's frames, the others' under their innermost frame. Per stall it
keeps when it began, how far overdue the tick got, its samples, its wall time, and the CPU
time the main thread and the whole process spent in it: a stall whose main thread was
mostly off CPU was preemption or a lock, not work. Written as one JSON line to
$LOOP_STALLS_OUT at exit.
"""

import os

from bench.probe_target import is_crawl

if os.environ.get("LOOP_STALLS_OUT") and is_crawl():
    import atexit
    import json
    import sys
    import threading
    import time
    from collections import Counter

    STALL_MS = float(os.environ.get("LOOP_STALLS_MS", "40"))
    _tick_ms = [20.0]  # loop.lag.TICK_S, read when patched
    _main = threading.main_thread().ident or 0
    _last = [0.0]
    _samples: Counter[str] = Counter()
    _others: Counter[str] = Counter()
    # (start s since the first tick, most overdue ms, samples, wall ms, main CPU ms, process CPU
    # ms, the main thread's 3 commonest trawl stacks in it)
    _stalls: list[tuple[float, float, int, float, float, float, list[tuple[str, int]]]] = []

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

    def _sample() -> str:
        """Count every thread's stack; the main thread's trawl frames, innermost first."""
        frames = sys._current_frames()
        me = threading.get_ident()
        main = ""
        for ident, frame in frames.items():
            if ident == _main:
                where = _where(frame)
                _samples[where] += 1
                main = where.partition(" | ")[2] or where
            elif ident != me:
                _others[_where(frame)] += 1
        return main

    def _watch() -> None:
        main_clock = time.pthread_getcpuclockid(_main)
        t0 = 0.0
        stall: list[float] | None = None  # start, overdue, samples, wall t0, main CPU, CPU
        while True:
            time.sleep(0.005)
            last = _last[0]
            if not last:
                continue
            t0 = t0 or last
            overdue = (time.perf_counter() - last) * 1000 - _tick_ms[0]
            if overdue > STALL_MS:
                main = _sample()
                if stall is None:
                    cpu = time.clock_gettime(main_clock)
                    stall = [last - t0, 0.0, 0, time.perf_counter(), cpu, time.process_time()]
                    stall_where: Counter[str] = Counter()
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
                                stall_where.most_common(3)))  # fmt: skip
                stall = None

    def _dump() -> None:
        record = {
            "stalls": _stalls,
            "samples": _samples.most_common(80),
            "others": _others.most_common(40),
        }
        with open(os.environ["LOOP_STALLS_OUT"], "a") as f:
            f.write(json.dumps(record) + "\n")

    _patch()
    threading.Thread(target=_watch, daemon=True, name="stall-probe").start()
    atexit.register(_dump)
