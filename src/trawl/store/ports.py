"""Ports of the storage stage: what the crawl loop and the read-back commands need.

The embedded adapter (`records_sqlite`) is the reference; cluster adapters must pass the same
contract suite (tests/contract).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Iterator

    from trawl.model import PageFetchedEvent, PageRecord


class PageRecords(Protocol):
    def put_page(self, record: PageRecord, event: PageFetchedEvent | None) -> None:
        """Store the record and, in the same transaction, its event (if any)."""

    def get_page(self, url_hash: str) -> PageRecord | None: ...

    def iter_pages(self) -> Iterator[PageRecord]: ...


class HostRecords(Protocol):
    def put_host(self, site: str, record: dict[str, object]) -> None: ...

    def get_host(self, site: str) -> dict[str, object] | None: ...

    def iter_hosts(self) -> Iterator[tuple[str, dict[str, object]]]: ...


class EventLog(Protocol):
    def read_events(self, from_offset: int, limit: int) -> list[PageFetchedEvent]:
        """Events with offset >= from_offset, oldest first."""

    def last_offset(self) -> int: ...
