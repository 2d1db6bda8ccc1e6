"""Fuzz the fetchers' response handling over a real socket: any bytes a server sends end in
a FetchResult (a status or a recorded error kind), never an exception or a hang. Both
adapters, AiohttpFetcher and Http1Fetcher, get the same examples."""

from __future__ import annotations

import asyncio
import socket
import threading
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trawl.fetch.dns import CachingResolver, HostMap
from trawl.fetch.fetcher import AiohttpFetcher
from trawl.fetch.http1 import Http1Fetcher

if TYPE_CHECKING:
    from collections.abc import Iterator

    from trawl.fetch.http_common import FetcherBase
    from trawl.model import FetchResult

ADAPTERS: dict[str, type[FetcherBase]] = {"aiohttp": AiohttpFetcher, "http1": Http1Fetcher}

KNOWN_KINDS = {"timeout", "reset", "protocol", "too_big", "decode", "connect"}


class RawServer:
    """Answers every connection with `self.reply` (raw bytes), then closes it."""

    def __init__(self) -> None:
        self.reply = b""
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(2.0)
                try:
                    conn.recv(65536)
                    conn.sendall(self.reply)
                except OSError:
                    pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sock.close()


@pytest.fixture(scope="module")
def server() -> Iterator[RawServer]:
    s = RawServer()
    yield s
    s.close()


async def fetch_once(adapter: type[FetcherBase], port: int) -> FetchResult:
    resolver = CachingResolver(HostMap.from_options([], None))
    fetcher = adapter(
        user_agent="trawl/0 (+https://trawl.invalid/test)",
        resolver=resolver,
        allow_private=True,
        total_timeout_s=2.0,
        max_body_bytes=64 * 1024,
        max_decoded_bytes=256 * 1024,
    )
    try:
        return await fetcher.fetch(f"http://127.0.0.1:{port}/")
    finally:
        await fetcher.close()
        await resolver.close()


status_lines = st.sampled_from(
    [b"HTTP/1.1 200 OK", b"HTTP/1.1 404 Not Found", b"HTTP/1.0 301 Moved", b"HTTP/1.1 999 X",
     b"HTTP/1.1 abc", b"HTTP/2 200", b"garbage", b""]
)  # fmt: skip
header_lines = st.lists(
    st.one_of(
        st.sampled_from(
            [
                b"Content-Type: text/html",
                b"Content-Encoding: gzip",
                b"Content-Encoding: br",
                b"Transfer-Encoding: chunked",
                b"Content-Length: 5",
                b"Content-Length: -1",
                b"Content-Length: 99999",
                b"Location: http://[::1",
                b"X: \xff\xfe",
            ]
        ),
        st.binary(max_size=40),
    ),
    max_size=6,
)


@pytest.mark.parametrize("adapter", list(ADAPTERS))
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(status=status_lines, headers=header_lines, body=st.binary(max_size=300))
def test_any_response_bytes_end_in_a_result(
    server: RawServer, adapter: str, status: bytes, headers: list[bytes], body: bytes
) -> None:
    server.reply = b"\r\n".join([status, *headers]) + b"\r\n\r\n" + body
    result = asyncio.run(fetch_once(ADAPTERS[adapter], server.port))
    assert (result.status > 0) != (result.error_kind is not None)
    if result.error_kind is not None:
        assert result.error_kind in KNOWN_KINDS
