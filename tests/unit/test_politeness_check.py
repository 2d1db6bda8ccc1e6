"""check_politeness on synthetic request logs: each broken rule is reported, alone."""

from __future__ import annotations

import pytest

from trawl.testweb.answers import Responder
from trawl.testweb.politeness import Violation, ViolationKind, check_politeness
from trawl.testweb.request_log import RequestLogRecord, parse_request_log
from trawl.testweb.robots_variants import RobotsVariant
from trawl.testweb.sites import build_web

UA = "trawl/0.1 (+https://example.org/trawl)"


def rec(
    t_start: float,
    host: str,
    path: str,
    *,
    t_end: float | None = None,
    ip: str | None = None,
    site: str | None = None,
    ua: str = UA,
) -> RequestLogRecord:
    return RequestLogRecord(
        t_start=t_start,
        t_end=t_start + 0.01 if t_end is None else t_end,
        host=host,
        site=site or host.removeprefix("www."),
        ip=ip or f"127.1.0.{len(host) % 200 + 1}",
        method="GET",
        path=path,
        status=200,
        ua=ua,
        body_bytes=100,
    )


def clean_log() -> list[RequestLogRecord]:
    """Two sites, one of them on two hostnames, each request 1 s after the site's last."""
    return [
        rec(0.0, "a.test", "/robots.txt", ip="127.1.0.1"),
        rec(1.02, "a.test", "/", ip="127.1.0.1"),
        rec(2.04, "a.test", "/x.html?utm_source=s", ip="127.1.0.1"),
        rec(0.1, "b.test", "/robots.txt", ip="127.1.0.2"),
        rec(1.12, "www.b.test", "/robots.txt", ip="127.1.0.3"),
        rec(2.14, "www.b.test", "/", ip="127.1.0.3"),
        rec(3.16, "b.test", "/docs/1.html", ip="127.1.0.2"),
    ]


def kinds(violations: list[Violation]) -> list[ViolationKind]:
    return [v.kind for v in violations]


def test_clean_log_has_no_violations() -> None:
    robots = {"a.test": "User-agent: *\nDisallow: /private/\n", "b.test": ""}
    assert check_politeness(clean_log(), robots_txt=robots) == []


def test_overlapping_requests_on_one_site() -> None:
    log = clean_log()
    log[1] = rec(1.02, "a.test", "/", ip="127.1.0.1", t_end=2.5)  # still running at 2.04
    violations = check_politeness(log)
    assert kinds(violations) == [ViolationKind.SITE_OVERLAP]
    assert violations[0].subject == "a.test"


def test_overlap_across_hostnames_of_one_site() -> None:
    log = clean_log()
    log[4] = rec(1.12, "www.b.test", "/robots.txt", ip="127.1.0.3", t_end=3.5)
    violations = check_politeness(log)
    assert kinds(violations) == [ViolationKind.SITE_OVERLAP]
    assert violations[0].subject == "b.test"


def test_start_too_soon_after_previous() -> None:
    log = clean_log()
    log[2] = rec(1.6, "a.test", "/x.html", ip="127.1.0.1")
    violations = check_politeness(log)
    assert kinds(violations) == [ViolationKind.SITE_TOO_SOON]
    assert violations[0].subject == "a.test"


def test_crawl_delay_widens_the_gap() -> None:
    assert check_politeness(clean_log(), crawl_delays={"b.test": 1.0}) == []
    violations = check_politeness(clean_log(), crawl_delays={"a.test": 1.5})
    assert kinds(violations) == [ViolationKind.SITE_TOO_SOON] * 2
    assert {v.subject for v in violations} == {"a.test"}


def test_tolerance_absorbs_rounding() -> None:
    log = [rec(0.0, "a.test", "/robots.txt"), rec(0.997, "a.test", "/")]
    assert check_politeness(log, tolerance_s=0.005) == []
    assert kinds(check_politeness(log, tolerance_s=0.0)) == [ViolationKind.SITE_TOO_SOON]


def test_too_many_in_flight_on_one_ip() -> None:
    ip = "127.2.0.1"
    log = [
        rec(0.0, "a.test", "/robots.txt", ip=ip, t_end=1.0),
        rec(0.3, "b.test", "/robots.txt", ip=ip, t_end=1.0),
        rec(0.6, "c.test", "/robots.txt", ip=ip, t_end=1.0),
    ]
    violations = check_politeness(log)
    assert kinds(violations) == [ViolationKind.IP_IN_FLIGHT]
    assert violations[0].subject == ip
    assert check_politeness(log, per_ip_max_in_flight=3) == []


def test_back_to_back_requests_do_not_overlap() -> None:
    ip = "127.2.0.1"
    log = [
        rec(0.0, "a.test", "/robots.txt", ip=ip, t_end=0.5),
        rec(0.25, "b.test", "/robots.txt", ip=ip, t_end=0.5),
        rec(0.5, "c.test", "/robots.txt", ip=ip, t_end=0.8),
    ]
    assert check_politeness(log) == []


def test_starts_too_close_on_one_ip() -> None:
    ip = "127.2.0.1"
    log = [rec(0.0, "a.test", "/robots.txt", ip=ip), rec(0.1, "b.test", "/robots.txt", ip=ip)]
    violations = check_politeness(log)
    assert kinds(violations) == [ViolationKind.IP_TOO_SOON]
    assert violations[0].subject == ip


def test_first_request_of_a_host_must_be_robots() -> None:
    log = clean_log()
    log[4] = rec(1.12, "www.b.test", "/", ip="127.1.0.3")
    log[5] = rec(2.14, "www.b.test", "/robots.txt", ip="127.1.0.3")
    violations = check_politeness(log)
    assert kinds(violations) == [ViolationKind.ROBOTS_NOT_FIRST]
    assert violations[0].subject == "www.b.test"


def test_disallowed_path() -> None:
    log = [*clean_log(), rec(3.06, "a.test", "/private/1.html?x=1", ip="127.1.0.1")]
    robots = {"a.test": "User-agent: *\nDisallow: /private/\n"}
    violations = check_politeness(log, robots_txt=robots)
    assert kinds(violations) == [ViolationKind.DISALLOWED]
    assert violations[0].subject == "a.test"
    assert "/private/1.html" in violations[0].detail


def test_agent_group_overrides_star_group() -> None:
    allowed = {"a.test": "User-agent: *\nDisallow: /\n\nUser-agent: trawl\nAllow: /\n"}
    assert check_politeness(clean_log(), robots_txt=allowed) == []
    blocked = {"a.test": "User-agent: *\nAllow: /\n\nUser-agent: trawl\nDisallow: /x\n"}
    violations = check_politeness(clean_log(), robots_txt=blocked)
    assert kinds(violations) == [ViolationKind.DISALLOWED]
    assert "/x.html" in violations[0].detail


@pytest.mark.parametrize("ua", ["python-urllib/3.11", "trawl/0.1", "Mozilla/5.0 (+http://x)"])
def test_user_agent_must_name_trawl_and_a_contact(ua: str) -> None:
    log = clean_log()
    log[0] = rec(0.0, "a.test", "/robots.txt", ip="127.1.0.1", ua=ua)
    violations = check_politeness(log)
    assert kinds(violations) == [ViolationKind.BAD_USER_AGENT]
    assert violations[0].subject == "a.test"


def test_politeness_inputs_of_a_built_web() -> None:
    web = build_web(12, 8, seed=5)
    inputs = web.politeness_inputs()
    by_variant = {site.robots: site for site in web.sites}
    delayed = by_variant[RobotsVariant.CRAWL_DELAY]
    assert inputs["crawl_delays"] == {delayed.domain: 2.0}
    failing = by_variant[RobotsVariant.SERVER_ERROR]
    # A site whose robots.txt fails may be asked for robots.txt only.
    log = [
        rec(0.0, failing.domain, "/robots.txt", ip=failing.ips[0]),
        rec(1.5, failing.domain, "/", ip=failing.ips[0]),
    ]
    violations = check_politeness(log, **inputs)
    assert kinds(violations) == [ViolationKind.DISALLOWED]


def test_parse_request_log_skips_a_partial_last_line() -> None:
    line = (
        '{"t_start": 1.0, "t_end": 1.5, "host": "a.test", "site": "a.test", "ip": "127.1.0.1",'
        ' "method": "GET", "path": "/", "status": 200, "ua": "trawl/0.1", "bytes": 12}'
    )
    records = parse_request_log(line + "\n" + line[:30])
    assert records == [
        RequestLogRecord(
            1.0, 1.5, "a.test", "a.test", "127.1.0.1", "GET", "/", 200, "trawl/0.1", 12
        )
    ]
    assert records[0].to_json()["bytes"] == 12


def test_issue_4_a_retry_after_answer_does_not_flag_its_own_request() -> None:
    """Reproduces a false RETRY_AFTER_IGNORED on a 429 logged with t_start == t_end."""
    told = RequestLogRecord(
        t_start=10.0, t_end=10.0, host="a.test", site="a.test", ip="127.3.0.4",
        method="GET", path="/", status=429, ua=UA, body_bytes=0, retry_after_s=3.0,
    )  # fmt: skip
    later = RequestLogRecord(
        t_start=13.1, t_end=13.2, host="a.test", site="a.test", ip="127.3.0.4",
        method="GET", path="/", status=200, ua=UA, body_bytes=10,
    )  # fmt: skip
    robots = RequestLogRecord(
        t_start=8.0, t_end=8.1, host="a.test", site="a.test", ip="127.3.0.4",
        method="GET", path="/robots.txt", status=200, ua=UA, body_bytes=0,
    )  # fmt: skip
    assert check_politeness([robots, told, later]) == []


def test_issue_13_robots_redirect_to_another_site_counts_against_that_site() -> None:
    # a.test's robots.txt redirects to b.test's: that request is b.test's first (its
    # robots.txt, so "robots.txt first" holds) and keeps b.test's gap like any other.
    polite = [
        *clean_log(),
        rec(4.0, "c.test", "/robots.txt", ip="127.1.0.4"),
        rec(4.18, "b.test", "/robots.txt", ip="127.1.0.2"),
        rec(5.2, "c.test", "/", ip="127.1.0.4"),
    ]
    assert check_politeness(polite) == []
    hasty = [*clean_log(), rec(3.5, "b.test", "/robots.txt", ip="127.1.0.2")]
    violations = check_politeness(hasty)
    assert kinds(violations) == [ViolationKind.SITE_TOO_SOON]
    assert violations[0].subject == "b.test"


def test_issue_13_redirected_robots_rules_are_the_origins() -> None:
    web = build_web(12, 4, seed=5, robots_cases=True)
    origin = web.robots_cases()[RobotsVariant.REDIRECT_OTHER_SITE]
    assert origin.robots_redirect_host is not None
    inputs = web.politeness_inputs()
    assert inputs["robots_txt"][origin.domain] == "User-agent: *\nDisallow: /docs/b/\n"
    log = [
        rec(0.0, origin.domain, "/robots.txt", ip=origin.ips[0]),
        rec(1.5, origin.domain, "/docs/b/1.html", ip=origin.ips[0]),
    ]
    assert kinds(check_politeness(log, **inputs)) == [ViolationKind.DISALLOWED]


def test_issue_13_groups_named_like_trawl_do_not_bind_the_checker() -> None:
    web = build_web(12, 4, seed=5, robots_cases=True)
    site = web.robots_cases()[RobotsVariant.NAMED_LIKE_AGENT]
    log = [
        rec(0.0, site.domain, "/robots.txt", ip=site.ips[0]),
        rec(1.5, site.domain, "/", ip=site.ips[0]),
        rec(3.0, site.domain, "/private/1.html", ip=site.ips[0]),
    ]
    violations = check_politeness(log, **web.politeness_inputs())
    assert [(v.kind, "/private/1.html" in v.detail) for v in violations] == [
        (ViolationKind.DISALLOWED, True)
    ]


def test_issue_13_test_web_redirects_robots_txt_to_another_site() -> None:
    web = build_web(12, 4, seed=5, robots_cases=True)
    origin = web.robots_cases()[RobotsVariant.REDIRECT_OTHER_SITE]
    responder = Responder(web, 8080)
    for host in origin.hosts:
        reply = responder.answer(host, "/robots.txt", accepts_gzip=False)
        assert reply.status == 301
        location = dict(reply.headers)["Location"]
        assert location == f"http://{origin.robots_redirect_host}:8080/robots.txt"
    named = web.robots_cases()[RobotsVariant.NAMED_LIKE_AGENT]
    body = responder.answer(named.domain, "/robots.txt", accepts_gzip=False).body
    assert b"User-agent: trawlbot\nDisallow: /\n" in body
