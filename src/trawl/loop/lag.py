"""How late the crawl's event loop runs what is ready, and the admission rule that keeps it on time.

Why it matters (issue 17): everything on the crawl loop waits its turn behind whatever else
is ready — a response that arrived, a request due to leave, an API call handed over from the
API's thread. On a saturated loop that turn came 0.4 s late at p50: the API answered in
0.7-0.9 s, and a response's measured time (which the 10x politeness rule scales) included
the wait.

How this works:
- `watch` sleeps `TICK_S` again and again on the real event loop; how much later than asked
  it wakes is the loop's lag at that moment. Each tick is one observation in a histogram
  (/metrics, the summary) and the latest one is `LoopLag.last`.
- `AdmissionGate` is the crawl's back-pressure: on a loop behind by more than `high_s`,
  no new site turn starts until a tick finds it on time again. Turns already running go on,
  so the backlog drains instead of growing; when the CPU is the limit, more turns at once
  would not fetch more pages anyway, they would only wait longer in the ready queue. Sites
  are still paced by their clocks: admitting later never sends sooner.
- New turns also start in bursts of at most `burst` before the dispatcher yields, so that
  starting hundreds of ready sites is not one long callback.
- What else keeps the loop on time lives where the work is: worker results one per turn
  (loop.cpu_batches), niced workers (loop.workers), rarer garbage collections
  (loop.gc_tuning), nothing slow inside a commit (loop.durability, store.wal_checkpoints).

Pure except `watch` (the sampling task) and `AdmissionGate.wait` (an asyncio sleep).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from trawl.histogram import Histogram

if TYPE_CHECKING:
    from collections.abc import Callable

# Seconds. An on-time loop is a millisecond late; the goal is p99 < 50 ms.
LAG_SECONDS = (
    0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.04, 0.05, 0.075, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
)  # fmt: skip
TICK_S = 0.02
# 10 ms, not 20: on the quick bench web (3 runs each, same harness) it cut the lag's p99
# from <= 40 ms to <= 30 ms with no fewer pages a second: when the CPU is the limit, turns
# admitted later only spend less time waiting in the ready queue.
HIGH_LAG_S = 0.01
BURST = 16


@dataclass(slots=True)
class LoopLag:
    """The loop's lag: every tick's in a histogram, and the latest and the worst."""

    histogram: Histogram = field(default_factory=lambda: Histogram(LAG_SECONDS))
    last: float = 0.0
    worst: float = 0.0
    ticks: int = 0
    held: int = 0  # times admission of new site turns waited for the loop to catch up

    def observe(self, lag_s: float) -> None:
        lag_s = max(0.0, lag_s)
        self.histogram.observe(lag_s)
        self.last = lag_s
        self.worst = max(self.worst, lag_s)
        self.ticks += 1

    def quantile(self, q: float) -> float | None:
        return self.histogram.quantile(q)

    def describe(self) -> str:
        """'p50 ≤ 1 ms, p99 ≤ 25 ms, worst 31 ms' (bucket upper bounds), '' before any tick."""
        if not self.ticks:
            return ""
        p50, p99 = self.quantile(0.5), self.quantile(0.99)
        return f"p50 ≤ {_ms(p50)}, p99 ≤ {_ms(p99)}, worst {_ms(self.worst)}"


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds == float("inf"):
        return f"> {LAG_SECONDS[-1] * 1000:.0f} ms"
    return f"{seconds * 1000:.0f} ms" if seconds >= 0.01 else f"{seconds * 1000:.1f} ms"


async def watch(lag: LoopLag, stopped: asyncio.Event, tick_s: float = TICK_S) -> None:
    """Observe the running loop's lag every `tick_s` until `stopped` is set."""
    loop = asyncio.get_running_loop()
    while not stopped.is_set():
        start = loop.time()
        await asyncio.sleep(tick_s)
        lag.observe(loop.time() - start - tick_s)


@dataclass(slots=True)
class AdmissionGate:
    """Whether a new site turn may start now: `lag.last` at most `high_s`, and at most
    `burst` turns since the dispatcher last yielded."""

    lag: LoopLag
    high_s: float = HIGH_LAG_S
    burst: int = BURST
    _since_yield: int = 0

    def must_wait(self) -> bool:
        return self.lag.last > self.high_s

    def must_yield(self) -> bool:
        self._since_yield += 1
        if self._since_yield >= self.burst:
            self._since_yield = 0
            return True
        return False

    async def wait(self, stopping: Callable[[], bool]) -> None:
        """Yield once if a burst is done; while the loop is late, wait for on-time ticks,
        unless `stopping()`: the watch ends with the run, and a late tick it saw last must
        not hold a dispatcher that has to see the stop (CI caught a node that never exited
        its SIGTERM that way)."""
        if self.must_yield():
            await asyncio.sleep(0)
        while self.must_wait() and not stopping():
            self.lag.held += 1
            # The next tick's observation decides; a short sleep lets the backlog run.
            await asyncio.sleep(TICK_S / 2)
