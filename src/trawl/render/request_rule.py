"""What happens to one request of a page being rendered: a pure rule (issue 18).

The browser makes no request of its own: each one is answered from the job (the main
document), refused, or fetched by trawl under its rules (render.browser says how). The rule
sees only the request and the render's state, so it is tested without a browser.
"""

from __future__ import annotations

from enum import Enum

from trawl.errors import InvalidUrl
from trawl.urls.registered_domain import site_of

__all__ = ["FETCHED_TYPES", "Verdict", "request_verdict"]

FETCHED_TYPES = frozenset({"script", "stylesheet", "xhr", "fetch", "document"})


class Verdict(Enum):
    """What happens to one request of the browser."""

    MAIN_DOCUMENT = "main_document"  # answered from the job's bytes
    STAY = "stay"  # a navigation that may not happen: 204, the frame keeps its document
    BLOCK = "block"  # fails in the browser
    FETCH = "fetch"  # from the cache, or through the caller's fetch


def request_verdict(
    url: str,
    resource_type: str,
    *,
    site: str,
    is_navigation: bool,
    is_top_level: bool,
    main_served: bool,
    method: str = "GET",
) -> Verdict:
    """The rule for one request of a render of a page on `site` (see the module's docstring).

    `is_top_level`: the request's frame is a page's main frame; `main_served`: the main
    document has been answered already. Only GETs are fetched: a crawler sends no POST, and
    a form posted at load is a navigation away anyway.
    """
    if is_navigation and is_top_level:
        return Verdict.STAY if main_served else Verdict.MAIN_DOCUMENT
    refused = Verdict.STAY if is_navigation else Verdict.BLOCK
    if (
        method != "GET"
        or resource_type not in FETCHED_TYPES
        or not url.startswith(("http://", "https://"))
    ):
        return refused
    try:
        same_site = site_of(url) == site
    except InvalidUrl:
        return refused
    return Verdict.FETCH if same_site else refused
