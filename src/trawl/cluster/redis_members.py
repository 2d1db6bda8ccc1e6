"""Cluster members on Redis: heartbeats in, the live member list out.

How this works:
- One sorted set `trawl:{<cluster>}:members` scores each member by when its registration
  expires, in the server's milliseconds (`TIME` + ttl); a hash beside it (same hash tag, so
  the same slot on a Redis Cluster) holds each member's info as JSON. A heartbeat is one
  script that sets both; no member's clock is ever compared with another's.
- A member is live while its expiry is in the server's future. Entries that expired more
  than `forget_after_s` ago are deleted by the next heartbeat, so `trawl cluster status`
  can still show recently gone members.
- Everyone reading the same list computes the same assignment (`partitions.assign`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trawl.cluster.redis_coord import LUA_NOW_MS, LuaScript, unavailable_as_trawl_error

if TYPE_CHECKING:
    from collections.abc import Mapping

    from trawl.cluster.redis_coord import ClusterKeys, RedisClient

# KEYS: members, member info. ARGV: member, ttl ms, info JSON, forget-after ms.
_HEARTBEAT = LuaScript(
    LUA_NOW_MS
    + """
redis.call('ZADD', KEYS[1], string.format('%d', now_ms + tonumber(ARGV[2])), ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
local horizon = string.format('%d', now_ms - tonumber(ARGV[4]))
for _, gone in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', horizon)) do
  redis.call('ZREM', KEYS[1], gone)
  redis.call('HDEL', KEYS[2], gone)
end
return now_ms
"""
)
# KEYS: members, member info. Reply: [now_ms, member, expiry_ms, info, member, ...].
_MEMBERS = LuaScript(
    LUA_NOW_MS
    + """
local out = {string.format('%d', now_ms)}
local rows = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
for i = 1, #rows, 2 do
  out[#out + 1] = rows[i]
  out[#out + 1] = rows[i + 1]
  out[#out + 1] = redis.call('HGET', KEYS[2], rows[i]) or '{}'
end
return out
"""
)


@dataclass(frozen=True, slots=True)
class Member:
    """A registered member as the server sees it now."""

    member_id: str
    info: Mapping[str, str]
    expires_in_s: float  # negative: gone that long ago

    @property
    def is_live(self) -> bool:
        return self.expires_in_s > 0


class RedisMembers:
    """Heartbeats and the member list of one trawl cluster."""

    def __init__(self, client: RedisClient, keys: ClusterKeys, forget_after_s: float = 3600.0):
        self._client = client
        self._keys = keys
        self._forget_after_ms = str(round(forget_after_s * 1000))

    async def heartbeat(self, member_id: str, info: Mapping[str, str], ttl_s: float) -> None:
        """Register `member_id` (again) as live for `ttl_s` from now on the server's clock."""
        if ttl_s <= 0:
            raise ValueError(f"heartbeat ttl_s must be > 0, got {ttl_s}")
        keys = [self._keys.members(), self._keys.member_info()]
        args = [member_id, str(round(ttl_s * 1000)), json.dumps(dict(info), sort_keys=True)]
        with unavailable_as_trawl_error(f"heartbeat of {member_id}"):
            await _HEARTBEAT.run(self._client, keys, [*args, self._forget_after_ms])

    async def leave(self, member_id: str) -> None:
        """Unregister at once (a clean shutdown), so the others reassign without waiting."""
        pipe = self._client.pipeline(transaction=False)
        pipe.zrem(self._keys.members(), member_id)
        pipe.hdel(self._keys.member_info(), member_id)
        with unavailable_as_trawl_error(f"leave of {member_id}"):
            await pipe.execute()

    async def members(self) -> list[Member]:
        """Every registered member, live or recently gone, in member_id order."""
        keys = [self._keys.members(), self._keys.member_info()]
        with unavailable_as_trawl_error("member list"):
            reply = await _MEMBERS.run(self._client, keys, [])
        if not isinstance(reply, list):
            raise TypeError(f"member list script answered {reply!r}")
        now_ms = int(reply[0])
        rows = [reply[i : i + 3] for i in range(1, len(reply), 3)]
        found = [Member(m, json.loads(info), (int(exp) - now_ms) / 1000) for m, exp, info in rows]
        return sorted(found, key=lambda member: member.member_id)

    async def live_members(self) -> list[str]:
        """The ids of the members whose registration has not expired, sorted."""
        return [member.member_id for member in await self.members() if member.is_live]
