"""A partition's checkpoint: what a new owner needs to carry on where the last one stopped.

Contents: the partition's queued URLs (the local frontier's rows of its sites), its seen-set
slice, the link-stream position the checkpoint covers (every entry up to it is in the queue
or the seen slice), its pages waiting for a browser (the render queue's rows of its sites,
issue 18), and when and under which fencing token it was taken. Host clocks and
robots rules are not here: they are host records in PostgreSQL, written before the checkpoint.

Format: gzip of a JSON header line, then the seen slice's bytes. Pure: bytes in, values out.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import zlib
from dataclasses import dataclass
from typing import Any

from trawl.errors import DataError
from trawl.model import CrawlUrl, Line, UrlKind
from trawl.render.ports import RenderItem

FORMAT = "trawl-partition-checkpoint/1"


@dataclass(frozen=True, slots=True)
class QueuedRow:
    """A frontier row as it travels between owners (leases and ids stay behind)."""

    site: str
    line: int
    url: str
    url_hash: str
    depth: int
    discovered_at: float
    attempts: int
    kind: int
    score: float
    score_parts: str
    redirects: int = 0  # absent from checkpoints written before issue 13
    standing: int = 0  # frontier.scope.Standing packed; absent before issue 16

    def item(self) -> CrawlUrl:
        return CrawlUrl(
            self.url, self.url_hash, self.site, self.depth, Line(self.line), self.discovered_at,
            UrlKind(self.kind), self.score, self.score_parts, self.redirects, self.standing,
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class PartitionCheckpoint:
    partition: int
    fence: int  # the lease's fencing token when it was taken
    taken_at: float  # epoch seconds
    stream_id: str  # the last link-stream entry it covers
    queue: tuple[QueuedRow, ...]
    seen_slice: bytes
    renders: tuple[RenderItem, ...] = ()  # absent from checkpoints written before issue 18

    def encode(self) -> bytes:
        header = {
            "format": FORMAT,
            "partition": self.partition,
            "fence": self.fence,
            "takenAt": self.taken_at,
            "streamId": self.stream_id,
            "queue": [list(dataclasses.astuple(r)) for r in self.queue],
            "renders": [list(dataclasses.astuple(r)) for r in self.renders],
        }
        text = json.dumps(header, ensure_ascii=False, separators=(",", ":"))
        return gzip.compress(text.encode() + b"\n" + self.seen_slice, compresslevel=6)


def decode(data: bytes, where: str) -> PartitionCheckpoint:
    """Raises DataError naming `where` when the bytes are not a checkpoint this version reads."""
    try:
        raw = gzip.decompress(data)
        line, sep, seen_slice = raw.partition(b"\n")
        header = json.loads(line)
        if not sep or header.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} file")
        queue = tuple(_row(row) for row in header["queue"])
        renders = tuple(_render_row(row) for row in header.get("renders", ()))
        return PartitionCheckpoint(
            int(header["partition"]),
            int(header["fence"]),
            float(header["takenAt"]),
            str(header["streamId"]),
            queue,
            seen_slice,
            renders,
        )
    except (OSError, EOFError, zlib.error, ValueError, KeyError, TypeError) as exc:
        raise DataError(f"{where}: damaged partition checkpoint ({exc})") from None


def _row(row: list[Any]) -> QueuedRow:
    """A queue row (JSON values: checked by the conversions); rows of checkpoints written
    before issue 13 lack `redirects`, before issue 16 `standing`."""
    site, line_no, url, url_hash, depth, found_at, attempts, kind, score, parts, *rest = row
    redirects = rest[0] if rest else 0
    standing = rest[1] if len(rest) > 1 else 0
    return QueuedRow(
        str(site), int(line_no), str(url), str(url_hash), int(depth), float(found_at),
        int(attempts), int(kind), float(score), str(parts), int(redirects), int(standing),
    )  # fmt: skip


def _render_row(row: list[Any]) -> RenderItem:
    (url, url_hash, site, reason, key, record_id, fetched_at, queued_at, attempts, depth,
     standing, score) = row  # fmt: skip
    return RenderItem(
        str(url), str(url_hash), str(site), str(reason), str(key), str(record_id),
        float(fetched_at), float(queued_at), int(attempts), int(depth), int(standing),
        float(score),
    )  # fmt: skip
