"""Redis as the cluster's coordinator: connecting, key names, scripts and error mapping.

How this works:
- `redis_url` may name a single Redis or any node of a Redis Cluster. `connect` asks the
  server (`INFO cluster` → `cluster_enabled`) and returns a `Redis` or a `RedisCluster`,
  which learns the other nodes from the one named.
- Every key starts with `trawl:` and carries a hash tag, so each script and each multi-key
  operation touches one slot, as Redis Cluster requires: per-partition keys share the tag
  `{<cluster>:p<partition>}` (lease, fencing-token counter, link stream) and the cluster-wide
  keys share `{<cluster>}` (member list, member info, layout). Partitions spread over the
  cluster's nodes; a partition's own keys always live together.
- The adapters built on this (`redis_members`, `redis_leases`, `redis_links`) use the
  server's clock (`TIME`, `PX`), never this machine's, for anything that expires.
- Redis failing to answer (refused, reset, timed out, cluster down, a slot no node serves)
  is `CoordinatorUnavailable`; any other Redis error means we sent something wrong and
  propagates unchanged. So do our own bugs, but not redis-py's: during a Redis Cluster
  failover its asyncio client closes every connection when one fails, under other tasks
  still using them, which then fail inside redis-py with AttributeError, TypeError or
  RuntimeError ("unable to perform operation on <TCPTransport closed=True>")
  (redis-py #3546, #3815, #3835; seen in tests/e2e/test_cluster_redis_failover.py).
  Those, when raised from redis-py's own code, count as Redis not answering too.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import redis
from redis import exceptions as redis_errors
from redis.asyncio import Redis, RedisCluster

from trawl.errors import ConfigError, TrawlError

if TYPE_CHECKING:
    from collections.abc import Iterator

RedisClient = Redis | RedisCluster

_CLUSTER_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_UNAVAILABLE = (
    redis_errors.ConnectionError,  # includes BusyLoadingError
    redis_errors.TimeoutError,
    redis_errors.ClusterDownError,  # includes MasterDownError
    redis_errors.TryAgainError,
    redis_errors.SlotNotCoveredError,
)
_REDIS_PY = Path(redis.__file__).parent
_TRAWL = Path(__file__).parents[1]


class CoordinatorUnavailable(TrawlError):
    """Redis did not answer in time or at all: lease requests count as failed, nothing more."""


@contextlib.contextmanager
def unavailable_as_trawl_error(what: str) -> Iterator[None]:
    """Turn Redis being unreachable into `CoordinatorUnavailable` naming the operation."""
    try:
        yield
    except _UNAVAILABLE as error:
        raise CoordinatorUnavailable(f"redis: {what}: {type(error).__name__}: {error}") from error
    except (AttributeError, TypeError, RuntimeError) as error:
        if not _raised_by_redis_py(error):
            raise
        raise CoordinatorUnavailable(
            f"redis: {what}: {type(error).__name__} in redis-py (a connection closed under"
            f" it during a failover): {error}"
        ) from error


def _raised_by_redis_py(error: BaseException) -> bool:
    """Whether the innermost frame of trawl or redis-py that raised `error` is redis-py's
    (deeper frames of asyncio, uvloop or the like don't decide whose fault it is)."""
    innermost: Path | None = None
    tb = error.__traceback__
    while tb is not None:
        path = Path(tb.tb_frame.f_code.co_filename)
        if path.is_relative_to(_REDIS_PY) or path.is_relative_to(_TRAWL):
            innermost = path
        tb = tb.tb_next
    return innermost is not None and innermost.is_relative_to(_REDIS_PY)


async def connect(redis_url: str, timeout_s: float = 5.0) -> RedisClient:
    """A client for the Redis or Redis Cluster at `redis_url`, whichever the server says it is.

    `timeout_s` bounds connecting and each reply, so a stuck server is an error, not a hang.
    """
    probe = _single(redis_url, timeout_s)
    try:
        with unavailable_as_trawl_error(f"INFO cluster on {redis_url}"):
            info = await probe.info("cluster")
    finally:
        await probe.aclose()
    if int(info.get("cluster_enabled", 0)) != 1:
        return _single(redis_url, timeout_s)
    cluster = RedisCluster.from_url(
        redis_url, decode_responses=True, socket_timeout=timeout_s, socket_connect_timeout=timeout_s
    )
    with unavailable_as_trawl_error(f"cluster slots from {redis_url}"):
        await cluster.initialize()
    return cluster


def _single(redis_url: str, timeout_s: float) -> Redis:
    client: Redis = Redis.from_url(
        redis_url, decode_responses=True, socket_timeout=timeout_s, socket_connect_timeout=timeout_s
    )
    return client


def is_cluster(client: RedisClient) -> bool:
    return isinstance(client, RedisCluster)


@dataclass(frozen=True, slots=True)
class ClusterKeys:
    """Key names of one trawl cluster (`cluster` names it, so one Redis can host several)."""

    cluster: str

    def __post_init__(self) -> None:
        if not _CLUSTER_NAME.fullmatch(self.cluster):
            raise ConfigError(
                f"cluster name {self.cluster!r}: use 1-64 letters, digits, '_', '.' or '-'"
            )

    def members(self) -> str:
        return f"trawl:{{{self.cluster}}}:members"  # sorted set: member → expiry ms

    def member_info(self) -> str:
        return f"trawl:{{{self.cluster}}}:member-info"  # hash: member → JSON

    def layout(self) -> str:
        return f"trawl:{{{self.cluster}}}:partitions"  # the partition count, set once

    def lease(self, partition: int) -> str:
        return f"trawl:{{{self.cluster}:p{partition}}}:lease"  # hash, expires with the lease

    def token(self, partition: int) -> str:
        return f"trawl:{{{self.cluster}:p{partition}}}:token"  # counter, never deleted

    def links(self, partition: int) -> str:
        return f"trawl:{{{self.cluster}:p{partition}}}:links"  # stream of link batches

    def scope_changes(self) -> str:
        return f"trawl:{{{self.cluster}}}:scope"  # hash: changed thing → its latest change

    def scope_order(self) -> str:
        return f"trawl:{{{self.cluster}}}:scope-order"  # sorted set: changed thing → seq

    def scope_seq(self) -> str:
        return f"trawl:{{{self.cluster}}}:scope-seq"  # counter of scope changes, never reset


class LuaScript:
    """A Lua script run by its SHA1, sent whole only to a node that doesn't have it yet."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.sha = hashlib.sha1(source.encode()).hexdigest()

    async def run(self, client: RedisClient, keys: list[str], args: list[str]) -> object:
        # execute_command, since redis-py types EVALSHA's reply as maybe-not-awaitable. A
        # cluster client routes it by the keys, like any keyed command.
        try:
            reply: object = await client.execute_command(
                "EVALSHA", self.sha, len(keys), *keys, *args
            )
        except redis_errors.NoScriptError:
            # EVAL caches it on that node (each cluster node has its own script cache).
            reply = await client.execute_command("EVAL", self.source, len(keys), *keys, *args)
        return reply


# The server's time in milliseconds, for scripts. Scripts are replicated by their effects
# (Redis >= 5), so reading TIME in one is allowed.
LUA_NOW_MS = """
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""


async def ensure_layout(client: RedisClient, keys: ClusterKeys, partitions: int) -> None:
    """Record the partition count on first use; refuse a different one later.

    Raises ConfigError: partitions are fixed when the cluster is created, since every site's
    partition depends on the count.
    """
    if partitions < 1:
        raise ConfigError(f"cluster.partitions must be >= 1, got {partitions}")
    with unavailable_as_trawl_error("partition layout"):
        await client.set(keys.layout(), str(partitions), nx=True)
        stored = int(await client.get(keys.layout()))
    if stored != partitions:
        raise ConfigError(
            f"cluster {keys.cluster!r} was created with {stored} partitions;"
            f" the config says {partitions}"
        )
