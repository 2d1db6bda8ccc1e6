"""Time for the async shells, injected so tests can pass a fake (STYLE §2)."""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Epoch seconds."""

    async def sleep_until(self, at: float) -> None: ...

    async def wait_for(self, event: asyncio.Event, timeout_s: float) -> bool:
        """Until `event` is set (True) or `timeout_s` has passed on this clock (False)."""
        ...


class SystemClock:
    def now(self) -> float:
        return time.time()

    async def sleep_until(self, at: float) -> None:
        """Return no earlier than `at`: event loop timers may fire up to a millisecond early
        (uvloop rounds to ms), and the site clock refuses a start even 0.1 ms early."""
        while (delay := at - time.time()) > 0:  # noqa: ASYNC110 - a deadline, no event
            await asyncio.sleep(delay)

    async def wait_for(self, event: asyncio.Event, timeout_s: float) -> bool:
        try:
            async with asyncio.timeout(max(0.0, timeout_s)):
                await event.wait()
        except TimeoutError:
            return False
        return True
