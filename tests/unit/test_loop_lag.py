"""The loop-lag meter and the admission gate (loop.lag): pure parts, and one real loop."""

from __future__ import annotations

import asyncio
import time

from trawl.loop.lag import BURST, AdmissionGate, LoopLag, watch


def test_lag_observations_fill_the_histogram_and_keep_the_latest_and_worst() -> None:
    lag = LoopLag()
    assert lag.describe() == ""
    for value in (0.0005, 0.003, 0.2, 0.004):
        lag.observe(value)
    assert lag.last == 0.004
    assert lag.worst == 0.2
    assert lag.ticks == 4
    assert lag.quantile(0.5) == 0.005
    assert lag.quantile(0.99) == 0.25
    assert lag.describe() == "p50 ≤ 5.0 ms, p99 ≤ 250 ms, worst 200 ms"


def test_a_negative_lag_counts_as_on_time() -> None:
    lag = LoopLag()
    lag.observe(-0.001)  # a timer that fired a hair early
    assert lag.last == 0.0
    assert lag.quantile(0.5) == 0.001


def test_the_gate_waits_only_while_the_loop_is_late() -> None:
    lag = LoopLag()
    gate = AdmissionGate(lag, high_s=0.02)
    assert not gate.must_wait()
    lag.observe(0.021)
    assert gate.must_wait()
    lag.observe(0.019)
    assert not gate.must_wait()


def test_the_gate_asks_for_a_yield_after_each_burst() -> None:
    gate = AdmissionGate(LoopLag(), burst=BURST)
    asks = [gate.must_yield() for _ in range(3 * BURST)]
    assert asks.count(True) == 3
    assert asks[BURST - 1]
    assert not asks[BURST]


def test_watch_sees_a_blocked_loop_and_the_gate_holds_new_work_until_it_catches_up() -> None:
    async def main() -> tuple[LoopLag, float]:
        lag = LoopLag()
        stopped = asyncio.Event()
        watcher = asyncio.create_task(watch(lag, stopped, tick_s=0.005))
        await asyncio.sleep(0.02)
        ticks = lag.ticks
        time.sleep(0.08)  # noqa: ASYNC251 - a callback that holds the loop for 80 ms
        gate = AdmissionGate(lag, high_s=0.02)
        while lag.ticks == ticks:  # noqa: ASYNC110 - the watcher's next tick sees the stall
            await asyncio.sleep(0)
        assert lag.last >= 0.07
        start = time.perf_counter()
        await gate.wait(lambda: False)  # held until an on-time tick
        held_for = time.perf_counter() - start
        stopped.set()
        await watcher
        return lag, held_for

    lag, held_for = asyncio.run(main())
    assert lag.worst >= 0.07
    assert lag.held >= 1
    assert lag.last <= 0.02
    assert held_for < 1.0


def test_a_stopping_run_is_not_held_by_the_last_late_tick() -> None:
    # The watch ends with the run; had its last tick been late, a gate waiting for an
    # on-time one would hold the dispatcher forever, and the stop would never be seen.
    async def main() -> float:
        lag = LoopLag()
        lag.observe(0.5)  # the last tick before the watch ended: late, and never updated
        gate = AdmissionGate(lag, high_s=0.01)
        stop_at = time.perf_counter() + 0.05
        start = time.perf_counter()
        await asyncio.wait_for(gate.wait(lambda: time.perf_counter() >= stop_at), timeout=5)
        return time.perf_counter() - start

    assert asyncio.run(main()) < 1.0


def test_metrics_show_the_loop_lag_histogram() -> None:
    from dataclasses import dataclass

    from trawl.api.crawl_view import CrawlSnapshot
    from trawl.api.metrics import crawl_registry, metrics_text

    lag = LoopLag()
    for value in (0.0005, 0.003, 0.2):
        lag.observe(value)

    @dataclass
    class View:
        snapshot: CrawlSnapshot
        shared: None = None

    snap = CrawlSnapshot(
        lag_buckets=tuple(lag.histogram.cumulative()), lag_seconds_sum=lag.histogram.sum
    )
    text = metrics_text(crawl_registry(View(snap))).decode()  # type: ignore[arg-type]
    assert "# TYPE trawl_event_loop_lag_seconds histogram" in text
    assert 'trawl_event_loop_lag_seconds_bucket{le="0.001"} 1.0' in text
    assert 'trawl_event_loop_lag_seconds_bucket{le="0.005"} 2.0' in text
    assert 'trawl_event_loop_lag_seconds_bucket{le="+Inf"} 3.0' in text
    assert "trawl_event_loop_lag_seconds_count 3.0" in text
