"""Why requests failed, in words: the named reasons CrawlStats.failures counts (issue 14).

A reason is a fetch error kind (fetch.fetcher `_classify`, fetch.ssrf, fetch.dns) or a page
outcome that is an error after an answer (too many redirects). This module only names them
and says what a crawl that got no answer at all ran into; it is pure (numbers in, text out).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

# Every reason a request can fail for, with what it means for the one who runs the crawl.
# /metrics shows each of them (zeros too), so a dashboard can graph a reason before it occurs.
REASONS: dict[str, str] = {  # "N requests ..."
    "blocked_address": "refused by the address guard",
    "dns": "failed in DNS (the name did not resolve)",
    "connect": "could not connect (refused or unreachable)",
    "timeout": "timed out",
    "reset": "cut off (connection reset)",
    "protocol": "got a broken HTTP answer",
    "too_big": "got an answer over the size cap",
    "decode": "got a body that could not be decoded",
    "invalid_url": "had a URL that could not be requested",
    "too_many_redirects": "ran past fetch.max_redirects",
}

_HINTS = {
    "blocked_address": "pass --allow-private or map the name with --resolve",
    "dns": "check the name, or map it with --resolve",
    "connect": "is a server listening there?",
}


def describe(reason: str) -> str:
    return REASONS.get(reason, f"failed ({reason})")


def failures_line(failures: Mapping[str, int]) -> str:
    """`errors 4 (dns 3, timeout 1)`, most frequent first: the kinds /metrics labels."""
    total = sum(failures.values())
    return f"errors {total} ({_ranked(failures)})" if total else "errors 0"


def _ranked(failures: Mapping[str, int]) -> str:
    ranked = sorted(((n, r) for r, n in failures.items() if n), reverse=True)
    return ", ".join(f"{r} {n}" for n, r in ranked)


def nothing_fetched_line(
    answered: int, failures: Mapping[str, int], examples: Mapping[str, str]
) -> str | None:
    """One line saying why a crawl got no answer at all; None when something answered.

    The most frequent reason leads, with its first message and what to do about it, e.g.
    `fetched nothing: 3 requests refused by the address guard (http://a.test/robots.txt:
    a.test resolved to 127.0.0.1, which is not a public address (loopback); pass
    --allow-private or map the name with --resolve)`.
    """
    if answered:
        return None
    total = sum(failures.values())
    if not total:
        return "fetched nothing: no request was made (nothing was due, or no valid seed)"
    count, reason = max((n, r) for r, n in failures.items())
    detail = "; ".join(x for x in (examples.get(reason, ""), _HINTS.get(reason, "")) if x)
    line = f"fetched nothing: {count} request{'s' * (count != 1)} {describe(reason)}"
    if detail:
        line += f" ({detail})"
    if total > count:
        line += "; other errors: " + _ranked({r: n for r, n in failures.items() if r != reason})
    return line
