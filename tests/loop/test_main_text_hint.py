"""The main-text window hint travels with the site, not with a worker.

A page's main text is first tried in the window where its site's last page held its prose
(parse.fingerprint.main_text); the hint used to live in each worker process, keyed by host,
so a site's pages paid the full window once per worker and once per host alias. Now the
crawl loop keeps it in the site's state and sends it with each page (PageInput.window_hint).

Real parts: the crawl loop, the SQLite frontier and records, page work on threads (two), on
a virtual clock with a scripted fetcher. What each page's work was given and gave back is
recorded where the loop calls it.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import sqlite3
from typing import TYPE_CHECKING

from tests.fakes.fetcher import Answer, ScriptedFetcher
from tests.loop.one_crawl import crawl_on
from tests.loop.test_crawl_loop import HTML, settings
from tests.loop.virtual_clock import VirtualClock

from trawl.parse import page_work
from trawl.parse.fingerprint import main_text
from trawl.store.layout import DB_NAME

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

    from trawl.parse.page_work import PageInput, PageOutput

ARTICLES = 4
SEEDS = ["http://news.test/", "http://other.test/"]
HOSTS = {"news.test": "198.51.100.1", "www.news.test": "198.51.100.1", "other.test": "198.51.100.2"}


def _words(rng: random.Random, n: int) -> str:
    # Made-up words, each page its own: pages of a small vocabulary are near-copies, whose
    # links the crawl does not follow.
    return " ".join(
        "".join(rng.choices("abcdefghiklmnoprstuvy", k=rng.randint(3, 9))) for _ in range(n)
    )


def article(n: int, next_url: str | None) -> Answer:
    """One template: ~3 KB of navigation, ~10 KB of prose, then a long footer."""
    rng = random.Random(n)
    nav = "".join(f'<li><a href="/n{i}">{_words(rng, 4)}</a></li>' for i in range(40))
    prose = "".join(f"<p>{_words(rng, 50)}</p>" for _ in range(30))
    footer = "".join(f"<li>{_words(rng, 6)}</li>" for _ in range(400))
    more = f'<a href="{next_url}">next</a>' if next_url else ""
    body = (
        f"<html><body><nav><ul>{nav}</ul></nav><article><h1>{_words(rng, 8)}</h1>{prose}"
        f"{more}</article><footer><ul>{footer}</ul></footer></body></html>"
    )
    return Answer(200, HTML, body.encode())


def web() -> dict[str, Answer | list[Answer]]:
    # news.test's articles alternate between its two host names (www. and bare), one chain.
    urls = [
        f"http://{'www.' if n % 2 else ''}news.test/{'' if n == 0 else f'a{n}'}"
        for n in range(ARTICLES)
    ]
    w: dict[str, Answer | list[Answer]] = {
        url: article(n, urls[n + 1] if n + 1 < ARTICLES else None) for n, url in enumerate(urls)
    }
    w["http://other.test/"] = article(99, None)
    return w


def test_a_sites_pages_take_the_window_its_last_page_needed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[PageInput, PageOutput]] = []
    real = page_work.process_pages

    def recording(pages: list[PageInput]) -> list[PageOutput | BaseException]:
        out = real(pages)
        seen.extend((p, o) for p, o in zip(pages, out, strict=True) if not isinstance(o, Exception))
        return out

    monkeypatch.setattr(page_work, "process_pages", recording)
    monkeypatch.setattr("trawl.wiring.embedded.process_pages", recording)
    clock = VirtualClock()
    fetcher = ScriptedFetcher(web(), clock=clock, hosts=HOSTS, default_ip=None)
    ctx = asyncio.run(clock.run(crawl_on(settings(), tmp_path, clock, fetcher, SEEDS)))

    news = [(p, o) for p, o in seen if "news.test/" in p.url]
    assert len(news) == ARTICLES
    assert all(o.window_hint > 0 for _, o in news), "a long article hints its window"
    # The first page of a site has no hint; each next one, on either host name, is given
    # the window its predecessor needed (one request at a time: it came back first).
    assert news[0][0].window_hint == 0
    for (_, before), (after, _) in itertools.pairwise(news):
        assert after.window_hint == before.window_hint
    # The hint is a cost, never an answer: each page's fingerprint is the full pass's.
    for p, o in news:
        full = main_text(p.body)
        assert (o.simhash, o.text_tokens) == (full.simhash, full.tokens)
    # Another site starts without one; each site's state holds its own last page's.
    other = [(p, o) for p, o in seen if "other.test" in p.url]
    assert [p.window_hint for p, _ in other] == [0]
    assert ctx.sites.state("news.test").main_text_window == news[-1][1].window_hint
    assert ctx.sites.state("other.test").main_text_window == other[0][1].window_hint
    # And the host record keeps it, for the site's next visit after leaving memory.
    conn = sqlite3.connect(tmp_path / DB_NAME)
    try:
        (record,) = conn.execute("SELECT record FROM hosts WHERE site = 'news.test'").fetchone()
    finally:
        conn.close()
    assert json.loads(record)["mainTextWindow"] == news[-1][1].window_hint
