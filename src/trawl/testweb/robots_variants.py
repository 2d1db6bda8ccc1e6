"""The robots.txt variants the test web serves, and the rules a correct crawler derives.

Each site gets one variant (all its hostnames serve the same file). `effective_rules`
is what a correct crawler must act on: a missing file (404) allows everything, a
server error (503) forbids everything (RFC 9309 §2.3.1.4), and a redirect is followed
to the file it points at (RFC 9309 §2.3.1.2), on another site too (REDIRECT_OTHER_SITE,
whose target the web names: `Site.robots_redirect_host`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class RobotsVariant(StrEnum):
    MISSING = "missing"  # /robots.txt answers 404
    ALLOW_ALL = "allow_all"
    DISALLOW_PRIVATE = "disallow_private"
    AGENT_ALLOWED = "agent_allowed"  # `*` may not crawl, `trawl` may
    AGENT_LIMITED = "agent_limited"  # `*` may crawl all, `trawl` not /docs/ nor /private/
    CRAWL_DELAY = "crawl_delay"  # Crawl-delay: 2
    SERVER_ERROR = "server_error"  # /robots.txt answers 503: nothing may be fetched
    REDIRECTED = "redirected"  # /robots.txt 301 -> /robots-rules.txt
    # Not in VARIANT_CYCLE; `build_web(robots_cases=True)` gives them to two sites.
    NAMED_LIKE_AGENT = "named_like_agent"  # groups `trawlbot`, `mytrawl`... disallow all
    REDIRECT_OTHER_SITE = "redirect_other_site"  # /robots.txt 301 -> another site's


# Sites take variants in this order by index, so any web of >= 12 sites has all of them.
# The two variants that block a crawler most (SERVER_ERROR, AGENT_LIMITED) are never
# adjacent, so the ring of home-page links (site i -> i+1, i+2) always gets past them.
VARIANT_CYCLE: tuple[RobotsVariant, ...] = (
    RobotsVariant.ALLOW_ALL,
    RobotsVariant.DISALLOW_PRIVATE,
    RobotsVariant.MISSING,
    RobotsVariant.AGENT_ALLOWED,
    RobotsVariant.ALLOW_ALL,
    RobotsVariant.SERVER_ERROR,
    RobotsVariant.DISALLOW_PRIVATE,
    RobotsVariant.CRAWL_DELAY,
    RobotsVariant.ALLOW_ALL,
    RobotsVariant.AGENT_LIMITED,
    RobotsVariant.REDIRECTED,
    RobotsVariant.MISSING,
)

REDIRECT_TARGET = "/robots-rules.txt"
CRAWL_DELAY_S = 2.0

_TEXTS: dict[RobotsVariant, str] = {
    RobotsVariant.ALLOW_ALL: "User-agent: *\nDisallow:\n",
    RobotsVariant.DISALLOW_PRIVATE: "User-agent: *\nDisallow: /private/\n",
    RobotsVariant.AGENT_ALLOWED: "User-agent: *\nDisallow: /\n\nUser-agent: trawl\nAllow: /\n",
    RobotsVariant.AGENT_LIMITED: (
        "User-agent: *\nDisallow:\n\nUser-agent: trawl\nDisallow: /docs/\nDisallow: /private/\n"
    ),
    RobotsVariant.CRAWL_DELAY: "User-agent: *\nCrawl-delay: 2\nDisallow: /private/\n",
    RobotsVariant.REDIRECTED: "User-agent: *\nDisallow: /docs/b/\n",
    # RFC 9309 2.2.1: a group binds trawl only if its product token *equals* `trawl`;
    # these contain it, start like it, or extend it, and must all be ignored.
    RobotsVariant.NAMED_LIKE_AGENT: (
        "User-agent: trawlbot\nDisallow: /\n\nUser-agent: mytrawl\nDisallow: /\n\n"
        "User-agent: trawl-extra\nUser-agent: traw\nDisallow: /\n\n"
        "User-agent: *\nDisallow: /private/\n"
    ),
}

_DISALLOW_ALL = "User-agent: *\nDisallow: /\n"


@dataclass(frozen=True, slots=True)
class RobotsAnswer:
    """How a host answers one robots-related path."""

    status: int
    body: str = ""
    location: str | None = None  # path on the same host, for redirects


def robots_answer(variant: RobotsVariant, path: str) -> RobotsAnswer | None:
    """The answer for `path` if it is a robots path of this variant, else None."""
    if path == "/robots.txt":
        if variant is RobotsVariant.MISSING:
            return RobotsAnswer(404, "not found\n")
        if variant is RobotsVariant.SERVER_ERROR:
            return RobotsAnswer(503, "service unavailable\n")
        if variant is RobotsVariant.REDIRECTED:
            return RobotsAnswer(301, "", REDIRECT_TARGET)
        if variant is RobotsVariant.REDIRECT_OTHER_SITE:
            return None  # the responder redirects to `Site.robots_redirect_host`
        return RobotsAnswer(200, _TEXTS[variant])
    if path == REDIRECT_TARGET and variant is RobotsVariant.REDIRECTED:
        return RobotsAnswer(200, _TEXTS[variant])
    return None


def effective_rules(variant: RobotsVariant) -> str:
    """The robots.txt text a correct crawler obeys for this variant (for
    REDIRECT_OTHER_SITE: the target site's, see `TestWeb.robots_rules`)."""
    if variant is RobotsVariant.MISSING:
        return ""
    if variant is RobotsVariant.SERVER_ERROR:
        return _DISALLOW_ALL
    return _TEXTS[variant]


def crawl_delay_s(variant: RobotsVariant) -> float:
    return CRAWL_DELAY_S if variant is RobotsVariant.CRAWL_DELAY else 0.0
