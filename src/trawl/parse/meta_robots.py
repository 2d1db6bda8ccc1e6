"""Robots directives from `<meta name="robots">` contents and X-Robots-Tag headers.

Only noindex and nofollow change what the crawler does; the most restrictive directive
wins, so "all", "index" and "follow" never undo a noindex or nofollow seen elsewhere, and
"none" means both. Directives with a value (unavailable_after, max-snippet, ...) are ignored.
An X-Robots-Tag value may start with a user agent ("googlebot: noindex"); such a prefix holds
for the directives after it, and only ours (or none) apply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["RobotsDirectives", "parse_meta_robots", "parse_x_robots_tag"]

# Directives that carry a value after a colon, so "name:" before them is not an agent.
_VALUED = frozenset({"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"})
_AGENT_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_.")


@dataclass(frozen=True, slots=True)
class RobotsDirectives:
    """What a page asks of us: don't index it, don't follow its links."""

    noindex: bool = False
    nofollow: bool = False


def _apply(token: str, noindex: bool, nofollow: bool) -> tuple[bool, bool]:
    if token == "noindex":
        return True, nofollow
    if token == "nofollow":
        return noindex, True
    if token == "none":
        return True, True
    return noindex, nofollow


def parse_meta_robots(contents: Iterable[str]) -> RobotsDirectives:
    """Directives from the content attributes of the page's robots meta tags."""
    noindex = nofollow = False
    for content in contents:
        for token in content.lower().split(","):
            noindex, nofollow = _apply(token.strip(), noindex, nofollow)
    return RobotsDirectives(noindex, nofollow)


def _agent_prefix(token: str) -> str | None:
    """The user agent a token starts with ("googlebot: noindex" -> "googlebot"), or None."""
    name, sep, _ = token.partition(":")
    name = name.strip()
    if not sep or not name or name in _VALUED or not set(name) <= _AGENT_CHARS:
        return None
    return name


def parse_x_robots_tag(values: Iterable[str], agent_token: str = "trawl") -> RobotsDirectives:
    """Directives from X-Robots-Tag header values that apply to `agent_token`.

    Unprefixed values apply to every agent; "otherbot: noindex" is ignored.
    """
    ours = agent_token.lower()
    noindex = nofollow = False
    for value in values:
        agent: str | None = None  # each header value starts for all agents
        for raw_token in value.lower().split(","):
            token = raw_token.strip()
            prefix = _agent_prefix(token)
            if prefix is not None:
                agent = prefix
                token = token.partition(":")[2].strip()
            if agent is None or agent == ours:
                noindex, nofollow = _apply(token, noindex, nofollow)
    return RobotsDirectives(noindex, nofollow)
