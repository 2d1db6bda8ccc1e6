"""The cyclic garbage collector, tuned for a crawling process (issue 17).

Why: with Python's default thresholds (a collection every 700 net container allocations) the
crawl loop collected 467 times in a 40 s crawl of the quick bench web: 1.1 s of stopped
world in all, up to 89 ms at once, while every response and API call waited. A page's
outcome makes and frees thousands of containers, so the default collected every few pages.
With a collection every 20,000 and the older generations in step, the same crawl collected 5
times, 82 ms in all. What exists once the process is set up (modules, settings) is frozen
out of every later collection: it lives as long as the process.

What survives a collection is frozen too (`_freeze_survivors`), in the crawl's own process.
A crawl's long-lived objects are its per-site state (a site's clock, robots rules, trap and
containment windows, its idle connection: ~65 objects a site), made as sites are found and
kept for the crawl's life. Left in the collector's care, a generation-1 collection walked
all of it made since the last one (the bench web's 2,000 sites: ~130,000 objects, 100-120
ms with the loop stopped) and every full collection all of it ever made, a pause that grows
with the sites known. Frozen, an object is walked by one young collection and then never
again (bench web, 90 s: the longest generation-1 collection 84-121 ms -> 2 ms). The price:
a reference cycle that becomes garbage after a collection it lived through is never freed.
A crawl makes few: unfrozen and collected at exit, 506 objects against 501 without
freezing on the bench web, 501 against 524 for `trawl demo` (bench/RESULTS.md).
"""

from __future__ import annotations

import gc
from typing import Any

GC_THRESHOLDS = (20_000, 10, 10)


def tune_gc(*, freeze_survivors: bool = False) -> None:
    """Freeze what exists now and make collections rarer; with `freeze_survivors`, also
    what survives each later collection. Process-wide: call once, from a
    crawling process (the crawl, a page worker), not from a library or a test."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    if freeze_survivors and _freeze_survivors not in gc.callbacks:
        gc.callbacks.append(_freeze_survivors)


def _freeze_survivors(phase: str, info: dict[str, Any]) -> None:
    # At "stop" the collection is over: what it walked and found reachable has moved up a
    # generation, and every generation holds only such survivors.
    if phase == "stop":
        gc.freeze()
