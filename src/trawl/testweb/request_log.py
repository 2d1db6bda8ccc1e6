"""The test web's request log: one JSON object per line, one line per answered request.

Fields: `t_start`/`t_end` (epoch seconds from time.time() when the request's headers were
parsed, and just before the response's last bytes were written: no client can have the
whole response earlier, while a stamp taken after the write ran late by however long the
server's process was descheduled, 7 ms once on a loaded CI machine, and made a client that
waited exactly the Retry-After look early), `host` (Host header without port), `site`
(registered domain as the test web defines it, or the host when unknown), `ip` (local
address the connection arrived on), `method`, `path` (path and query as received),
`status`, `ua` (User-Agent) and `bytes` (body bytes sent).

Optional fields, written only when set so older logs and readers stay valid: `aborted`
(true when the answer ended early: the client went away, or the server stopped; then
`bytes` counts what was written before) and `retry_after` (seconds from `t_end` the
answer asked the client to wait, from its Retry-After header), `if_none_match` and
`if_modified_since` (the request's header values as received, when it sent them).
`status` 0 means no status line was ever sent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


@dataclass(frozen=True, slots=True)
class RequestLogRecord:
    t_start: float
    t_end: float
    host: str
    site: str
    ip: str
    method: str
    path: str
    status: int
    ua: str
    body_bytes: int
    aborted: bool = False
    retry_after_s: float | None = None
    if_none_match: str | None = None
    if_modified_since: str | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "t_start": self.t_start,
            "t_end": self.t_end,
            "host": self.host,
            "site": self.site,
            "ip": self.ip,
            "method": self.method,
            "path": self.path,
            "status": self.status,
            "ua": self.ua,
            "bytes": self.body_bytes,
        }
        if self.aborted:
            out["aborted"] = True
        if self.retry_after_s is not None:
            out["retry_after"] = self.retry_after_s
        if self.if_none_match is not None:
            out["if_none_match"] = self.if_none_match
        if self.if_modified_since is not None:
            out["if_modified_since"] = self.if_modified_since
        return out

    @classmethod
    def from_json(cls, obj: dict[str, object]) -> RequestLogRecord:
        def num(key: str) -> float:
            value = obj[key]
            if not isinstance(value, int | float):
                raise ValueError(f"request log field {key!r} is not a number: {value!r}")
            return float(value)

        return cls(
            t_start=num("t_start"),
            t_end=num("t_end"),
            host=str(obj["host"]),
            site=str(obj["site"]),
            ip=str(obj["ip"]),
            method=str(obj["method"]),
            path=str(obj["path"]),
            status=int(num("status")),
            ua=str(obj["ua"]),
            body_bytes=int(num("bytes")),
            aborted=obj.get("aborted") is True,
            retry_after_s=num("retry_after") if obj.get("retry_after") is not None else None,
            if_none_match=_optional_str(obj, "if_none_match"),
            if_modified_since=_optional_str(obj, "if_modified_since"),
        )


def _optional_str(obj: dict[str, object], key: str) -> str | None:
    value = obj.get(key)
    return None if value is None else str(value)


def parse_request_log(text: str) -> list[RequestLogRecord]:
    """Records from log text; a last line without its newline (still being written) is skipped."""
    lines = text.split("\n")
    return [RequestLogRecord.from_json(json.loads(line)) for line in lines[:-1] if line.strip()]


def read_request_log(path: Path) -> list[RequestLogRecord]:
    return parse_request_log(path.read_text(encoding="utf-8"))
