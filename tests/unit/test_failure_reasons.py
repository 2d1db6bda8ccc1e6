"""Issue 14: the words for CrawlStats.failures, and the one line a crawl that got nothing says."""

from __future__ import annotations

from trawl.fetch.failure_reasons import REASONS, failures_line, nothing_fetched_line
from trawl.loop.stats import CrawlStats


def test_failures_line_lists_kinds_most_frequent_first() -> None:
    assert failures_line({}) == "errors 0"
    assert failures_line({"timeout": 1, "dns": 3, "reset": 0}) == "errors 4 (dns 3, timeout 1)"


def test_nothing_fetched_names_the_leading_reason_its_example_and_the_way_out() -> None:
    line = nothing_fetched_line(
        0,
        {"blocked_address": 3, "dns": 1},
        {"blocked_address": "http://127.0.0.1/robots.txt: 127.0.0.1 is not a public address"},
    )
    assert line == (
        "fetched nothing: 3 requests refused by the address guard (http://127.0.0.1/robots.txt:"
        " 127.0.0.1 is not a public address; pass --allow-private or map the name with"
        " --resolve); other errors: dns 1"
    )


def test_nothing_fetched_is_silent_once_anything_answered() -> None:
    assert nothing_fetched_line(1, {"dns": 5}, {}) is None
    assert nothing_fetched_line(0, {}, {}).startswith("fetched nothing: no request was made")
    one = nothing_fetched_line(0, {"timeout": 1}, {"timeout": "http://a.test/: slow"})
    assert one == "fetched nothing: 1 request timed out (http://a.test/: slow)"


def test_stats_count_each_failure_once_and_keep_the_first_message() -> None:
    stats = CrawlStats()
    stats.note_failure("dns", "first")
    stats.note_failure("dns", "second")
    stats.note_failure("connect", "refused")
    assert stats.failures == {"dns": 2, "connect": 1}
    assert stats.failure_examples == {"dns": "first", "connect": "refused"}
    assert stats.errors == 3


def test_every_fetch_error_kind_has_words() -> None:
    kinds = {"blocked_address", "dns", "connect", "timeout", "reset", "protocol", "too_big"}
    assert kinds | {"decode", "invalid_url", "too_many_redirects"} <= set(REASONS)
