"""Time for the async shells, injected so tests can pass a fake (STYLE §2)."""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Epoch seconds."""

    async def sleep_until(self, at: float) -> None: ...


class SystemClock:
    def now(self) -> float:
        return time.time()

    async def sleep_until(self, at: float) -> None:
        delay = at - time.time()
        if delay > 0:
            await asyncio.sleep(delay)
