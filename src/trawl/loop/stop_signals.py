"""SIGINT and SIGTERM stop a crawl cleanly, whenever they come (issue 13).

A long-running command (`crawl`, `serve`, `demo`, `node`) takes either signal, sent to it
or to its whole process group, as "checkpoint and exit 0":
- `stop_signals_noted()` wraps the whole command: a signal that comes before the crawl's
  loop is running (while the data directory is opened, the test web or the cluster
  connections are started) or after it ended is noted instead of killing the process
  with a KeyboardInterrupt traceback or status -15;
- `stop_on_signals(stop)` wraps the crawl on its event loop: a signal calls `stop`, at
  once if one was noted earlier.
Worker processes ignore both signals (loop.workers); their parent shuts them down.

Who writes what: `_received` is appended to by the handler `stop_signals_noted` installs
(Python runs it on the main thread) and read by the same thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

_received: list[int] = []


def _note(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)


def stop_requested() -> bool:
    """A stop signal came since `stop_signals_noted()` began."""
    return bool(_received)


@contextlib.contextmanager
def stop_signals_noted() -> Iterator[None]:
    """Within: SIGINT/SIGTERM are noted, not fatal. Main thread only."""
    old = {sig: signal.signal(sig, _note) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        _received.clear()


@contextlib.contextmanager
def stop_on_signals(stop: Callable[[], None]) -> Iterator[None]:
    """Within, on the running loop: SIGINT/SIGTERM call `stop` (also if one was noted
    before); afterwards the handlers from before are back."""
    loop = asyncio.get_running_loop()
    old = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}

    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, stop)
    try:
        if _received:
            stop()
        yield
    finally:
        for sig, handler in old.items():
            loop.remove_signal_handler(sig)
            if handler is not None:  # None: not set from Python; the default stays
                signal.signal(sig, handler)  # remove_signal_handler leaves the default
