"""When the test web answers a conditional GET or HEAD with 304 Not Modified (pure).

RFC 9110 rules kept here, in the order §13.2.2 evaluates them:
- conditions apply only to an answer that would otherwise be a 2xx (§13.2.1); the caller
  asks only for those;
- If-None-Match, when present, decides alone and If-Modified-Since is ignored (§13.1.3).
  It matches with the weak comparison (§8.8.3.2: `W/"x"` matches `"x"`), any member of the
  list counts, and `*` matches any current representation (§13.1.2);
- otherwise If-Modified-Since answers 304 when the representation's Last-Modified is at or
  before the date given (§13.1.3). A date that does not parse is ignored, as is the
  header on a resource without a modification date.

The server shell parses the headers (aiohttp's `if_none_match` and `if_modified_since`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

ANY_TAG = "*"


def opaque_tag(etag: str) -> str:
    """The quoted part of an entity tag without quotes: `W/"x"` and `"x"` both give `x`."""
    return etag.removeprefix("W/").strip('"')


def is_not_modified(
    *,
    etag: str | None,
    last_modified_at: float | None,
    if_none_match: Sequence[str] | None,
    if_modified_since_at: float | None,
) -> bool:
    """True when a 200 with these validators should be a 304 for these request conditions.

    `etag` is the response's ETag as sent (`"abc"` or `W/"abc"`), `last_modified_at` its
    Last-Modified in epoch seconds. `if_none_match` holds the opaque tags of the request's
    If-None-Match list (`ANY_TAG` for `*`), or is None without the header; an empty
    sequence (a header whose members were all invalid) matches nothing but still makes
    If-Modified-Since ignored. `if_modified_since_at` is None without a valid date.
    """
    if if_none_match is not None:
        if ANY_TAG in if_none_match:
            return True
        return etag is not None and opaque_tag(etag) in if_none_match
    if last_modified_at is None or if_modified_since_at is None:
        return False
    return last_modified_at <= if_modified_since_at
