"""Response heads written byte for byte, for the raw loopback servers of the fetcher tests."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable


def response_head(status: str, headers: Iterable[tuple[str, str]]) -> bytes:
    """`HTTP/1.1 <status>`, one line a header as given, then the blank line (Latin-1)."""
    lines = [f"HTTP/1.1 {status}", *(f"{k}: {v}" for k, v in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
