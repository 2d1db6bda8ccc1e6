"""`trawl seed URL... --cluster FILE` (issue 7) against a real Redis: seeds land, normalised
and marked must-crawl, on the link stream of their site's partition; bad ones are rejected."""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING

import pytest
from tests.servers.redis import free_port

from trawl.cli import main
from trawl.cluster.cluster_seeds import BATCH_LINKS
from trawl.cluster.partitions import partition_of
from trawl.cluster.redis_coord import ClusterKeys, connect, ensure_layout
from trawl.cluster.redis_links import START, LinkBatch, RedisLinks
from trawl.urls.normalise import url_hash

if TYPE_CHECKING:
    from pathlib import Path

    from tests.servers.redis import RedisServer

PARTITIONS = 16


def write_file(path: Path, name: str, redis_url: str, partitions: int = PARTITIONS) -> Path:
    path.write_text(
        "[cluster]\n"
        f'name = "{name}"\nredis_url = "{redis_url}"\n'
        'postgres_dsn = "postgresql://trawl@127.0.0.1:1/unused"\n'
        's3_endpoint = "http://127.0.0.1:1"\ns3_bucket = "trawl-unused"\n'
        f"partitions = {partitions}\n"
    )
    return path


@pytest.fixture
def cluster_file(redis_single: RedisServer, tmp_path: Path) -> Path:
    return write_file(tmp_path / "cluster.toml", f"t{uuid.uuid4().hex[:10]}", redis_single.url)


def name_of(cluster_file: Path) -> str:
    return cluster_file.read_text().split('name = "')[1].split('"')[0]


def read_streams(redis_url: str, name: str) -> dict[int, list[LinkBatch]]:
    async def read() -> dict[int, list[LinkBatch]]:
        client = await connect(redis_url, timeout_s=2.0)
        try:
            links = RedisLinks(client, ClusterKeys(name))
            batches = await links.read_many(dict.fromkeys(range(PARTITIONS), START), 1000)
        finally:
            await client.aclose()
        return {p: b for p, b in batches.items() if b}

    return asyncio.run(read())


def seed(args: list[str], capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert main(["seed", *args]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    return captured.out.splitlines()


def test_seeds_land_on_their_partitions_streams(
    cluster_file: Path,
    redis_single: RedisServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    good = ["HTTP://A.test:80/x?utm_source=mail", "http://b.test/", "https://www.c.test/p"]
    bad = ["mailto:someone@a.test", "http://"]
    out = seed([*good, *bad, "http://a.test/x", "--cluster", str(cluster_file)], capsys)
    sites = ["a.test", "b.test", "c.test"]
    wanted = {partition_of(site, PARTITIONS) for site in sites}
    assert out[0] == f"sent 3 seeds to {len(wanted)} partitions (2 rejected)"
    assert out[1].startswith("rejected 'mailto:someone@a.test': not a crawlable URL: ")
    assert out[2].startswith("rejected 'http://': not a crawlable URL: ")
    assert len(out) == 3
    streams = read_streams(redis_single.url, name_of(cluster_file))
    assert set(streams) == wanted
    links = {
        link.url: (p, link) for p, batches in streams.items() for b in batches for link in b.links
    }
    assert sorted(links) == ["http://a.test/x", "http://b.test/", "https://www.c.test/p"]
    for url, (partition, link) in links.items():
        assert link.url_hash == url_hash(url)
        assert partition == partition_of(link.site, PARTITIONS)
        assert (link.depth, link.score, link.must_crawl, link.referrer) == (0, 0.0, True, "")
    assert links["https://www.c.test/p"][1].site == "c.test"


def test_config_rules_normalise_the_seeds(
    cluster_file: Path,
    redis_single: RedisServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = tmp_path / "trawl.toml"
    config.write_text('[urls]\ntracking_params = ["ref"]\n')
    args = ["http://a.test/?ref=home&id=7", "--cluster", str(cluster_file), "--config", str(config)]
    assert seed(args, capsys)[0] == "sent 1 seeds to 1 partitions (0 rejected)"
    streams = read_streams(redis_single.url, name_of(cluster_file))
    [batches] = streams.values()
    assert [link.url for link in batches[0].links] == ["http://a.test/?id=7"]


def test_a_long_seeds_file_goes_in_batches(
    cluster_file: Path,
    redis_single: RedisServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    seeds = tmp_path / "seeds.txt"
    count = 2 * BATCH_LINKS + 7
    seeds.write_text("# one site\n" + "".join(f"http://a.test/{n}\n" for n in range(count)))
    out = seed(["--seeds-file", str(seeds), "--cluster", str(cluster_file)], capsys)
    assert out == [f"sent {count} seeds to 1 partitions (0 rejected)"]
    [batches] = read_streams(redis_single.url, name_of(cluster_file)).values()
    assert [len(b.links) for b in batches] == [BATCH_LINKS, BATCH_LINKS, 7]
    assert [link.url for b in batches for link in b.links] == [
        f"http://a.test/{n}" for n in range(count)
    ]


def test_only_bad_seeds_sends_nothing(
    cluster_file: Path,
    redis_single: RedisServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = seed(["ftp://a.test/", "--cluster", str(cluster_file)], capsys)
    assert out[0] == "sent 0 seeds to 0 partitions (1 rejected)"
    assert read_streams(redis_single.url, name_of(cluster_file)) == {}


def error_of(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["seed", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("trawl: error: ")
    assert err.count("\n") == 1, err
    return err


def test_priority_and_token_need_the_api(
    cluster_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = ["http://a.test/", "--cluster", str(cluster_file)]
    assert "priorities need --api" in error_of([*cluster, "--priority", "high"], capsys)
    token = tmp_path / "token"
    token.write_text("secret\n")
    assert "--token-file is for --api" in error_of([*cluster, "--token-file", str(token)], capsys)
    config = tmp_path / "trawl.toml"
    config.write_text("")
    api = ["http://a.test/", "--api", "http://127.0.0.1:1", "--config", str(config)]
    assert "--config is for --cluster" in error_of(api, capsys)


def test_api_or_cluster_is_required_and_not_both(
    cluster_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for args in (
        ["http://a.test/"],
        ["http://a.test/", "--cluster", str(cluster_file), "--api", "http://127.0.0.1:1"],
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(["seed", *args])
        assert exit_info.value.code == 2
        assert "--api" in capsys.readouterr().err


def test_another_partition_count_is_refused(
    redis_single: RedisServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    name = f"t{uuid.uuid4().hex[:10]}"

    async def create() -> None:
        client = await connect(redis_single.url, timeout_s=2.0)
        try:
            await ensure_layout(client, ClusterKeys(name), PARTITIONS)
        finally:
            await client.aclose()

    asyncio.run(create())
    path = write_file(tmp_path / "c.toml", name, redis_single.url, partitions=PARTITIONS * 2)
    err = error_of(["http://a.test/", "--cluster", str(path)], capsys)
    assert f"created with {PARTITIONS} partitions" in err


def test_unreachable_redis_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"redis://:s3cret@127.0.0.1:{free_port(cluster=False)}/0"
    path = write_file(tmp_path / "c.toml", "t", url)
    err = error_of(["http://a.test/", "--cluster", str(path)], capsys)
    assert "cannot send the seeds" in err
    assert "s3cret" not in err


def test_bad_cluster_file_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.toml"
    path.write_text("[cluster]\n")
    assert "missing" in error_of(["http://a.test/", "--cluster", str(path)], capsys)
