"""Robots meta tags and X-Robots-Tag headers."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trawl.parse.meta_robots import RobotsDirectives, parse_meta_robots, parse_x_robots_tag


@pytest.mark.parametrize(
    ("contents", "expected"),
    [
        ([], RobotsDirectives(noindex=False, nofollow=False)),
        (["index, follow"], RobotsDirectives(noindex=False, nofollow=False)),
        (["all"], RobotsDirectives(noindex=False, nofollow=False)),
        (["noindex"], RobotsDirectives(noindex=True, nofollow=False)),
        (["NOFOLLOW"], RobotsDirectives(noindex=False, nofollow=True)),
        (["noindex,nofollow"], RobotsDirectives(noindex=True, nofollow=True)),
        ([" NoIndex , NoFollow "], RobotsDirectives(noindex=True, nofollow=True)),
        (["none"], RobotsDirectives(noindex=True, nofollow=True)),
        (["noindex", "nofollow"], RobotsDirectives(noindex=True, nofollow=True)),
        # the most restrictive wins: a later "all" does not undo noindex
        (["noindex", "all"], RobotsDirectives(noindex=True, nofollow=False)),
        (["max-snippet:20, unavailable_after: 2030-01-01"], RobotsDirectives()),
        (["noarchive, nosnippet"], RobotsDirectives()),
        ([""], RobotsDirectives()),
    ],
)
def test_parse_meta_robots(contents: list[str], expected: RobotsDirectives) -> None:
    assert parse_meta_robots(contents) == expected


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["noindex"], RobotsDirectives(noindex=True)),
        (["noindex, nofollow"], RobotsDirectives(noindex=True, nofollow=True)),
        (["none"], RobotsDirectives(noindex=True, nofollow=True)),
        (["googlebot: noindex"], RobotsDirectives()),
        (["googlebot: noindex, nofollow"], RobotsDirectives()),
        (["trawl: nofollow"], RobotsDirectives(nofollow=True)),
        (["Trawl: NoIndex"], RobotsDirectives(noindex=True)),
        (["googlebot: noindex", "nofollow"], RobotsDirectives(nofollow=True)),
        (["otherbot: none", "trawl: noindex"], RobotsDirectives(noindex=True)),
        (["googlebot: all, trawl: none"], RobotsDirectives(noindex=True, nofollow=True)),
        (["unavailable_after: 25 Jun 2010 15:00:00 PST"], RobotsDirectives()),
        (["unavailable_after: Sunday, 01-Jan-2023 15:00:00 GMT, noindex"],
         RobotsDirectives(noindex=True)),
        (["max-image-preview: large, nofollow"], RobotsDirectives(nofollow=True)),
        (["all"], RobotsDirectives()),
    ],
)  # fmt: skip
def test_parse_x_robots_tag(values: list[str], expected: RobotsDirectives) -> None:
    assert parse_x_robots_tag(values) == expected


def test_x_robots_tag_for_another_agent_token() -> None:
    assert parse_x_robots_tag(["mybot: noindex"], agent_token="MyBot").noindex
    assert not parse_x_robots_tag(["trawl: noindex"], agent_token="mybot").noindex


@given(st.lists(st.text()), st.lists(st.text()))
def test_none_wins_whatever_else_is_said(before: list[str], after: list[str]) -> None:
    both = RobotsDirectives(noindex=True, nofollow=True)
    assert parse_meta_robots([*before, "none", *after]) == both
    assert parse_x_robots_tag([*before, "none", *after]) == both
