"""`trawl seed URL... --cluster FILE`: seeds sent straight to their partitions' link streams.

How this works:
- Each seed is normalised with the crawler's rules (the `[urls]` table of `--config`, which
  should be the nodes' config), and its site and partition found as a node finds them. A URL
  that cannot be crawled is rejected with its reason, as `POST /v1/seeds` rejects it;
  repeats within one run are sent once.
- The rest go as `RoutedLink(..., depth=0, must_crawl=True)` rows to the link stream of the
  site's partition, in batches of `BATCH_LINKS` per entry and all in a few pipelines, so a
  million-line seeds file costs a few round trips. No node needs to be up: an entry waits in
  its stream until the partition's owner reads it.
- The owner decides what is new (it checks `must_crawl` rows against its exact seed table,
  never the Bloom filter), so this command cannot say which seeds were already known; and
  robots.txt is the owner's to apply, at fetch time.
- The partition count is checked against (or, for a new cluster, recorded in) Redis first:
  seeds routed with the wrong count would land on partitions that do not hold their sites.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from redis import exceptions as redis_errors

from trawl.cluster.cluster_file import ClusterSettings, load_cluster_file, redact
from trawl.cluster.partitions import partition_of
from trawl.cluster.redis_coord import ClusterKeys, CoordinatorUnavailable, connect, ensure_layout
from trawl.cluster.redis_links import RedisLinks, RoutedLink
from trawl.errors import InvalidUrl, UsageError
from trawl.urls.normalise import normalise_url, url_hash
from trawl.urls.registered_domain import site_of

if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterator, Sequence

    from trawl.urls.normalise import NormaliseRules

BATCH_LINKS = 500  # seeds per stream entry: the size of a parser's link batches
ENTRIES_PER_PIPELINE = 200  # stream entries per round trip


@dataclass(frozen=True, slots=True)
class CheckedSeeds:
    """Seeds split into what can be sent, as (url, urlHash, site), and what cannot."""

    valid: list[tuple[str, str, str]]
    rejected: list[tuple[str, str]]  # (the URL as given, why)


@dataclass(frozen=True, slots=True)
class SeedsSent:
    seeds: int
    partitions: int  # how many partitions' streams got at least one seed
    entries: int  # stream entries written


def check_seeds(raws: Sequence[str], rules: NormaliseRules) -> CheckedSeeds:
    """Normalise each URL; repeats (after normalisation) are kept once, first one first."""
    valid: list[tuple[str, str, str]] = []
    rejected: list[tuple[str, str]] = []
    seen: set[str] = set()
    for raw in raws:
        try:
            url = normalise_url(raw, None, rules)
            site = site_of(url)
        except (InvalidUrl, ValueError) as exc:
            rejected.append((raw, f"not a crawlable URL: {exc}"))
            continue
        h = url_hash(url)
        if h not in seen:
            seen.add(h)
            valid.append((url, h, site))
    return CheckedSeeds(valid, rejected)


def route_seeds(
    seeds: Sequence[tuple[str, str, str]], partitions: int
) -> dict[int, list[RoutedLink]]:
    """Each seed as a must-crawl link of depth 0, by the partition of its site."""
    routed: dict[int, list[RoutedLink]] = {}
    for url, h, site in seeds:
        link = RoutedLink(url, h, site, depth=0, score=0.0, must_crawl=True)
        routed.setdefault(partition_of(site, partitions), []).append(link)
    return routed


def _entries(routed: dict[int, list[RoutedLink]]) -> Iterator[tuple[int, list[RoutedLink]]]:
    for partition, links in sorted(routed.items()):
        for start in range(0, len(links), BATCH_LINKS):
            yield partition, links[start : start + BATCH_LINKS]


async def send_seeds(settings: ClusterSettings, seeds: Sequence[tuple[str, str, str]]) -> SeedsSent:
    """Send (url, urlHash, site) seeds to their partitions' link streams.

    Raises CoordinatorUnavailable when Redis does not answer, ConfigError when Redis
    recorded another partition count than the cluster file's.
    """
    routed = route_seeds(seeds, settings.partitions)
    entries = list(_entries(routed))
    if not entries:
        return SeedsSent(0, 0, 0)
    keys = ClusterKeys(settings.name)
    client = await connect(settings.redis_url)
    try:
        await ensure_layout(client, keys, settings.partitions)
        links = RedisLinks(client, keys)
        for start in range(0, len(entries), ENTRIES_PER_PIPELINE):
            await links.send_many(entries[start : start + ENTRIES_PER_PIPELINE])
    finally:
        await client.aclose()
    return SeedsSent(len(seeds), len(routed), len(entries))


def send_seeds_now(settings: ClusterSettings, seeds: Sequence[tuple[str, str, str]]) -> SeedsSent:
    """`send_seeds` on a fresh event loop; Redis failures become one-line UsageErrors."""
    try:
        return asyncio.run(send_seeds(settings, seeds))
    except CoordinatorUnavailable as exc:
        # The message may quote the URL as given, password and all.
        message = str(exc).replace(settings.redis_url, redact(settings.redis_url))
        raise UsageError(f"cannot send the seeds: {message}") from exc
    except redis_errors.RedisError as exc:  # say, a wrong password: not a bug of ours
        raise UsageError(f"redis {redact(settings.redis_url)}: {exc}") from exc


def cmd_seed_cluster(args: argparse.Namespace, raws: Sequence[str], rules: NormaliseRules) -> int:
    """`trawl seed URL... --cluster FILE` (its parser is in cli.py): prints what was sent
    and each rejection's reason."""
    settings = load_cluster_file(args.cluster)
    checked = check_seeds(raws, rules)
    sent = send_seeds_now(settings, checked.valid)
    print(
        f"sent {sent.seeds} seeds to {sent.partitions} partitions"
        f" ({len(checked.rejected)} rejected)"
    )
    for raw, reason in checked.rejected:
        print(f"rejected {raw!r}: {reason}")
    return 0
