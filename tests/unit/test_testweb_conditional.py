"""The test web's 304 decision (RFC 9110 §13.1.2, §13.1.3, §13.2.2), pure."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from trawl.testweb.conditional import ANY_TAG, is_not_modified, opaque_tag

LAST_MODIFIED_AT = 1_704_067_200.0
tags = st.text(st.characters(min_codepoint=0x23, max_codepoint=0x7E), min_size=1, max_size=12)
dates = st.none() | st.floats(0, 2e9, allow_nan=False)


def test_weak_and_strong_tags_compare_weakly() -> None:
    assert opaque_tag('"abc"') == opaque_tag('W/"abc"') == "abc"
    for etag in ('"abc"', 'W/"abc"'):
        assert is_not_modified(
            etag=etag, last_modified_at=None, if_none_match=["x", "abc"], if_modified_since_at=None
        )


def test_star_matches_any_current_representation() -> None:
    for etag in ('"abc"', None):
        assert is_not_modified(
            etag=etag, last_modified_at=None, if_none_match=[ANY_TAG], if_modified_since_at=None
        )


@given(etag=tags, listed=st.lists(tags, max_size=4), since=dates, last_modified_at=dates)
def test_if_none_match_alone_decides(
    etag: str, listed: list[str], since: float | None, last_modified_at: float | None
) -> None:
    got = is_not_modified(
        etag=f'"{etag}"',
        last_modified_at=last_modified_at,
        if_none_match=listed,
        if_modified_since_at=since,
    )
    assert got == (etag in listed or ANY_TAG in listed)


@given(since=dates, last_modified_at=dates)
def test_if_modified_since_without_if_none_match(
    since: float | None, last_modified_at: float | None
) -> None:
    got = is_not_modified(
        etag='"abc"',
        last_modified_at=last_modified_at,
        if_none_match=None,
        if_modified_since_at=since,
    )
    if since is None or last_modified_at is None:
        assert not got
    else:
        assert got == (last_modified_at <= since)


def test_if_modified_since_boundaries() -> None:
    def check(since: float) -> bool:
        return is_not_modified(
            etag=None,
            last_modified_at=LAST_MODIFIED_AT,
            if_none_match=None,
            if_modified_since_at=since,
        )

    assert check(LAST_MODIFIED_AT)
    assert check(LAST_MODIFIED_AT + 1)
    assert not check(LAST_MODIFIED_AT - 1)


def test_an_if_none_match_of_only_invalid_members_still_hides_if_modified_since() -> None:
    assert not is_not_modified(
        etag='"abc"',
        last_modified_at=LAST_MODIFIED_AT,
        if_none_match=[],
        if_modified_since_at=LAST_MODIFIED_AT + 60,
    )
