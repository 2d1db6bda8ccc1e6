"""nginx's JSON access log (bench/webfarm/nginx.py `LOG_FORMAT`) as the test web's records.

The records feed `trawl.testweb.politeness.check_politeness` unchanged:

    records = read_access_log(server.access_log)
    violations = check_politeness(records, tolerance_s=NGINX_TOLERANCE_S,
                                  **spec.politeness_inputs())

Times: `t_end` is nginx's $msec and `t_start` is $msec - $request_time. Both come from
nginx's cached clock: millisecond resolution, refreshed once per event loop pass, so a
logged time can lag the real event by that pass's length, more when nginx waits for a
core. Measured with a client keeping one worker busy (7,400 requests/s, 100 KB each, on
the 2 cores here): logged start minus client send was -1 ms to +1.6 ms at p99, 18 ms at
worst. The checker's default 5 ms of slack is too tight for that; `NGINX_TOLERANCE_S`
allows for it and is still far below the 1 s minimum gap between a site's requests.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trawl.testweb.request_log import RequestLogRecord
from trawl.urls.registered_domain import registered_domain

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

NGINX_TOLERANCE_S = 0.025


def parse_line(line: str) -> RequestLogRecord:
    """One access log line as a record; raises ValueError on a line not in our format."""
    obj = json.loads(line)
    end = float(obj["msec"])
    host = str(obj["host"])
    return RequestLogRecord(
        t_start=round(end - float(obj["request_time"]), 3),
        t_end=end,
        host=host,
        site=registered_domain(host) if host else "",
        ip=str(obj["server_addr"]),
        method=str(obj["method"]),
        path=str(obj["uri"]),
        status=int(obj["status"]),
        ua=str(obj["ua"]),
        body_bytes=int(obj["bytes"]),
    )


def read_access_log(path: Path) -> list[RequestLogRecord]:
    """Every complete line of the log at `path` (a last line still being written is skipped)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    return [parse_line(line) for line in lines[:-1] if line.strip()]


@dataclass(frozen=True, slots=True)
class LogSummary:
    """What the server saw of one crawl: request counts, bytes and the busy interval."""

    requests: int
    pages_200: int  # status 200 answers other than robots.txt
    robots_requests: int
    status_counts: dict[int, int]
    body_bytes: int
    first_start_at: float
    last_end_at: float

    @property
    def duration_s(self) -> float:
        return self.last_end_at - self.first_start_at

    @property
    def pages_per_s(self) -> float:
        return self.pages_200 / self.duration_s if self.duration_s > 0 else 0.0


def summarise(records: Sequence[RequestLogRecord]) -> LogSummary:
    statuses: dict[int, int] = {}
    for record in records:
        statuses[record.status] = statuses.get(record.status, 0) + 1
    is_robots = [r.path.split("?", 1)[0] == "/robots.txt" for r in records]
    return LogSummary(
        requests=len(records),
        pages_200=sum(
            r.status == 200 and not robots for r, robots in zip(records, is_robots, strict=True)
        ),
        robots_requests=sum(is_robots),
        status_counts=dict(sorted(statuses.items())),
        body_bytes=sum(r.body_bytes for r in records),
        first_start_at=min((r.t_start for r in records), default=0.0),
        last_end_at=max((r.t_end for r in records), default=0.0),
    )
