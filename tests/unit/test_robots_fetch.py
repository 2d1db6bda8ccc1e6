"""What a robots.txt answer does to its site (politeness.robots_fetch): the site clock's
hold, blocking, sitemap reading and the status counted, on fake times."""

from __future__ import annotations

import pytest

from trawl.politeness.robots import RobotsRules, RobotsStatus, robots_from_response
from trawl.politeness.robots_fetch import Blocking, RobotsRead, robots_read
from trawl.politeness.site_clock import ClockPolicy
from trawl.politeness.site_state import SiteState

ORIGIN = "https://shop.example"
NOW = 1_700_000_000.0
GAP_S = 2.0
RETRY_BASE_S = 60.0
DISALLOW_ALL = b"User-agent: *\nDisallow: /\n"


def answer(
    status: int | None, body: bytes | None = None, previous: RobotsRules | None = None
) -> RobotsRules:
    return robots_from_response(
        ORIGIN,
        status,
        body,
        NOW,
        previous_failures=previous.failures if previous is not None else 0,
        cache_s=86_400.0,
        retry_base_s=RETRY_BASE_S,
        retry_max_s=3600.0,
        max_bytes=512_000,
    )


def read_without_delay(
    rules: RobotsRules,
    previous: RobotsRules | None = None,
    *,
    others_answer: bool = False,
    gap_s: float = GAP_S,
) -> RobotsRead:
    """`robots_read` at NOW for a site with no Crawl-delay before or after the answer."""
    return robots_read(
        rules,
        previous,
        others_answer=others_answer,
        now=NOW,
        gap_s=gap_s,
        delay_before=None,
        delay_after=None,
    )


def test_issue_15_rules_unblock_the_site_and_re_gap_its_clock() -> None:
    rules = answer(200, DISALLOW_ALL)
    assert rules.status is RobotsStatus.RULES
    assert read_without_delay(rules) == RobotsRead(
        hold_until=NOW + GAP_S,
        blocking=Blocking.UNBLOCK,
        reads_sitemaps=True,
        status_label="robots:rules",
        commit_now=False,
    )


def test_no_file_allows_all_and_unblocks_the_site() -> None:
    rules = answer(404)
    read = read_without_delay(rules)
    assert read.status_label == "robots:allow_all"
    assert read.blocking is Blocking.UNBLOCK
    assert read.hold_until == NOW + GAP_S
    assert read.reads_sitemaps


@pytest.mark.parametrize("status", [None, 429, 500, 503])
def test_unreachable_on_the_only_live_origin_holds_and_blocks_the_site(
    status: int | None,
) -> None:
    rules = answer(status)
    assert rules.retry_at == NOW + RETRY_BASE_S
    read = read_without_delay(rules)
    assert read == RobotsRead(
        hold_until=NOW + RETRY_BASE_S,
        blocking=Blocking.BLOCK,
        reads_sitemaps=False,
        status_label="robots:unreachable",
        commit_now=True,
    )


def test_issue_15_unreachable_with_another_origin_answering_holds_only_one_gap() -> None:
    # The origin's own URLs wait for its retry (the turn reads retry_at); the site's
    # other origins keep their pace, and a one-shot crawl's blocking is left as it was.
    read = read_without_delay(answer(503), others_answer=True)
    assert read.hold_until == NOW + GAP_S
    assert read.blocking is Blocking.UNCHANGED
    assert not read.reads_sitemaps


def test_a_gap_longer_than_the_retry_still_holds_the_site() -> None:
    read = read_without_delay(answer(None), gap_s=90.0)
    assert read.hold_until == NOW + 90.0


def test_unreachable_retries_wait_longer_with_each_failure_in_a_row() -> None:
    first = answer(None)
    second = answer(None, previous=first)
    third = answer(500, previous=second)
    assert (first.failures, second.failures, third.failures) == (1, 2, 3)
    assert third.retry_at == NOW + 4 * RETRY_BASE_S
    read = read_without_delay(third, second)
    assert read.hold_until == NOW + 4 * RETRY_BASE_S
    # An answer clears the count: the next failure starts the backoff afresh.
    assert answer(None, previous=answer(200, b"", previous=third)).failures == 1


@pytest.mark.parametrize(
    ("previous_status", "reads"),
    [
        (None, True),  # first fetch
        (503, True),  # first answer after an unreachable robots.txt
        (200, False),  # a refresh of rules
        (404, False),  # a refresh of "no file"
    ],
)
def test_sitemaps_are_read_on_the_first_answer_that_is_not_unreachable(
    previous_status: int | None, reads: bool
) -> None:
    previous = None if previous_status is None else answer(previous_status)
    if previous_status == 503:
        assert previous is not None
        assert previous.status is RobotsStatus.UNREACHABLE
    for new in (answer(200, DISALLOW_ALL, previous), answer(410, None, previous)):
        read = read_without_delay(new, previous)
        assert read.reads_sitemaps is reads


def test_a_re_read_that_finds_robots_unreachable_blocks_without_sitemaps() -> None:
    previous = answer(200, DISALLOW_ALL)
    read = read_without_delay(answer(500, previous=previous), previous)
    assert read.blocking is Blocking.BLOCK
    assert not read.reads_sitemaps


def test_issue_15_a_crawl_delay_longer_than_the_gap_holds_the_site_for_the_delay() -> None:
    # The shell stores the rules before asking (SiteState.set_robots), so the gap it
    # passes carries their Crawl-delay: the request that fetched them ended before it
    # was known.
    policy = ClockPolicy(min_delay_s=GAP_S)
    state = SiteState("shop.example")
    assert state.clock.gap_s(policy) == GAP_S
    rules = answer(200, b"User-agent: *\nCrawl-delay: 30\nDisallow: /private\n")
    state.set_robots(rules, "trawl")
    gap_s = state.clock.gap_s(policy)
    assert gap_s == 30.0
    read = read_without_delay(rules, gap_s=gap_s)
    assert read.hold_until == NOW + 30.0
    assert read.blocking is Blocking.UNBLOCK


@pytest.mark.parametrize(
    ("before", "after", "commit_now"),
    [
        (None, 30.0, True),  # a Crawl-delay came
        (30.0, 10.0, True),  # changed
        (30.0, None, True),  # went
        (None, None, False),
        (5.0, 5.0, False),
    ],
)
def test_only_a_crawl_delay_that_came_went_or_changed_is_committed_at_once(
    before: float | None, after: float | None, commit_now: bool
) -> None:
    read = robots_read(
        answer(200, b"User-agent: *\nDisallow: /private\n"),
        None,
        others_answer=False,
        now=NOW,
        gap_s=GAP_S,
        delay_before=before,
        delay_after=after,
    )
    assert read.commit_now is commit_now


@pytest.mark.parametrize("others_answer", [False, True])
def test_an_unreachable_robots_txt_is_committed_at_once(others_answer: bool) -> None:
    # Its hold (or its origin's retry_at) must outlive a crash, delay unchanged or not.
    read = robots_read(
        answer(503),
        None,
        others_answer=others_answer,
        now=NOW,
        gap_s=GAP_S,
        delay_before=2.0,
        delay_after=2.0,
    )
    assert read.commit_now
