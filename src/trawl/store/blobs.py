"""The blob-store port: named byte strings in a flat key space (WARC chunks, checkpoints).

Rules every adapter keeps (tests/contract/test_blobs.py holds them to it):

- `put` is atomic: a reader sees the old object, the new one, or none, never a part. When
  `put` returns, the object is durable (local: fsynced file and directory; S3: the PUT was
  acknowledged, which S3 promises only after the object is stored redundantly).
- Keys are relative, "/"-separated paths checked by `check_key` the same way everywhere, so
  a key that works on one store works on the other.
- A missing key raises `BlobNotFound`; any other failure to reach or use the store raises
  `DataError` naming the store, the key and the cause. `delete` of a missing key is no error.
- Calls block. The crawler calls them from a worker thread (`asyncio.to_thread`), never on
  the event loop; adapters are safe to share between threads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from trawl.errors import DataError, UsageError

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

# S3 caps keys at 1024 bytes of UTF-8.
MAX_KEY_BYTES = 1024


class BlobNotFound(DataError):
    """The store holds no object under `key`."""

    def __init__(self, where: str, key: str) -> None:
        super().__init__(f"{where}: no object {key!r}")
        self.key = key


class BlobStore(Protocol):
    def put(self, key: str, data: bytes) -> None:
        """Store `data` under `key` atomically and durably, replacing any older object."""

    def put_file(self, key: str, path: Path) -> None:
        """Store the contents of the local file `path` under `key`, as `put` does."""

    def get(self, key: str) -> bytes:
        """The whole object; raises BlobNotFound."""

    def get_range(self, key: str, offset: int, length: int) -> bytes:
        """Up to `length` bytes from `offset` (fewer at the end, b"" past it).

        Raises BlobNotFound, and UsageError when offset < 0 or length < 1.
        """

    def iter_keys(self, prefix: str = "") -> Iterator[str]:
        """Keys starting with `prefix` (a plain string prefix, not only whole segments).

        The order is not promised: S3 lists in UTF-8 byte order, but SeaweedFS lists one
        directory level after another ("a/b" before "a-c"). Sort what must be sorted.
        """

    def delete(self, key: str) -> None:
        """Remove the object; a missing key is no error."""

    def size(self, key: str) -> int:
        """The object's length in bytes; raises BlobNotFound."""

    def exists(self, key: str) -> bool: ...


def check_key(key: str) -> str:
    """Return `key` if it is a valid blob key, else raise UsageError naming it.

    Valid: non-empty, at most MAX_KEY_BYTES of UTF-8, "/"-separated segments that are
    non-empty, do not start with "." (no "."/".." and no hidden names, which the local store
    keeps for its temporary files) and hold no backslash or control character.
    """
    if not key or len(key.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
        raise UsageError(f"blob key {key[:80]!r} must be 1 to {MAX_KEY_BYTES} bytes long")
    if any(ord(c) < 0x20 or c in "\\\x7f" for c in key):
        raise UsageError(f"blob key {key!r} holds a backslash or control character")
    for segment in key.split("/"):
        if not segment or segment.startswith("."):
            raise UsageError(
                f"blob key {key!r} must be a relative path of non-empty segments "
                "not starting with '.'"
            )
    return key


def check_prefix(prefix: str) -> str:
    """Return `prefix` if some valid key could start with it, else raise UsageError."""
    if prefix:
        # The last segment may be cut anywhere ("warc/node-1/2026-"), but not be "." or empty.
        check_key(prefix + "x" if prefix.endswith("/") else prefix)
    return prefix


def check_range(key: str, offset: int, length: int) -> None:
    if offset < 0 or length < 1:
        raise UsageError(f"blob range of {key!r}: offset {offset} / length {length} is invalid")
