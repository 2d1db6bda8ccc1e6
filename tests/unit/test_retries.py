"""Which failed fetches are retried, under which cause, and when the retried URL competes
with its site's other URLs again (frontier.retries), on fake times."""

from __future__ import annotations

import pytest

from trawl.frontier.retries import RETRIABLE_ERRORS, retry_cause, retry_not_before
from trawl.politeness.site_clock import DETERMINISTIC_ERRORS, ClockPolicy
from trawl.politeness.site_state import SiteState

MAX_ATTEMPTS = 3


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504, 599])
def test_throttling_and_server_errors_are_retried_under_their_status(status: int) -> None:
    assert retry_cause(status, None, 1, MAX_ATTEMPTS) == str(status)


@pytest.mark.parametrize("status", [200, 204, 301, 304, 400, 403, 404, 410, 451, 600, 999])
def test_other_statuses_are_final(status: int) -> None:
    # >= 600 slows the site clock down (THROTTLED) but the URL is not asked again.
    assert retry_cause(status, None, 1, MAX_ATTEMPTS) is None


@pytest.mark.parametrize("kind", sorted(RETRIABLE_ERRORS))
def test_transient_errors_without_an_answer_are_retried_under_their_kind(kind: str) -> None:
    assert retry_cause(0, kind, 1, MAX_ATTEMPTS) == kind


@pytest.mark.parametrize("kind", [*sorted(DETERMINISTIC_ERRORS), "other", None])
def test_errors_the_url_would_repeat_are_final(kind: str | None) -> None:
    assert kind not in RETRIABLE_ERRORS
    assert retry_cause(0, kind, 1, MAX_ATTEMPTS) is None


def test_the_status_decides_when_an_answer_came_with_an_error() -> None:
    # A body cut short after the status line: the status is what the site said.
    assert retry_cause(503, "timeout", 1, MAX_ATTEMPTS) == "503"
    assert retry_cause(200, "timeout", 1, MAX_ATTEMPTS) is None
    assert retry_cause(404, "reset", 1, MAX_ATTEMPTS) is None


@pytest.mark.parametrize(("status", "kind"), [(503, None), (0, "timeout")])
def test_issue_15_the_last_attempt_is_final(status: int, kind: str | None) -> None:
    causes = [retry_cause(status, kind, n, MAX_ATTEMPTS) for n in range(1, MAX_ATTEMPTS + 2)]
    cause = str(status) if status else kind
    assert causes == [cause, cause, None, None]


def test_a_single_attempt_is_never_retried() -> None:
    assert retry_cause(503, None, 1, 1) is None
    assert retry_cause(0, "connect", 1, 1) is None


def test_issue_15_a_retried_url_waits_one_more_gap_per_attempt() -> None:
    policy = ClockPolicy(min_delay_s=2.0)
    state = SiteState("shop.example")
    state.clock.hold_until(1000.0)
    assert [retry_not_before(state, n, policy) for n in (1, 2, 3)] == [1002.0, 1004.0, 1006.0]


def test_the_wait_follows_the_site_clock_and_its_gap() -> None:
    policy = ClockPolicy(min_delay_s=1.0)
    state = SiteState("shop.example")
    state.clock.hold_until(500.0)
    state.clock.crawl_delay_s = 10.0  # a Crawl-delay widens every step
    assert retry_not_before(state, 2, policy) == 520.0
    state.clock.hold_until(800.0)  # the site backs off: the retry comes after it
    assert retry_not_before(state, 2, policy) == 820.0
