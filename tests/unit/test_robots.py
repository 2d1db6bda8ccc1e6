"""robots.txt decisions (RFC 9309), on fake times."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trawl.errors import DataError
from trawl.politeness.robots import (
    HopAction,
    RobotsHop,
    RobotsRules,
    RobotsStatus,
    robots_from_response,
    robots_hop,
    robots_redirect_target,
    robots_url,
)

ORIGIN = "https://shop.example"
NOW = 1_700_000_000.0
DAY = 86_400.0

BOTH_GROUPS = b"""\
User-agent: *
Disallow: /
Crawl-delay: 7

User-agent: trawl
Disallow: /checkout
Allow: /checkout/help
Crawl-delay: 5

Sitemap: https://shop.example/sitemap.xml
Sitemap: https://cdn.example/more.xml
"""


def rules_of(body: bytes, status: int | None = 200) -> RobotsRules:
    return robots_from_response(ORIGIN, status, body, NOW)


def test_200_parses_rules_and_trawl_group_beats_star() -> None:
    rules = rules_of(BOTH_GROUPS)
    assert rules.status is RobotsStatus.RULES
    assert rules.is_allowed(f"{ORIGIN}/products/1", "trawl") is True
    assert rules.is_allowed(f"{ORIGIN}/checkout/pay", "trawl") is False
    assert rules.is_allowed(f"{ORIGIN}/checkout/help", "trawl") is True
    # Another crawler falls into `*`, which disallows everything.
    assert rules.is_allowed(f"{ORIGIN}/products/1", "otherbot") is False


def test_prepare_parses_once_and_returns_self() -> None:
    rules = rules_of(BOTH_GROUPS)
    assert not rules.is_prepared("trawl")
    assert rules.prepare("trawl") is rules
    assert rules.is_prepared("trawl")
    assert not rules.is_prepared("otherbot")
    assert rules.is_allowed(f"{ORIGIN}/checkout/pay", "trawl") is False
    unreachable = robots_from_response(ORIGIN, 500, None, NOW)
    assert unreachable.prepare("trawl") is unreachable
    assert unreachable.is_prepared("trawl")


def test_repr_leaves_out_the_text() -> None:
    text = repr(rules_of(BOTH_GROUPS))
    assert "status=<RobotsStatus.RULES" in text
    assert "checkout" not in text


def test_agent_token_matches_case_insensitively() -> None:
    rules = rules_of(b"User-agent: TRAWL\nDisallow: /private\n\nUser-agent: *\nDisallow: /\n")
    assert rules.is_allowed(f"{ORIGIN}/public", "trawl") is True
    assert rules.is_allowed(f"{ORIGIN}/private/x", "trawl") is False


def test_star_group_applies_when_no_trawl_group() -> None:
    rules = rules_of(b"User-agent: *\nDisallow: /admin\n")
    assert rules.is_allowed(f"{ORIGIN}/admin/x", "trawl") is False
    assert rules.is_allowed(f"{ORIGIN}/shop", "trawl") is True


def test_robots_txt_itself_is_always_allowed() -> None:
    # RFC 9309 2.2.2: /robots.txt is implicitly allowed.
    rules = rules_of(b"User-agent: *\nDisallow: /\n")
    assert rules.is_allowed(robots_url(ORIGIN), "trawl") is True


def test_crawl_delay_from_matching_group() -> None:
    rules = rules_of(BOTH_GROUPS)
    assert rules.crawl_delay("trawl") == 5.0
    assert rules.crawl_delay("otherbot") == 7.0


def test_crawl_delay_absent_is_none() -> None:
    assert rules_of(b"User-agent: *\nDisallow: /x\n").crawl_delay("trawl") is None


def test_request_rate_folds_into_crawl_delay() -> None:
    rules = rules_of(b"User-agent: *\nCrawl-delay: 2\nRequest-rate: 1/10s\n")
    assert rules.crawl_delay("trawl") == 10.0


@pytest.mark.parametrize("value", ["-5", "nan", "inf", "abc"])
def test_insane_crawl_delay_is_ignored(value: str) -> None:
    rules = rules_of(f"User-agent: *\nCrawl-delay: {value}\n".encode())
    assert rules.crawl_delay("trawl") is None


def test_huge_crawl_delay_is_capped_at_one_day() -> None:
    rules = rules_of(b"User-agent: *\nCrawl-delay: 1e308\n")
    assert rules.crawl_delay("trawl") == DAY


def test_sitemaps_listed_in_order() -> None:
    assert rules_of(BOTH_GROUPS).sitemaps() == [
        "https://shop.example/sitemap.xml",
        "https://cdn.example/more.xml",
    ]


def test_empty_200_allows_everything() -> None:
    rules = rules_of(b"")
    assert rules.status is RobotsStatus.RULES
    assert rules.is_allowed(f"{ORIGIN}/anything", "trawl") is True
    assert robots_from_response(ORIGIN, 204, None, NOW).is_allowed(f"{ORIGIN}/a", "trawl")


def test_byte_order_mark_does_not_spoil_first_line() -> None:
    rules = rules_of(b"\xef\xbb\xbfUser-agent: *\nDisallow: /private\n")
    assert rules.is_allowed(f"{ORIGIN}/private/x", "trawl") is False


def test_invalid_utf8_is_replaced_not_fatal() -> None:
    rules = rules_of(b"User-agent: *\nDisallow: /\xff\xfe\nDisallow: /admin\n")
    assert rules.is_allowed(f"{ORIGIN}/admin", "trawl") is False
    assert "\ufffd" in rules.text


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 451])
def test_4xx_is_unavailable_so_allow_all(status: int) -> None:
    # RFC 9309 2.3.1.3: 401/403 are "unavailable" like 404.
    rules = robots_from_response(ORIGIN, status, b"User-agent: *\nDisallow: /\n", NOW)
    assert rules.status is RobotsStatus.ALLOW_ALL
    assert rules.is_allowed(f"{ORIGIN}/anything", "trawl") is True
    assert rules.crawl_delay("trawl") is None
    assert rules.sitemaps() == []
    assert rules.text == ""
    assert rules.expires_at == NOW + DAY
    assert rules.retry_at is None
    assert rules.failures == 0


@pytest.mark.parametrize("status", [None, 429, 500, 502, 503, 504, 599, 100, 600, 999])
def test_unreachable_disallows_everything(status: int | None) -> None:
    rules = robots_from_response(ORIGIN, status, b"", NOW)
    assert rules.status is RobotsStatus.UNREACHABLE
    assert rules.is_allowed(f"{ORIGIN}/", "trawl") is False
    assert rules.is_allowed(robots_url(ORIGIN), "trawl") is False
    assert rules.failures == 1
    assert rules.retry_at == NOW + 60.0
    assert rules.expires_at == NOW + 60.0


def test_unreachable_retry_doubles_and_caps() -> None:
    failures = 0
    waits = []
    for _ in range(9):
        rules = robots_from_response(ORIGIN, 503, None, NOW, previous_failures=failures)
        assert rules.retry_at is not None
        waits.append(rules.retry_at - NOW)
        failures = rules.failures
    assert waits == [60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 3600.0, 3600.0, 3600.0]
    assert failures == 9


def test_retry_after_huge_failure_count_does_not_overflow() -> None:
    rules = robots_from_response(ORIGIN, None, None, NOW, previous_failures=10_000)
    assert rules.retry_at == NOW + 3600.0


def test_success_after_unreachable_resets_failures() -> None:
    rules = robots_from_response(ORIGIN, 200, b"", NOW, previous_failures=4)
    assert rules.failures == 0
    assert rules.retry_at is None


def test_final_3xx_after_too_many_hops_is_unavailable() -> None:
    # RFC 9309 2.3.1.2: beyond five redirects MAY be read as unavailable (allow all).
    rules = robots_from_response(ORIGIN, 301, None, NOW)
    assert rules.status is RobotsStatus.ALLOW_ALL


def test_body_is_capped_at_500_kib_before_parsing() -> None:
    filler = b"# " + b"x" * 97 + b"\n"  # 100-byte comment lines
    body = b"User-agent: *\nDisallow: /early\n" + filler * 6_200 + b"Disallow: /late\n"
    assert len(body) > 600 * 1024
    rules = rules_of(body)
    parsed_bytes = len(rules.text.encode())
    assert 512_000 - 100 <= parsed_bytes <= 512_000
    assert rules.text.endswith("\n")  # the cut partial line is dropped, not parsed
    assert rules.is_allowed(f"{ORIGIN}/early", "trawl") is False
    assert rules.is_allowed(f"{ORIGIN}/late", "trawl") is True


def test_cut_partial_line_is_dropped() -> None:
    body = b"User-agent: *\nDisallow: /\nAllow: /public/only-this\n"
    rules = robots_from_response(ORIGIN, 200, body, NOW, max_bytes=len(body) - 10)
    # "Allow: /public/on" would have allowed /public/other.
    assert rules.text == "User-agent: *\nDisallow: /\n"
    assert rules.is_allowed(f"{ORIGIN}/public/other", "trawl") is False


def test_fresh_for_24_hours() -> None:
    rules = rules_of(BOTH_GROUPS)
    assert rules.fetched_at == NOW
    assert rules.is_fresh(NOW) is True
    assert rules.is_fresh(NOW + DAY - 0.001) is True
    assert rules.is_fresh(NOW + DAY) is False


def test_unreachable_is_fresh_until_retry() -> None:
    rules = robots_from_response(ORIGIN, 500, None, NOW)
    assert rules.is_fresh(NOW + 59.9) is True
    assert rules.is_fresh(NOW + 60.0) is False


@pytest.mark.parametrize(
    "rules",
    [
        robots_from_response(ORIGIN, 200, BOTH_GROUPS, NOW),
        robots_from_response(ORIGIN, 404, None, NOW),
        robots_from_response(ORIGIN, 503, None, NOW, previous_failures=3),
    ],
)
def test_json_round_trip(rules: RobotsRules) -> None:
    data = rules.to_json()
    back = RobotsRules.from_json(data)
    assert back == rules
    assert back.to_json() == data
    assert data["status"] == rules.status.value
    assert set(data) == {
        "origin",
        "status",
        "fetchedAt",
        "expiresAt",
        "text",
        "retryAt",
        "failures",
    }


def test_json_round_trip_keeps_decisions() -> None:
    rules = rules_of(BOTH_GROUPS)
    assert rules.is_allowed(f"{ORIGIN}/checkout/pay", "trawl") is False  # fills the cache
    back = RobotsRules.from_json(rules.to_json())
    assert back == rules  # the parser cache is not part of equality
    assert back.is_allowed(f"{ORIGIN}/checkout/pay", "trawl") is False
    assert back.crawl_delay("trawl") == 5.0
    assert hash(back) == hash(rules)


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"origin": ORIGIN, "status": "nope", "fetchedAt": 1.0, "expiresAt": 2.0},
        {"origin": ORIGIN, "status": "rules", "fetchedAt": "x", "expiresAt": 2.0},
        {"origin": ORIGIN, "status": "rules", "fetchedAt": 1.0, "expiresAt": 2.0, "text": 3},
        {"origin": 7, "status": "rules", "fetchedAt": 1.0, "expiresAt": 2.0},
        {"origin": ORIGIN, "status": "rules", "fetchedAt": 1.0, "expiresAt": 2, "failures": True},
    ],
)
def test_from_json_rejects_damaged_records(data: dict[str, object]) -> None:
    with pytest.raises(DataError, match="robotsRules record is damaged"):
        RobotsRules.from_json(data)


def test_robots_url() -> None:
    assert robots_url("https://shop.example") == "https://shop.example/robots.txt"
    assert robots_url("http://a.example:8080/") == "http://a.example:8080/robots.txt"


def test_redirect_followed_relative_and_absolute() -> None:
    start = robots_url(ORIGIN)
    assert robots_redirect_target(start, 301, "/new/robots.txt", 0) == (
        "https://shop.example/new/robots.txt"
    )
    assert robots_redirect_target(start, 308, " https://cdn.example/r.txt#x ", 2) == (
        "https://cdn.example/r.txt"
    )
    for status in (302, 303, 307):
        assert robots_redirect_target(start, status, "/r", 0) == "https://shop.example/r"


def test_redirect_stops_after_five_hops() -> None:
    url = robots_url(ORIGIN)
    hops = 0
    while (nxt := robots_redirect_target(url, 302, f"/hop{hops + 1}", hops)) is not None:
        url = nxt
        hops += 1
    assert hops == 5
    assert url == "https://shop.example/hop5"


@pytest.mark.parametrize(
    ("status", "location"),
    [
        (200, "/x"),
        (304, "/x"),
        (300, "/x"),
        (301, None),
        (301, "   "),
        (301, "ftp://files.example/robots.txt"),
        (301, "javascript:alert(1)"),
        (301, "http://[::1/robots.txt"),
    ],
)
def test_redirect_not_followed(status: int, location: str | None) -> None:
    assert robots_redirect_target(robots_url(ORIGIN), status, location, 0) is None


@settings(max_examples=300, deadline=None)
@given(
    body=st.one_of(st.binary(max_size=2_000), st.text(max_size=2_000).map(str.encode)),
    path=st.text(max_size=60),
    agent=st.sampled_from(["trawl", "*", "", "Trawl/1.0", "other"]),
)
def test_arbitrary_robots_never_raise(body: bytes, path: str, agent: str) -> None:
    rules = robots_from_response(ORIGIN, 200, body, NOW)
    assert isinstance(rules.is_allowed(f"{ORIGIN}/{path}", agent), bool)
    delay = rules.crawl_delay(agent)
    assert delay is None or 0.0 <= delay <= DAY
    assert all(isinstance(url, str) for url in rules.sitemaps())
    assert RobotsRules.from_json(rules.to_json()) == rules


robots_lines = st.lists(
    st.one_of(
        st.sampled_from(["User-agent: *", "User-agent: trawl", "Sitemap: /s.xml", ""]),
        st.builds(
            "{}: {}".format,
            st.sampled_from(["Allow", "Disallow", "Crawl-delay", "Request-rate"]),
            st.text(alphabet="/*$?=&%.0123456789abc\x00 ", max_size=20),
        ),
    ),
    max_size=30,
)


@settings(max_examples=300, deadline=None)
@given(lines=robots_lines, path=st.text(alphabet="/*$?=&%.abc", max_size=20))
def test_structured_robots_never_raise(lines: list[str], path: str) -> None:
    rules = robots_from_response(ORIGIN, 200, "\n".join(lines).encode(), NOW)
    assert isinstance(rules.is_allowed(f"{ORIGIN}/{path}", "trawl"), bool)
    delay = rules.crawl_delay("trawl")
    assert delay is None or 0.0 <= delay <= DAY


def hop(**kw: object) -> RobotsHop:
    values: dict[str, object] = {
        "may_fetch": True, "held": True, "paused": False, "ready_at": NOW, "gap_s": 1.0, "now": NOW
    }  # fmt: skip
    values.update(kw)
    return robots_hop(**values)  # type: ignore[arg-type]  # test table of keyword values


def test_issue_13_cross_site_hop_followed_when_held_and_clock_near() -> None:
    assert hop().action is HopAction.FOLLOW
    assert hop(ready_at=NOW + 1.0).action is HopAction.FOLLOW  # waits one gap, no more


def test_issue_13_cross_site_hop_waits_for_a_busy_site() -> None:
    assert hop(held=False) == RobotsHop(HopAction.RETRY_NEXT_TURN)


def test_issue_13_cross_site_hop_backing_off_site_defers_the_origin() -> None:
    assert hop(ready_at=NOW + 30.0) == RobotsHop(HopAction.RETRY_NEXT_TURN, not_before=NOW + 30.0)


def test_issue_13_cross_site_hop_not_ours_or_paused_is_unreachable() -> None:
    assert hop(may_fetch=False, held=False).action is HopAction.UNREACHABLE
    assert hop(paused=True).action is HopAction.UNREACHABLE
