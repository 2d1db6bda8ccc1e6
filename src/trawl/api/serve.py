"""`trawl serve`: the API (uvicorn, loopback by default) on a thread beside the crawl."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from typing import TYPE_CHECKING

import uvicorn

from trawl.api import DEFAULT_LISTEN
from trawl.api.app import build_app
from trawl.api.crawl_view import CrawlView
from trawl.errors import UsageError

if TYPE_CHECKING:
    from asyncio import Future
    from collections.abc import Generator, Mapping
    from pathlib import Path

    from trawl.api.crawl_view import SharedStores
    from trawl.loop.context import CrawlContext

TOKEN_ENV = "TRAWL_API_TOKEN"
GRACEFUL_S = 2  # seconds


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
        family, kind, proto, _, address = infos[0]
        # The protocol number matters: asyncio sets TCP_NODELAY only on sockets whose proto
        # says TCP, and without it every answer waited 40 ms for a delayed ACK (Nagle).
        sock = socket.socket(family, kind, proto or socket.IPPROTO_TCP)
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


async def serve_api(
    ctx: CrawlContext,
    sock: socket.socket,
    token: str | None,
    shared: SharedStores | None = None,
) -> None:
    """Serve the API on `sock` from a thread and event loop of its own (see api.crawl_view
    for why) until the crawl stops; the crawl loop publishes its snapshots meanwhile.
    `shared`: a cluster node's stores (see CrawlView)."""
    view = CrawlView(ctx, shared)
    view.publish()  # the first request already has numbers to read
    config = uvicorn.Config(
        build_app(view, token),
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=GRACEFUL_S,  # a long-poll must not hold the exit up
    )
    server = _Server(config)
    ended = _run_in_thread(server, sock, view)
    publisher = asyncio.create_task(view.publish_every())
    stopped = asyncio.create_task(ctx.run.wait_stopped())
    try:
        await asyncio.wait({ended, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
        publisher.cancel()
        server.should_exit = True  # uvicorn polls it; a plain attribute is enough
        await ended


def build_schema(app: object) -> None:
    """Build the app's OpenAPI schema now. FastAPI builds it at the first GET /openapi.json
    or /docs: ~55 ms of Python holding the GIL, and under a full-speed crawl the crawl
    loop's ticks came ~100 ms late then (`bench.loop_stalls` on `bench.api_latency`, whose
    warm-up ends with that call). Built on the API's thread before it serves, while the
    crawl is starting."""
    openapi = getattr(app, "openapi", None)
    if callable(openapi):
        openapi()


def _run_in_thread(server: uvicorn.Server, sock: socket.socket, view: CrawlView) -> Future[None]:
    """Start `server` on a new thread; the future (of the calling loop) ends with it."""
    loop = asyncio.get_running_loop()
    ended: Future[None] = loop.create_future()

    def finish(error: BaseException | None) -> None:
        if ended.done():
            return
        if error is None:
            ended.set_result(None)
        else:
            ended.set_exception(error)

    def run() -> None:
        error: BaseException | None = None
        try:
            build_schema(server.config.app)
            asyncio.run(server.serve(sockets=[sock]))
        except BaseException as exc:  # handed to the crawl loop, which re-raises it
            error = exc
        finally:
            view.close_records()
            loop.call_soon_threadsafe(finish, error)

    threading.Thread(target=run, name="trawl-api", daemon=True).start()
    return ended
