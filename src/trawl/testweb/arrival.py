"""When a request's bytes reached this machine, as the kernel stamped them.

The politeness checker compares request starts to a few milliseconds, so a start must be
when the bytes arrived, not when the server got round to reading them. Stamping in
`data_received` was that read: a test-web process descheduled on a loaded machine (CI runs
several crawls on two cores), or its loop busy with a hostile site's 50 MB answer, read a
request tens of milliseconds late, and the next one on time; two requests politely 0.25 s
apart were logged 0.219 s apart (CI at 0936806). The kernel stamps each packet as it
arrives (SO_TIMESTAMP), whatever the process is doing; reading with `recvmsg` hands the
stamp back with the bytes.

How: listening sockets are `ArrivalListener`s, whose `accept` returns connections that
read with `recvmsg` and note each read's stamp in the shared `Arrivals`, by file
descriptor. asyncio's selector transport calls `recv` and then `data_received` at once, so
`Arrivals.arrived_at(transport)` in `data_received` is the stamp of the bytes just handed over.
Where the kernel gives no stamp (not Linux), the read's own time stands in.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio

    from _typeshed import WriteableBuffer

# Linux's SO_TIMESTAMP (and SCM_TIMESTAMP, the same number); Python's socket module
# does not name it. The stamp is a struct timeval: two C longs, seconds and microseconds.
_SO_TIMESTAMP = getattr(socket, "SO_TIMESTAMP", 29)
_TIMEVAL = struct.Struct("@ll")
_ANCILLARY_SPACE = socket.CMSG_SPACE(_TIMEVAL.size)


class Arrivals:
    """The arrival time of each connection's last read, by file descriptor."""

    __slots__ = ("_at",)

    def __init__(self) -> None:
        self._at: dict[int, float] = {}

    def __repr__(self) -> str:
        return f"<Arrivals connections={len(self._at)}>"

    def listener(self, ip: str, port: int) -> socket.socket:
        """A non-blocking socket listening on `ip:port`; raises OSError if it cannot bind."""
        sock = ArrivalListener(self, socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            # On the listener too: the kernel stamps packets only while some socket asks,
            # and a request sent before its connection is accepted must be stamped as well
            # (accepted sockets inherit the option).
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMP, 1)
            sock.bind((ip, port))
            sock.listen(512)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        return sock

    def arrived_at(self, transport: asyncio.BaseTransport | None) -> float:
        """When the bytes of the transport's last read arrived (epoch seconds), or now for
        a socket that noted no read (not one of ours)."""
        sock = None if transport is None else transport.get_extra_info("socket")
        at = None if sock is None else self._at.get(sock.fileno())
        return at or time.time()

    def note(self, fd: int, at: float) -> None:
        self._at[fd] = at

    def forget(self, fd: int) -> None:
        self._at.pop(fd, None)


class ArrivalListener(socket.socket):
    """A listening socket whose accepted connections stamp their reads."""

    def __init__(self, arrivals: Arrivals, family: int, kind: int) -> None:
        super().__init__(family, kind)
        self.arrivals = arrivals

    def accept(self) -> tuple[socket.socket, object]:
        fd, address = self._accept()  # type: ignore[attr-defined]  # what socket.accept uses
        conn = _StampedConnection(self.arrivals, self.family, self.type, self.proto, fileno=fd)
        if socket.getdefaulttimeout() is None and self.gettimeout():
            conn.setblocking(True)  # as socket.accept does
        with contextlib.suppress(OSError):  # no kernel stamps: each read's time stands in
            conn.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMP, 1)
        return conn, address


class _StampedConnection(socket.socket):
    """A connection that notes when the bytes of each read arrived."""

    def __init__(self, arrivals: Arrivals, family: int, kind: int, proto: int, fileno: int) -> None:
        super().__init__(family, kind, proto, fileno)
        self._arrivals = arrivals

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        data, ancillary, _, _ = self.recvmsg(bufsize, _ANCILLARY_SPACE, flags)
        self._arrivals.note(self.fileno(), _stamp(ancillary))
        return data

    def recv_into(self, buffer: WriteableBuffer, nbytes: int = 0, flags: int = 0) -> int:
        view = memoryview(buffer)
        if nbytes:
            view = view[:nbytes]
        size, ancillary, _, _ = self.recvmsg_into([view], _ANCILLARY_SPACE, flags)
        self._arrivals.note(self.fileno(), _stamp(ancillary))
        return size

    def close(self) -> None:
        if self.fileno() >= 0:
            self._arrivals.forget(self.fileno())
        super().close()


def _stamp(ancillary: list[tuple[int, int, bytes]]) -> float:
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMP and len(data) >= _TIMEVAL.size:
            seconds, micros = _TIMEVAL.unpack_from(data)
            return float(seconds + micros / 1e6)
    return time.time()
