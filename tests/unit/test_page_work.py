"""A page's work crosses from a worker process to the crawl as a pickle (parse.page_work)."""

from __future__ import annotations

import pickle

from trawl.parse.page_work import (
    FoundLink,
    PageInput,
    PageOutput,
    process_page,
    process_rendered,
)
from trawl.parse.render_need import RenderReason

PAGE = b"""<html><head><link rel="canonical" href="/a"></head><body>
<a href="/a">a</a> <a href="b.html">b</a> <a href="http://other.test/x?utm_source=z">x</a>
<a href="mailto:someone@example.org">mail</a> <p>%s</p></body></html>""" % (b"word " * 80)


def _output(max_links: int = 0, body: bytes = PAGE) -> PageOutput:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"
    page = PageInput(
        "http://site.test/dir/index.html", 1.0, "127.0.0.1", head, body, False, (), "trawl",
        True, request_head=b"GET /dir/index.html HTTP/1.1\r\nHost: site.test\r\n\r\n",
        max_links=max_links,
    )  # fmt: skip
    return process_page(page)


def test_a_page_output_pickles_back_equal_with_its_links_as_found_links() -> None:
    out = _output()
    assert len(out.links) == 3
    assert out.bad_links == 1
    for protocol in (2, pickle.HIGHEST_PROTOCOL):
        back = pickle.loads(pickle.dumps([out, ValueError("x")], protocol))[0]
        assert back == out
        assert type(back) is PageOutput
        assert all(type(link) is FoundLink for link in back.links)
        assert back.links[2].url == "http://other.test/x"
        assert back.warc_record == out.warc_record


def test_a_page_past_its_link_cap_says_how_many_hrefs_it_left() -> None:
    out = _output(max_links=2)
    # The cap counts hrefs as written (the mailto: one would have been a bad link).
    assert [link.url for link in out.links] == ["http://site.test/a", "http://site.test/dir/b.html"]
    assert out.links_dropped == 2
    assert pickle.loads(pickle.dumps(out)).links_dropped == 2
    assert _output().links_dropped == 0
    nofollow = PAGE.replace(b"<head>", b'<head><meta name="robots" content="nofollow">')
    assert _output(max_links=2, body=nofollow).links_dropped == 0  # none followed anyway


def test_a_script_built_shell_comes_back_with_its_render_reason() -> None:
    shell = (
        b'<!doctype html><html><head><script src="/app.js" defer></script></head><body>'
        b'<div id="root"></div><noscript>You need to enable JavaScript.</noscript></body></html>'
    )
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"
    page = PageInput("http://app.test/", 1.0, None, head, shell, False, (), "trawl", True)
    out = process_page(page)
    assert out.render_reason is RenderReason.EMPTY_MOUNT
    assert pickle.loads(pickle.dumps(out)).render_reason is RenderReason.EMPTY_MOUNT
    assert _output().render_reason is None  # a page with prose


def test_a_rendered_dom_is_read_against_its_plain_page() -> None:
    plain = b'<html><body><a href="/home">Home</a><div id="root"></div></body></html>'
    prose = " ".join(["the harbour plan was read aloud to the council"] * 12)
    rendered = (
        f'<html><body><a href="/home">Home</a><div id="root"><p>{prose}</p>'
        '<a href="/app/one">One</a> <a href="/app/two#x">Two</a></div></body></html>'
    ).encode()
    out = process_rendered("http://app.test/", rendered, plain, "trawl")
    assert [link.url for link in out.links] == [
        "http://app.test/home",
        "http://app.test/app/one",
        "http://app.test/app/two",
    ]
    assert out.links_gained == 2
    assert out.plain_text_chars == len("Home")
    assert out.text_chars > len(prose)
    assert out.text_tokens >= 50
    assert out.simhash != 0
    nofollow = rendered.replace(b"<body>", b'<body><meta name="robots" content="nofollow">')
    assert process_rendered("http://app.test/", nofollow, plain, "trawl").links == ()
    capped = process_rendered("http://app.test/", rendered, plain, "trawl", max_links=2)
    assert [link.url for link in capped.links] == [
        "http://app.test/home",
        "http://app.test/app/one",
    ]
    assert capped.links_dropped == 1
    assert capped.links_gained == 1
