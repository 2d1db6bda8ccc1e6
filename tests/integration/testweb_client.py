"""A plain HTTP/1.1 client for the test web's tests: one GET to a host at its address."""

from __future__ import annotations

import http.client
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trawl.testweb.process import TestWebProcess

UA = "trawl/0.1 (+https://example.org/trawl)"


def fetch(
    proc: TestWebProcess, host: str, path: str, headers: dict[str, str] | None = None
) -> tuple[int, http.client.HTTPMessage, bytes]:
    site = proc.web.site_of(host)
    assert site is not None
    conn = http.client.HTTPConnection(site.ip_of(host), proc.port, timeout=5)
    try:
        conn.request(
            "GET",
            path,
            headers={"Host": f"{host}:{proc.port}", "User-Agent": UA, **(headers or {})},
        )
        response = conn.getresponse()
        return response.status, response.headers, response.read()
    finally:
        conn.close()
