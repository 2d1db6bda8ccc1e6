"""Issue 16, cluster mode: a run-time exclusion reaches every owner within seconds, takes
the URLs it matches out of their queues, and a node that joins later gets it.

Real Redis, PostgreSQL and S3 servers and `trawl node` processes, as test_cluster_crawl.py
starts them; the test web's request log is the judge. The exclusion goes through one node's
API (`POST /v1/scope/exclusions`), which applies it there and sends it on
(`SharedStores.send_scope`, which is `ClusterScope.send`): recorded in Redis, then a control
entry on every partition's stream.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

from tests.e2e.cluster_support import running_cluster
from tests.e2e.serve_support import TOKEN, free_port, get_json, send_json
from tests.e2e.test_cluster_crawl import PARTITIONS, fetched_pages, owners, wait_owned_by
from tests.servers.redis import run_with_client

from trawl.cluster.partitions import partition_of
from trawl.cluster.redis_links import START, RedisLinks
from trawl.cluster.redis_scope import RedisScope
from trawl.cluster.scope_changes import ScopeChange, ScopeOp
from trawl.frontier.scope import ScopeType, SeedScope
from trawl.testweb.politeness import check_politeness
from trawl.testweb.process import TestWebProcess
from trawl.urls.registered_domain import site_of

if TYPE_CHECKING:
    from pathlib import Path

    from tests.servers.redis import RedisServer
    from tests.servers.s3 import S3Server

    from trawl.cluster.redis_coord import ClusterKeys, RedisClient

EXCLUDED = "/articles/"
PROPAGATION_S = 2.0  # allowed after the answer: a fetch already under way may still end


def quiet_for(web: TestWebProcess, seconds: float) -> bool:
    """No request started in the last `seconds`."""
    requests = web.requests()
    return bool(requests) and time.time() - max(r.t_start for r in requests) >= seconds


def test_issue_16_an_exclusion_reaches_every_owner_and_a_late_joiner(
    tmp_path: Path, redis_single: RedisServer, s3_server: S3Server, postgres_dsn: str
) -> None:
    with (
        TestWebProcess(sites=12, pages=40, workdir=tmp_path) as web,
        running_cluster(tmp_path, web, redis_single, s3_server, postgres_dsn) as cluster,
    ):
        expected = web.web.expected_fetches(web.port)
        excluded = {(host, path) for host, path in expected if path.startswith(EXCLUDED)}
        (tmp_path / "token").write_text(TOKEN + "\n")
        api = {node: free_port() for node in ("n2", "n4")}

        def listening(node: str) -> tuple[str, ...]:
            return ("--listen", f"127.0.0.1:{api[node]}", "--token-file", str(tmp_path / "token"))

        cluster.start_node("n1", *web.seeds)
        cluster.start_node("n2", extra=listening("n2"))
        cluster.start_node("n3")
        wait_owned_by(cluster, redis_single, ["n1", "n2", "n3"], 30)
        some = lambda: len(set(fetched_pages(web)) & excluded) >= 6  # noqa: E731
        cluster.wait_for("some article pages", some, 60)

        sent_at = time.time()
        status, answer = send_json(
            f"http://127.0.0.1:{api['n2']}",
            "/v1/scope/exclusions",
            json.dumps({"pattern": EXCLUDED}).encode(),
        )
        answered_at = time.time()
        assert status == 201, answer
        print(f"exclusion {EXCLUDED!r} answered {answer} in {answered_at - sent_at:.3f} s")
        owner_of = owners(cluster, redis_single)
        before = set(fetched_pages(web))
        waiting = excluded - before
        waiting_owners = {owner_of[partition_of(site_of(f"http://{host}/"), PARTITIONS)]
                          for host, _ in waiting}  # fmt: skip
        assert len(waiting_owners) >= 2, f"excluded pages still to fetch on {waiting_owners}"

        # The crawl goes on without them (the pages only they link to are not found).
        cluster.wait_for("the crawl to go quiet", lambda: quiet_for(web, 8.0), 150)
        late = [
            r for r in web.requests() if r.path.startswith(EXCLUDED) and r.t_start > answered_at
        ]
        lateness = max((r.t_start - answered_at for r in late), default=0.0)
        print(
            f"after the answer: {len(late)} {EXCLUDED} requests, the last {lateness:.3f} s"
            f" after it; {len(waiting)} excluded pages were still to fetch, on"
            f" {sorted(map(str, waiting_owners))}; {len(fetched_pages(web))} pages in all"
        )
        assert lateness <= PROPAGATION_S, late
        assert len(fetched_pages(web)) > len(before), "the crawl went on"

        # A node that joins later has it from the record (its streams may be trimmed).
        cluster.start_node("n4", extra=listening("n4"))
        wait_owned_by(cluster, redis_single, ["n1", "n2", "n3", "n4"], 30)
        start_line = cluster.log_of("n4").split("trawl: node n4", 1)[1].splitlines()[0]
        assert start_line.endswith("; scope any x5, 1 exclude"), start_line
        scope = get_json(f"http://127.0.0.1:{api['n4']}", "/v1/scope")
        assert scope["exclusions"] == [EXCLUDED], scope
        codes = cluster.stop_all()
        assert codes == {"n1": 0, "n2": 0, "n3": 0, "n4": 0}, {
            n: cluster.log_of(n)[-2000:] for n in codes
        }
        assert [r for r in web.requests() if r.path.startswith(EXCLUDED)
                and r.t_start > answered_at + PROPAGATION_S] == []  # fmt: skip
        violations = check_politeness(web.requests(), **web.web.politeness_inputs())
        assert violations == [], violations[:5]


def test_issue_16_the_scope_record_and_broadcast_on_redis(redis_server: RedisServer) -> None:
    async def body(client: RedisClient, keys: ClusterKeys) -> None:
        record, links = RedisScope(client, keys), RedisLinks(client, keys)
        docs = SeedScope("http://a.test/docs/", ScopeType.PREFIX)
        first = await record.record(
            [ScopeChange(ScopeOp.EXCLUDE, "/tag/"), ScopeChange(ScopeOp.SEED, seed=docs)]
        )
        assert [c.seq for c in first] == [1, 2]
        again = await record.record([ScopeChange(ScopeOp.SEED, seed=SeedScope(docs.url))],
                                    only_new=True)  # fmt: skip
        assert again == [], "a start seed the cluster knows is left as it is"
        lifted = await record.record([ScopeChange(ScopeOp.INCLUDE_AGAIN, "/tag/")])
        assert await record.changes_since(0, 10) == [first[1], lifted[0]]
        assert await record.changes_since(2, 10) == lifted
        assert await record.changes_since(0, 1) == [first[1]]
        assert await links.send_control_all(range(3), lifted[0].to_json()) == 3
        read = await links.read_many(dict.fromkeys(range(3), START), 10)
        assert [b.control for p in range(3) for b in read[p]] == [lifted[0].to_json()] * 3

    run_with_client(redis_server, body)
