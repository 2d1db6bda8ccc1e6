"""Links routed to their partition's owner through Redis Streams, a batch per entry.

How this works:
- One stream per partition, `trawl:{<cluster>:p<N>}:links`. A parser that finds links for
  partitions owned elsewhere sends each partition a batch of a few hundred as ONE `XADD`
  entry (field `v1`: a compact JSON list of [url, urlHash, site, depth, score] rows, with
  [mustCrawl, referrer, line, kind, parts] appended when any is set, then `redirects` (issue
  13), `standing` (issue 16) and `pages` (issue 19, when not 1) when set: each appended after
  the others, so entries written before still decode), and sends to many partitions in one
  pipeline. One entry per link costs a stream entry and a command per URL;
  bench/link_routing.py measures the difference.
- The owner reads with `XRANGE` after the last entry id it has queued (no consumer groups:
  the position lives in the owner's checkpoint, so a new owner resumes from the old owner's
  checkpoint). Reading many partitions is a pipeline of per-partition reads, since one
  `XREAD` over many streams would cross slots on a Redis Cluster.
- Entries stay until a checkpoint covers them: only then does the owner `trim_through` the
  checkpointed id (`XTRIM MINID`, exact), which keeps every later entry. So a stream's length
  is what the last checkpoint does not cover yet, and a crash loses no routed link.
- Entry ids are `<server ms>-<seq>`, so the oldest entry's age is also measured on the server.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trawl.cluster.redis_coord import LUA_NOW_MS, LuaScript, unavailable_as_trawl_error
from trawl.errors import DataError
from trawl.model import CrawlUrl, Line, UrlKind

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from trawl.cluster.redis_coord import ClusterKeys, RedisClient

FIELD = "v1"  # a link batch's only field; a new encoding gets a new name
CONTROL_FIELD = "ctl1"  # an operator's instruction for the partition's owner (a JSON object)
START = "0-0"  # the position before any entry

# KEYS: stream. ARGV: after id, limit. Reply: entries after the id, counted up to the limit.
_LAG = LuaScript("""
return #redis.call('XRANGE', KEYS[1], '(' .. ARGV[1], '+', 'COUNT', ARGV[2])
""")
# KEYS: stream. Reply: [length, first id, last id, oldest entry's age in ms]; ids '' if empty.
_STREAM_INFO = (
    LUA_NOW_MS
    + """
local first = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)[1]
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
if not first then return {0, '', '', 0} end
local first_ms = tonumber(string.match(first[1], '^(%d+)'))
return {redis.call('XLEN', KEYS[1]), first[1], last[1], now_ms - first_ms}
"""
)


@dataclass(frozen=True, slots=True)
class RoutedLink:
    """A link (or seed) for a site's partition, on its way to that partition's owner.

    `must_crawl` marks seeds and operator URLs (the owner checks them against its exact
    table, never the Bloom filter); `referrer` is the site the link was found on, which
    raises the target site's importance as it does in embedded mode; `line`, `kind` and
    `parts` are the frontier line, URL kind and score parts the finder chose (it holds the
    in-link counts that scored it). A seed's line and score are the owner's to choose.
    """

    url: str
    url_hash: str
    site: str
    depth: int
    score: float
    must_crawl: bool = False
    referrer: str = ""
    line: int = 0  # Line.FAST
    kind: int = 0  # UrlKind.PAGE
    parts: str = ""
    redirects: int = 0  # redirect hops that led to this URL (CrawlUrl.redirects)
    standing: int = 0  # frontier.scope.Standing packed (CrawlUrl.standing): its seed, hops
    # Linking pages the owner counts for the URL (frontier.link_scores.route_weight); most
    # links go once, found on one page: 1 is left out of the encoding, and older entries
    # read as 1
    pages: int = 1

    def item(self, discovered_at: float) -> CrawlUrl:
        """The URL as the finder queued it (a seed's line and score are set on arrival)."""
        return CrawlUrl(
            self.url, self.url_hash, self.site, self.depth, Line(self.line), discovered_at,
            UrlKind(self.kind), self.score, self.parts, self.redirects, self.standing,
        )  # fmt: skip

    def __post_init__(self) -> None:
        if len(self.url_hash) != 32:
            raise ValueError(f"urlHash must be 32 hex digits, got {self.url_hash!r}")
        if self.depth < 0:
            raise ValueError(f"depth must be >= 0, got {self.depth}")


@dataclass(frozen=True, slots=True)
class LinkBatch:
    """One stream entry: a batch of links, and its id (the position to resume after)."""

    entry_id: str
    links: tuple[RoutedLink, ...]
    control: dict[str, Any] | None = None  # a control entry: no links, this instead


@dataclass(frozen=True, slots=True)
class StreamInfo:
    partition: int
    length: int  # entries not yet trimmed, i.e. not covered by a checkpoint
    first_id: str  # "" when empty
    last_id: str
    oldest_age_s: float  # of the first entry, on the server's clock; 0 when empty


def encode_batch(links: Sequence[RoutedLink]) -> str:
    rows: list[list[object]] = []
    for x in links:
        row: list[object] = [x.url, x.url_hash, x.site, x.depth, x.score]
        counted = x.pages != 1
        if (
            x.must_crawl or x.referrer or x.line or x.kind or x.parts or x.redirects
            or x.standing or counted
        ):  # fmt: skip
            row += [int(x.must_crawl), x.referrer, x.line, x.kind, x.parts]
        if x.redirects or x.standing or counted:  # after the others: older entries decode
            row.append(x.redirects)  # issue 13
        if x.standing or counted:  # issue 16
            row.append(x.standing)
        if counted:  # issue 19
            row.append(x.pages)
        rows.append(row)
    return json.dumps(rows, ensure_ascii=False, separators=(",", ":"))


def _decode_row(row: list[Any]) -> RoutedLink:
    url, h, site, depth, score, *rest = row  # JSON values: checked by the conversions
    must_crawl, referrer, line, kind, parts, *later = rest if rest else (0, "", 0, 0, "")
    redirects = later[0] if later else 0
    standing = later[1] if len(later) > 1 else 0
    pages = later[2] if len(later) > 2 else 1
    return RoutedLink(
        str(url), str(h), str(site), int(depth), float(score),
        bool(must_crawl), str(referrer), int(line), int(kind), str(parts),
        int(redirects), int(standing), int(pages),
    )  # fmt: skip


def decode_batch(entry_id: str, fields: Mapping[str, str]) -> LinkBatch:
    """Raises DataError for an entry this version did not write (say, a newer encoding)."""
    if CONTROL_FIELD in fields:
        try:
            control = json.loads(fields[CONTROL_FIELD])
        except ValueError as error:
            raise DataError(f"link stream entry {entry_id}: damaged control ({error})") from None
        if not isinstance(control, dict):
            raise DataError(f"link stream entry {entry_id}: control is not a JSON object")
        return LinkBatch(entry_id, (), control)
    try:
        rows = json.loads(fields[FIELD])
        links = tuple(_decode_row(row) for row in rows)
    except (KeyError, ValueError, TypeError) as error:
        raise DataError(f"link stream entry {entry_id}: not a {FIELD} batch ({error})") from error
    return LinkBatch(entry_id, links)


def next_id(entry_id: str) -> str:
    """The smallest entry id after `entry_id` (XTRIM MINID keeps ids >= its argument)."""
    ms, _, seq = entry_id.partition("-")
    return f"{int(ms)}-{int(seq or 0) + 1}"


class RedisLinks:
    """The link streams of one trawl cluster."""

    def __init__(self, client: RedisClient, keys: ClusterKeys) -> None:
        self._client = client
        self._keys = keys

    async def send_links(self, partition: int, batch: Sequence[RoutedLink]) -> str:
        """Append one batch as one entry; returns its id."""
        return (await self.send_many([(partition, batch)]))[0][1]

    async def send_many(
        self, batches: Iterable[tuple[int, Sequence[RoutedLink]]]
    ) -> list[tuple[int, str]]:
        """One entry per (partition, batch), all in one pipeline, in order (a partition may
        come more than once); empty batches are skipped. Returns (partition, entry id) pairs.

        Pass `buffers.items()` to flush a dict of per-partition buffers.
        """
        sending = [(partition, batch) for partition, batch in batches if batch]
        pipe = self._client.pipeline(transaction=False)
        for partition, batch in sending:
            pipe.xadd(self._keys.links(partition), {FIELD: encode_batch(batch)})
        with unavailable_as_trawl_error(f"send {len(sending)} link batches"):
            ids = await pipe.execute()
        return [(partition, str(i)) for (partition, _), i in zip(sending, ids, strict=True)]

    async def send_control(self, partition: int, control: Mapping[str, Any]) -> str:
        """Append an instruction for the partition's owner (say, a site's new limits); it
        travels in order with the links and, like them, stays until a checkpoint covers it."""
        text = json.dumps(control, separators=(",", ":"))
        with unavailable_as_trawl_error(f"send control to partition {partition}"):
            return str(await self._client.xadd(self._keys.links(partition), {CONTROL_FIELD: text}))

    async def send_control_all(self, partitions: Iterable[int], control: Mapping[str, Any]) -> int:
        """`send_control` to each of `partitions` (a change every owner must apply), in one
        pipeline; how many entries were sent."""
        text = json.dumps(control, separators=(",", ":"))
        pipe = self._client.pipeline(transaction=False)
        sent = 0
        for partition in partitions:
            pipe.xadd(self._keys.links(partition), {CONTROL_FIELD: text})
            sent += 1
        with unavailable_as_trawl_error(f"send control to {sent} partitions"):
            await pipe.execute()
        return sent

    async def read_links(self, partition: int, after_id: str, count: int) -> list[LinkBatch]:
        """Up to `count` entries after `after_id` (START for all), oldest first."""
        return (await self.read_many({partition: after_id}, count))[partition]

    async def read_many(self, after: Mapping[int, str], count: int) -> dict[int, list[LinkBatch]]:
        """`read_links` for many partitions (partition → position) in one pipeline."""
        pipe = self._client.pipeline(transaction=False)
        for partition, after_id in after.items():
            pipe.xrange(self._keys.links(partition), f"({after_id}", "+", count=count)
        with unavailable_as_trawl_error(f"read links of {len(after)} partitions"):
            replies = await pipe.execute()
        return {
            partition: [decode_batch(entry_id, fields) for entry_id, fields in entries]
            for partition, entries in zip(after, replies, strict=True)
        }

    async def trim_through(self, partition: int, entry_id: str) -> int:
        """Delete entries up to and including `entry_id`, keeping all later ones.

        Call only once a checkpoint covers them. Returns how many were deleted.
        """
        key = self._keys.links(partition)
        with unavailable_as_trawl_error(f"trim links of partition {partition}"):
            return int(await self._client.xtrim(key, minid=next_id(entry_id), approximate=False))

    async def stream_lag(self, partition: int, after_id: str, limit: int = 100_000) -> int:
        """How many entries follow `after_id`, counted on the server up to `limit`."""
        keys = [self._keys.links(partition)]
        with unavailable_as_trawl_error(f"lag of partition {partition}"):
            reply = await _LAG.run(self._client, keys, [after_id, str(limit)])
        return int(str(reply))

    async def streams(self, partitions: Sequence[int]) -> list[StreamInfo]:
        """Length, ends and oldest entry's age of each stream, in one pipeline."""
        pipe = self._client.pipeline(transaction=False)
        for partition in partitions:
            # EVAL, not EVALSHA: a pipeline can't recover from a node lacking the script.
            pipe.eval(_STREAM_INFO, 1, self._keys.links(partition))
        with unavailable_as_trawl_error(f"stream info of {len(partitions)} partitions"):
            replies = await pipe.execute()
        return [
            StreamInfo(p, int(n), str(first), str(last), int(age) / 1000)
            for p, (n, first, last, age) in zip(partitions, replies, strict=True)
        ]
