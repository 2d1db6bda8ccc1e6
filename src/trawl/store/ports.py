"""Ports of the storage stage: what the crawl loop and the read-back commands need.

The embedded adapter (`records_sqlite`) is the reference; cluster adapters must pass the same
contract suite (tests/contract).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from trawl.frontier.scope import SeedScope
    from trawl.frontier.skips import Skip, SkipBatch
    from trawl.model import PageFetchedEvent, PageRecord
    from trawl.store.fingerprints import NearMatch, Original
    from trawl.store.records_sqlite import DuePage
    from trawl.store.warc_record import EncodedRecord


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


class RecordReader(PageRecords, HostRecords, EventLog, Protocol):
    """What the API and the read-back commands read (committed records only)."""

    def close(self) -> None: ...


class Records(PageRecords, HostRecords, EventLog, Protocol):
    """Everything the crawl loop asks of its record store (SQLite or PostgreSQL).

    Writes join an open batch; `commit()` makes the batch durable (in cluster mode: hands it
    to the node's publisher, which commits it after the links and WARC bytes it depends on).
    """

    def begin(self) -> None: ...

    def commit(self) -> None: ...

    def take_due(self, now: float, limit: int) -> list[DuePage]: ...

    def last_fetched(self, url_hashes: list[str]) -> dict[str, float]: ...

    def make_due(self, url_hashes: list[str], at: float) -> int: ...

    def set_near_duplicate_of(self, url_hash: str, main_url: str) -> None: ...


class Fingerprints(Protocol):
    """The fingerprint index (store.fingerprints): first stored copies by content hash, and
    main copies by the simhash of their main text. Writes join the records' open batch or
    transaction, so they commit with the page records that name them."""

    def original_of(self, content_hash: str) -> Original | None: ...

    def add_original(self, content_hash: str, original: Original) -> None:
        """Remember the first stored copy of `content_hash` (a later one never replaces it)."""

    def near_copy_of(
        self, simhash: int, *, max_distance: int, exclude_url_hash: str
    ) -> NearMatch | None:
        """The closest indexed main copy within `max_distance` (≤ 3) bits, if any; ties go
        to the smallest url hash."""

    def put_simhash(self, url_hash: str, url: str, site: str, simhash: int) -> None: ...

    def drop_simhash(self, url_hash: str) -> None: ...

    def note_near_copy(self, url_hash: str, main_url_hash: str) -> None: ...

    def move_near_copies(self, old_main: str, new_main: str) -> list[str]:
        """Re-point every near copy of `old_main` (and `old_main` itself) at `new_main`;
        returns the url hashes re-pointed."""


class WarcSink(Protocol):
    """Where encoded WARC records go: local files (`WarcWriter`) or object-storage chunks."""

    def append(self, record: EncodedRecord, request: EncodedRecord | None = None) -> str:
        """Add the record and, right after it, the request record that asked for it;
        returns the storage key of `record`."""

    def sync(self) -> None: ...

    def sync_handle(self) -> Callable[[], None]:
        """`sync()` in two steps: this call takes what the sync needs of the sink's state;
        the call it returns does the blocking part, may run on another thread while
        appends go on, and raises DataError as `sync` does."""

    def writeback_handle(self) -> Callable[[], None]:
        """A call for another thread that starts writing appended bytes to disk without
        waiting (a hint that keeps the disk's queue short; store.writeback), or does
        nothing where there is nothing to write."""

    def close(self) -> None: ...


class SkipLog(Protocol):
    """What was skipped, and why (issue 16): the last N skips and the counts by reason.

    Writes join the open batch (the crawl's commit makes them durable with the rest); reads
    see committed skips only, so a read-only reader beside a live crawl agrees with them.
    """

    def write(self, batch: SkipBatch) -> None:
        """Append the batch's skips (oldest first), drop all but the newest N, and set each
        reason's count to the batch's value."""

    def counts(self) -> dict[str, int]:
        """Skips by reason over the whole crawl (resumed crawls included)."""

    def recent(self, limit: int, reason: str | None = None) -> list[Skip]:
        """Up to `limit` of the kept skips, newest first; only `reason`'s if given."""


class ScopeStore(Protocol):
    """The crawl's scope as it changes (issue 16): seed scopes by seed id, and the
    crawl-wide excludes added at run time. Writes join the open batch."""

    def seeds(self) -> list[tuple[int, SeedScope]]:
        """Every stored seed (id, scope), in the order seeds were first given. A row that
        does not read back is left out (and says so in `damaged`)."""

    def put_seeds(self, seeds: list[tuple[int, SeedScope]]) -> None:
        """Store these seeds' scopes; a new id goes after every stored one."""

    def credits(self) -> dict[int, int]:
        """URLs queued per seed id (ScopeBook.take_page), as last written."""

    def put_credits(self, pages: dict[int, int]) -> None:
        """Set these seeds' counts (whole values: writing one twice does no harm)."""

    def exclusions(self) -> list[str]:
        """The run-time excludes, oldest first."""

    def add_exclusion(self, pattern: str, at: float) -> bool:
        """False when it is already there."""

    def remove_exclusion(self, pattern: str) -> bool:
        """False when it was not there."""
