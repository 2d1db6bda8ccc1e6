"""Cluster nodes render pages built by JavaScript (issue 18): `trawl node` processes on real
Redis, PostgreSQL and S3 servers, each with its own headless Chromium, crawling the test
web's script cases. The web's request log is the judge.

A page's render is queued on the node owning its site. The queue moves with the site's
partition (its checkpoint carries the rows), and a page queued after the last checkpoint
is marked on its record (`render.queuedAt`), so a kill -9 of the owner loses no render:
the partition's next owner renders what was waiting.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING

from tests.e2e.cluster_support import running_cluster
from tests.e2e.test_cluster_crawl import PARTITIONS, owners, wait_owned_by
from tests.e2e.test_render_crawl import CPU_SHARE, FORCE_ON

from trawl.cluster.partitions import partition_of
from trawl.testweb.politeness import check_politeness
from trawl.testweb.process import TestWebProcess

if TYPE_CHECKING:
    from pathlib import Path

    from tests.e2e.cluster_support import Cluster
    from tests.servers.redis import RedisServer
    from tests.servers.s3 import S3Server

    from trawl.testweb.script_cases import ScriptCases

APP = "script-app.test"  # every page of it is a shell
LITERALS = ", ".join(f"'{pattern}'" for pattern in FORCE_ON)  # TOML keeps \ in '...'
RENDER = f"\n[render]\nforce_on = [{LITERALS}]\ncpu_share = {CPU_SHARE}\n"


def _renders(cluster: Cluster) -> dict[str, dict[str, object]]:
    rows = cluster.query(
        "SELECT url, record->'render' FROM pages WHERE record->'render' IS NOT NULL"
    )
    return {str(url): render for url, render in rows if isinstance(render, dict)}


def _app_keys(cases: ScriptCases) -> list[tuple[str, str]]:
    """(host, path) of the app's pages: every one is rendered."""
    return [k for k in (*cases.render_urls, *cases.render_only_urls) if k[0].endswith(APP)]


def test_nodes_render_and_a_kill_9_of_the_owner_loses_no_render(
    tmp_path: Path, redis_single: RedisServer, s3_server: S3Server, postgres_dsn: str
) -> None:
    with (
        TestWebProcess(sites=3, pages=4, script_cases=True, workdir=tmp_path / "web") as web,
        running_cluster(tmp_path, web, redis_single, s3_server, postgres_dsn) as cluster,
    ):
        cases, port = web.web.script_cases(), web.port
        app_keys = _app_keys(cases)
        app_urls = [cases.url(k, port) for k in app_keys]
        assert len(app_urls) >= 3, app_urls
        cluster.config.write_text(cluster.config.read_text() + RENDER)
        cluster.start_node("n1", *web.seeds)
        cluster.start_node("n2")
        wait_owned_by(cluster, redis_single, ["n1", "n2"], 30)

        # Kill the app's owner once a render of it is queued (or done) and others wait.
        owner = owners(cluster, redis_single)[partition_of(APP, PARTITIONS)]
        assert owner in ("n1", "n2")

        def renders_under_way() -> bool:
            renders = [_renders(cluster).get(url, {}) for url in app_urls]
            queued = any("queuedAt" in r for r in renders)
            return queued or (any(renders) and not all("state" in r for r in renders))

        cluster.wait_for("renders of the app under way", renders_under_way, 90)
        cluster.nodes[owner].kill()
        cluster.nodes[owner].wait(timeout=10)
        survivor = "n2" if owner == "n1" else "n1"
        wait_owned_by(cluster, redis_single, [survivor], 30)

        expected = web.web.expected_fetches_with_rendering(port)

        def all_rendered() -> bool:
            renders = _renders(cluster)
            fetched = {(r.host, r.path) for r in web.requests()}
            done = all(renders.get(u, {}).get("state") in ("done", "timeout") for u in app_urls)
            return done and expected <= fetched

        def detail() -> str:
            renders = _renders(cluster)
            return json.dumps({u: renders.get(u) for u in app_urls})[:3000]

        cluster.wait_for("every app page rendered", all_rendered, 180, detail)
        codes = cluster.stop_all()
        assert codes[survivor] == 0, cluster.log_of(survivor)[-3000:]

        log = web.requests()
        assert check_politeness(log, **web.web.politeness_inputs()) == []
        assert not [r for r in log if r.site == cases.foreign_site], "the other site was asked"
        # The browser never fetched a main document: each app page was requested once,
        # or twice when the killed node had fetched it without committing its record.
        counts = Counter((r.host, r.path) for r in log)
        assert all(1 <= counts[k] <= 2 for k in app_keys), {k: counts[k] for k in app_keys}
        rendered_events = cluster.query(
            "SELECT count(*) FROM events WHERE event->>'type' = 'page.rendered'"
        )[0][0]
        assert int(str(rendered_events)) >= 1
