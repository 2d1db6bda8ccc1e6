"""Long runs of intake cut into slices, with a turn of the event loop between them.

Why: queueing a link costs the crawl loop ~15 us (scope, seen set, in-link counts, score,
the queue's insert), and it all ran in one step: a page of 250,000 links held every timer,
response and API call for 3.7 s, a 50,000-entry sitemap (the sitemaps.org maximum, common
on large sites) for 1.1 s (issue 17: the loop never lags). A slice of `LINK_SLICE` links
is ~8 ms; between slices the loop runs whatever became ready. A page's links stay its own
(the per-page cap, frontier.max_links_per_page, bounds their number); only the wait
between them is shared.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

T = TypeVar("T")

LINK_SLICE = 500


async def in_slices(
    items: Sequence[T], take: Callable[[Sequence[T]], None], size: int = LINK_SLICE
) -> None:
    """`take(items[i : i + size])` for each slice in order, the event loop turning between
    two slices (never before the first: most pages have one slice, and pay no turn)."""
    for start in range(0, len(items), size):
        if start:
            await asyncio.sleep(0)
        take(items[start : start + size])
