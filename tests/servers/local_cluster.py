"""Redis, PostgreSQL and an S3 server on 127.0.0.1 for a local cluster, until Ctrl-C.

    python -m tests.servers.local_cluster DIR

Starts the same servers the tests use (redis-server, PostgreSQL from the machine's
/usr/lib/postgresql, SeaweedFS `weed mini` from the dev extra), writes `DIR/cluster.toml`
and `DIR/env` (the S3 key pair as AWS_* exports), prints them, and stops everything on
SIGINT/SIGTERM. The README's "Cluster" recipe runs three `trawl node` processes on it.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from pathlib import Path

from tests.servers.postgres import temporary_postgres
from tests.servers.redis import temporary_redis
from tests.servers.s3 import running_seaweedfs


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with contextlib.ExitStack() as stack:
        redis = stack.enter_context(temporary_redis(False))
        pg = stack.enter_context(temporary_postgres())
        (out / "s3").mkdir(exist_ok=True)
        s3 = stack.enter_context(running_seaweedfs(out / "s3"))
        (out / "cluster.toml").write_text(
            f'[cluster]\nname = "local"\nredis_url = "{redis.url}"\npostgres_dsn = "{pg.dsn}"\n'
            f's3_endpoint = "{s3.endpoint}"\ns3_bucket = "trawl"\npartitions = 1024\n'
        )
        (out / "env").write_text(
            f"export AWS_ACCESS_KEY_ID={s3.access_key_id}\n"
            f"export AWS_SECRET_ACCESS_KEY={s3.secret_access_key}\n"
        )
        print((out / "cluster.toml").read_text(), flush=True)
        print(f"servers up; . {out / 'env'} for the S3 key pair; Ctrl-C stops them", flush=True)
        stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
