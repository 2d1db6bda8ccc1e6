"""Stand-ins for a cluster node's coordinator in tests that run one node's parts alone."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Awaitable


class FreeIpSlots:
    """The per-IP slots (`placement.IpSlotStore`) of a coordinator that always has room."""

    async def try_acquire(self, ip: str) -> float | None:
        return None

    def note_sent(self, ip: str) -> Awaitable[None]:
        return asyncio.sleep(0)

    async def release(self, ip: str) -> None:
        return None
