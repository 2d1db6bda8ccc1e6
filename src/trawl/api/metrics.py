"""`GET /metrics`: the crawl in Prometheus text format, from the crawl's latest snapshot.

A custom collector rather than prometheus_client's own Counter objects: the crawl already
keeps every number (CrawlStats, the frontier, the site clocks), and counting twice on the
hot path would cost CPU for nothing. The numbers are those of the snapshot the crawl loop
publishes every second (api.crawl_view), the same one `/v1/stats` answers from.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)

from trawl.api.crawl_view import status_kinds
from trawl.api.stats_history import STATUS_CLASSES, count_by_class
from trawl.fetch.failure_reasons import REASONS
from trawl.parse.render_need import RenderReason
from trawl.render.ports import RenderState, SubrequestOutcome

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping

    from prometheus_client.metrics_core import Metric

    from trawl.api.crawl_view import CrawlSnapshot, CrawlView

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Labels shown from the start (zeros): the waits every crawl has, the commonest skip.
WAIT_REASONS = ("ip_gate", "site_clock", "paused")
SKIP_REASONS = ("robots",)
RENDER_REASONS = tuple(reason.value for reason in RenderReason)
RENDER_STATES = tuple(state.value for state in RenderState)
RENDER_REQUEST_OUTCOMES = tuple(outcome.value for outcome in SubrequestOutcome)
SCOPE_SKIP_REASONS = ("scope", "exclude")


def status_classes(statuses: Mapping[str, int]) -> dict[str, int]:
    """Page fetches by class: "2xx".."5xx", "error" (no answer), "other"."""
    return dict(zip(STATUS_CLASSES, count_by_class(statuses), strict=True))


class CrawlCollector:
    """Reads the latest snapshot the crawl loop published (the API runs on another thread)."""

    def __init__(self, view: CrawlView) -> None:
        self.view = view

    def collect(self) -> Iterator[Metric]:
        snap = self.view.snapshot
        stats = snap.stats
        yield _counter("trawl_fetches", "Page fetches that ended, by status class",
                       "class", status_classes(snap.statuses))  # fmt: skip
        yield _counter("trawl_fetch_errors",
                       "Requests that failed (robots.txt and sitemaps too), by kind",
                       "kind", _zero_filled(snap.failures, REASONS))  # fmt: skip
        yield _counter("trawl_robots_fetches", "robots.txt fetches, by outcome",
                       "outcome", status_kinds(snap.statuses, "robots:"))  # fmt: skip
        yield CounterMetricFamily("trawl_downloaded_bytes", "Body bytes downloaded (decoded)",
                                  stats.get("bytesDownloaded", 0))  # fmt: skip
        yield CounterMetricFamily("trawl_pages_stored", "Pages stored",
                                  stats.get("pagesStored", 0))  # fmt: skip
        yield CounterMetricFamily("trawl_events_written", "page.fetched events in the outbox",
                                  snap.events_written)  # fmt: skip
        yield _fetch_histogram(snap)
        yield _histogram("trawl_event_loop_lag_seconds",
                         "How late the crawl loop ran a 20 ms timer (issue 17)",
                         snap.lag_buckets, snap.lag_seconds_sum)  # fmt: skip
        yield _gauge("trawl_frontier_urls", "Queued URLs, by line", "line",
                     stats.get("frontier", {}))  # fmt: skip
        yield _gauge("trawl_sites", "Sites, by state", "state", stats.get("sites", {}))
        yield _counter("trawl_politeness_waits", "Requests held back, by what held them",
                       "reason", _zero_filled(snap.waits, WAIT_REASONS))  # fmt: skip
        yield _counter("trawl_politeness_wait_seconds", "Time requests were held back",
                       "reason", _zero_filled(snap.wait_seconds, WAIT_REASONS))  # fmt: skip
        yield _counter("trawl_trap_hits", "Trap rules that fired, by rule",
                       "rule", stats.get("traps", {}))  # fmt: skip
        yield _counter("trawl_render_candidates",
                       "Pages whose plain HTML looks built by JavaScript, by reason",
                       "reason", _zero_filled(snap.render_candidates, RENDER_REASONS))  # fmt: skip
        yield _counter("trawl_renders", "Renders in the browser, by how they ended",
                       "state", _zero_filled(snap.renders, RENDER_STATES))  # fmt: skip
        requests = _zero_filled(snap.render_requests, RENDER_REQUEST_OUTCOMES)
        yield _counter("trawl_render_requests",
                       "The browser's requests trawl was asked to make, by outcome",
                       "outcome", requests)  # fmt: skip
        yield GaugeMetricFamily("trawl_renders_waiting", "Pages queued for a browser",
                                stats.get("rendersWaiting", 0))  # fmt: skip
        yield _counter("trawl_skips", "URLs and pages skipped, by reason",
                       "reason", _zero_filled(snap.skipped, SKIP_REASONS))  # fmt: skip
        # Issue 16: the skipped report's counts, over the whole crawl (a resumed crawl goes
        # on from the stored counts), as `trawl skipped` and /v1/skipped show them.
        yield _counter("trawl_skipped", "URLs not queued (scope, depth, hops, excludes, "
                       "traps), by reason, whole crawl",
                       "reason", _zero_filled(snap.scope_skips, SCOPE_SKIP_REASONS))  # fmt: skip
        yield GaugeMetricFamily("trawl_scope_exclusions", "Crawl-wide excludes added at run time",
                                snap.exclusions)  # fmt: skip
        yield GaugeMetricFamily("trawl_snapshot_timestamp_seconds",
                                "When the crawl loop published these numbers", snap.at)  # fmt: skip
        shared = self.view.shared
        if shared is not None:
            yield from shared.cluster_metrics()


def _zero_filled(values: Mapping[str, float], known: Iterable[str]) -> dict[str, float]:
    """`values` with a zero for each known label not seen yet: a family with labels has no
    sample until its first count, and a rate() over a series that appears later misses it."""
    return {**dict.fromkeys(known, 0), **values}


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


def _fetch_histogram(snap: CrawlSnapshot) -> Metric:
    return _histogram(
        "trawl_fetch_seconds", "Request exchange time (robots.txt and sitemaps included)",
        snap.fetch_buckets, snap.fetch_seconds_sum,
    )  # fmt: skip


def _histogram(
    name: str, doc: str, cumulative: Iterable[tuple[float, int]], total: float
) -> Metric:
    buckets = [("+Inf" if b == float("inf") else repr(b), n) for b, n in cumulative]
    return HistogramMetricFamily(name, doc, buckets=buckets or [("+Inf", 0)], sum_value=total)


def metrics_text(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)


def crawl_registry(view: CrawlView) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(CrawlCollector(view))
    return registry
