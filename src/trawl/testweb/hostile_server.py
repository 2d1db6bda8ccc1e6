"""Serve the hostile sites over raw asyncio streams, and log what was really sent.

How this works: aiohttp cannot send a malformed chunk or a 70 KB header line, so the
hostile sites' addresses (127.3.0.x, same port as the rest of the test web) get this
small HTTP/1.1 server instead. It reads a request head, asks `HostileResponder` for a
`HostileAnswer`, and carries it out: fixed bodies keep the connection alive; long
(`Repeat`), dripping (`Drip`) and silent answers end with a close, a reset, or the
client leaving. Write buffers are limited to zero, so after each `drain()` every byte
counted in the log's `bytes` has reached the kernel: the count is what the client could
have received, not what we meant to send.

Rules: a request is logged once, when its answer ends for any reason (done, client gone,
server stopping); `aborted` says the answer did not run to its end.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import time
from typing import TYPE_CHECKING, Any

from trawl.testweb.hostile import (
    Drip,
    Ending,
    HostileAnswer,
    HostileResponder,
    Repeat,
    Silence,
    fixed,
)
from trawl.testweb.request_log import RequestLogRecord

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from trawl.testweb.arrival import Arrivals
    from trawl.testweb.hostile import HostileSite

_IDLE_S = 75.0  # keep-alive idle timeout, as the main server's
_HEAD_LIMIT = 64 * 1024  # longest request head accepted
_BATCH_BYTES = 256 * 1024  # one write() of a long body


class _ClientGone(Exception):
    """The client closed or reset the connection while we were answering."""


class HostileServer:
    """Serves `sites` on listening sockets already bound at `port`; logs via `write_record`."""

    def __init__(
        self,
        sites: Sequence[HostileSite],
        port: int,
        write_record: Callable[[RequestLogRecord], None],
        arrivals: Arrivals,
    ) -> None:
        self._sites = {site.domain: site for site in sites}
        self._arrivals = arrivals
        self._by_ip = {site.ip: site for site in sites}
        self._responder = HostileResponder(sites, port)
        self._write_record = write_record
        self._servers: list[asyncio.Server] = []
        # Connection tasks: added and removed by `_serve` itself, cancelled by `close`.
        self._tasks: set[asyncio.Task[None]] = set()
        self._served = 0

    def __repr__(self) -> str:
        return (
            f"<HostileServer listeners={len(self._servers)} open={len(self._tasks)} "
            f"served={self._served}>"
        )

    async def start(self, listeners: Sequence[socket.socket]) -> None:
        loop = asyncio.get_running_loop()

        def connection() -> asyncio.StreamReaderProtocol:  # asyncio.start_server's, stamped
            reader = _StampingReader(limit=_HEAD_LIMIT, loop=loop)
            return _StampingProtocol(self._arrivals, reader, self._serve, loop=loop)

        for sock in listeners:
            self._servers.append(await loop.create_server(connection, sock=sock))

    async def close(self) -> None:
        """Stop listening and end every open answer (each is logged as aborted)."""
        for server in self._servers:
            server.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for server in self._servers:
            await server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        writer.transport.set_write_buffer_limits(0)
        try:
            while await self._exchange(reader, writer):
                pass
        except asyncio.CancelledError:
            # `close()` ends this connection; the request is already logged. Returning
            # (not re-raising) keeps asyncio from printing the cancellation as an error.
            return
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Read one request and answer it; True if the connection may carry another."""
        try:
            raw = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _IDLE_S)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, OSError):
            return False
        received_at = reader.received_at if isinstance(reader, _StampingReader) else None
        t_start = received_at or time.time()
        request = _Request.parse(raw)
        if request is None:
            writer.write(fixed(400, b"bad request\n", "text/plain").head)
            return False
        sockname = writer.get_extra_info("sockname")
        local_ip = str(sockname[0]) if sockname else ""
        host = request.host or (self._by_ip[local_ip].domain if local_ip in self._by_ip else "")
        if request.method in ("GET", "HEAD"):
            answer = self._responder.answer(host, request.target, t_start)
        else:
            answer = fixed(405, b"", "text/plain", [("Allow", "GET, HEAD")])
        counter, finished = _Counter(writer), False
        try:
            await self._send(reader, counter, answer, request.method == "HEAD")
            finished = True
        except _ClientGone:
            pass
        finally:
            self._log(
                request, host, local_ip, answer, t_start, counter.sent, aborted=not finished,
                t_end=counter.last_write_at if finished else None,
            )  # fmt: skip
        return finished and answer.ending is Ending.KEEP_ALIVE and request.keep_alive

    async def _send(
        self,
        reader: asyncio.StreamReader,
        counter: _Counter,
        answer: HostileAnswer,
        head_only: bool,
    ) -> None:
        """Carry out `answer`, counting body bytes in `counter`; raises _ClientGone."""
        body = answer.body
        if isinstance(body, bytes):
            await counter.send(answer.head, count=False)
            if not head_only:
                await counter.send(body)
            if answer.ending is Ending.RESET:
                _reset(counter.writer)
            return
        gone = asyncio.ensure_future(_wait_gone(reader))
        try:
            if not isinstance(body, Silence):
                await counter.send(answer.head, count=False)
            if head_only and not isinstance(body, Silence):
                return
            if isinstance(body, Repeat):
                await _send_repeat(counter, body, gone)
            elif isinstance(body, Drip):
                await _send_drip(counter, body, gone)
            else:
                await gone
                raise _ClientGone(0)
        finally:
            gone.cancel()

    def _log(
        self,
        request: _Request,
        host: str,
        ip: str,
        answer: HostileAnswer,
        t_start: float,
        sent: int,
        *,
        aborted: bool,
        t_end: float | None = None,
    ) -> None:
        """`t_end`: just before the last write of a finished answer (request_log.py says
        why); now for one cut short."""
        site = self._sites.get(host)
        if t_end is None:
            t_end = time.time()
        retry_after_s = answer.retry_after_s
        if answer.retry_at is not None:
            retry_after_s = max(0.0, answer.retry_at - t_end)
        self._write_record(
            RequestLogRecord(
                t_start=t_start,
                t_end=t_end,
                host=host,
                site=site.domain if site is not None else host,
                ip=ip,
                method=request.method,
                path=request.target,
                status=answer.status,
                ua=request.headers.get("user-agent", ""),
                body_bytes=sent,
                aborted=aborted,
                retry_after_s=retry_after_s,
            )
        )
        self._served += 1


class _Request:
    __slots__ = ("headers", "host", "keep_alive", "method", "target")

    def __init__(self, method: str, target: str, version: str, headers: dict[str, str]) -> None:
        self.method = method
        self.target = target
        self.headers = headers
        self.host = headers.get("host", "").rsplit(":", 1)[0].lower()
        connection = headers.get("connection", "").lower()
        self.keep_alive = version == "HTTP/1.1" and "close" not in connection

    @classmethod
    def parse(cls, raw: bytes) -> _Request | None:
        lines = raw.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            return None
        headers = {}
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            if colon:
                headers[name.strip().lower()] = value.strip()
        return cls(parts[0], parts[1], parts[2], headers)


class _StampingReader(asyncio.StreamReader):
    """Holds when the bytes of the last read arrived: a request's `t_start` (see server.py's
    `_StampingHandler`: the code waiting on `readuntil` resumes a loop iteration or more
    later, and under load that stamped one request late against the next)."""

    received_at: float | None = None


class _StampingProtocol(asyncio.StreamReaderProtocol):
    """asyncio.start_server's protocol, stamping its reader with each read's arrival."""

    def __init__(
        self, arrivals: Arrivals, reader: _StampingReader, *args: Any, **kwargs: Any
    ) -> None:
        super().__init__(reader, *args, **kwargs)
        self._arrivals = arrivals
        self._stamped = reader
        self._stamp_transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._stamp_transport = transport
        super().connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self._stamped.received_at = self._arrivals.arrived_at(self._stamp_transport)
        super().data_received(data)


class _Counter:
    """Writes and drains, counting body bytes the kernel accepted."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.sent = 0
        self.last_write_at: float | None = None  # time.time() just before the last write

    async def send(self, data: bytes, *, count: bool = True) -> None:
        try:
            self.last_write_at = time.time()
            self.writer.write(data)
            await self.writer.drain()
        except (ConnectionError, OSError) as exc:
            raise _ClientGone(self.sent) from exc
        if count:
            self.sent += len(data)


async def _wait_gone(reader: asyncio.StreamReader) -> None:
    """Returns when the client closes or resets; anything it sends meanwhile is dropped."""
    with contextlib.suppress(OSError):
        while await reader.read(65536):
            pass


async def _send_repeat(counter: _Counter, body: Repeat, gone: asyncio.Future[None]) -> None:
    per_batch = max(1, _BATCH_BYTES // max(1, len(body.block)))
    batch = body.block * per_batch
    await counter.send(body.head)
    left = body.count
    while left > 0:
        if gone.done():
            raise _ClientGone(counter.sent)
        n = min(left, per_batch)
        await counter.send(batch if n == per_batch else body.block * n)
        left -= n
    await counter.send(body.tail)


async def _send_drip(counter: _Counter, body: Drip, gone: asyncio.Future[None]) -> None:
    n = 0
    while True:
        await counter.send(body.byte_at(n))
        n += 1
        done, _ = await asyncio.wait({gone}, timeout=body.interval_s)
        if done:
            raise _ClientGone(counter.sent)


def _reset(writer: asyncio.StreamWriter) -> None:
    """Abort with RST (SO_LINGER 0) instead of FIN, as a crashed server would."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()
