"""The --listen address and operator token of `trawl serve`."""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

import pytest

from trawl.api.serve import bind_listener, parse_listen
from trawl.errors import UsageError

if TYPE_CHECKING:
    from pathlib import Path


def test_listen_addresses_parse() -> None:
    assert parse_listen("127.0.0.1:8700") == ("127.0.0.1", 8700)
    assert parse_listen("[::1]:9000") == ("::1", 9000)
    for bad in ("8700", "127.0.0.1:", ":80", "host:99999", "host:http"):
        with pytest.raises(UsageError, match="expected HOST:PORT"):
            parse_listen(bad)


def test_binding_refuses_a_busy_address() -> None:
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    try:
        port = busy.getsockname()[1]
        with pytest.raises(UsageError, match="cannot listen there"):
            bind_listener(f"127.0.0.1:{port}")
    finally:
        busy.close()
    sock = bind_listener(f"127.0.0.1:{port}")  # free again
    assert sock.getsockname() == ("127.0.0.1", port)
    sock.close()


def test_token_comes_from_the_file_then_the_environment(tmp_path: Path) -> None:
    from trawl.api.serve import read_token

    token_file = tmp_path / "token"
    token_file.write_text("  from-file\n")
    assert read_token(token_file, {"TRAWL_API_TOKEN": "from-env"}) == "from-file"
    assert read_token(None, {"TRAWL_API_TOKEN": " from-env "}) == "from-env"
    assert read_token(None, {}) is None  # write endpoints refused
    token_file.write_text("\n")
    with pytest.raises(UsageError, match="empty"):
        read_token(token_file, {})
    with pytest.raises(UsageError, match="cannot read"):
        read_token(tmp_path / "missing", {})


def test_the_listener_is_a_tcp_socket_so_answers_are_not_held_by_nagle() -> None:
    # asyncio sets TCP_NODELAY only where sock.proto says TCP; without it every answer
    # waited 40 ms for the client's delayed ACK.
    with socket.socket() as probe:  # a free port
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sock = bind_listener(f"127.0.0.1:{port}")
    try:
        assert sock.proto == socket.IPPROTO_TCP
    finally:
        sock.close()
