"""`trawl serve`: the API on the crawl's own event loop (uvicorn, loopback by default)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from typing import TYPE_CHECKING

import uvicorn

from trawl.api.app import build_app
from trawl.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Generator, Mapping
    from pathlib import Path

    from trawl.crawl_context import CrawlContext

DEFAULT_LISTEN = "127.0.0.1:8700"
TOKEN_ENV = "TRAWL_API_TOKEN"


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        # The crawl owns SIGINT/SIGTERM: they checkpoint it, and then the API stops.
        yield


def parse_listen(listen: str) -> tuple[str, int]:
    host, sep, port = listen.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--listen {listen!r}: expected HOST:PORT, e.g. {DEFAULT_LISTEN}")
    return host.strip("[]"), int(port)


def bind_listener(listen: str) -> socket.socket:
    """The API's listening socket, bound before the crawl starts: a busy or foreign
    address is a one-line usage error, not a failure halfway into a crawl."""
    host, port = parse_listen(listen)
    sock: socket.socket | None = None
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        family, _, _, _, address = infos[0]
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        if sock is not None:
            sock.close()
        raise UsageError(
            f"--listen {listen}: cannot listen there ({exc.strerror or exc})"
        ) from None
    return sock


def read_token(token_file: Path | None, environ: Mapping[str, str]) -> str | None:
    """The operator token: from `--token-file`, else TRAWL_API_TOKEN, else None (write
    endpoints refused)."""
    if token_file is not None:
        try:
            token = token_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"--token-file {token_file}: cannot read it ({exc})") from None
        if not token:
            raise UsageError(f"--token-file {token_file}: the file is empty")
        return token
    return environ.get(TOKEN_ENV, "").strip() or None


async def serve_api(ctx: CrawlContext, sock: socket.socket, token: str | None) -> None:
    """Serve the API on `sock` until the crawl stops."""
    # lifespan "on": the dashboard samples the crawl for as long as the app runs.
    config = uvicorn.Config(
        build_app(ctx, token), log_level="warning", access_log=False, lifespan="on"
    )
    server = _Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    stopped = asyncio.create_task(ctx.wait_stopped())
    try:
        await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
        server.should_exit = True
        await task
