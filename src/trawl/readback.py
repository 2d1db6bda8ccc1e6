"""Read-back commands: `trawl pages`, `trawl events`, `trawl page`, `trawl host`.

They open the database read-only, so they can run beside a live crawl. `trawl events --api`
reads the same events from a running `trawl serve` instead, on this or another machine.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from trawl.api.client import follow_events
from trawl.errors import DataError, InvalidUrl, UsageError
from trawl.store.records_sqlite import SqliteRecords
from trawl.store.sqlite_db import open_database
from trawl.store.warc import read_record
from trawl.urls.normalise import normalise_url, url_hash
from trawl.urls.registered_domain import registered_domain
from trawl.wiring import DB_NAME, WARC_DIR

if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterator
    from typing import Any

    from trawl.model import PageRecord

_HASH = re.compile(r"^[0-9a-f]{32}$")


def _records(data: Path) -> SqliteRecords:
    return SqliteRecords(open_database(data / DB_NAME, readonly=True))


def _print_json(obj: object) -> None:
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")


def cmd_pages(args: argparse.Namespace) -> int:
    for record in _records(args.data).iter_pages():
        _print_json(record.to_json())
    return 0


def cmd_events(args: argparse.Namespace) -> int:
    if args.api is not None:
        events = follow_events(args.api, args.from_offset, args.follow)
    else:
        events = _local_events(args.data, args.from_offset, args.follow)
    try:
        for event in events:
            _print_json(event)
            if args.follow:
                sys.stdout.flush()  # a reader downstream sees each event as it comes
    except KeyboardInterrupt:
        return 130  # Ctrl-C is how a follow ends: the shell's status for SIGINT, no traceback
    return 0


def _local_events(data: Path, from_offset: int, follow: bool) -> Iterator[dict[str, Any]]:
    records = _records(data)
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
        time.sleep(0.5)


def find_page(records: SqliteRecords, url_or_hash: str) -> PageRecord:
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
    record = find_page(_records(args.data), args.page)
    if not args.body:
        _print_json(record.to_json())
        return 0
    if not record.storage_key:
        raise UsageError(f"{record.url}: no body stored (httpStatus {record.http_status})")
    stored = read_record(args.data / WARC_DIR, record.storage_key)
    sys.stdout.buffer.write(stored.payload)
    return 0


def cmd_host(args: argparse.Namespace) -> int:
    host = args.host.strip().lower().rstrip(".")
    site = registered_domain(host)
    record = _records(args.data).get_host(site)
    if record is None:
        raise UsageError(f"no host record for {site!r}")
    _print_json(record)
    return 0


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    data_help = "data directory of a crawl"
    p = sub.add_parser("pages", help="print every page record as a JSON line")
    p.add_argument("--data", type=Path, default=Path("trawl-data"), help=data_help)
    p.set_defaults(func=cmd_pages)
    p = sub.add_parser("events", help="print page.fetched events as JSON lines")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--data", type=Path, default=Path("trawl-data"), help=data_help)
    source.add_argument("--api", metavar="URL", help="read them from a `trawl serve` API instead")
    p.add_argument("--from", dest="from_offset", type=int, default=0, help="first offset")
    p.add_argument("--follow", action="store_true", help="keep printing new events")
    p.set_defaults(func=cmd_events)
    p = sub.add_parser("page", help="print one page record (or its body)")
    p.add_argument("page", metavar="URL_OR_HASH")
    p.add_argument("--data", type=Path, default=Path("trawl-data"), help=data_help)
    p.add_argument("--body", action="store_true", help="print the stored HTML instead")
    p.set_defaults(func=cmd_page)
    p = sub.add_parser("host", help="print a site's host record")
    p.add_argument("host", metavar="HOST", help="a hostname or a registered domain")
    p.add_argument("--data", type=Path, default=Path("trawl-data"), help=data_help)
    p.set_defaults(func=cmd_host)


__all__ = ["DataError", "add_parsers"]
