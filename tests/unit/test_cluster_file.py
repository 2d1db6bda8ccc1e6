"""The cluster file (issue 7): every mistake is one ConfigError line, and no secret leaks."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trawl.cluster.cluster_file import (
    ClusterSettings,
    cluster_settings_from_dict,
    cluster_settings_from_text,
    load_cluster_file,
    redact,
)
from trawl.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Callable

ROOT = Path(__file__).resolve().parents[2]
SECRET = "s3cr3t-Value-42"
GOOD = {
    "redis_url": "redis://127.0.0.1:6379/0",
    "postgres_dsn": "postgresql://trawl@127.0.0.1/trawl",
    "s3_endpoint": "http://127.0.0.1:8333",
    "s3_bucket": "trawl-data",
}


def toml(**keys: object) -> str:
    def value(v: object) -> str:
        return str(v).lower() if isinstance(v, bool) else repr(v).replace("'", '"')

    return "[cluster]\n" + "".join(f"{k} = {value(v)}\n" for k, v in keys.items())


def from_keys(**changes: object) -> ClusterSettings:
    keys: dict[str, object] = {**GOOD, **changes}
    return cluster_settings_from_dict({"cluster": keys}, source="c.toml")


def test_a_minimal_file_gets_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "cluster.toml"
    path.write_text(toml(**GOOD))
    settings = load_cluster_file(path)
    assert (settings.name, settings.partitions, settings.s3_region) == ("trawl", 1024, "us-east-1")
    assert settings.redis_url == GOOD["redis_url"]
    assert settings.aws_access_key_id is None


def test_every_key_is_read() -> None:
    text = toml(
        **GOOD,
        name="crawl-2",
        s3_region="eu-west-1",
        partitions=64,
        aws_access_key_id="AKID",
        aws_secret_access_key=SECRET,
    )
    settings = cluster_settings_from_text(text)
    assert (settings.name, settings.s3_region, settings.partitions) == ("crawl-2", "eu-west-1", 64)
    assert (settings.aws_access_key_id, settings.aws_secret_access_key) == ("AKID", SECRET)


@pytest.mark.parametrize(
    "dsn",
    [
        "postgres://u:p@db.internal:5432/trawl",
        "postgresql:///trawl",  # libpq's default socket
        "host=127.0.0.1 port=5432 dbname=trawl",
        "host=db password='a b\\'c' dbname=trawl",
    ],
)
def test_postgres_dsns_in_both_forms(dsn: str) -> None:
    assert from_keys(postgres_dsn=dsn).postgres_dsn == dsn


def test_rediss_and_https_are_accepted() -> None:
    settings = from_keys(redis_url="rediss://:pw@r.internal:6380", s3_endpoint="https://s3.x")
    assert settings.redis_url.startswith("rediss://")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[cluster\n", r"c.toml: not valid TOML: .*line 1"),
        ('[cluster]\nredis_url = "redis://a"\nx = \n', r"not valid TOML: .*line 3"),
        ("", r"needs a \[cluster\] table"),
        ("cluster = 3\n", r"needs a \[cluster\] table"),
        ("[clustr]\n", r"unknown section 'clustr' \(did you mean 'cluster'\?\)"),
        (
            toml(**GOOD, redis_ulr="redis://a"),
            r"unknown key 'redis_ulr' \(did you mean 'redis_url'",
        ),
        (toml(**GOOD, zzz=1), r"unknown key 'zzz' \(known: redis_url, "),
        (toml(redis_url="redis://a"), "is missing postgres_dsn, s3_endpoint, s3_bucket"),
        (toml(**GOOD, partitions="1024"), "partitions must be an integer, not a TOML str"),
        (toml(**GOOD, partitions=True), "partitions must be an integer, not a TOML bool"),
        (toml(**GOOD, partitions=0), r"partitions = 0: must be 1\.\.65536"),
        (toml(**GOOD, partitions=65537), r"partitions = 65537: must be 1\.\.65536"),
        (toml(**{**GOOD, "s3_bucket": 5}), "s3_bucket must be a string, not a TOML int"),
        (toml(**{**GOOD, "redis_url": "http://r:6379"}), r"redis_url: 'http' is not redis://"),
        (toml(**{**GOOD, "redis_url": "127.0.0.1:6379"}), "redis_url: .* is not redis://"),
        (toml(**{**GOOD, "redis_url": "redis://"}), "redis_url: .*without a host"),
        (toml(**{**GOOD, "redis_url": "redis://[::1"}), "redis_url: not a URL"),
        (toml(**{**GOOD, "postgres_dsn": "mysql://db/x"}), "postgres_dsn: 'mysql' is not post"),
        (toml(**{**GOOD, "postgres_dsn": "just words"}), "postgres_dsn: want a postgresql://"),
        (toml(**{**GOOD, "s3_endpoint": "s3.amazonaws.com"}), "s3_endpoint: .* is not http://"),
        (toml(**{**GOOD, "s3_bucket": "Trawl_Data"}), "s3_bucket = 'Trawl_Data': use 3-63"),
        (toml(**GOOD, s3_region="EU West"), "s3_region = 'EU West'"),
        (toml(**GOOD, name="a b"), "cluster name 'a b'"),
        (toml(**GOOD, aws_access_key_id="AKID"), "aws_secret_access_key together"),
        (toml(**GOOD, aws_access_key_id="", aws_secret_access_key="x"), "must not be empty"),
    ],
)
def test_mistakes_are_one_clear_line(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        cluster_settings_from_text(text, source="c.toml")
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith("c.toml: ")


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.toml: cluster file not found"):
        load_cluster_file(tmp_path / "nope.toml")


def test_a_directory_or_binary_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the cluster file"):
        load_cluster_file(tmp_path)
    (tmp_path / "bin.toml").write_bytes(b"\xff\xfe[cluster]")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_cluster_file(tmp_path / "bin.toml")


@pytest.mark.parametrize(
    "changes",
    [
        {"aws_secret_access_key": 12345, "aws_access_key_id": "AKID"},  # a wrong type
        {"redis_url": f"http://:{SECRET}@r:6379"},  # a wrong scheme
        {"postgres_dsn": f"mysql://u:{SECRET}@db/x"},
        {"postgres_dsn": f"host=db password={SECRET} 'unclosed"},
        {"s3_endpoint": f"ftp://k:{SECRET}@s3"},
    ],
)
def test_errors_never_show_secrets(changes: dict[str, object]) -> None:
    with pytest.raises(ConfigError) as caught:
        from_keys(**changes)
    assert SECRET not in str(caught.value)
    assert "12345" not in str(caught.value)


def test_repr_hides_secrets() -> None:
    settings = from_keys(
        redis_url=f"redis://user:{SECRET}@r:6379/0",
        postgres_dsn=f"host=db password={SECRET} dbname=trawl",
        aws_access_key_id="AKID",
        aws_secret_access_key=SECRET,
    )
    shown = repr(settings)
    assert SECRET not in shown
    assert "redis://user:***@r:6379/0" in shown
    assert "password=*** dbname=trawl" in shown


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        (f"redis://:{SECRET}@r:6379", "redis://:***@r:6379"),
        (
            f"postgresql://u:{SECRET}@db/x?sslmode=require",
            "postgresql://u:***@db/x?sslmode=require",
        ),
        (f"postgresql://db/x?password={SECRET}", "postgresql://db/x?password=***"),
        (f"host=db password='{SECRET} x' user=u", "host=db password=*** user=u"),
        ("redis://r:6379/0", "redis://r:6379/0"),
    ],
)
def test_redact(given: str, shown: str) -> None:
    assert redact(given) == shown


# -- credentials: the environment wins over the file --------------------------------------
FILE_KEYS = {"aws_access_key_id": "FILEKEY", "aws_secret_access_key": "filesecret"}


def test_the_environment_key_pair_wins_over_the_file() -> None:
    env = {"AWS_ACCESS_KEY_ID": "ENVKEY", "AWS_SECRET_ACCESS_KEY": "envsecret"}
    bucket = from_keys(**FILE_KEYS).bucket(env)
    assert (bucket.access_key_id, bucket.secret_access_key) == ("ENVKEY", "envsecret")
    assert (bucket.name, bucket.endpoint_url) == ("trawl-data", GOOD["s3_endpoint"])


def test_the_file_key_pair_is_used_when_the_environment_has_none() -> None:
    bucket = from_keys(**FILE_KEYS).bucket({"AWS_SECRET_ACCESS_KEY": "stray"})
    assert (bucket.access_key_id, bucket.secret_access_key) == ("FILEKEY", "filesecret")


def test_a_pair_is_never_mixed_from_two_sources() -> None:
    with pytest.raises(ConfigError, match="AWS_SECRET_ACCESS_KEY"):
        from_keys(**FILE_KEYS).bucket({"AWS_ACCESS_KEY_ID": "ENVKEY"})


def test_no_credentials_anywhere_names_the_variables() -> None:
    with pytest.raises(ConfigError, match="AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY"):
        from_keys().bucket({})


def test_the_docs_list_every_key() -> None:
    doc = (ROOT / "docs" / "CONFIG.md").read_text()
    section = doc.split("## Cluster file", 1)[1]
    from trawl.cluster.cluster_file import KEYS

    assert [key for key in KEYS if f"`cluster.{key}`" not in section] == []


# -- junk never escapes as anything but ConfigError -------------------------------------------
toml_scalars = st.one_of(
    st.text(max_size=40),
    st.integers(),
    st.booleans(),
    st.floats(allow_nan=False),
    st.sampled_from(["redis://h", "rediss://:p@h:1", "postgres://", "http://[", "host=x", ""]),
)
toml_values = st.recursive(
    toml_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=6,
)
cluster_tables = st.dictionaries(
    st.sampled_from(["name", "partitions", "s3_region", "zz", *GOOD]), toml_values
).map(lambda keys: {**GOOD, **keys})


def config_error_of(read: Callable[[], object]) -> str:
    """The ConfigError's message, "" when `read` succeeds; any other exception fails the test."""
    try:
        read()
    except ConfigError as exc:
        return str(exc)
    return ""


@given(st.text(max_size=300))
def test_junk_text_is_only_ever_a_config_error(text: str) -> None:
    assert "\n" not in config_error_of(lambda: cluster_settings_from_text(text))


@given(st.dictionaries(st.sampled_from(["cluster", "other"]), cluster_tables | toml_values))
def test_junk_tables_are_only_ever_a_config_error(raw: dict[str, object]) -> None:
    assert "\n" not in config_error_of(lambda: cluster_settings_from_dict(raw, source="f"))
