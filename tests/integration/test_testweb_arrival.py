"""The request log's `t_start` is when a request reached the machine, even when the test
web's process was not running at that moment (descheduled on a loaded machine: CI at
0936806 logged two requests politely 0.25 s apart as 0.219 s apart).

The server is paused with SIGSTOP while a request is sent, and resumed 0.3 s later."""

from __future__ import annotations

import http.client
import os
import signal
import time
from typing import TYPE_CHECKING

import pytest
from tests.integration.testweb_client import UA, logged

from trawl.testweb.process import TestWebProcess

if TYPE_CHECKING:
    from collections.abc import Iterator

PAUSE_S = 0.3


@pytest.fixture(scope="module")
def proc() -> Iterator[TestWebProcess]:
    with TestWebProcess(sites=4, pages=2, hostile=True) as running:
        yield running


def address(proc: TestWebProcess, which: str) -> tuple[str, str, str]:
    """(host, ip, path) of a page served by the aiohttp server or by the hostile one."""
    if which == "hostile":
        site = next(s for s in proc.web.hostile_sites() if s.domain == "hostile-copies.test")
        return site.domain, site.ip, "/item/1"
    normal = proc.web.sites[0]
    return normal.hosts[0], normal.ip_of(normal.hosts[0]), "/"


@pytest.mark.parametrize("connected", [True, False], ids=["kept-alive", "new-connection"])
@pytest.mark.parametrize("which", ["normal", "hostile"])
def test_a_request_sent_while_the_server_is_paused_is_stamped_when_sent(
    proc: TestWebProcess, which: str, connected: bool
) -> None:
    """On an open connection, as a crawler's kept-alive one; or connected and sent while
    paused, so the server accepts the connection only later."""
    host, ip, path = address(proc, which)
    pid = proc.pid
    assert pid is not None
    conn = http.client.HTTPConnection(ip, proc.port, timeout=10)
    try:
        if connected:
            conn.connect()
        os.kill(pid, signal.SIGSTOP)
        try:
            sent = time.time()
            conn.request("GET", path, headers={"Host": f"{host}:{proc.port}", "User-Agent": UA})
            time.sleep(PAUSE_S)
        finally:
            os.kill(pid, signal.SIGCONT)
        response = conn.getresponse()
        response.read()
        assert response.status == 200
    finally:
        conn.close()
    record = logged(proc, host, path, sent - 0.005)
    # Stamped when the bytes arrived, not PAUSE_S later when the server read them.
    assert sent - 0.005 <= record.t_start < sent + 0.05
    assert record.t_end >= sent + PAUSE_S
