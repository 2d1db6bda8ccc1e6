from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from trawl.seen.seen_set import SeenSet
from trawl.store.sqlite_db import open_database

if TYPE_CHECKING:
    from pathlib import Path


def _h(s: str) -> str:
    return hashlib.sha256(s.encode()).hexdigest()[:32]


def _seen(tmp_path: Path) -> SeenSet:
    conn = open_database(tmp_path / "trawl.db")
    seen = SeenSet(conn, tmp_path / "seen.bloom", capacity=10_000, fp_rate=0.01)
    seen.load()
    return seen


def test_checkpoint_and_reload_keep_what_was_seen(tmp_path: Path) -> None:
    seen = _seen(tmp_path)
    assert seen.add_if_new(_h("a"))
    assert not seen.add_if_new(_h("a"))
    seen.snapshot()()
    again = _seen(tmp_path)
    assert not again.add_if_new(_h("a"))
    assert again.add_if_new(_h("b"))


def test_a_snapshot_saves_the_set_as_it_was_when_taken(tmp_path: Path) -> None:
    # The crawl copies the set right after a commit and saves the copy on a thread while it
    # goes on: a URL added meanwhile (its queue row not committed yet) must not be saved as
    # seen, or a crash before the next commit would leave it seen and never queued.
    seen = _seen(tmp_path)
    assert seen.add_if_new(_h("committed"))
    save = seen.snapshot()
    assert seen.add_if_new(_h("after"))
    save()
    again = _seen(tmp_path)
    assert not again.add_if_new(_h("committed"))
    assert again.add_if_new(_h("after"))


def test_hashes_recorded_after_the_checkpoint_are_seen_after_restart(tmp_path: Path) -> None:
    seen = _seen(tmp_path)
    seen.snapshot()()
    conn = seen._conn
    conn.execute(
        "INSERT INTO queue(site, line, url, url_hash, depth, discovered_at)"
        " VALUES ('a.test', 1, 'http://a.test/q', ?, 0, 0)",
        (_h("queued"),),
    )
    conn.execute(
        "INSERT INTO pages(url_hash, url, site, last_fetched_at, http_status, storage_key, record)"
        " VALUES (?, 'http://a.test/p', 'a.test', 0, 200, '', '{}')",
        (_h("fetched"),),
    )
    conn.commit()
    again = _seen(tmp_path)
    assert not again.add_if_new(_h("queued"))
    assert not again.add_if_new(_h("fetched"))


def test_must_crawl_set_is_exact_and_durable(tmp_path: Path) -> None:
    seen = _seen(tmp_path)
    assert seen.add_must_crawl_if_new(_h("seed"))
    assert not seen.add_must_crawl_if_new(_h("seed"))
    seen._conn.execute("COMMIT")
    again = _seen(tmp_path)
    assert not again.add_must_crawl_if_new(_h("seed"))


def test_damaged_checkpoint_is_rebuilt_from_the_database(tmp_path: Path) -> None:
    (tmp_path / "seen.bloom").write_bytes(b"\x00garbage")
    seen = _seen(tmp_path)
    assert seen.load_error is not None
    assert "seen.bloom" in seen.load_error
    assert seen.add_if_new(_h("x"))
