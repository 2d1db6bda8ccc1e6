"""A cluster node's API while Redis is out of reach: writes that must reach other nodes
answer 503 and say so, never a 500 with a traceback in the node's log.

`PUT /v1/hosts/{host}/limits` hands the override to the site's owner through a control
entry on the partition's Redis stream (`cluster.wiring.limits_sender`); a scope change goes
to every node the same way (`ClusterScope.send`). The node's API is served as
`trawl node --listen` serves it (`api.serve.serve_api` with `SharedStores`), over a real
socket, on a real crawl context (SQLite); its Redis client points at a loopback port where
nothing listens, so every call is refused as it is while Redis is down.
"""

from __future__ import annotations

import asyncio
import json
import socket
import urllib.error
import urllib.request
from typing import TYPE_CHECKING

from redis.asyncio import Redis
from tests.e2e.serve_support import TOKEN, free_port
from tests.integration.test_operator_changes import SETTINGS

from trawl.api.crawl_view import STORE_RETRY_AFTER_S, SharedStores
from trawl.api.serve import serve_api
from trawl.clock import SystemClock
from trawl.cluster.cluster_scope import ClusterScope
from trawl.cluster.redis_coord import ClusterKeys
from trawl.cluster.redis_links import RedisLinks
from trawl.cluster.redis_scope import RedisScope
from trawl.cluster.wiring import limits_sender
from trawl.store.layout import DB_NAME
from trawl.store.records_sqlite import SqliteRecords
from trawl.store.sqlite_db import open_database
from trawl.wiring.embedded import build_context

if TYPE_CHECKING:
    from pathlib import Path

    from trawl.store.warc_record import StoredBody

PARTITIONS = 8


def _no_body(storage_key: str) -> StoredBody:
    raise AssertionError(f"no body is read here: {storage_key}")


def _request(base: str, path: str, body: bytes, method: str) -> tuple[int, dict, str | None]:
    """(status, JSON answer, Retry-After) of a write with the operator's token."""
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"}
    request = urllib.request.Request(base + path, data=body, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, _json(response.read()), response.headers["Retry-After"]
    except urllib.error.HTTPError as exc:
        return exc.code, _json(exc.read()), exc.headers["Retry-After"]


def _json(body: bytes) -> dict:
    try:
        answer = json.loads(body)
    except ValueError:  # a 500's plain "Internal Server Error"
        return {"detail": body.decode(errors="replace")}
    return answer if isinstance(answer, dict) else {"detail": answer}


def test_writes_for_other_nodes_answer_503_while_redis_is_out_of_reach(tmp_path: Path) -> None:
    answers = asyncio.run(_serve_and_write(tmp_path))
    limits, cleared, exclusion = answers

    for status, answer, retry_after in (limits, cleared):
        assert status == 503, (status, answer)
        assert retry_after == str(STORE_RETRY_AFTER_S)
        assert "unreachable" in answer["detail"], answer
        assert "redis: send control to partition" in answer["detail"], answer

    status, answer, retry_after = exclusion
    assert status == 503, (status, answer)
    assert retry_after == str(STORE_RETRY_AFTER_S)
    assert "the cluster was not told" in answer["detail"], answer


async def _serve_and_write(data: Path) -> list[tuple[int, dict, str | None]]:
    ctx = build_context(SETTINGS, data, SystemClock())
    # Nothing listens here: each call is refused, as during an outage (a 1 s timeout
    # bounds the test should the port be taken meanwhile).
    client = Redis.from_url(
        f"redis://127.0.0.1:{free_port()}", socket_timeout=1.0, socket_connect_timeout=1.0
    )
    keys = ClusterKeys("outage")
    links = RedisLinks(client, keys)
    scope = ClusterScope(
        ctx=ctx, record=RedisScope(client, keys), links=links, partitions=PARTITIONS
    )
    shared = SharedStores(
        open_records=lambda: SqliteRecords(open_database(data / DB_NAME, readonly=True)),
        read_body=_no_body,
        send_limits=limits_sender(links, PARTITIONS),
        cluster_metrics=lambda: iter(()),
        send_scope=scope.send,
    )
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    serving = asyncio.create_task(serve_api(ctx, sock, TOKEN, shared))
    try:
        limits = "/v1/hosts/example.test/limits"
        return [
            await asyncio.to_thread(_request, base, limits, b'{"crawlDelay": 7}', "PUT"),
            await asyncio.to_thread(_request, base, limits, b"", "DELETE"),
            await asyncio.to_thread(
                _request, base, "/v1/scope/exclusions", b'{"pattern": "/private/"}', "POST"
            ),
        ]
    finally:
        ctx.run.request_stop()
        await serving
        await client.aclose()
        await ctx.durability.close()
