"""Blob store in S3-compatible object storage (AWS S3, SeaweedFS, MinIO, Ceph RGW), on boto3.

How this works, and its rules:

- Settings come from the arguments, else the environment (AWS_ENDPOINT_URL_S3 or
  AWS_ENDPOINT_URL, AWS_REGION or AWS_DEFAULT_REGION, AWS_ACCESS_KEY_ID,
  AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN). The endpoint and both keys are required: there
  is no default AWS endpoint, so a missing setting cannot send crawl data to a public address,
  and because credentials and region are always passed, botocore's provider chain (config
  files, SSO, the EC2 metadata service at 169.254.169.254) never runs. AWS_EC2_METADATA_DISABLED
  is set as well, in case some later botocore looks there for anything else.
- Path-style addressing (`<endpoint>/<bucket>/<key>`): a server on one host has no per-bucket
  DNS names.
- Bounded failure: connect and read timeouts, and botocore's "standard" retries (`max_attempts`
  in all, jittered backoff) on throttling, 5xx and connection errors. Retrying a PUT is safe:
  the same key gets the same bytes, and S3 replaces objects whole.
- Integrity: each `put` sends Content-MD5, which every S3 server checks (a mismatch is
  BadDigest, never a stored object). botocore's newer CRC trailers are off ("when_required"):
  several S3-compatible servers reject their aws-chunked uploads.
- Durability: S3 acknowledges a PUT only once the object is stored, and a new object is
  atomic: readers see all of it or nothing.
- Calls block; the crawler makes them from a worker thread. A boto3 client is thread-safe, so
  one store serves every thread (up to `max_connections` requests at once).
"""

from __future__ import annotations

import base64
import hashlib
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import boto3
from boto3.exceptions import Boto3Error
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as S3ConnectionError

from trawl.errors import ConfigError, DataError, StoreUnavailable
from trawl.store.blobs import BlobNotFound, check_key, check_prefix, check_range

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from pathlib import Path

    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.literals import BucketLocationConstraintType

DEFAULT_REGION = "us-east-1"
# put_file sends files up to this size in one PUT, larger ones (checkpoints) in parts of it
# (S3 wants parts of 5 MiB or more).
MULTIPART_BYTES = 64 * 1024 * 1024
_NOT_FOUND = frozenset({"NoSuchKey", "NotFound", "404"})
_NO_BUCKET = frozenset({"NoSuchBucket", "NotFound", "404"})
_FAILURES = (ClientError, BotoCoreError, Boto3Error)


@dataclass(frozen=True, slots=True)
class S3Bucket:
    """Where the objects live and how to sign requests; secrets stay out of repr()."""

    name: str
    endpoint_url: str
    region: str
    access_key_id: str
    secret_access_key: str = field(repr=False)
    session_token: str | None = field(default=None, repr=False)

    @classmethod
    def resolve(
        cls,
        name: str,
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        env: Mapping[str, str] = os.environ,
    ) -> S3Bucket:
        """Fill what the arguments leave out from `env`; raises ConfigError naming the gaps."""
        endpoint = endpoint_url or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
        key_id = access_key_id or env.get("AWS_ACCESS_KEY_ID")
        secret = secret_access_key or env.get("AWS_SECRET_ACCESS_KEY")
        region = region or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
        given = {
            "s3_bucket": name,
            "s3_endpoint (or AWS_ENDPOINT_URL)": endpoint,
            "AWS_ACCESS_KEY_ID": key_id,
            "AWS_SECRET_ACCESS_KEY": secret,
        }
        missing = [setting for setting, value in given.items() if not value]
        if missing or not endpoint or not key_id or not secret:
            raise ConfigError(f"the S3 blob store needs {', '.join(missing)}")
        return cls(
            name=name,
            endpoint_url=endpoint,
            region=region or DEFAULT_REGION,
            access_key_id=key_id,
            secret_access_key=secret,
            # A session token belongs to the key pair it came with.
            session_token=None if access_key_id else env.get("AWS_SESSION_TOKEN"),
        )


class S3BlobStore:
    """Objects in one bucket of an S3-compatible server; creates the bucket if missing.

    Raises ConfigError for settings boto3 refuses, DataError when the server cannot be
    reached or refuses the bucket.
    """

    def __init__(
        self,
        bucket: S3Bucket,
        *,
        connect_timeout_s: float = 5.0,
        read_timeout_s: float = 30.0,
        max_attempts: int = 4,
        max_connections: int = 16,
        multipart_bytes: int = MULTIPART_BYTES,
        create_bucket: bool = True,
    ) -> None:
        self._bucket = bucket
        self._name = bucket.name
        self._where = f"s3 {bucket.endpoint_url}/{bucket.name}"
        self._transfer = TransferConfig(
            multipart_threshold=multipart_bytes, multipart_chunksize=multipart_bytes
        )
        os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
        config = Config(
            region_name=bucket.region,
            signature_version="s3v4",
            s3={"addressing_style": "path"},
            retries={"mode": "standard", "total_max_attempts": max_attempts},
            connect_timeout=connect_timeout_s,
            read_timeout=read_timeout_s,
            max_pool_connections=max_connections,
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
        )
        self._client = _make_client(bucket, config, self._where)
        if create_bucket:
            self.ensure_bucket()

    def __repr__(self) -> str:
        b = self._bucket
        return f"<S3BlobStore {b.endpoint_url} bucket={b.name} region={b.region}>"

    def __enter__(self) -> S3BlobStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def bucket(self) -> S3Bucket:
        return self._bucket

    def close(self) -> None:
        """Close the client's pooled connections; idempotent."""
        self._client.close()

    def ensure_bucket(self) -> None:
        """Create the bucket unless it exists; safe when many nodes start at once."""
        try:
            self._client.head_bucket(Bucket=self._name)
            return
        except _FAILURES as exc:
            if _error_code(exc) not in _NO_BUCKET:
                raise self._failure("head bucket", "", exc) from exc
        extra: dict[str, Any] = {}
        if self._bucket.region != DEFAULT_REGION:  # us-east-1 refuses to be named
            location = cast("BucketLocationConstraintType", self._bucket.region)
            extra["CreateBucketConfiguration"] = {"LocationConstraint": location}
        try:
            self._client.create_bucket(Bucket=self._name, **extra)
        except _FAILURES as exc:
            if _error_code(exc) != "BucketAlreadyOwnedByYou":  # another node was first
                raise self._failure("create bucket", "", exc) from exc

    def put(self, key: str, data: bytes) -> None:
        check_key(key)
        md5 = base64.b64encode(hashlib.md5(data, usedforsecurity=False).digest()).decode()
        try:
            self._client.put_object(Bucket=self._name, Key=key, Body=data, ContentMD5=md5)
        except _FAILURES as exc:
            raise self._failure("put", key, exc) from exc

    def put_file(self, key: str, path: Path) -> None:
        check_key(key)
        try:
            self._client.upload_file(str(path), self._name, key, Config=self._transfer)
        except (*_FAILURES, OSError) as exc:
            raise self._failure(f"put file {path} as", key, exc) from exc

    def get(self, key: str) -> bytes:
        check_key(key)
        try:
            return self._client.get_object(Bucket=self._name, Key=key)["Body"].read()
        except _FAILURES as exc:
            raise self._failure("get", key, exc) from exc

    def get_range(self, key: str, offset: int, length: int) -> bytes:
        check_key(key)
        check_range(key, offset, length)
        span = f"bytes={offset}-{offset + length - 1}"  # inclusive (RFC 9110 §14.1.2)
        try:
            response = self._client.get_object(Bucket=self._name, Key=key, Range=span)
            data = response["Body"].read()
        except _FAILURES as exc:
            if _error_code(exc) == "InvalidRange":  # offset at or past the end (416)
                return b""
            raise self._failure("get range of", key, exc) from exc
        if not response.get("ContentRange"):  # a server that ignored Range sent it all (200)
            return data[offset : offset + length]
        return data

    def iter_keys(self, prefix: str = "") -> Iterator[str]:
        check_prefix(prefix)
        pages = self._client.get_paginator("list_objects_v2")
        try:
            for page in pages.paginate(Bucket=self._name, Prefix=prefix):
                for obj in page.get("Contents", []):
                    yield obj["Key"]
        except _FAILURES as exc:
            raise self._failure("list", prefix, exc) from exc

    def delete(self, key: str) -> None:
        check_key(key)
        try:
            self._client.delete_object(Bucket=self._name, Key=key)
        except _FAILURES as exc:
            if _error_code(exc) not in _NOT_FOUND:
                raise self._failure("delete", key, exc) from exc

    def size(self, key: str) -> int:
        check_key(key)
        try:
            return self._client.head_object(Bucket=self._name, Key=key)["ContentLength"]
        except _FAILURES as exc:
            raise self._failure("head", key, exc) from exc

    def exists(self, key: str) -> bool:
        try:
            self.size(key)
        except BlobNotFound:
            return False
        return True

    def _failure(self, op: str, key: str, exc: Exception) -> DataError:
        """The trawl error for a failed call: BlobNotFound for a missing key,
        StoreUnavailable for a server out of reach or failing (no connection, a timeout, a
        5xx after the client's retries: the same call may succeed later), else DataError."""
        code = _error_code(exc)
        target = f" {key!r}" if key else ""
        if key and code in _NOT_FOUND:
            return BlobNotFound(self._where, key)
        if isinstance(exc, ClientError):
            message = exc.response.get("Error", {}).get("Message", "")
            text = f"{self._where}: {op}{target} failed: {code} {message}".rstrip()
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
            return StoreUnavailable(text) if status >= 500 else DataError(text)
        if isinstance(exc, (S3ConnectionError, HTTPClientError)):
            return StoreUnavailable(f"{self._where}: {op}{target} failed: {exc}")
        return DataError(f"{self._where}: {op}{target} failed: {exc}")


def _make_client(bucket: S3Bucket, config: Config, where: str) -> S3Client:
    try:
        session = boto3.session.Session(
            aws_access_key_id=bucket.access_key_id,
            aws_secret_access_key=bucket.secret_access_key,
            aws_session_token=bucket.session_token,
            region_name=bucket.region,
        )
        return session.client("s3", endpoint_url=bucket.endpoint_url, config=config)
    except (BotoCoreError, ValueError) as exc:
        raise ConfigError(f"{where}: bad S3 settings: {exc}") from exc


def _error_code(exc: Exception) -> str:
    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code", ""))
    return ""
