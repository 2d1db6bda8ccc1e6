"""The cluster file of `trawl node --cluster FILE` and `trawl cluster status`: read once, checked.

How this works, and its rules:
- The file is TOML with one `[cluster]` table (keys in `KEYS`, documented in docs/CONFIG.md,
  "Cluster file"). Unknown keys are errors that suggest the closest known key, as a typo must
  never fall back to a default; so are missing required keys, wrong types and URLs of the
  wrong scheme. Every error is one `ConfigError` line naming the file and the key.
- Secrets never reach an error or a repr: the key pair is left out of repr, URLs and DSNs are
  shown with their password replaced by `***`, and errors name a key's type, never its value
  (a mistyped secret would otherwise be printed in full).
- S3 credentials: the standard environment variables win over the file. When
  AWS_ACCESS_KEY_ID is set, the key pair (and AWS_SESSION_TOKEN) come from the environment
  alone, so a pair is never mixed from two sources; otherwise from the file's
  `aws_access_key_id` / `aws_secret_access_key`, which must come together.
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from trawl.cluster.redis_coord import ClusterKeys
from trawl.errors import ConfigError
from trawl.store.blobs_s3 import DEFAULT_REGION, S3Bucket

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path

DEFAULT_NAME = "trawl"
DEFAULT_PARTITIONS = 1024
MAX_PARTITIONS = 65536  # checkpoint keys give the partition 5 digits
REQUIRED = ("redis_url", "postgres_dsn", "s3_endpoint", "s3_bucket")
OPTIONAL = ("name", "s3_region", "partitions", "aws_access_key_id", "aws_secret_access_key")
KEYS = REQUIRED + OPTIONAL

# A libpq keyword/value DSN: `host=db port=5432 password='a b'` (values bare or single-quoted).
_KV = r"[A-Za-z_]+\s*=\s*(?:'(?:[^'\\]|\\.)*'|[^\s']+)"
_KV_DSN = re.compile(rf"\s*{_KV}(?:\s+{_KV})*\s*")  # pairs apart by blanks: no backtracking
_PASSWORD_KV = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&']+)", re.IGNORECASE)
# S3 bucket names (AWS rules, which every S3-compatible server accepts): 3-63 characters.
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_REGION = re.compile(r"[a-z0-9-]{1,64}")


@dataclass(frozen=True, slots=True, repr=False)
class ClusterSettings:
    """Where a trawl cluster keeps its coordination, records and blobs; checked on creation."""

    redis_url: str
    postgres_dsn: str
    s3_endpoint: str
    s3_bucket: str
    name: str = DEFAULT_NAME
    s3_region: str = DEFAULT_REGION
    partitions: int = DEFAULT_PARTITIONS
    aws_access_key_id: str | None = None
    aws_secret_access_key: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        _check_settings(self)

    def __repr__(self) -> str:
        return (
            f"ClusterSettings(name={self.name!r}, redis_url={redact(self.redis_url)!r},"
            f" postgres_dsn={redact(self.postgres_dsn)!r}, s3_endpoint={self.s3_endpoint!r},"
            f" s3_bucket={self.s3_bucket!r}, s3_region={self.s3_region!r},"
            f" partitions={self.partitions}, key_pair_in_file={self.aws_access_key_id is not None})"
        )

    def bucket(self, env: Mapping[str, str] = os.environ) -> S3Bucket:
        """The S3 bucket and credentials, environment first (see the module docstring).

        Raises ConfigError when neither source has a complete key pair.
        """
        from_env = bool(env.get("AWS_ACCESS_KEY_ID"))
        return S3Bucket.resolve(
            self.s3_bucket,
            endpoint_url=self.s3_endpoint,
            region=self.s3_region,
            access_key_id=None if from_env else self.aws_access_key_id,
            secret_access_key=None if from_env else self.aws_secret_access_key,
            env=env,
        )


def redact(url_or_dsn: str) -> str:
    """The URL or DSN with any password shown as `***` (safe for logs and errors)."""
    shown = url_or_dsn
    try:
        parts = urlsplit(url_or_dsn)
        if parts.password is not None:
            host = parts.netloc.rpartition("@")[2]
            shown = parts._replace(netloc=f"{parts.username or ''}:***@{host}").geturl()
    except ValueError:  # not a URL (a key=value DSN) or a malformed one
        pass
    return _PASSWORD_KV.sub(r"\1***", shown)


def load_cluster_file(path: Path) -> ClusterSettings:
    """Read and check the cluster file at `path`; raises ConfigError naming the file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: cluster file not found") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: cluster file is not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the cluster file: {exc.strerror}") from None
    return cluster_settings_from_text(text, source=str(path))


def cluster_settings_from_text(text: str, *, source: str = "cluster file") -> ClusterSettings:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:  # its message names the line and column
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None
    return cluster_settings_from_dict(raw, source=source)


def cluster_settings_from_dict(raw: dict[str, Any], *, source: str) -> ClusterSettings:
    """Settings from a parsed file: one `[cluster]` table and nothing else."""
    for section in raw:
        if section != "cluster":
            raise ConfigError(f"{source}: unknown section {section!r}{_hint(section, ['cluster'])}")
    table = raw.get("cluster")
    if not isinstance(table, dict):
        raise ConfigError(f"{source}: needs a [cluster] table")
    for key in table:
        if key not in KEYS:
            raise ConfigError(f"{source}: [cluster] unknown key {key!r}{_hint(key, KEYS)}")
    missing = [key for key in REQUIRED if key not in table]
    if missing:
        raise ConfigError(f"{source}: [cluster] is missing {', '.join(missing)}")
    values: dict[str, Any] = {key: _typed(key, value, source) for key, value in table.items()}
    try:
        return ClusterSettings(**values)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None


def _hint(key: str, known: tuple[str, ...] | list[str]) -> str:
    close = difflib.get_close_matches(key, known, n=1)
    return f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(known)})"


def _typed(key: str, value: object, source: str) -> object:
    """`value` if it has the key's type; the error names the type only (values may be secret)."""
    want_int = key == "partitions"
    ok = (
        isinstance(value, int) and not isinstance(value, bool)
        if want_int
        else isinstance(value, str)
    )
    if not ok:
        expected = "an integer" if want_int else "a string"
        got = type(value).__name__
        raise ConfigError(f"{source}: [cluster] {key} must be {expected}, not a TOML {got}")
    return value


def _check_settings(s: ClusterSettings) -> None:
    ClusterKeys(s.name)  # the one rule for cluster names; raises ConfigError
    _check_url("redis_url", s.redis_url, ("redis", "rediss"))
    _check_dsn(s.postgres_dsn)
    _check_url("s3_endpoint", s.s3_endpoint, ("http", "https"))
    _check("s3_bucket", s.s3_bucket, _BUCKET.fullmatch, "3-63 of a-z, 0-9, '.', '-'")
    _check("s3_region", s.s3_region, _REGION.fullmatch, "like us-east-1")
    if not 1 <= s.partitions <= MAX_PARTITIONS:
        raise ConfigError(f"cluster.partitions = {s.partitions}: must be 1..{MAX_PARTITIONS}")
    if (s.aws_access_key_id is None) != (s.aws_secret_access_key is None):
        raise ConfigError(
            "cluster: give aws_access_key_id and aws_secret_access_key together, or neither"
        )
    if s.aws_access_key_id == "" or s.aws_secret_access_key == "":
        raise ConfigError("cluster: aws_access_key_id and aws_secret_access_key must not be empty")


def _check(key: str, value: str, is_valid: Callable[[str], object], rule: str) -> None:
    if not is_valid(value):
        raise ConfigError(f"cluster.{key} = {value!r}: use {rule}")


def _check_url(key: str, url: str, schemes: tuple[str, ...], *, needs_host: bool = True) -> None:
    """A URL of one of `schemes` naming a host; the error never shows the URL (passwords)."""
    wanted = " or ".join(f"{scheme}://" for scheme in schemes)
    try:
        parts = urlsplit(url)
        port_ok = parts.port is None or parts.port > 0  # .port raises for junk
    except ValueError:
        raise ConfigError(f"cluster.{key}: not a URL (want {wanted}host[:port])") from None
    if parts.scheme.lower() not in schemes or "://" not in url:
        scheme = parts.scheme or "no scheme"
        raise ConfigError(f"cluster.{key}: {scheme!r} is not {wanted}")
    if (needs_host and not parts.hostname) or not port_ok:
        raise ConfigError(f"cluster.{key}: {wanted} URL without a host or with port 0")


def _check_dsn(dsn: str) -> None:
    """A postgresql:// or postgres:// URL, or a libpq `key=value ...` string."""
    if "://" in dsn:
        # No host is allowed: libpq then uses its default Unix socket.
        _check_url("postgres_dsn", dsn, ("postgresql", "postgres"), needs_host=False)
    elif not _KV_DSN.fullmatch(dsn):
        raise ConfigError(
            "cluster.postgres_dsn: want a postgresql:// URL or libpq 'key=value ...' pairs"
        )
