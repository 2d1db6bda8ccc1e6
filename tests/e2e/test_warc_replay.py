"""Issue 14 item 7: the WARC directory is a complete, indexed archive that pywb replays.

One crawl of the test web (module fixture); then warcio reads every record, every response
has its request, robots.txt, a 404 and a 301 are archived, each CDXJ line points at its
record, and pywb, given the WARC directory as archive and index (no indexing pass), replays
a page, a redirect and a 404.

pywb pins redis==2.10.6 and werkzeug==3.1.7, which conflict with trawl's own redis>=5, so
it cannot live in trawl's environment: it runs from its own venv, made by
`scripts/pywb-venv` (default `.venv-pywb/` at the repo root, or $TRAWL_PYWB_PYTHON). Without
it the pywb tests skip; the others run.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from warcio.archiveiterator import ArchiveIterator

from trawl.cli.runner import run_crawl
from trawl.config import Settings, with_overrides
from trawl.store.warc import read_record
from trawl.testweb.process import TestWebProcess

if TYPE_CHECKING:
    from collections.abc import Iterator

    from warcio.recordloader import ArcWarcRecord

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Archive:
    warc_dir: Path
    records: list[tuple[Path, int, ArcWarcRecord, bytes]]  # file, offset, record, content

    def of_type(self, kind: str) -> list[ArcWarcRecord]:
        return [r for _, _, r, _ in self.records if r.rec_type == kind]


def read_archive(warc_dir: Path) -> Archive:
    out = []
    for path in sorted(warc_dir.glob("*.warc.gz")):
        with open(path, "rb") as f:
            it = ArchiveIterator(f, check_digests="raise")
            for record in it:
                content = record.content_stream().read()
                out.append((path, it.get_record_offset(), record, content))
    return Archive(warc_dir, out)


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Archive:
    tmp = tmp_path_factory.mktemp("replay")
    with TestWebProcess(sites=2, pages=6, seed=3, workdir=tmp / "web") as web:
        settings = with_overrides(
            Settings(),
            crawl={"contact_url": "https://trawl.invalid/test", "max_time_s": 60.0},
            network={"hosts_file": str(web.hosts_file)},
        )
        seeds = [(u, "test seed") for u in web.seeds]
        asyncio.run(run_crawl(settings, tmp / "data", seeds, io.StringIO(), is_tty=False))
    return read_archive(tmp / "data" / "warc")


def header(record: ArcWarcRecord, name: str) -> str:
    return record.rec_headers.get_header(name) or ""


def test_issue_14_every_capture_has_its_request_both_ways(archive: Archive) -> None:
    requests = {header(r, "WARC-Record-ID"): r for r in archive.of_type("request")}
    captures = archive.of_type("response") + archive.of_type("revisit")
    assert len(requests) == len(captures) > 10
    for record in captures:
        request = requests[header(record, "WARC-Concurrent-To")]
        assert header(request, "WARC-Concurrent-To") == header(record, "WARC-Record-ID")
        assert header(request, "WARC-Target-URI") == header(record, "WARC-Target-URI")
        head = request.http_headers
        assert head.protocol == "GET"
        assert head.get_header("User-Agent").startswith("trawl/")
        assert head.get_header("Accept-Encoding")
        host = header(record, "WARC-Target-URI").split("/")[2]
        assert head.get_header("Host") == host


def test_issue_14_robots_404_and_redirects_are_archived(archive: Archive) -> None:
    statuses: dict[str, set[str]] = {}
    for record in archive.of_type("response"):
        url = header(record, "WARC-Target-URI")
        statuses.setdefault(record.http_headers.get_statuscode(), set()).add(url)
    assert any(u.endswith("/robots.txt") for u in statuses["200"] | statuses.get("404", set()))
    assert statuses["404"]
    assert statuses["301"]
    assert statuses["302"]


def test_issue_14_cdxj_lines_point_at_their_records(archive: Archive) -> None:
    by_place = {(p.name, off): r for p, off, r, _ in archive.records}
    indexed = 0
    for index in sorted(archive.warc_dir.glob("*.cdxj")):
        lines = index.read_text().splitlines()
        assert lines == sorted(lines)
        for line in lines:
            _key, stamp, raw = line.split(" ", 2)
            fields = json.loads(raw)
            record = by_place[(fields["filename"], int(fields["offset"]))]
            assert record.rec_type in ("response", "revisit")
            assert header(record, "WARC-Target-URI") == fields["url"]
            assert header(record, "WARC-Date").replace("-", "").replace(":", "")[:15] == (
                stamp[:8] + "T" + stamp[8:]
            )
            if record.rec_type == "response":
                assert fields["status"] == record.http_headers.get_statuscode()
                key = f"{fields['filename']}:{fields['offset']}:{fields['length']}"
                assert read_record(archive.warc_dir, key).record_id == header(
                    record, "WARC-Record-ID"
                )
            indexed += 1
    assert indexed == len(archive.of_type("response")) + len(archive.of_type("revisit"))


# --- pywb ---------------------------------------------------------------------------------


def pywb_python() -> Path:
    path = Path(os.environ.get("TRAWL_PYWB_PYTHON", REPO / ".venv-pywb" / "bin" / "python"))
    if not path.exists():
        pytest.skip(f"no pywb venv at {path}: run scripts/pywb-venv")
    return path


# pywb's own indexer (what `cdx-indexer --cdxj --sort` runs), to stdout.
PYWB_INDEX = """
import sys
from pywb.indexer.cdxindexer import write_multi_cdx_index
write_multi_cdx_index("-", sys.argv[1:], cdxj=True, sort=True)
"""


def test_issue_14_cdxj_equals_pywbs_own_index(archive: Archive) -> None:
    python = pywb_python()
    files = [str(p) for p in sorted(archive.warc_dir.glob("*.warc.gz"))]
    theirs = subprocess.run(
        [str(python), "-c", PYWB_INDEX, *files],
        capture_output=True, text=True, timeout=60, check=True, cwd=archive.warc_dir,
    ).stdout.splitlines()  # fmt: skip
    ours = [
        line for p in sorted(archive.warc_dir.glob("*.cdxj")) for line in p.read_text().splitlines()
    ]

    def parsed(lines: list[str]) -> list[tuple[str, str, dict[str, str]]]:
        out = []
        for line in lines:
            key, stamp, raw = line.split(" ", 2)
            fields = json.loads(raw)
            fields["filename"] = Path(fields["filename"]).name
            out.append((key, stamp, fields))
        return sorted(out, key=lambda t: (t[0], t[1], t[2]["filename"], int(t[2]["offset"])))

    assert parsed(ours) == parsed(theirs)


@pytest.fixture(scope="module")
def pywb_url(archive: Archive, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    python = pywb_python()
    root = tmp_path_factory.mktemp("pywb")
    warc = f"{archive.warc_dir}/"
    (root / "config.yaml").write_text(
        f"collections:\n  trawl:\n    archive_paths: {warc}\n    index_paths: {warc}\n"
    )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    wayback = python.parent / "wayback"
    with (root / "pywb.log").open("wb") as log:  # the child keeps its own copy of the fd
        proc = subprocess.Popen(
            [str(wayback), "--bind", "127.0.0.1", "--port", str(port)],
            cwd=root, stdout=subprocess.DEVNULL, stderr=log,
        )  # fmt: skip
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{base}/", timeout=2).close()
                break
            except (urllib.error.URLError, ConnectionError):
                assert proc.poll() is None, (root / "pywb.log").read_text()
                assert time.monotonic() < deadline, "pywb did not answer within 30 s"
                time.sleep(0.2)
        yield f"{base}/trawl"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def replay(base: str, record: ArcWarcRecord) -> tuple[int, dict[str, str], bytes]:
    stamp = "".join(c for c in header(record, "WARC-Date") if c.isdigit())
    url = f"{base}/{stamp}id_/{header(record, 'WARC-Target-URI')}"
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(url, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, dict(exc.headers), exc.read()


def first_response(archive: Archive, status: str) -> tuple[ArcWarcRecord, bytes]:
    for _, _, record, content in archive.records:
        if record.rec_type == "response" and record.http_headers.get_statuscode() == status:
            return record, content
    raise AssertionError(f"no {status} response archived")


def test_issue_14_pywb_replays_a_page_a_redirect_and_a_404(archive: Archive, pywb_url: str) -> None:
    page, body = next(
        (r, c)
        for _, _, r, c in archive.records
        if r.rec_type == "response"
        and r.http_headers.get_statuscode() == "200"
        and "html" in (r.http_headers.get_header("Content-Type") or "")
    )
    status, headers, got = replay(pywb_url, page)
    assert (status, got) == (200, body)
    assert headers.get("Memento-Datetime")  # from the archive, not a live fetch

    redirect, _ = first_response(archive, "301")
    status, headers, _ = replay(pywb_url, redirect)
    assert status == 301
    target = redirect.http_headers.get_header("Location") or ""
    assert headers["Location"].endswith(target.split("://", 1)[-1])

    missing, body = first_response(archive, "404")
    status, headers, got = replay(pywb_url, missing)
    assert (status, got) == (404, body)
    assert headers.get("Memento-Datetime")  # the archived 404, not pywb's "not found"
