"""Garbage-collection probe for `python -m bench.gc_pauses`: loaded through PYTHONPATH by
every Python process of a bench run, active only in the `trawl crawl` process.

It notes each collection (generation, objects in generation 0 at its start, milliseconds)
and, at exit, unfreezes what trawl froze and collects it: the cycles that freezing kept
(loop.gc_tuning). Written as one JSON line to $GC_PAUSES_OUT.
"""

import os

from bench.probe_target import is_crawl

if os.environ.get("GC_PAUSES_OUT") and is_crawl():
    import atexit
    import gc
    import json
    import time

    _state: dict = {"t0": 0.0, "n0": 0, "recs": []}

    def _note(phase: str, info: dict) -> None:
        if phase == "start":
            gen = info["generation"]
            _state["n0"] = len(gc.get_objects(generation=0)) if gen < 2 else -1
            _state["t0"] = time.perf_counter()
        else:
            ms = (time.perf_counter() - _state["t0"]) * 1000
            _state["recs"].append((info["generation"], _state["n0"], round(ms, 2)))

    gc.callbacks.append(_note)

    def _dump() -> None:
        gc.callbacks.remove(_note)
        frozen = gc.get_freeze_count()
        gc.unfreeze()
        found = gc.collect()
        with open(os.environ["GC_PAUSES_OUT"], "a") as f:
            rec = {"collections": _state["recs"], "frozen_at_exit": frozen, "found_at_exit": found}
            f.write(json.dumps(rec) + "\n")

    atexit.register(_dump)
