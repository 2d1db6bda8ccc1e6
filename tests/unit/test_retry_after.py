"""Retry-After parsing (RFC 9110 10.2.3) on fake times."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import format_datetime

import pytest

from trawl.politeness.retry_after import parse_retry_after

# 2015-10-21T07:28:00Z
NOW = datetime(2015, 10, 21, 7, 28, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("120", 120.0), ("0", 0.0), (" 30 ", 30.0), ("1.5", 1.5), ("007", 7.0)],
)
def test_delta_seconds(value: str, seconds: float) -> None:
    assert parse_retry_after(value, NOW) == seconds


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("Wed, 21 Oct 2015 07:30:00 GMT", 120.0),  # IMF-fixdate
        ("Wed, 21 Oct 2015 08:28:00 GMT", 3600.0),
        ("Wednesday, 21-Oct-15 07:29:00 GMT", 60.0),  # obsolete RFC 850 form
        ("Wed Oct 21 07:28:30 2015", 30.0),  # obsolete asctime form, no zone: GMT
        ("Wed, 21 Oct 2015 07:28:10 -0000", 10.0),
        ("Wed, 21 Oct 2015 09:28:00 +0200", 0.0),  # same instant as NOW
    ],
)
def test_http_date(value: str, seconds: float) -> None:
    assert parse_retry_after(value, NOW) == seconds


def test_date_from_formatter_round_trips() -> None:
    value = format_datetime(datetime(2015, 10, 21, 7, 45, tzinfo=UTC), usegmt=True)
    assert parse_retry_after(value, NOW) == 17 * 60.0


def test_past_date_is_zero() -> None:
    assert parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", NOW) == 0.0


@pytest.mark.parametrize(
    "value",
    [
        None,
        "",
        "   ",
        "soon",
        "-5",
        "1e3",
        "nan",
        "inf",
        "12abc",
        "²",
        "Wed, 21 Oct 99999 07:28 GMT",
    ],
)
def test_garbage_is_none(value: str | None) -> None:
    assert parse_retry_after(value, NOW) is None


def test_capped_at_max() -> None:
    assert parse_retry_after("999999", NOW) == 86_400.0
    assert parse_retry_after("9" * 400, NOW) == 86_400.0
    assert parse_retry_after("Fri, 21 Oct 2050 07:28:00 GMT", NOW) == 86_400.0
    assert parse_retry_after("600", NOW, max_s=300.0) == 300.0
