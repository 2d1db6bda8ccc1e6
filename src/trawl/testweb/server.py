"""The test web's HTTP server: one process, one port, every site's address.

How this works: the server listens on each distinct 127.x.y.z address of the web at
one TCP port (picked free on the first address, then reused; on a collision all
listeners are closed and another port is tried). aiohttp's low-level server parses
HTTP/1.1 with keep-alive; each request is answered by `Responder` from the Host header,
and one JSON line per request goes to the request log (line-buffered, so a reader sees
each record as soon as the response is written). The hostile sites' addresses, if any,
are served by `hostile_server.HostileServer` on the same port, into the same log.
"""

from __future__ import annotations

import errno
import json
import time
from typing import TYPE_CHECKING, Any

from aiohttp import hdrs, web
from aiohttp.web_protocol import RequestHandler
from multidict import CIMultiDict

from trawl.testweb.answers import Reply, Responder
from trawl.testweb.arrival import Arrivals
from trawl.testweb.conditional import is_not_modified
from trawl.testweb.hostile_server import HostileServer
from trawl.testweb.request_log import RequestLogRecord

if TYPE_CHECKING:
    import asyncio
    import socket
    from collections.abc import Sequence
    from pathlib import Path

    from trawl.testweb.sites import TestWeb

_PORT_ATTEMPTS = 50
_NOT_ALLOWED = Reply(405, (("Content-Type", "text/plain"), ("Allow", "GET, HEAD")), b"")
_NOT_MODIFIED_HEADERS = frozenset({"ETag", "Last-Modified", "Cache-Control", "Vary"})


def bind_listeners(
    ips: Sequence[str], port: int | None, arrivals: Arrivals
) -> tuple[int, list[socket.socket]]:
    """Listening sockets on every address in `ips` at one port; `port=None` picks a free one.
    Their connections note in `arrivals` when each read's bytes arrived.

    Raises OSError when a given port is busy, or no free port is found.
    """
    for _ in range(_PORT_ATTEMPTS):
        listeners: list[socket.socket] = []
        try:
            listeners.append(arrivals.listener(ips[0], port or 0))
            chosen = int(listeners[0].getsockname()[1])
            listeners += [arrivals.listener(ip, chosen) for ip in ips[1:]]
        except OSError as exc:
            for sock in listeners:
                sock.close()
            if port is not None or exc.errno != errno.EADDRINUSE:
                raise
            continue
        return chosen, listeners
    raise OSError(errno.EADDRINUSE, f"no port free on all {len(ips)} test-web addresses")


class _StampingHandler(RequestHandler):
    """aiohttp's connection protocol, noting when a request's bytes arrived.

    A request's `t_start` is that time (testweb/arrival.py): the handler runs a loop
    iteration or more later (a task behind every other ready callback), and on a loaded
    machine the gap reached 15 ms, enough to put two politely spaced requests 0.235 s apart
    in the log under a 0.25 s gap. A GET arrives whole and nothing follows it on the
    connection until it is answered (clients here do not pipeline), so the last read before
    the handler is the request's.
    """

    received_at: float | None = None

    def __init__(self, arrivals: Arrivals, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._arrivals = arrivals

    def data_received(self, data: bytes) -> None:
        self.received_at = self._arrivals.arrived_at(self.transport)
        super().data_received(data)


class TestWebServer:
    """Serves a `TestWeb` until `close()`; writes the request log as it goes."""

    __test__ = False  # not a pytest test class

    def __init__(self, test_web: TestWeb, log_path: Path) -> None:
        self._web = test_web
        self._log_path = log_path
        self._log = log_path.open("w", encoding="utf-8", buffering=1)
        self._responder: Responder | None = None
        self._low: web.Server | None = None
        self._servers: list[asyncio.Server] = []
        self._hostile: HostileServer | None = None
        self._served = 0
        self.port = 0

    def __repr__(self) -> str:
        return (
            f"<TestWebServer port={self.port} listeners={len(self._servers)} served={self._served}>"
        )

    async def start(self, loop: asyncio.AbstractEventLoop, port: int | None = None) -> int:
        """Bind every address and start serving; returns the port."""
        arrivals = Arrivals()
        self.port, listeners = bind_listeners(self._web.ips(), port, arrivals)
        self._responder = Responder(self._web, self.port)
        low = self._low = web.Server(self._handle)
        hostile_ips = {site.ip for site in self._web.hostile}

        # No access log (aiohttp reads a None logger as "off"; its types say Logger).
        options: dict[str, Any] = {"access_log": None, "keepalive_timeout": 75}

        def connection() -> _StampingHandler:
            return _StampingHandler(arrivals, low, loop=loop, **options)

        try:
            for sock in listeners:
                if sock.getsockname()[0] not in hostile_ips:
                    self._servers.append(await loop.create_server(connection, sock=sock))
            if hostile_ips:
                self._hostile = HostileServer(self._web.hostile, self.port, self._write, arrivals)
                await self._hostile.start(
                    [sock for sock in listeners if sock.getsockname()[0] in hostile_ips]
                )
        except BaseException:
            for sock in listeners:
                sock.close()
            raise
        return self.port

    async def close(self) -> None:
        """Stop listening, close open connections, flush and close the log."""
        for server in self._servers:
            server.close()
        if self._hostile is not None:
            await self._hostile.close()
        if self._low is not None:
            await self._low.shutdown(timeout=0.25)
        for server in self._servers:
            await server.wait_closed()
        self._log.close()

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        protocol = request.protocol
        received_at = protocol.received_at if isinstance(protocol, _StampingHandler) else None
        t_start = received_at or time.time()
        assert self._responder is not None
        host = request.headers.get(hdrs.HOST, "").rsplit(":", 1)[0].lower()
        if request.method in ("GET", "HEAD"):
            accepts_gzip = "gzip" in request.headers.get(hdrs.ACCEPT_ENCODING, "").lower()
            reply = self._responder.answer(host, request.path, accepts_gzip)
        else:
            reply = _NOT_ALLOWED
        status, body, headers = reply.status, reply.body, reply.headers
        if reply.status == 200 and _is_not_modified(request, reply):
            # RFC 9110 §15.4.5: a 304 repeats the validators, not the content metadata.
            status, body = 304, b""
            headers = tuple((k, v) for k, v in headers if k in _NOT_MODIFIED_HEADERS)
        response = web.Response(status=status, body=body or None, headers=CIMultiDict(headers))
        await response.prepare(request)
        t_end = time.time()  # before the body goes out (request_log.py says why)
        await response.write_eof()
        sent = 0 if request.method == "HEAD" else len(body)
        self._record(request, t_start, host, status, sent, t_end)
        return response

    def _record(
        self,
        request: web.BaseRequest,
        t_start: float,
        host: str,
        status: int,
        sent: int,
        t_end: float,
    ) -> None:
        transport = request.transport
        sockname = transport.get_extra_info("sockname") if transport is not None else None
        site = self._web.site_of(host)
        record = RequestLogRecord(
            t_start=t_start,
            t_end=t_end,
            host=host,
            site=site.domain if site is not None else host,
            ip=str(sockname[0]) if sockname else "",
            method=request.method,
            path=request.raw_path,
            status=status,
            ua=request.headers.get(hdrs.USER_AGENT, ""),
            body_bytes=sent,
            if_none_match=request.headers.get(hdrs.IF_NONE_MATCH),
            if_modified_since=request.headers.get(hdrs.IF_MODIFIED_SINCE),
        )
        self._write(record)

    def _write(self, record: RequestLogRecord) -> None:
        self._log.write(json.dumps(record.to_json()) + "\n")
        self._served += 1


def _is_not_modified(request: web.BaseRequest, reply: Reply) -> bool:
    """Whether the request's conditions turn this 200 into a 304 (see `conditional`)."""
    tags = request.if_none_match
    since = request.if_modified_since
    return is_not_modified(
        etag=reply.etag,
        last_modified_at=reply.last_modified_at,
        if_none_match=None if tags is None else [tag.value for tag in tags],
        if_modified_since_at=None if since is None else since.timestamp(),
    )
