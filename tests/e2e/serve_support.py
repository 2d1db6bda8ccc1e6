"""Shared by the e2e tests that run `trawl serve` as a real process on the local test web."""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any

from tests.e2e.support import CONTACT

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from trawl.testweb.process import TestWebProcess

TOKEN = "s3cret-operator-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_get(base: str, path: str, timeout: float = 10.0) -> tuple[int, bytes, str]:
    """(status, body, content type) of a GET; HTTP errors are answers, not exceptions."""
    try:
        with urllib.request.urlopen(base + path, timeout=timeout) as response:
            return response.status, response.read(), response.headers.get("Content-Type", "")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), exc.headers.get("Content-Type", "")


def get_json(base: str, path: str) -> Any:
    status, body, _ = http_get(base, path)
    assert status == 200, (path, status, body[:200])
    return json.loads(body)


def send_json(
    base: str, path: str, body: bytes, token: str | None = TOKEN, method: str = "POST"
) -> tuple[int, Any]:
    """(status, decoded JSON answer) of a write request with the operator token (or none)."""
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(base + path, data=body, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


class Served:
    """A running `trawl serve`: its test web, data directory, API base URL and process."""

    def __init__(self, web: TestWebProcess, data: Path, base: str, proc: subprocess.Popen[bytes]):
        self.web, self.data, self.base, self.proc = web, data, base, proc


@contextlib.contextmanager
def run_serve(
    web: TestWebProcess,
    tmp: Path,
    *,
    extra: tuple[str, ...] = (),
    max_time_s: float = 120,
    min_stored: int = 20,
) -> Iterator[Served]:
    """`trawl serve` of the web's seeds with the operator token, once it stored `min_stored`
    pages; SIGTERM (if still running) and a wait on the way out."""
    port = free_port()
    (tmp / "token").write_text(TOKEN + "\n")
    command = [
        sys.executable, "-m", "trawl", "serve", *web.seeds, "--data", str(tmp / "data"),
        "--hosts-file", str(web.hosts_file), "--contact", CONTACT,
        "--listen", f"127.0.0.1:{port}", "--max-time", str(max_time_s),
        "--token-file", str(tmp / "token"), *extra,
    ]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    served = Served(web, tmp / "data", base, proc)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else b""
            try:
                if get_json(base, "/v1/stats")["pagesStored"] >= min_stored:
                    break
            except (urllib.error.URLError, ConnectionError):
                pass
            assert time.monotonic() < deadline, f"trawl serve stored < {min_stored} pages in 60 s"
            time.sleep(0.5)
        yield served
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)  # waits, and closes the pipes
