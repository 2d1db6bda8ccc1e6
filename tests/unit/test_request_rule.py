"""Which of a rendering browser's requests trawl answers, fetches or refuses
(render/request_rule.py, issue 18)."""

from __future__ import annotations

import pytest

from trawl.render.request_rule import Verdict, request_verdict


@pytest.mark.parametrize(
    ("url", "resource_type", "navigation", "top_level", "served", "verdict"),
    [
        ("http://www.a.test/", "document", True, True, False, Verdict.MAIN_DOCUMENT),
        ("http://www.a.test/next", "document", True, True, True, Verdict.STAY),
        ("http://other.test/", "document", True, True, True, Verdict.STAY),
        ("http://cdn.a.test/app.js", "script", False, False, True, Verdict.FETCH),
        ("https://a.test:8443/s.css", "stylesheet", False, False, True, Verdict.FETCH),
        ("http://www.a.test/api", "xhr", False, False, True, Verdict.FETCH),
        ("http://www.a.test/api", "fetch", False, False, True, Verdict.FETCH),
        ("http://www.a.test/frame", "document", True, False, True, Verdict.FETCH),
        ("http://ads.other.test/frame", "document", True, False, True, Verdict.STAY),
        ("http://a.test.other.test/app.js", "script", False, False, True, Verdict.BLOCK),
        ("http://other.test/app.js", "script", False, False, True, Verdict.BLOCK),
        ("http://www.a.test/logo.png", "image", False, False, True, Verdict.BLOCK),
        ("http://www.a.test/f.woff2", "font", False, False, True, Verdict.BLOCK),
        ("http://www.a.test/v.mp4", "media", False, False, True, Verdict.BLOCK),
        ("http://www.a.test/live", "eventsource", False, False, True, Verdict.BLOCK),
        ("http://www.a.test/live", "websocket", False, False, True, Verdict.BLOCK),
        ("http://www.a.test/beacon", "ping", False, False, True, Verdict.BLOCK),
        ("http://www.a.test/next", "other", False, False, True, Verdict.BLOCK),
        ("ftp://www.a.test/app.js", "script", False, False, True, Verdict.BLOCK),
        ("http://[::1/app.js", "script", False, False, True, Verdict.BLOCK),
    ],
)
def test_request_verdicts(
    url: str, resource_type: str, navigation: bool, top_level: bool, served: bool, verdict: Verdict
) -> None:
    """The rule alone (no browser): what each kind of request of a page on a.test gets."""
    assert (
        request_verdict(
            url,
            resource_type,
            site="a.test",
            is_navigation=navigation,
            is_top_level=top_level,
            main_served=served,
        )
        is verdict
    )


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "OPTIONS"])
def test_only_gets_are_fetched(method: str) -> None:
    verdict = request_verdict(
        "http://www.a.test/api",
        "fetch",
        site="a.test",
        is_navigation=False,
        is_top_level=False,
        main_served=True,
        method=method,
    )
    assert verdict is Verdict.BLOCK
