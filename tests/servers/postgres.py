"""A real PostgreSQL on loopback, started from the machine's binaries for the test session.

How this works: `initdb` makes a fresh cluster in a temporary directory (trust auth, so no
password exists anywhere), `pg_ctl` starts it listening on 127.0.0.1 only, at a free port,
with its Unix socket in that directory; the session ends with `pg_ctl stop -m immediate` and
the directory removed. PostgreSQL refuses to run as root, so as root (CI) both run as the
`postgres` OS user, which must own the directory. `fsync=off`: a test never survives a
power cut, and it makes commits cost microseconds instead of a disk flush.

Each test gets its own schema (`postgres_dsn`), named in the DSN's search_path, so tests never
see each other's rows and schema creation is exercised every time.

tests/conftest.py registers this module as a plugin (one server per session): take
`postgres_dsn` (or `postgres_server`) as an argument. Scripts outside pytest
(`bench/records_backends.py`) use `temporary_postgres()`.
`.ci/run` installs the binaries (apt-get install postgresql).

Outage tests (issue 19) start a private server with `temporary_postgres()` and take it down
with `stop_keeping_data` and up again with `restart`, on the same port and data directory
(never the session's server: other tests share it).
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator

DATABASE = "trawl"
_schemas = itertools.count(1)


@dataclass(frozen=True, slots=True)
class PostgresServer:
    """A running server: `dsn` names the test database on 127.0.0.1:`port`."""

    bin_dir: Path
    data_dir: Path
    port: int

    @property
    def dsn(self) -> str:
        return self.database_dsn(DATABASE)

    def database_dsn(self, dbname: str) -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname={dbname}"

    def schema_dsn(self, schema: str) -> str:
        """The DSN with `schema` first on the search_path (unquoted: plain names only)."""
        return f"{self.dsn} options='-c search_path={schema}'"


def find_bin_dir() -> Path | None:
    """The newest installed PostgreSQL's bin directory (Debian layout), or None."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parent.parent.name),
    )
    return Path(found[-1]).parent if found else None


def start_server(bin_dir: Path, *, fsync: bool = False) -> PostgresServer:
    """initdb + pg_ctl start in a fresh directory; raises RuntimeError with the server log.
    `fsync=True` keeps PostgreSQL's durable defaults (for benchmarks)."""
    root = Path(tempfile.mkdtemp(prefix="trawl-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    server = PostgresServer(bin_dir, root / "data", _free_port())
    _run_as_owner(
        [bin_dir / "initdb", "-D", server.data_dir, "-U", "postgres", "--auth=trust"],
        ["-E", "UTF8", "--locale=C", "--no-sync"],
    )
    try:
        _pg_ctl_start(server, fsync=fsync)
    except subprocess.CalledProcessError:
        log = (root / "server.log").read_text(errors="replace")
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"PostgreSQL did not start:\n{log}") from None
    with psycopg.connect(server.database_dsn("postgres"), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {DATABASE}")
    return server


def _pg_ctl_start(server: PostgresServer, *, fsync: bool = False) -> None:
    root = server.data_dir.parent
    options = (
        f"-c listen_addresses=127.0.0.1 -p {server.port} -c unix_socket_directories={root}"
        " -c max_connections=60"
    )
    if not fsync:
        options += " -c fsync=off -c full_page_writes=off"
    _run_as_owner(
        [server.bin_dir / "pg_ctl", "start", "-w", "-t", "60", "-D", server.data_dir],
        ["-l", root / "server.log", "-o", options],
    )


def stop_keeping_data(server: PostgresServer) -> None:
    """Stop the server as an outage would (`-m immediate`: connections drop, nothing is
    flushed beyond what was committed); its data directory stays for `restart`."""
    _run_as_owner([server.bin_dir / "pg_ctl", "stop", "-m", "immediate", "-D", server.data_dir])


def restart(server: PostgresServer) -> None:
    """Start a server stopped by `stop_keeping_data` again, on the same port and data."""
    _pg_ctl_start(server)


def stop_server(server: PostgresServer) -> None:
    _run_as_owner([server.bin_dir / "pg_ctl", "stop", "-m", "immediate", "-D", server.data_dir])
    shutil.rmtree(server.data_dir.parent, ignore_errors=True)


def _run_as_owner(*argv: list[Path | str]) -> None:
    """Run a server binary as the data directory's owner (PostgreSQL refuses root)."""
    prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    words = [str(word) for part in argv for word in part]
    subprocess.run([*prefix, *words], check=True, capture_output=True, timeout=120)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def temporary_postgres(*, fsync: bool = False) -> Iterator[PostgresServer]:
    """A server for the duration of the block; RuntimeError when the binaries are missing."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        raise RuntimeError(
            "no PostgreSQL in /usr/lib/postgresql/*/bin: .ci/run installs it"
            " (apt-get install postgresql)"
        )
    server = start_server(bin_dir, fsync=fsync)
    try:
        yield server
    finally:
        stop_server(server)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    try:
        with temporary_postgres() as server:
            yield server
    except RuntimeError as exc:
        pytest.fail(str(exc))


@pytest.fixture
def postgres_dsn(postgres_server: PostgresServer) -> Iterator[str]:
    """A DSN whose search_path is a new, empty schema, dropped after the test."""
    schema = f"test_{os.getpid()}_{next(_schemas)}"
    with psycopg.connect(postgres_server.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    yield postgres_server.schema_dsn(schema)
    with psycopg.connect(postgres_server.dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")
