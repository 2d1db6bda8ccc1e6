"""trawl's robots.txt groups and matching (politeness.robots_txt), beyond Google's cases."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trawl.politeness.robots_txt import RobotsTxt, Rule, canonical, product_token

URL = "http://site.example/page"


def allowed(text: str, url: str = URL, agent: str = "trawl") -> bool:
    return RobotsTxt.parse(text).is_allowed(url, agent)


@pytest.mark.parametrize("name", ["trawlbot", "mytrawl", "trawl-extra", "traw", "t", "*trawl"])
def test_issue_13_groups_only_like_trawl_do_not_apply(name: str) -> None:
    text = f"User-agent: {name}\nDisallow: /\n\nUser-agent: *\nAllow: /\n"
    assert allowed(text) is True


@pytest.mark.parametrize("name", ["trawl", "TRAWL", "Trawl", "trawl/1.0", "trawl (+http://x)"])
def test_issue_13_group_naming_the_product_token_applies(name: str) -> None:
    text = f"User-agent: *\nAllow: /\n\nUser-agent: {name}\nDisallow: /\n"
    assert allowed(text) is False


def test_issue_13_groups_naming_trawl_are_merged() -> None:
    text = (
        "User-agent: trawl\nDisallow: /a\nCrawl-delay: 3\n\n"
        "User-agent: *\nDisallow: /\n\n"
        "User-agent: other\nUser-agent: TRAWL\nDisallow: /b\nCrawl-delay: 4\n"
    )
    parsed = RobotsTxt.parse(text)
    assert parsed.is_allowed("http://s/a/1", "trawl") is False
    assert parsed.is_allowed("http://s/b/1", "trawl") is False
    assert parsed.is_allowed("http://s/c/1", "trawl") is True
    assert parsed.group_for("trawl").crawl_delay_s == 4.0
    # `other` shares the second trawl group only, not the first.
    assert parsed.is_allowed("http://s/b/1", "other") is False
    assert parsed.is_allowed("http://s/a/1", "other") is True


def test_star_groups_are_merged_when_none_names_trawl() -> None:
    text = "User-agent: *\nDisallow: /a\n\nUser-agent: bot\nDisallow: /\n\n"
    text += "User-agent: *\nDisallow: /b\n"
    assert allowed(text, "http://s/a") is False
    assert allowed(text, "http://s/b") is False
    assert allowed(text, "http://s/c") is True


def test_other_records_do_not_end_the_user_agent_list() -> None:
    text = "User-agent: trawl\nCrawl-delay: 2\nUser-agent: bot\nDisallow: /x\n"
    assert allowed(text, "http://s/x") is False
    assert RobotsTxt.parse(text).group_for("trawl").crawl_delay_s == 2.0


def test_empty_agent_token_matches_no_named_group() -> None:
    text = "User-agent: ツ\nDisallow: /\n"
    assert allowed(text, agent="") is True


@pytest.mark.parametrize(
    ("value", "token"),
    [("trawl", "trawl"), ("Trawl/2.0", "trawl"), ("trawl-bot x", "trawl-bot"), ("/x", "")],
)
def test_product_token(value: str, token: str) -> None:
    assert product_token(value) == token


def test_request_rate_and_crawl_delay_of_the_group() -> None:
    group = RobotsTxt.parse("User-agent: *\nRequest-rate: 3/1m 0900-1700\n").group_for("trawl")
    assert group.request_rate == (3, 60)
    assert RobotsTxt.parse("User-agent: *\nRequest-rate: ²/5\n").group_for("t").request_rate is None


def test_canonical_spelling_of_paths() -> None:
    assert canonical("/a b/ü?q=%7e&r=%2f") == "/a%20b/%C3%BC?q=~&r=%2F"
    assert canonical("/already/plain?x=1") == "/already/plain?x=1"


def _reference(pattern: str, path: str) -> bool:
    """RFC 9309 2.2.3 matching by regular expression, slow but obviously right."""
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    regex = ".*".join(re.escape(part) for part in body.split("*"))
    return re.match(regex + (r"\Z" if anchored else ""), path, re.DOTALL) is not None


@settings(max_examples=500, deadline=None)
@given(
    pattern=st.text(alphabet="/ab*$.", min_size=1, max_size=12),
    path=st.text(alphabet="/ab$.", max_size=16),
)
def test_matching_agrees_with_a_regex_reference(pattern: str, path: str) -> None:
    assert Rule(allow=False, pattern=pattern).matches(path) is _reference(pattern, path)
