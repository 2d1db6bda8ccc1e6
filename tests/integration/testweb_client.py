"""A plain HTTP/1.1 client for the test web's tests: one GET to a host at its address."""

from __future__ import annotations

import http.client
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trawl.testweb.process import TestWebProcess
    from trawl.testweb.request_log import RequestLogRecord

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


def logged(proc: TestWebProcess, host: str, path: str, since: float) -> RequestLogRecord:
    """The log record for one request made after `since`.

    The server writes it just after sending the response, so poll briefly.
    """
    deadline = time.monotonic() + 2.0
    while True:
        found = [r for r in proc.requests() if (r.host, r.path) == (host, path)]
        found = [r for r in found if r.t_start >= since]
        if found or time.monotonic() > deadline:
            assert len(found) == 1, path
            return found[0]
        time.sleep(0.01)
