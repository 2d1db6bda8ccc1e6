"""Read-back commands: `trawl pages`, `trawl events`, `trawl page`, `trawl host`.

They read a crawl's records from a data directory (`--data`, opened read-only, so they can run
beside a live crawl) or from a cluster's shared stores (`--cluster FILE`: PostgreSQL for the
records and events, S3 for the bodies), and print the same JSON lines either way.
`trawl events --api` reads the same events from a running `trawl serve` instead, on this or
another machine.
"""

from __future__ import annotations

import json
import re
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from trawl.cli.options import add_read_source
from trawl.errors import DataError, InvalidUrl, UsageError
from trawl.store.layout import DB_NAME, WARC_DIR
from trawl.store.records_sqlite import SqliteRecords
from trawl.store.sqlite_db import open_database
from trawl.urls.normalise import normalise_url, url_hash

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Iterator
    from pathlib import Path
    from typing import Any

    from trawl.model import PageRecord
    from trawl.store.records_postgres import PostgresRecords
    from trawl.store.warc_record import StoredBody

    StoredRecords = SqliteRecords | PostgresRecords

# Start-up (issue 14): `trawl --version` imports this module to build its parser, and a
# read-back command should start in well under 0.3 s, so what only some commands need (the
# public suffix list, the HTTP client, the WARC reader) is imported where it is used.

_HASH = re.compile(r"^[0-9a-f]{32}$")
FOLLOW_POLL_S = 0.5  # how often `--follow` asks for new events


@dataclass(frozen=True, slots=True)
class Stores:
    """Where a read-back command reads: the records, and the body behind a storage key."""

    records: StoredRecords
    read_body: Callable[[str], StoredBody]  # raises DataError for a missing or damaged body
    is_cluster: bool


@contextmanager
def open_stores(args: argparse.Namespace) -> Iterator[Stores]:
    """The stores named by `--cluster FILE`, else by `--data DIR`; closed on exit.

    Raises ConfigError for a bad cluster file or an unreachable PostgreSQL, DataError for a
    missing or damaged database.
    """
    cluster: Path | None = getattr(args, "cluster", None)
    if cluster is not None:
        with _cluster_stores(cluster) as stores:
            yield stores
        return
    conn = open_database(args.data / DB_NAME, readonly=True)
    try:
        yield Stores(SqliteRecords(conn), partial(_read_warc_record, args.data / WARC_DIR), False)
    finally:
        conn.close()


def _read_warc_record(warc_dir: Path, key: str) -> StoredBody:
    from trawl.store.warc import read_record

    return read_record(warc_dir, key)


@contextmanager
def _cluster_stores(path: Path) -> Iterator[Stores]:
    from trawl.cluster.extra import require_cluster_packages

    require_cluster_packages("--cluster")
    # Imported here: psycopg, redis and boto3 add ~0.3 s to the start of every command.
    from trawl.cluster.cluster_file import load_cluster_file
    from trawl.store.postgres_db import open_postgres
    from trawl.store.records_postgres import PostgresRecords

    settings = load_cluster_file(path)

    def read_body(key: str) -> StoredBody:
        # S3 is opened only for a body, so records read without credentials; and never
        # creates the bucket, since a reader must not write.
        from trawl.store.blobs_s3 import S3BlobStore
        from trawl.store.warc_chunks import read_record_from_blobs

        with S3BlobStore(settings.bucket(), create_bucket=False) as blobs:
            return read_record_from_blobs(blobs, key)

    conn = open_postgres(settings.postgres_dsn)
    try:
        yield Stores(PostgresRecords(conn), read_body, True)
    finally:
        conn.close()


def _print_json(obj: object) -> None:
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")


def cmd_pages(args: argparse.Namespace) -> int:
    with open_stores(args) as stores:
        for record in stores.records.iter_pages():
            _print_json(record.to_json())
    return 0


def cmd_events(args: argparse.Namespace) -> int:
    if args.api is not None:
        from trawl.api.client import follow_events

        return _print_events(follow_events(args.api, args.from_offset, args.follow), args.follow)
    with open_stores(args) as stores:
        events = stored_events(stores.records, args.from_offset, args.follow)
        return _print_events(events, args.follow)


def _print_events(events: Iterator[dict[str, Any]], follow: bool) -> int:
    try:
        for event in events:
            _print_json(event)
            if follow:
                sys.stdout.flush()  # a reader downstream sees each event as it comes
    except KeyboardInterrupt:
        return 130  # Ctrl-C is how a follow ends: the shell's status for SIGINT, no traceback
    return 0


def stored_events(
    records: StoredRecords, from_offset: int, follow: bool
) -> Iterator[dict[str, Any]]:
    """Events from `from_offset` on, as JSON objects; with `follow`, polls for new ones."""
    offset = from_offset
    while True:
        batch = records.read_events(offset, 1000)
        for event in batch:
            yield event.to_json()
            offset = event.offset + 1
        if batch:
            continue
        if not follow:
            return
        time.sleep(FOLLOW_POLL_S)


def find_page(records: StoredRecords, url_or_hash: str) -> PageRecord:
    key = url_or_hash.strip().lower()
    if not _HASH.match(key):
        try:
            key = url_hash(normalise_url(url_or_hash))
        except InvalidUrl as exc:
            raise UsageError(f"{url_or_hash!r} is neither a urlHash nor a URL ({exc})") from None
    record = records.get_page(key)
    if record is None:
        raise UsageError(f"no page record for {url_or_hash!r} (urlHash {key})")
    return record


def cmd_page(args: argparse.Namespace) -> int:
    with open_stores(args) as stores:
        record = find_page(stores.records, args.page)
        if args.rendered and not args.body:
            raise UsageError("--rendered goes with --body")
        if not args.body:
            _print_json(record.to_json())
            return 0
        key = record.rendered_key if args.rendered else record.storage_key
        if not key and args.rendered:
            raise UsageError(f"{record.url}: no rendered copy stored (never rendered)")
        if not key:
            raise UsageError(f"{record.url}: no body stored (httpStatus {record.http_status})")
        stored = stores.read_body(key)
    sys.stdout.buffer.write(stored.payload)
    return 0


# The host record a reader wants (README: "Host records carry ..."), plus the site's recent
# errors, trap flag and operator override. The rest of the stored record is the crawler's
# own state, kept so a restart resumes it (the site clock, trap and containment windows,
# day counters): `trawl host --debug` prints it too.
HOST_RECORD_FIELDS = (
    "host", "nextAllowedAt", "crawlDelay", "robotsRules", "robotsFetchedAt", "errorCount",
    "avgResponseMs", "pagesToday", "ownerMachine", "recentErrors", "similarPagesFlag",
    "override",
)  # fmt: skip


def host_record_view(record: dict[str, object], debug: bool) -> dict[str, object]:
    """The record as `trawl host` prints it: its public fields, or all with `debug`."""
    if debug:
        return record
    return {k: v for k, v in record.items() if k in HOST_RECORD_FIELDS}


def cmd_host(args: argparse.Namespace) -> int:
    name = args.host.strip().lower().rstrip(".")
    with open_stores(args) as stores:
        # A registered domain is looked up as given: the public suffix list takes longer to
        # load (~0.1-0.3 s) than the rest of the command, and is needed only for a hostname.
        record = stores.records.get_host(name)
        site = name
        if record is None:
            from trawl.urls.registered_domain import registered_domain

            site = registered_domain(name)
            record = stores.records.get_host(site) if site != name else None
        if record is not None and stores.is_cluster:
            record = in_written_order(record)
    if record is None:
        raise UsageError(f"no host record for {site!r}")
    _print_json(host_record_view(record, args.debug))
    return 0


def in_written_order(record: dict[str, object]) -> dict[str, object]:
    """A host record read from PostgreSQL with its keys in the order a node writes them.

    JSONB keeps no key order (it sorts keys by length), while SQLite keeps the text as
    written; reordering after the record a node would write makes `--cluster` print the same
    line as `--data`. Only the order changes, never a value. A record the node could not
    load is printed as stored.
    """
    from trawl.politeness.site_state import SiteState

    try:
        written = SiteState.from_host_record(record).to_host_record("")
    except DataError:
        return record
    return _reordered(record, written)


def _reordered(value: dict[str, object], template: dict[str, object]) -> dict[str, object]:
    keys = [k for k in template if k in value] + [k for k in value if k not in template]
    return {k: _reordered_value(value[k], template.get(k)) for k in keys}


def _reordered_value(value: object, template: object) -> object:
    if isinstance(value, dict) and isinstance(template, dict):
        return _reordered(value, template)
    if isinstance(value, list) and isinstance(template, list) and len(value) == len(template):
        return [_reordered_value(v, t) for v, t in zip(value, template, strict=True)]
    return value


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("pages", help="print every page record as a JSON line")
    add_read_source(p)
    p.set_defaults(func=cmd_pages)
    p = sub.add_parser("events", help="print page.fetched events as JSON lines")
    add_read_source(p, api=True)
    p.add_argument("--from", dest="from_offset", type=int, default=0, help="first offset")
    p.add_argument("--follow", action="store_true", help="keep printing new events")
    p.set_defaults(func=cmd_events)
    p = sub.add_parser("page", help="print one page record (or its body)")
    p.add_argument("page", metavar="URL_OR_HASH")
    add_read_source(p)
    p.add_argument("--body", action="store_true", help="print the stored HTML instead")
    p.add_argument(
        "--rendered",
        action="store_true",
        help="with --body: print the page's last rendered copy (the browser's DOM)",
    )
    p.set_defaults(func=cmd_page)
    p = sub.add_parser("host", help="print a site's host record")
    p.add_argument("host", metavar="HOST", help="a hostname or a registered domain")
    add_read_source(p)
    p.add_argument(
        "--debug",
        action="store_true",
        help="print the whole stored record, the crawler's internal state included",
    )
    p.set_defaults(func=cmd_host)


__all__ = ["DataError", "add_parsers"]
