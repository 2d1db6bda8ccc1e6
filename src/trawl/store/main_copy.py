"""Which of two near copies of a text is its main copy (the one the others name): pure.

How this works: when a newly stored page nearly duplicates an indexed main copy
(loop.content), the shell asks `takes_over(new, main)`. True: the new page becomes the main
copy and the old main copy and its copies name it; False: the new page names the main copy.

Rules, first match wins:
- The new copy names the main copy as its canonical: the main copy stays (syndicated
  copies name their source, as search engines ask them to), even when the main copy
  names the new one too.
- The main copy names the new copy as its canonical: the new copy takes over.
- Otherwise the copy closer to the seeds (the smaller link depth) is more likely the
  source than a reprint deeper in another site; on equal depths the main copy stays (the
  first one stored keeps its place).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PageCopy:
    """One copy of a text: its URL, its link depth from the seeds, and the canonical URL
    the page names ("" when it names none)."""

    url: str
    depth: int
    canonical: str = ""


def takes_over(new: PageCopy, main: PageCopy) -> bool:
    """Is `new`, a near copy of the indexed main copy `main`, the better main copy?"""
    if new.canonical == main.url:
        return False
    if main.canonical == new.url:
        return True
    return new.depth < main.depth
