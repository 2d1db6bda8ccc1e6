"""The render step's counters in /metrics (issue 18), from the crawl loop's snapshot."""

from __future__ import annotations

from dataclasses import dataclass

from trawl.api.crawl_view import CrawlSnapshot
from trawl.api.metrics import crawl_registry, metrics_text


@dataclass
class View:
    snapshot: CrawlSnapshot
    shared: None = None


def test_renders_candidates_and_the_browsers_requests_are_counted() -> None:
    snap = CrawlSnapshot(
        render_candidates={"empty-mount": 7},
        renders={"done": 5, "timeout": 1},
        render_requests={"fetched": 19, "robots": 2},
        stats={"rendersWaiting": 4},
    )
    text = metrics_text(crawl_registry(View(snap))).decode()  # type: ignore[arg-type]
    assert 'trawl_render_candidates_total{reason="empty-mount"} 7.0' in text
    assert 'trawl_render_candidates_total{reason="noscript-notice"} 0.0' in text
    assert 'trawl_renders_total{state="done"} 5.0' in text
    assert 'trawl_renders_total{state="cut"} 0.0' in text  # every state from the start
    assert 'trawl_render_requests_total{outcome="robots"} 2.0' in text
    assert "trawl_renders_waiting 4.0" in text
    empty = metrics_text(crawl_registry(View(CrawlSnapshot()))).decode()  # type: ignore[arg-type]
    for family in ("trawl_render_candidates", "trawl_renders", "trawl_render_requests"):
        assert f"{family}_total{{" in empty, family  # a sample from the start, as Prometheus wants
    assert "trawl_renders_waiting 0.0" in empty
