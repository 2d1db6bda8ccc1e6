"""The seen stage's port: what the crawl loop asks of a seen set (embedded or partitioned)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable


class SeenUrls(Protocol):
    checks: int
    load_error: str | None

    def add_if_new(self, url_hash: str) -> bool:
        """True when the URL was definitely not seen; it is seen from now on."""

    def add_must_crawl_if_new(self, url_hash: str) -> bool:
        """Exact check for seeds and operator URLs: never a false 'seen'."""

    def snapshot(self) -> Callable[[], None]:
        """Copy the set now, right after a commit (a saved set must hold no URL the database
        lacks); the returned call saves the copy and may run on a thread."""

    @property
    def size_bytes(self) -> int: ...
