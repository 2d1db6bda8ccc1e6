"""The durable record of a cluster's run-time scope changes, in Redis.

How this works (issue 16): three keys under the cluster's hash tag, so each script touches
one slot of a Redis Cluster: a counter numbering the changes, a hash of each changed thing's
latest change (JSON), and a sorted set of the same things by the number of their latest
change. Recording a change bumps the counter and rewrites its thing's entry; a node reads
"every thing changed after seq N" (its last read) in order. The record never shrinks: it
holds one entry per pattern or seed ever changed, which is what a late joiner must know.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from trawl.cluster.redis_coord import LuaScript, unavailable_as_trawl_error
from trawl.cluster.scope_changes import ScopeChange
from trawl.errors import DataError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from trawl.cluster.redis_coord import ClusterKeys, RedisClient

# KEYS: counter, hash, sorted set. ARGV: only_new (0/1), then field, JSON pairs.
# Reply: each change's seq, 0 for one skipped (only_new and already recorded).
_RECORD = LuaScript("""
local out = {}
for i = 2, #ARGV, 2 do
  if ARGV[1] == '1' and redis.call('HEXISTS', KEYS[2], ARGV[i]) == 1 then
    out[#out + 1] = 0
  else
    local seq = redis.call('INCR', KEYS[1])
    redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
    redis.call('ZADD', KEYS[3], seq, ARGV[i])
    out[#out + 1] = seq
  end
end
return out
""")
# KEYS: hash, sorted set. ARGV: after seq, limit. Reply: [seq, JSON, ...] in seq order.
_SINCE = LuaScript("""
local things = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. ARGV[1], '+inf', 'WITHSCORES',
                          'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
for i = 1, #things, 2 do
  out[#out + 1] = things[i + 1]
  out[#out + 1] = redis.call('HGET', KEYS[1], things[i])
end
return out
""")


class RedisScope:
    """The scope changes of one trawl cluster."""

    def __init__(self, client: RedisClient, keys: ClusterKeys) -> None:
        self._client = client
        self._keys = keys

    async def record(
        self, changes: Sequence[ScopeChange], *, only_new: bool = False
    ) -> list[ScopeChange]:
        """Record `changes` in order, numbered; with `only_new`, those whose thing was never
        changed before (the others are left out of the answer)."""
        if not changes:
            return []
        args = ["1" if only_new else "0"]
        for change in changes:
            text = json.dumps(change.to_json(), ensure_ascii=False, separators=(",", ":"))
            args += [_field(change), text]
        keys = [self._keys.scope_seq(), self._keys.scope_changes(), self._keys.scope_order()]
        with unavailable_as_trawl_error(f"record {len(changes)} scope changes"):
            seqs = await _RECORD.run(self._client, keys, args)
        assert isinstance(seqs, list)
        return [c.numbered(int(s)) for c, s in zip(changes, seqs, strict=True) if int(s)]

    async def changes_since(self, seq: int, limit: int) -> list[ScopeChange]:
        """Up to `limit` things changed after `seq`, each with its latest change, in order.
        Raises DataError for an entry this version cannot read."""
        keys = [self._keys.scope_changes(), self._keys.scope_order()]
        with unavailable_as_trawl_error(f"scope changes since {seq}"):
            reply = await _SINCE.run(self._client, keys, [str(seq), str(limit)])
        assert isinstance(reply, list)
        out = []
        for n, text in zip(reply[::2], reply[1::2], strict=True):
            where = f"redis scope change {n}"
            try:
                raw = json.loads(str(text))
            except ValueError as exc:
                raise DataError(f"{where}: damaged ({exc})") from None
            out.append(ScopeChange.from_json(raw, where).numbered(int(n)))
        return out


def _field(change: ScopeChange) -> str:
    return f"s:{change.key}" if change.seed is not None else f"x:{change.key}"
