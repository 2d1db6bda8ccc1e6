"""The scope API's pure parts (issue 16): the seed scope a request asks for, merged over the
crawl's defaults, and the scope metrics. The routes themselves run against a real crawl in
tests/e2e/test_serve_scope.py."""

from __future__ import annotations

from dataclasses import dataclass, field

import pydantic
import pytest
from fastapi import HTTPException

from trawl.api.crawl_view import CrawlSnapshot
from trawl.api.metrics import crawl_registry, metrics_text
from trawl.api.scope import ScopeRequest, seed_scope_of
from trawl.frontier.scope import ScopeType, SeedScope

DEFAULTS = SeedScope("", ScopeType.DOMAIN, ("/docs/",), (), 3, 1)


class FakeBook:
    def default_seed(self, url: str) -> SeedScope:
        return SeedScope(url, DEFAULTS.type, DEFAULTS.include, (), 3, 1)


@dataclass
class FakeContext:
    scope: FakeBook = field(default_factory=FakeBook)


@dataclass
class FakeView:
    ctx: FakeContext = field(default_factory=FakeContext)
    snapshot: CrawlSnapshot = field(default_factory=CrawlSnapshot)
    shared: None = None


def scope_of(raw: dict[str, object]) -> SeedScope:
    return seed_scope_of(FakeView(), ScopeRequest.model_validate(raw))


def test_keys_left_out_take_the_crawl_defaults() -> None:
    assert scope_of({}) == DEFAULTS
    assert scope_of({"type": "prefix", "exclude": ["/b/"]}) == SeedScope(
        "", ScopeType.PREFIX, ("/docs/",), ("/b/",), 3, 1
    )
    assert scope_of({"include": [], "maxDepth": 0, "extraHops": 0}) == SeedScope(
        "", ScopeType.DOMAIN
    )


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ({"maxDepth": -1}, "max_depth"),
        ({"extraHops": 256}, "extra_hops"),
        ({"include": ["("]}, "scope.include[0]"),
        ({"exclude": ["(?=x)"]}, "scope.exclude[0]"),
    ],
)
def test_a_scope_seed_scope_refuses_is_a_422_naming_the_key(raw: dict[str, object], key: str):
    with pytest.raises(HTTPException) as caught:
        scope_of(raw)
    assert caught.value.status_code == 422
    assert key in caught.value.detail
    assert "\n" not in caught.value.detail


@pytest.mark.parametrize(
    "raw",
    [{"type": "site"}, {"type": 1}, {"maxDepth": "2"}, {"maxDepth": True}, {"include": "x"},
     {"url": "http://a.test/"}],
)  # fmt: skip
def test_the_request_model_is_strict(raw: dict[str, object]):
    with pytest.raises(pydantic.ValidationError):
        ScopeRequest.model_validate(raw)


def test_the_request_model_takes_the_type_as_a_json_string() -> None:
    # Strict models want an enum object; this field is lax, as JSON has no enums.
    assert ScopeRequest.model_validate({"type": "custom"}).type is ScopeType.CUSTOM


def test_metrics_show_skips_by_reason_and_run_time_excludes() -> None:
    view = FakeView(
        snapshot=CrawlSnapshot(scope_skips={"exclude": 7, "max_depth": 2}, exclusions=2)
    )
    text = metrics_text(crawl_registry(view)).decode()
    assert 'trawl_skipped_total{reason="exclude"} 7.0' in text
    assert 'trawl_skipped_total{reason="max_depth"} 2.0' in text
    assert 'trawl_skipped_total{reason="scope"} 0.0' in text  # shown before its first count
    assert "# TYPE trawl_scope_exclusions gauge" in text
    assert "trawl_scope_exclusions 2.0" in text
