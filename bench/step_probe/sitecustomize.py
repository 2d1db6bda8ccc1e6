"""Step-timing probe for `python -m bench.loop_steps`: loaded through PYTHONPATH by every
Python process of a bench run, active only in the `trawl crawl` process.

Wraps the synchronous crawl-loop steps named in $LOOP_STEPS ("module:Class.method", comma
separated) and records, for each call on the main thread, its wall time and the main
thread's CPU time in it. Written as one JSON line to $LOOP_STEPS_OUT at exit: a step's wall
time is how long the loop stood still for it; wall time well above its CPU time means the
thread was waiting (a write the kernel held back, a lock, the GIL) or preempted.
"""

import os

from bench.probe_target import is_crawl

if os.environ.get("LOOP_STEPS_OUT") and is_crawl():
    import atexit
    import importlib
    import json
    import threading
    import time
    from collections.abc import Callable
    from typing import Any

    _main = threading.main_thread().ident
    _calls: dict[str, list[tuple[float, float]]] = {}  # name: [(wall ms, CPU ms)]

    def _wrap(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        calls = _calls.setdefault(name, [])

        def timed(*args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() != _main:
                return original(*args, **kwargs)
            w0, c0 = time.perf_counter(), time.thread_time()
            try:
                return original(*args, **kwargs)
            finally:
                calls.append(((time.perf_counter() - w0) * 1000, (time.thread_time() - c0) * 1000))

        return timed

    def _patch() -> None:
        for target in os.environ.get("LOOP_STEPS", "").split(","):
            module_name, _, qualname = target.strip().partition(":")
            owner = importlib.import_module(module_name)
            *path, attr = qualname.split(".")
            for part in path:
                owner = getattr(owner, part)
            if hasattr(owner, attr):  # a step of other sources than these may be absent
                setattr(owner, attr, _wrap(target.strip(), getattr(owner, attr)))

    def _dump() -> None:
        with open(os.environ["LOOP_STEPS_OUT"], "a", encoding="utf-8") as f:
            f.write(json.dumps({"calls": _calls}) + "\n")

    _patch()
    atexit.register(_dump)
