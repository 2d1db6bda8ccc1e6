"""Issue 13: which fetch errors widen a site's gap, and how far (site_clock, origin_health)."""

from __future__ import annotations

import pytest

from trawl.frontier.retries import RETRIABLE_ERRORS
from trawl.politeness.origin_health import OriginHealth
from trawl.politeness.site_clock import (
    DETERMINISTIC_ERRORS,
    ClockPolicy,
    FetchOutcome,
    SiteClock,
    classify_result,
)

POLICY = ClockPolicy(min_delay_s=1.0, slow_factor=0.0, backoff_factor=2.0, backoff_max_s=60.0)
MAIN, PORT81 = "http://a.test", "http://a.test:81"


def _gaps(outcomes: list[FetchOutcome]) -> list[float]:
    clock, now, gaps = SiteClock(), 100.0, []
    for outcome in outcomes:
        clock.start(now)
        clock.finish(now, 0.0, outcome, policy=POLICY)
        gaps.append(clock.next_allowed_at - now)
        now = clock.next_allowed_at
    return gaps


@pytest.mark.parametrize(
    ("status", "kind", "outcome"),
    [
        (200, None, FetchOutcome.OK),
        (404, None, FetchOutcome.OK),
        (503, None, FetchOutcome.THROTTLED),
        (500, None, FetchOutcome.SERVER_ERROR),
        (0, "protocol", FetchOutcome.URL_ERROR),  # oversized/too many headers, bad status line
        (0, "too_big", FetchOutcome.URL_ERROR),
        (0, "decode", FetchOutcome.URL_ERROR),
        (0, "reset", FetchOutcome.NETWORK_ERROR),
        (0, "timeout", FetchOutcome.NETWORK_ERROR),
        (0, "connect", FetchOutcome.NETWORK_ERROR),
        (0, None, FetchOutcome.NETWORK_ERROR),
    ],
)
def test_issue_13_error_kinds_map_to_clock_outcomes(
    status: int, kind: str | None, outcome: FetchOutcome
) -> None:
    assert classify_result(status, kind) is outcome


def test_issue_13_deterministic_errors_are_never_retried() -> None:
    assert DETERMINISTIC_ERRORS.isdisjoint(RETRIABLE_ERRORS)


def test_issue_13_url_errors_do_not_widen_the_gap() -> None:
    assert _gaps([FetchOutcome.URL_ERROR] * 3 + [FetchOutcome.OK]) == [1.0, 1.0, 1.0, 1.0]


def test_issue_13_a_url_error_neither_widens_nor_ends_a_backoff() -> None:
    gaps = _gaps([FetchOutcome.NETWORK_ERROR, FetchOutcome.URL_ERROR, FetchOutcome.NETWORK_ERROR])
    assert gaps == [2.0, 2.0, 4.0]


def test_issue_13_origin_errors_take_one_backoff_step_never_more() -> None:
    assert _gaps([FetchOutcome.ORIGIN_ERROR] * 4) == [2.0, 2.0, 2.0, 2.0]
    assert _gaps([FetchOutcome.NETWORK_ERROR] * 4) == [2.0, 4.0, 8.0, 16.0]


def _note(h: OriginHealth, origin: str, now: float, kind: str | None, status: int = 0):
    return h.note(origin, now, classify_result(status, kind), kind, gap_s=1.0, policy=POLICY)


def test_issue_13_a_refusing_origin_is_held_while_the_other_answers() -> None:
    h = OriginHealth()
    assert _note(h, MAIN, 0.0, None, 200) is FetchOutcome.OK
    assert _note(h, PORT81, 1.0, "connect") is FetchOutcome.ORIGIN_ERROR
    assert h.held_until(PORT81) == 3.0  # its own backoff: 1 s x 2
    assert h.held_until(MAIN) == 0.0
    assert _note(h, PORT81, 3.0, "connect") is FetchOutcome.ORIGIN_ERROR
    assert h.held_until(PORT81) == 7.0  # doubles per failure in a row
    assert _note(h, PORT81, 7.0, None, 404) is FetchOutcome.OK
    assert h.held_until(PORT81) == 0.0, "an HTTP answer clears it"


def test_issue_13_a_site_with_no_answering_origin_backs_off_as_a_whole() -> None:
    h = OriginHealth()
    assert _note(h, MAIN, 0.0, "connect") is FetchOutcome.NETWORK_ERROR
    assert _note(h, PORT81, 1.0, "dns") is FetchOutcome.NETWORK_ERROR
    assert h.held_until(MAIN) == h.held_until(PORT81) == 0.0  # the site clock holds them


def test_issue_13_only_connection_failures_are_an_origins_own() -> None:
    h = OriginHealth()
    _note(h, MAIN, 0.0, None, 200)
    assert _note(h, PORT81, 1.0, "reset") is FetchOutcome.NETWORK_ERROR
    assert _note(h, PORT81, 2.0, "timeout") is FetchOutcome.NETWORK_ERROR
    assert h.held_until(PORT81) == 0.0


def test_origin_health_comes_back_from_its_json_and_counts_on() -> None:
    h = OriginHealth()
    _note(h, MAIN, 0.0, None, 200)
    _note(h, PORT81, 1.0, "connect")
    again = OriginHealth.from_json(h.to_json())
    assert again == h
    # The next failure doubles the wait, as it would have in memory.
    assert _note(again, PORT81, 3.0, "connect") is FetchOutcome.ORIGIN_ERROR
    assert again.held_until(PORT81) == 7.0
    assert OriginHealth.from_json(None) == OriginHealth()  # a record from before the field


@pytest.mark.parametrize(
    "data",
    [
        [],
        {"answering": "http://a.test"},
        {"answering": [1]},
        {"failing": []},
        {"failing": {MAIN: 3}},
        {"failing": {MAIN: {"failures": 0, "retryAt": 1.0}}},
        {"failing": {MAIN: {"failures": True, "retryAt": 1.0}}},
        {"failing": {MAIN: {"failures": 1, "retryAt": "soon"}}},
        {"failing": {MAIN: {"failures": 1}}},
    ],
)
def test_damaged_origin_health_is_an_error(data: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        OriginHealth.from_json(data)


def test_an_origin_hold_runs_until_its_retry_time() -> None:
    h = OriginHealth()
    _note(h, MAIN, 0.0, None, 200)
    _note(h, PORT81, 1.0, "connect")  # held until 3.0
    assert h.holds_after(2.9)
    assert not h.holds_after(3.0)
    assert not OriginHealth().holds_after(0.0)
