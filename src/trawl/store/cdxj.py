"""CDXJ index lines for WARC records, so replay tools (pywb) need no indexing pass.

How this works (pure: strings in, strings out; `write_index` is the one file write):

- A CDXJ line is `<SURT key> <14-digit timestamp> <JSON>` with the fields pywb's own indexer
  writes (`pywb.indexer.cdxindexer.CDXJ`): url, mime, status, digest, length, offset,
  filename; a field whose value is "-" is left out, as pywb leaves it out. Lengths and
  offsets are strings, as pywb writes them. A file's lines are sorted byte-wise.
- The encoder knows the URL, date, media type, status and digest (`CdxEntry`, computed in the
  worker process with the record); the writer knows the offset, length and file name.
- The SURT key must equal what pywb computes for the same URL (`surt.surt`, the IA and
  Google canonicalisers), or pywb finds nothing. `surt_key` ports the rules that apply to
  http(s) URLs: drop scheme, user info and fragment; lowercase; strip a leading `www\\d*.`;
  drop default ports; unescape repeatedly and escape once; resolve dot segments; strip
  query session ids; sort the query; strip a trailing slash. Not ported: path session ids
  (`/(S(...))/x.aspx`) and decimal or octal IP spellings, which trawl's normaliser never
  produces. tests/e2e/test_warc_replay.py compares these lines with pywb's indexer.
"""

from __future__ import annotations

import os
import re
from json.encoder import encode_basestring_ascii as _json_string  # json.dumps' own quoting
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import quote_from_bytes, unquote_to_bytes, urlsplit

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

INDEX_SUFFIX = ".cdxj"
REVISIT_MIME = "warc/revisit"
_WWW = re.compile(r"www\d*\.")
_MIME_END = re.compile(r"[; ]")
_DEFAULT_PORTS = {"http": 80, "https": 443}
# surt's escapeOnce: everything outside printable ASCII, and "%" and "#", is escaped.
_SAFE = b"!\"$&'()*+,-./:;<=>?@[\\]^_`{|}~"
# surt.URLRegexTransformer.stripQuerySessionID, applied before lowercasing, in this order.
_QUERY_SESSION_IDS = tuple(
    re.compile(p, re.I)
    for p in (
        rb"^(.*)(?:jsessionid=[0-9a-zA-Z]{32})(?:&(.*))?$",
        rb"^(.*)(?:phpsessid=[0-9a-zA-Z]{32})(?:&(.*))?$",
        rb"^(.*)(?:sid=[0-9a-zA-Z]{32})(?:&(.*))?$",
        rb"^(.*)(?:ASPSESSIONID[a-zA-Z]{8}=[a-zA-Z]{24})(?:&(.*))?$",
        rb"^(.*)(?:cfid=[^&]+&cftoken=[^&]+)(?:&(.*))?$",
    )
)


class CdxEntry(NamedTuple):
    """What the encoder knows of one indexed record (response or revisit)."""

    key: str  # SURT
    timestamp: str  # 14 digits, UTC
    url: str
    mime: str  # media type without parameters; "warc/revisit" for a revisit
    status: str  # "-" for a revisit, as pywb writes it
    digest: str  # payload digest, base32 without "sha1:"


def cdx_entry(
    *, url: str, warc_date: str, http_head: bytes, digest: str, revisit: bool
) -> CdxEntry:
    """The index entry of a response or revisit record; `warc_date` is its WARC-Date."""
    timestamp = re.sub(r"\D", "", warc_date)[:14]
    if revisit:
        mime, status = REVISIT_MIME, "-"
    else:
        mime, status = _mime_and_status(http_head)
    return CdxEntry(surt_key(url), timestamp, url, mime, status, digest.removeprefix("sha1:"))


def _mime_and_status(http_head: bytes) -> tuple[str, str]:
    lines = http_head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    status = parts[1] if len(parts) > 1 and parts[1].isdigit() else "-"
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-type" and value.strip():
            return _MIME_END.split(value.strip(), maxsplit=1)[0], status
    return "unk", status


def cdx_line(entry: CdxEntry, *, offset: int, length: int, filename: str) -> str:
    """One CDXJ line (no newline) for the record at `offset` in `filename`.

    The JSON is what `json.dumps` writes for the kept fields (its separators, its quoting
    of each string), put together without building dicts for it: this runs on the crawl
    loop for every record it appends (9.8 against 4.5 us a line)."""
    fields = (
        ("url", entry.url),
        ("mime", entry.mime),
        ("status", entry.status),
        ("digest", entry.digest),
        ("length", str(length)),
        ("offset", str(offset)),
        ("filename", filename),
    )
    body = ", ".join([f'"{name}": {_json_string(v)}' for name, v in fields if v and v != "-"])
    return f"{entry.key} {entry.timestamp} {{{body}}}"


def index_path(warc_path: Path) -> Path:
    """Where the index of `<name>.warc.gz` lives: `<name>.cdxj`, next to it."""
    return warc_path.with_name(warc_path.name.removesuffix(".warc.gz") + INDEX_SUFFIX)


def write_index(path: Path, lines: Iterable[str]) -> None:
    """Write sorted `lines` to `path` atomically (temporary file, fsync, rename).

    Written a part at a time: a full WARC file's ~40,000 lines are sorted and written on
    the WARC writer's thread beside the crawl loop, and whatever that thread does holding
    the GIL holds up the loop. All the lines in one join (a per-line generator, then one
    encode of ~13 MB) kept the loop's thread waiting up to 21 ms; a part is one join and
    encode of 1,000 lines, and each part's write lets go of the GIL: 12 ms now, the sort's
    (`python -m bench.checkpoint_stall --part cdxj`)."""
    ordered = sorted(lines)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        for start in range(0, len(ordered), _WRITE_PART_LINES):
            part = ordered[start : start + _WRITE_PART_LINES]
            f.write(("\n".join(part) + "\n").encode())
        os.fsync(f.fileno())
    os.replace(tmp, path)


_WRITE_PART_LINES = 1_000  # ~300 KB a part


# A URL as trawl's normaliser writes most of them: lowercase host without a port, a path of
# unreserved characters, no query. Its key needs none of the unescaping, escaping and
# path rules below, which cost ~12 us a URL (a page's record is indexed once).
_PLAIN_URL = re.compile(r"https?://([a-z0-9\-]+(?:\.[a-z0-9\-]+)*)(/[A-Za-z0-9\-._~/]*)\Z")


def surt_key(url: str) -> str:
    """The SURT form of an http(s) URL as pywb's `surt.surt` spells it (see module doc)."""
    plain = _PLAIN_URL.match(url)
    if plain is not None:
        host, path = plain.groups()
        # "//" and "/." would meet the path rules (empty and dot segments): not plain.
        if "//" not in path and "/." not in path:
            return f"{_surt_host(host)}){_without_last_slash(path.lower())}"
    return _surt_key_any(url)


def _surt_key_any(url: str) -> str:
    """`surt_key` for any http(s) URL."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = _surt_host((parts.hostname or "").rstrip("."))
    if port is not None and port != _DEFAULT_PORTS.get(parts.scheme):
        netloc += f":{port}"
    path = _escape(_normalise_path(_unescape(parts.path.encode()))).lower()
    key = f"{netloc}){_without_last_slash(path)}"
    if parts.query:
        query = _escape(_unescape(parts.query.encode())).encode("ascii")
        for pattern in _QUERY_SESSION_IDS:
            m = pattern.match(query)
            if m:
                query = m.group(1) + (m.group(2) or b"")
        if query:
            key += "?" + _sorted_query(query.decode("ascii").lower())
    return key


def _surt_host(host: str) -> str:
    """A lowercase host as a key begins: a leading `www\\d*.` dropped, labels reversed and
    joined by commas."""
    www = _WWW.match(host)
    if www is not None:
        host = host[www.end() :]
    return ",".join(reversed(host.split(".")))


def _without_last_slash(path: str) -> str:
    return path[:-1] if len(path) > 1 and path.endswith("/") else path


def _unescape(raw: bytes) -> bytes:
    while True:
        once = unquote_to_bytes(raw)
        if once == raw:
            return raw
        raw = once


def _escape(raw: bytes) -> str:
    return quote_from_bytes(raw, safe=_SAFE)


def _normalise_path(path: bytes) -> bytes:
    """surt's GoogleURLCanonicalizer.normalizePath: dot segments, empty segments dropped."""
    if not path:
        return b"/"
    kept: list[bytes] = []
    for segment in path.split(b"/")[1:]:
        if segment == b".":
            continue
        if segment == b".." and kept:
            kept.pop()
        else:
            kept.append(segment)
    if not kept:
        return b"/"
    return b"/" + b"".join(s + b"/" for s in kept[:-1] if s) + kept[-1]


def _sorted_query(query: str) -> str:
    """surt's alphaReorderQuery: sort the (name, value) pairs, keep "a" apart from "a="."""
    pairs = sorted(tuple(arg.split("=", 1)) for arg in query.split("&"))
    return "&".join("=".join(pair) for pair in pairs)
