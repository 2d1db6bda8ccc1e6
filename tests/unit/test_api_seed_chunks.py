"""POST /v1/seeds adds a long list a chunk at a time (api.app.add_in_chunks).

10,000 URLs (a request's most) added in one call held the crawl loop for ~0.6 s; each
chunk is now a call of its own on the crawl loop, which runs its own steps between two.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from trawl.api.app import SEED_CHUNK, add_in_chunks
from trawl.frontier.scope import SeedScope
from trawl.loop.operator_changes import AddedSeeds

if TYPE_CHECKING:
    from collections.abc import Callable


def test_a_long_list_goes_a_chunk_a_call_and_comes_back_as_one_answer() -> None:
    urls = [f"http://s{i}.test/" if i % 4 else f"bad {i}" for i in range(2 * SEED_CHUNK + 7)]
    calls: list[int] = []

    async def on_crawl(call: Callable[[], AddedSeeds]) -> AddedSeeds:
        await asyncio.sleep(0)  # as the inbox: a call runs at one of the loop's turns
        return call()

    def add(chunk: list[str]) -> AddedSeeds:
        calls.append(len(chunk))
        good = [u for u in chunk if not u.startswith("bad")]
        return AddedSeeds(
            len(good) - 1, 1, [(u, "not a crawlable URL") for u in chunk if u.startswith("bad")],
            [SeedScope(u) for u in good],
        )  # fmt: skip

    added = asyncio.run(add_in_chunks(on_crawl, add, urls))
    assert calls == [SEED_CHUNK, SEED_CHUNK, 7]
    assert added.queued + added.known + len(added.rejected) == len(urls)
    assert added.known == 3
    assert [u for u, _ in added.rejected] == [u for u in urls if u.startswith("bad")]
    assert [seed.url for seed in added.seeds] == [u for u in urls if not u.startswith("bad")]


def test_a_short_list_is_one_call() -> None:
    calls: list[list[str]] = []

    async def on_crawl(call: Callable[[], AddedSeeds]) -> AddedSeeds:
        return call()

    def add(chunk: list[str]) -> AddedSeeds:
        calls.append(chunk)
        return AddedSeeds(len(chunk), 0, [], [])

    assert asyncio.run(add_in_chunks(on_crawl, add, ["http://a.test/"])).queued == 1
    assert calls == [["http://a.test/"]]
