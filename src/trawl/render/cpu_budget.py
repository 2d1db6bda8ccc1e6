"""How much CPU the browser may take from the machine: a budget in cores (issue 18). Pure.

Why: a render costs ~1.4-1.9 CPU-seconds of Chromium (about 330 plain fetches), and a
browser that never rests took a third to a half of a 2-core machine's plain crawl
(bench/RESULTS.md, `python -m bench.render_lag`). The render queue is sized for a small
share of pages; this sizes it in CPU, which is what a render costs.

How this works: each finished render is charged the CPU its browser used while it ran,
divided by `share` (the cores' worth the browser may use on average): a render that took
1.9 CPU-s at a share of 0.25 core holds the budget for 7.6 s from its start. The next
render starts once the budget is free again. Renders at once overlap in the browser's
count, so each is charged the whole tree's CPU of its time: with more than one at a time
the budget errs on the side of the plain crawl.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CpuBudget"]


@dataclass(slots=True)
class CpuBudget:
    """`share`: cores' worth of CPU the browser may use on average (> 0)."""

    share: float
    free_at: float = 0.0  # when the next render may start (clock seconds)

    def __post_init__(self) -> None:
        if not self.share > 0:
            raise ValueError(f"cpu_share = {self.share!r}: must be > 0")

    def may_start(self, now: float) -> bool:
        return now >= self.free_at

    def charge(self, started_at: float, cpu_s: float) -> None:
        """A render that started at `started_at` used `cpu_s` of the browser's CPU."""
        self.free_at = max(self.free_at, started_at) + max(0.0, cpu_s) / self.share
