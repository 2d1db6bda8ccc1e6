"""The hostile sites' answers, decided without I/O: each kind does what it promises."""

from __future__ import annotations

import gzip
import zlib

import pytest

from trawl.testweb.hostile import (
    BUSY_RETRY_AFTER_S,
    Drip,
    Ending,
    HostileKind,
    HostileResponder,
    Repeat,
    Silence,
    build_hostile_sites,
    calendar_path,
    crc32_combine,
    facet_links,
    gzip_bomb,
)
from trawl.testweb.politeness import ViolationKind, check_politeness
from trawl.testweb.request_log import RequestLogRecord, parse_request_log
from trawl.testweb.sites import build_web

NOW = 1_800_000_000.25
SITES = build_hostile_sites()


def responder() -> HostileResponder:
    return HostileResponder(SITES, 8000)


def host(kind: HostileKind) -> str:
    return f"hostile-{kind.value}.test"


def test_sites_have_own_domains_and_addresses() -> None:
    assert len({s.domain for s in SITES}) == len({s.ip for s in SITES}) == len(HostileKind)
    assert all(s.ip.startswith("127.3.") for s in SITES)


def test_crc32_combine_matches_zlib() -> None:
    a, b = b"hello, ", b"hostile world" * 7
    assert crc32_combine(zlib.crc32(a), zlib.crc32(b), len(b)) == zlib.crc32(a + b)


def test_small_bomb_is_valid_gzip_of_zeros() -> None:
    bomb = gzip_bomb(block_zeros=4096, count=50)
    assert gzip.decompress(bomb.materialise()) == bytes(4096 * 50)


def test_full_bomb_ratio() -> None:
    bomb = gzip_bomb()
    assert 8 << 20 < bomb.size < 12 << 20  # ~10 MiB on the wire for 10 GiB decoded
    assert bomb.tail[-4:] == (10 << 30 & 0xFFFFFFFF).to_bytes(4, "little")


def test_stall_drips_and_no_headers_is_silent() -> None:
    page = responder().answer(host(HostileKind.STALL), "/", NOW)
    assert isinstance(page.body, Drip)
    assert page.head.startswith(b"HTTP/1.1 200")
    assert b"Content-Length" not in page.head
    assert page.body.byte_at(10_000) == b" "
    silent = responder().answer(host(HostileKind.STALL), "/no-headers", NOW)
    assert (silent.status, silent.head, silent.body) == (0, b"", Silence())


@pytest.mark.parametrize(
    ("kind", "path", "size"),
    [
        (HostileKind.GIANT, "/", 50 << 20),
        (HostileKind.BINARY, "/files/big.pdf", 200 << 20),
        (HostileKind.BINARY, "/video.mp4", 1 << 30),
    ],
)
def test_long_bodies_are_described_not_held(kind: HostileKind, path: str, size: int) -> None:
    answer = responder().answer(host(kind), path, NOW)
    assert isinstance(answer.body, Repeat)
    assert answer.body.size == size
    assert answer.ending is Ending.CLOSE


def test_throttle_first_429_then_200_per_path() -> None:
    r = responder()
    first = r.answer(host(HostileKind.THROTTLE), "/p/1.html", NOW)
    assert (first.status, first.retry_after_s) == (429, 3.0)
    assert b"Retry-After: 3\r\n" in first.head
    assert r.answer(host(HostileKind.THROTTLE), "/p/1.html", NOW + 3).status == 200
    assert r.answer(host(HostileKind.THROTTLE), "/p/2.html", NOW + 3).status == 429


def test_busy_503_carries_an_http_date() -> None:
    busy = responder().answer(host(HostileKind.THROTTLE), "/busy", NOW)
    assert busy.status == 503
    assert b"Retry-After: Fri, 15 Jan 2027 08:00:05 GMT" in busy.head
    assert busy.retry_after_s == BUSY_RETRY_AFTER_S + 0.75  # to the next whole second


def test_flaky_and_robots_failures() -> None:
    r = responder()
    flaky = r.answer(host(HostileKind.FLAKY), "/", NOW)
    assert (flaky.status, flaky.retry_after_s) == (503, None)
    assert r.answer(host(HostileKind.FLAKY), "/robots.txt", NOW).status == 200
    assert r.answer(host(HostileKind.ROBOTS_5XX), "/robots.txt", NOW).status == 500
    stalled = r.answer(host(HostileKind.ROBOTS_STALL), "/robots.txt", NOW)
    assert isinstance(stalled.body, Drip)


def test_broken_paths() -> None:
    r = responder()
    broken = host(HostileKind.BROKEN)
    chunked = r.answer(broken, "/bad-chunk.html", NOW)
    assert b"Transfer-Encoding: chunked" in chunked.head
    assert isinstance(chunked.body, bytes)
    assert b"\r\nzz-not-hex\r\n" in chunked.body
    assert len(r.answer(broken, "/huge-header.html", NOW).head) > 64 * 1024
    reset = r.answer(broken, "/reset.html", NOW)
    assert reset.ending is Ending.RESET
    assert isinstance(reset.body, bytes)
    assert len(reset.body) < 100_000
    bad = r.answer(broken, "/invalid-utf8.html", NOW).body
    assert isinstance(bad, bytes)
    with pytest.raises(UnicodeDecodeError):
        bad.decode()
    assert b"x-no-such-charset" in r.answer(broken, "/wrong-charset.html", NOW).head
    assert r.answer(broken, "/ok/1.html", NOW).status == 200


def test_redirect_loop_and_chain() -> None:
    r = responder()
    redirects = host(HostileKind.REDIRECTS)
    assert b"Location: http://hostile-redirects.test:8000/loop/a\r\n" in (
        r.answer(redirects, "/loop/b", NOW).head
    )
    assert b"/chain/2\r\n" in r.answer(redirects, "/chain/1", NOW).head
    assert b"/end.html\r\n" in r.answer(redirects, "/chain/12", NOW).head
    assert r.answer(redirects, "/chain/13", NOW).status == 404


def test_calendar_rolls_over_years() -> None:
    assert calendar_path(2026, 13) == "/cal/2027/01/"
    assert calendar_path(2026, 0) == "/cal/2025/12/"
    assert calendar_path(1, 0) is None
    assert responder().answer(host(HostileKind.CALENDAR), "/cal/2026/13/", NOW).status == 404


def test_session_ids_are_fresh_on_every_link() -> None:
    r = responder()
    one = r.answer(host(HostileKind.SESSION), "/page/1.html;jsessionid=a?sid=b", NOW).body
    two = r.answer(host(HostileKind.SESSION), "/page/1.html", NOW).body
    assert isinstance(one, bytes)
    assert isinstance(two, bytes)
    assert one.count(b";jsessionid=") == 20  # 10 links, each in href and text
    assert one != two


def test_repeat_paths_go_one_level_deeper() -> None:
    r = responder()
    assert r.answer(host(HostileKind.REPEAT), "/a/b/a/b/a/b/", NOW).status == 200
    assert r.answer(host(HostileKind.REPEAT), "/2026/11/2026/11/", NOW).status == 200
    assert r.answer(host(HostileKind.REPEAT), "/a/b/a/", NOW).status == 404


def test_facets_link_every_one_step_change() -> None:
    links = facet_links("size=m&color=red")
    assert "/search?size=m&color=blue" in links
    assert "/search?size=m&color=red&sort=price" in links
    assert len(links) == (5 - 1) + (4 - 1) + 3 + 20


def test_copies_link_the_next_twenty() -> None:
    body = responder().answer(host(HostileKind.COPIES), "/item/4990", NOW).body
    assert isinstance(body, bytes)
    assert body.count(b'<a href="/item/') == 10  # capped at /item/5000


def test_log_fields_round_trip_and_old_lines_parse() -> None:
    old = '{"t_start": 1, "t_end": 2, "host": "a", "site": "a", "ip": "127.1.0.1",'
    old += ' "method": "GET", "path": "/", "status": 200, "ua": "x", "bytes": 5}\n'
    (record,) = parse_request_log(old)
    assert (record.aborted, record.retry_after_s) == (False, None)
    new = RequestLogRecord(1, 2, "a", "a", "ip", "GET", "/", 429, "x", 7, True, 3.0)
    assert new.to_json()["retry_after"] == 3.0
    assert RequestLogRecord.from_json(new.to_json()) == new
    assert "aborted" not in record.to_json()


def test_hostile_web_keeps_the_rest_unchanged() -> None:
    plain, hostile = build_web(12, 4), build_web(12, 4, hostile=True)
    assert plain.expected_fetches(8000) == hostile.expected_fetches(8000)
    assert plain.hosts_lines() == hostile.hosts_lines()[: len(plain.hosts_lines())]
    assert hostile.hostile_bounds()["hostile-robots-stall.test"] == 0
    rules = hostile.politeness_inputs()["robots_txt"]
    assert rules["hostile-robots-5xx.test"] == "User-agent: *\nDisallow: /\n"


UA = "trawl/0.1 (+https://example.org/trawl)"


def rec(t_start: float, path: str, retry_after_s: float | None = None) -> RequestLogRecord:
    return RequestLogRecord(
        t_start,
        t_start + 0.1,
        "t.test",
        "t.test",
        "127.3.0.4",
        "GET",
        path,
        429 if retry_after_s else 200,
        UA,
        10,
        retry_after_s=retry_after_s,
    )


def test_politeness_flags_a_request_inside_retry_after() -> None:
    log = [rec(0.0, "/robots.txt"), rec(1.0, "/", 3.0), rec(2.5, "/x")]
    found = check_politeness(log)
    assert [v.kind for v in found] == [ViolationKind.RETRY_AFTER_IGNORED]
    assert found[0].subject == "t.test"


def test_politeness_accepts_waiting_out_retry_after() -> None:
    log = [rec(0.0, "/robots.txt"), rec(1.0, "/", 3.0), rec(4.11, "/"), rec(5.2, "/x")]
    assert check_politeness(log) == []


def test_issue_13_fault_sites_keep_one_bad_url_next_to_healthy_pages() -> None:
    r = responder()
    endless = host(HostileKind.ENDLESS_REDIRECT)
    for n in (1, 10, 500):
        assert f"/inf/{n + 1}\r\n".encode() in r.answer(endless, f"/inf/{n}", NOW).head
    assert r.answer(endless, "/inf/x", NOW).status == 404
    resets = r.answer(host(HostileKind.RESET_PAGE), "/resets.html", NOW)
    assert resets.ending is Ending.RESET
    assert isinstance(resets.body, bytes)
    assert b"Content-Length: 100000" in resets.head
    assert len(resets.body) < 100_000  # cut mid-body, every time
    assert r.answer(host(HostileKind.RESET_PAGE), "/healthy.html", NOW).status == 200
    bad = host(HostileKind.BAD_HEADERS)
    assert len(r.answer(bad, "/oversized-header.html", NOW).head) > 65_000
    assert r.answer(bad, "/many-headers.html", NOW).head.count(b"\r\nX-Many-") == 300
    assert r.answer(bad, "/bad-status.html", NOW).head.startswith(b"HTTP/1.1 2OO ")
    assert r.answer(bad, "/ok/1.html", NOW).status == 200
    home = r.answer(host(HostileKind.CLOSED_PORT), "/", NOW)
    assert isinstance(home.body, bytes)
    assert b"http://hostile-closed-port.test:81/a.html" in home.body
    assert b'"/ok/3.html"' in home.body
