"""Routed links per second through Redis Streams: one entry per batch vs one entry per link.

    python -m bench.link_routing [--links 200000] [--partitions 64] [--repeat 3]
                                 [--redis-url redis://127.0.0.1:6379/0]

A parser machine routes links to the partitions other machines own (issue 7). Each link is
buffered for its partition; a partition's buffer becomes one stream entry when it holds
`batch` links, and the sender sends up to 64 ready entries in one pipeline (one round trip).
Then the owner reads every stream back (XRANGE, up to 10,000 links per partition a call,
pipelined over the partitions) and decodes the links. Modes, all in one run on one Redis:

- per link (baseline): one XADD per link with the link's fields as stream fields, pipelined
  64 to a round trip like the others: what "a stream entry per URL" costs;
- per link, awaited: the same without pipelining (one round trip per link; on the first
  `--awaited` links only, as it is slow);
- batch 1 / 100 / 500: `RedisLinks.send_many` entries of that many links (JSON rows).

Send and read rates are links/s and are compared with the baseline's; "Redis B/link" is the
growth of the server's used_memory per stored link. With no --redis-url, a single redis-server
is started on a free loopback port (tests/servers/redis.py) and stopped afterwards. Uses
64 partitions by default so that batches of 500 fill (a crawl with 1,024 partitions fills
them more slowly and also flushes by age). Single-threaded client: rates are per core.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import random
import statistics
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.servers.redis import temporary_redis

from bench.runinfo import describe_run
from trawl.cluster.partitions import partition_of
from trawl.cluster.redis_coord import ClusterKeys, connect
from trawl.cluster.redis_links import START, RedisLinks, RoutedLink

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

    from redis.typing import EncodableT, FieldT

    from trawl.cluster.redis_coord import RedisClient

RESULTS = Path(__file__).parent / "results" / "link-routing.json"
ENTRIES_PER_ROUND_TRIP = 64
READ_LINKS = 10_000  # links per partition per read call, whatever the entry size
Routed = list[tuple[int, RoutedLink]]
SECTIONS = ("world", "politics", "business", "tech", "sport", "culture", "opinion", "video")


def make_links(n: int, partitions: int, seed: int = 7) -> Routed:
    """Links to 5,000 sites with Zipf-ish popularity, ~80-char URLs, like a news crawl's."""
    rng = random.Random(seed)
    sites = [f"site{i}.example.com" for i in range(5000)]
    weights = [1 / (rank + 1) for rank in range(len(sites))]
    out: Routed = []
    for i, site in enumerate(rng.choices(sites, weights, k=n)):
        section = rng.choice(SECTIONS)
        url = f"https://www.{site}/{section}/2026/11/{section}-story-{rng.randrange(10**6)}-{i}"
        digest = hashlib.blake2b(url.encode(), digest_size=16).hexdigest()
        link = RoutedLink(url, digest, site, rng.randrange(6), round(rng.random(), 4))
        out.append((partition_of(site, partitions), link))
    return out


def batches_of(links: Routed, batch: int) -> list[tuple[int, list[RoutedLink]]]:
    """Per-partition buffers flushed whenever they hold `batch` links, then the remainders."""
    buffers: dict[int, list[RoutedLink]] = {}
    out: list[tuple[int, list[RoutedLink]]] = []
    for partition, link in links:
        buffer = buffers.setdefault(partition, [])
        buffer.append(link)
        if len(buffer) == batch:
            out.append((partition, buffer))
            buffers[partition] = []
    out.extend((p, buffer) for p, buffer in buffers.items() if buffer)
    return out


# -- senders ---------------------------------------------------------------------------------
async def send_batched(client: RedisClient, keys: ClusterKeys, links: Routed, batch: int) -> None:
    ready = batches_of(links, batch)
    api = RedisLinks(client, keys)
    for start in range(0, len(ready), ENTRIES_PER_ROUND_TRIP):
        await api.send_many(ready[start : start + ENTRIES_PER_ROUND_TRIP])


def _fields(link: RoutedLink) -> dict[FieldT, EncodableT]:
    return {
        "url": link.url,
        "urlHash": link.url_hash,
        "site": link.site,
        "depth": str(link.depth),
        "score": repr(link.score),
    }


async def send_per_link(client: RedisClient, keys: ClusterKeys, links: Routed) -> None:
    for start in range(0, len(links), ENTRIES_PER_ROUND_TRIP):
        pipe = client.pipeline(transaction=False)
        for partition, link in links[start : start + ENTRIES_PER_ROUND_TRIP]:
            pipe.xadd(keys.links(partition), _fields(link))
        await pipe.execute()


async def send_per_link_awaited(client: RedisClient, keys: ClusterKeys, links: Routed) -> None:
    for partition, link in links:
        await client.xadd(keys.links(partition), _fields(link))


# -- readers -----------------------------------------------------------------------------------
async def read_batched(client: RedisClient, keys: ClusterKeys, partitions: int, batch: int) -> int:
    count = max(1, READ_LINKS // batch)  # entries per call
    api = RedisLinks(client, keys)
    after = dict.fromkeys(range(partitions), START)
    total = 0
    while after:
        read = await api.read_many(after, count)
        for partition, batches in read.items():
            total += sum(len(batch.links) for batch in batches)
            if len(batches) < count:
                del after[partition]
            else:
                after[partition] = batches[-1].entry_id
    return total


async def read_per_link(client: RedisClient, keys: ClusterKeys, partitions: int) -> int:
    after = dict.fromkeys(range(partitions), START)
    total = 0
    while after:
        pipe = client.pipeline(transaction=False)
        for partition, after_id in after.items():
            pipe.xrange(keys.links(partition), f"({after_id}", "+", count=READ_LINKS)
        replies = await pipe.execute()
        for partition, entries in zip(list(after), replies, strict=True):
            for _, f in entries:
                RoutedLink(f["url"], f["urlHash"], f["site"], int(f["depth"]), float(f["score"]))
            total += len(entries)
            if len(entries) < READ_LINKS:
                del after[partition]
            else:
                after[partition] = entries[-1][0]
    return total


# -- measuring ---------------------------------------------------------------------------------
async def used_memory(client: RedisClient) -> int:
    return int((await client.info("memory"))["used_memory"])


async def one_round(
    client: RedisClient,
    send: Callable[[RedisClient, ClusterKeys, Routed], Awaitable[None]],
    read: Callable[[RedisClient, ClusterKeys, int], Awaitable[int]] | None,
    links: Routed,
    partitions: int,
) -> dict[str, float]:
    keys = ClusterKeys(f"bench-{uuid.uuid4().hex[:8]}")
    before = await used_memory(client)
    started = time.perf_counter()
    await send(client, keys, links)
    sent_s = time.perf_counter() - started
    stored = await used_memory(client) - before
    result = {"send_per_s": len(links) / sent_s, "redis_bytes_per_link": stored / len(links)}
    if read is not None:
        started = time.perf_counter()
        got = await read(client, keys, partitions)
        result["read_per_s"] = got / (time.perf_counter() - started)
        assert got == len(links), (got, len(links))
    await client.delete(*(keys.links(p) for p in range(partitions)))
    return result


def medians(rounds: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}


async def measure(client: RedisClient, args: argparse.Namespace) -> dict[str, dict[str, float]]:
    links = make_links(args.links, args.partitions)
    modes: dict[str, tuple[Callable[..., Awaitable[None]], Callable[..., Awaitable[int]] | None]]
    modes = {
        "per link (baseline)": (send_per_link, read_per_link),
        "per link, awaited": (send_per_link_awaited, None),
        **{
            f"batch {size}": (
                lambda c, k, ls, size=size: send_batched(c, k, ls, size),
                lambda c, k, n, size=size: read_batched(c, k, n, size),
            )
            for size in (1, 100, 500)
        },
    }
    rounds: dict[str, list[dict[str, float]]] = {mode: [] for mode in modes}
    for _ in range(args.repeat):  # interleaved, so drift in the machine hits every mode alike
        for mode, (send, read) in modes.items():
            subset = links[: args.awaited] if mode == "per link, awaited" else links
            rounds[mode].append(await one_round(client, send, read, subset, args.partitions))
    return {mode: medians(r) for mode, r in rounds.items()}


@contextlib.asynccontextmanager
async def redis_client(redis_url: str | None) -> AsyncIterator[RedisClient]:
    with contextlib.ExitStack() as stack:
        if redis_url is None:
            redis_url = stack.enter_context(temporary_redis(cluster=False)).url
        client = await connect(redis_url)
        try:
            yield client
        finally:
            await client.aclose()


# -- report ------------------------------------------------------------------------------------
def print_report(about: dict[str, str], args: argparse.Namespace, figures: dict[str, Any]) -> None:
    base = figures["per link (baseline)"]
    print(f"command: {about['command']}  commit: {about['commit']}")
    print(f"machine: {about['machine']}")
    print(f"{args.links:,} links over {args.partitions} partitions, median of {args.repeat}\n")
    print("| mode | send links/s | send xbaseline | read links/s | read xbaseline | Redis B/link |")
    print("|---|---|---|---|---|---|")
    for mode, f in figures.items():
        read = f.get("read_per_s")
        read_cells = f"{read:,.0f} | {read / base['read_per_s']:.2f}x" if read else "- | -"
        print(
            f"| {mode} | {f['send_per_s']:,.0f} | {f['send_per_s'] / base['send_per_s']:.2f}x "
            f"| {read_cells} | {f['redis_bytes_per_link']:.0f} |"
        )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--links", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--awaited", type=int, default=20_000, help="links for the awaited mode")
    parser.add_argument("--redis-url", default=None, help="default: start a redis-server")
    return parser.parse_args()


async def run(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    async with redis_client(args.redis_url) as client:
        return await measure(client, args)


def main() -> None:
    args = parse_args()
    about = describe_run()
    figures = asyncio.run(run(args))
    print_report(about, args, figures)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    settings = {k: v for k, v in vars(args).items() if k != "redis_url"}
    result = {"about": about, "settings": settings, "modes": figures}
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwrote {RESULTS}")


if __name__ == "__main__":
    main()
