"""Issue 19, part 3: one duplicate index for the whole cluster (real Redis, PostgreSQL, S3).

The freshness web holds one document, byte-identical, on three sites, and an article reprinted
on three sites besides its original. A node alone first crawls the sites of the original
article and of one copy of the document (a `domain` scope keeps it there); then two more nodes
join and the whole web is crawled, the other copies by whichever node owns their site.
Each copy stored after its first copy must name it across nodes: an exact copy becomes a
revisit of the first body (`duplicateOf`, the first copy's storage key), a near copy names
its main copy (`nearDuplicateOf`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from tests.e2e.cluster_support import running_cluster
from tests.e2e.test_cluster_crawl import PARTITIONS, owners

from trawl.cluster.partitions import partition_of
from trawl.testweb.politeness import check_politeness
from trawl.testweb.process import TestWebProcess
from trawl.urls.registered_domain import registered_domain

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from tests.e2e.cluster_support import Cluster
    from tests.servers.redis import RedisServer
    from tests.servers.s3 import S3Server

    from trawl.testweb.freshness import Key


@pytest.fixture
def web(tmp_path: Path) -> Iterator[TestWebProcess]:
    with TestWebProcess(sites=12, pages=10, workdir=tmp_path, freshness=True) as running:
        yield running


def url_of(web: TestWebProcess, key: Key) -> str:
    return f"http://{key[0]}:{web.port}{key[1]}"


def records(cluster: Cluster, urls: list[str]) -> dict[str, dict[str, str]]:
    """The page records stored (committed) for `urls`, by URL."""
    if not cluster.stored_pages():  # no node has made the tables yet
        return {}
    rows = cluster.query(
        "SELECT url, storage_key, record->>'duplicateOf', record->>'nearDuplicateOf' FROM pages"
        " WHERE url = ANY(ARRAY[" + ",".join(f"'{u}'" for u in urls) + "])"
    )
    return {
        str(url): {"storageKey": str(key), "duplicateOf": str(dup), "nearDuplicateOf": str(near)}
        for url, key, dup, near in rows
    }


def test_copies_name_the_first_copy_whichever_node_stored_it(
    tmp_path: Path, web: TestWebProcess, redis_single: RedisServer,
    s3_server: S3Server,
    postgres_dsn: str,
) -> None:  # fmt: skip
    spec = web.web.freshness()
    _, shared_file = spec.copy_groups
    (article, *reprints) = spec.near_copy_groups[0]
    first_file = shared_file[0]
    files = [url_of(web, key) for key in shared_file]
    articles = [url_of(web, key) for key in (article, *reprints)]
    with running_cluster(tmp_path, web, redis_single, s3_server, postgres_dsn) as cluster:
        # The first copies, stored by n1 alone
        homes = sorted({f"http://{key[0]}:{web.port}/" for key in (article, first_file)})
        cluster.start_node("n1", *homes, extra=("--scope", "domain"))
        firsts = [url_of(web, first_file), url_of(web, article)]
        stored_firsts = lambda: len(records(cluster, firsts)) == 2  # noqa: E731
        cluster.wait_for("n1 to store the first copies", stored_firsts, 90)
        # The rest of the web, by three nodes
        cluster.start_node("n2", *web.seeds)
        cluster.start_node("n3")
        every = files + articles
        cluster.wait_for(
            "every copy stored", lambda: len(records(cluster, every)) == len(every), 120,
            lambda: f"stored: {sorted(records(cluster, every))}",
        )  # fmt: skip
        held_by = owners(cluster, redis_single)
        codes = cluster.stop_all()
        assert codes == {"n1": 0, "n2": 0, "n3": 0}, {n: cluster.log_of(n)[-2000:] for n in codes}

    def owner(url: str) -> str | None:
        host = url.split("//")[1].split(":")[0]
        return held_by[partition_of(registered_domain(host), PARTITIONS)]

    found = records(cluster, every)
    first = found[files[0]]
    assert first["duplicateOf"] == "", "the first copy is stored as itself"
    for url in files[1:]:
        assert found[url]["duplicateOf"] == files[0], (url, found[url])
        assert found[url]["storageKey"] == first["storageKey"], "a revisit of the first body"
    main = found[articles[0]]
    assert main["nearDuplicateOf"] == ""
    for url in articles[1:]:
        assert found[url]["nearDuplicateOf"] == articles[0], (url, found[url])
    later = {owner(url) for url in files[1:] + articles[1:]}
    print(f"copies stored after the first copies by the owners {sorted(map(str, later))}")
    assert later - {"n1"}, "some copies were stored by another node than the first copies"
    violations = check_politeness(web.requests(), **web.web.politeness_inputs())
    assert violations == [], violations[:5]
