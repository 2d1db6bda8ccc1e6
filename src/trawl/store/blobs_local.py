"""Blob store in a local directory: the embedded adapter and the reference for the others.

How this works: a key "a/b/c" is the file `<root>/a/b/c`. `put` writes a hidden temporary
file beside the target (`.c.<random>.part`), fsyncs it, renames it over the target and fsyncs
the directory, so a reader or a crash sees the old file or the new one, never a part (POSIX
rename is atomic within one file system). Directories a put creates are fsynced into their
parents too. Hidden names are never keys (`check_key`), so listing skips temporary files, and
one a crash left behind is only wasted space.

One difference from S3 that our key schemes never meet: a key cannot also be a "directory"
of other keys ("a" and "a/b"); such a put fails with DataError.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from trawl.errors import DataError
from trawl.store.blobs import BlobNotFound, check_key, check_prefix, check_range

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

_FILE_MODE = 0o644  # mkstemp creates 0600; objects are as readable as the WARC files


class LocalBlobStore:
    """Objects as files under `root` (created if missing). Thread-safe: no shared state."""

    def __init__(self, root: Path) -> None:
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DataError(f"{root}: cannot create the blob directory: {exc}") from exc
        self._root = root

    def __repr__(self) -> str:
        return f"<LocalBlobStore {self._root}>"

    @property
    def root(self) -> Path:
        return self._root

    def put(self, key: str, data: bytes) -> None:
        self._write_atomic(key, lambda f: f.write(data))

    def put_file(self, key: str, path: Path) -> None:
        try:
            with open(path, "rb") as src:
                self._write_atomic(key, lambda f: shutil.copyfileobj(src, f, 1024 * 1024))
        except OSError as exc:  # opening or reading the source; the target raises DataError
            raise DataError(f"cannot store {path} as {key!r}: {exc}") from exc

    def get(self, key: str) -> bytes:
        path = self._path(key)
        with self._reading(key, path):
            return path.read_bytes()

    def get_range(self, key: str, offset: int, length: int) -> bytes:
        check_range(key, offset, length)
        path = self._path(key)
        with self._reading(key, path), open(path, "rb") as f:
            f.seek(offset)
            return f.read(length)

    def iter_keys(self, prefix: str = "") -> Iterator[str]:
        check_prefix(prefix)
        base = prefix.rpartition("/")[0]
        found = [key for key in self._walk(base) if key.startswith(prefix)]
        yield from sorted(found, key=lambda k: k.encode("utf-8"))

    def delete(self, key: str) -> None:
        # No directory fsync: a delete lost in a crash leaves an object the next cleanup
        # deletes again, and keeping empty directories avoids racing a concurrent put.
        path = self._path(key)
        try:
            path.unlink()
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError as exc:
            raise DataError(f"{path}: cannot delete: {exc}") from exc

    def size(self, key: str) -> int:
        path = self._path(key)
        with self._reading(key, path):
            st = path.stat()
            if not path.is_file():
                raise IsADirectoryError(path)
            return st.st_size

    def exists(self, key: str) -> bool:
        try:
            self.size(key)
        except BlobNotFound:
            return False
        return True

    def _path(self, key: str) -> Path:
        return self._root.joinpath(*check_key(key).split("/"))

    def _reading(self, key: str, path: Path) -> _ReadErrors:
        return _ReadErrors(str(self._root), key, path)

    def _write_atomic(self, key: str, write: Callable[[BinaryIO], object]) -> None:
        path = self._path(key)
        try:
            self._make_parents(path.parent)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
        except OSError as exc:
            raise DataError(f"{path}: cannot create: {exc}") from exc
        try:
            with os.fdopen(fd, "wb") as f:
                write(f)
                f.flush()
                os.fchmod(f.fileno(), _FILE_MODE)
                os.fsync(f.fileno())
            os.replace(tmp, path)
            _fsync_dir(path.parent)
        except BaseException as exc:
            with suppress(OSError):
                os.unlink(tmp)
            if isinstance(exc, OSError):
                raise DataError(f"{path}: write failed: {exc}") from exc
            raise

    def _make_parents(self, directory: Path) -> None:
        """Create the missing directories down to `directory`, each fsynced into its parent."""
        missing: list[Path] = []
        while directory != self._root and not directory.is_dir():
            missing.append(directory)
            directory = directory.parent
        for d in reversed(missing):
            with suppress(FileExistsError):  # a concurrent put made it
                d.mkdir()
            _fsync_dir(d.parent)

    def _walk(self, base: str) -> Iterator[str]:
        """Every key at or below the directory `base` ("" is the root)."""
        top = self._root.joinpath(*base.split("/")) if base else self._root
        for dirpath, dirnames, filenames in os.walk(top, onerror=_raise_unless_missing):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            rel = Path(dirpath).relative_to(self._root).as_posix()
            for name in filenames:
                if not name.startswith("."):
                    yield name if rel == "." else f"{rel}/{name}"


class _ReadErrors:
    """Turns OSError from reading `path` into BlobNotFound or DataError."""

    def __init__(self, where: str, key: str, path: Path) -> None:
        self._where, self._key, self._path = where, key, path

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, _tb: object
    ) -> None:
        # A key whose path is a directory or runs through a file names no object, as on S3.
        if isinstance(exc, FileNotFoundError | IsADirectoryError | NotADirectoryError):
            raise BlobNotFound(self._where, self._key) from None
        if isinstance(exc, OSError):
            raise DataError(f"{self._path}: cannot read: {exc}") from exc


def _raise_unless_missing(exc: OSError) -> None:
    if not isinstance(exc, FileNotFoundError | NotADirectoryError):
        raise DataError(f"cannot list {exc.filename}: {exc}") from exc


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
