"""The seen stage's port: what the crawl loop asks of a seen set (embedded or partitioned)."""

from __future__ import annotations

from typing import Protocol


class SeenUrls(Protocol):
    checks: int
    load_error: str | None

    def add_if_new(self, url_hash: str) -> bool:
        """True when the URL was definitely not seen; it is seen from now on."""

    def add_must_crawl_if_new(self, url_hash: str) -> bool:
        """Exact check for seeds and operator URLs: never a false 'seen'."""

    def checkpoint(self) -> None: ...

    @property
    def size_bytes(self) -> int: ...
