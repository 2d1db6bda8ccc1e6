"""`GET /metrics`: the crawl in Prometheus text format, read from live state at scrape time.

A custom collector rather than prometheus_client's own Counter objects: the crawl already
keeps every number (CrawlStats, the frontier, the site clocks), and counting twice on the
hot path would cost CPU for nothing. The same helpers feed `/v1/stats`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)

from trawl.api.stats_history import STATUS_CLASSES, count_by_class

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from prometheus_client.metrics_core import Metric

    from trawl.crawl_context import CrawlContext

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def status_classes(statuses: Mapping[str, int]) -> dict[str, int]:
    """Page fetches by class: "2xx".."5xx", "error" (no answer), "other"."""
    return dict(zip(STATUS_CLASSES, count_by_class(statuses), strict=True))


def errors_by_kind(statuses: Mapping[str, int]) -> dict[str, int]:
    return {k[len("error:") :]: n for k, n in statuses.items() if k.startswith("error:")}


def robots_outcomes(statuses: Mapping[str, int]) -> dict[str, int]:
    return {k[len("robots:") :]: n for k, n in statuses.items() if k.startswith("robots:")}


def site_counts(ctx: CrawlContext) -> dict[str, int]:
    """Sites by state. Backing off, parked and paused walk the sites loaded in this run."""
    now = ctx.clock.now()
    sched = ctx.frontier.stats()
    backing_off = parked = paused = 0
    for state in ctx.sites.values():
        clock = state.clock
        if state.paused:
            paused += 1
        elif clock.parked_until is not None and clock.parked_until > now:
            parked += 1
        elif clock.consecutive_failures:
            backing_off += 1
    return {
        "known": sched.sites,
        "active": sched.busy,
        "waiting": sched.waiting,
        "backingOff": backing_off,
        "parked": parked,
        "paused": paused,
    }


class CrawlCollector:
    def __init__(self, ctx: CrawlContext) -> None:
        self.ctx = ctx

    def collect(self) -> Iterator[Metric]:
        ctx, st = self.ctx, self.ctx.stats
        yield _counter(
            "trawl_fetches", "Page fetches that ended, by status class",
            "class", status_classes(st.statuses),
        )  # fmt: skip
        yield _counter("trawl_fetch_errors", "Fetches with no answer, by kind",
                       "kind", errors_by_kind(st.statuses))  # fmt: skip
        yield _counter("trawl_robots_fetches", "robots.txt fetches, by outcome",
                       "outcome", robots_outcomes(st.statuses))  # fmt: skip
        yield CounterMetricFamily(
            "trawl_downloaded_bytes", "Body bytes downloaded (decoded)", st.bytes_downloaded
        )
        yield CounterMetricFamily("trawl_pages_stored", "Pages stored", st.pages_stored)
        yield CounterMetricFamily(
            "trawl_events_written", "page.fetched events in the outbox",
            ctx.records.last_offset() + 1,
        )  # fmt: skip
        yield _fetch_histogram(ctx)
        sched = ctx.frontier.stats()
        lines = {"fast": sched.queued_fast, "slow": sched.queued_slow,
                 "refresh": sched.queued_refresh}  # fmt: skip
        yield _gauge("trawl_frontier_urls", "Queued URLs, by line", "line", lines)
        yield _gauge("trawl_sites", "Sites, by state", "state", site_counts(ctx))
        yield _counter("trawl_politeness_waits", "Requests held back, by what held them",
                       "reason", st.waits)  # fmt: skip
        yield _counter("trawl_politeness_wait_seconds", "Time requests were held back",
                       "reason", st.wait_seconds)  # fmt: skip
        yield _counter("trawl_trap_hits", "Trap rules that fired, by rule",
                       "rule", ctx.traps.as_dict())  # fmt: skip
        yield _counter("trawl_skips", "URLs and pages skipped, by reason", "reason", st.skipped)


def _counter(name: str, doc: str, label: str, values: Mapping[str, float]) -> Metric:
    family = CounterMetricFamily(name, doc, labels=[label])
    for key, value in sorted(values.items()):
        family.add_metric([key], value)
    return family


def _gauge(name: str, doc: str, label: str, values: Mapping[str, float]) -> Metric:
    family = GaugeMetricFamily(name, doc, labels=[label])
    for key, value in values.items():
        family.add_metric([key], value)
    return family


def _fetch_histogram(ctx: CrawlContext) -> Metric:
    h = ctx.stats.fetch_seconds
    buckets = [("+Inf" if b == float("inf") else repr(b), n) for b, n in h.cumulative()]
    return HistogramMetricFamily(
        "trawl_fetch_seconds", "Request exchange time (robots.txt and sitemaps included)",
        buckets=buckets, sum_value=h.sum,
    )  # fmt: skip


def metrics_text(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)


def crawl_registry(ctx: CrawlContext) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(CrawlCollector(ctx))
    return registry
