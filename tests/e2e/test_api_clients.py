"""`trawl seed` and `trawl events --api`: the command-line clients of `trawl serve`'s API,
run against a real `trawl serve` crawling the local test web."""

from __future__ import annotations

import contextlib
import json
import queue
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import pytest
from tests.e2e.serve_support import Served, free_port, run_serve
from tests.e2e.support import interruptible

from trawl.cli import main
from trawl.testweb.process import TestWebProcess

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("clients")
    with (
        TestWebProcess(sites=12, pages=8, seed=11, workdir=tmp / "web") as web,
        run_serve(web, tmp) as served,
    ):
        yield served


@pytest.fixture(autouse=True)
def no_token_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRAWL_API_TOKEN", raising=False)


def token_file(served: Served) -> str:
    return str(served.data.parent / "token")  # written by run_serve


def home_url(served: Served) -> str:
    site = next(s for s in served.web.web.sites if s.domain in served.web.seeds[0])
    return f"http://{site.domain}:{served.web.port}/"


def run_main(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = main(args)
    out, err = capsys.readouterr()
    return status, out, err


def assert_one_line_error(err: str) -> None:
    assert err.startswith("trawl: error: ")
    assert err.count("\n") == 1
    assert "Traceback" not in err


def wait_for_request(served: Served, path: str, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not any(r.path == path for r in served.web.requests()):
        assert time.monotonic() < deadline, f"{path} was not fetched in {timeout_s} s"
        time.sleep(0.5)


def test_seed_queues_new_urls_and_gives_reasons_for_rejections(
    served: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    new = home_url(served) + "client-seeded-1.html"
    args = ["seed", new, "mailto:ops@example.org", "--api", served.base + "/"]
    status, out, err = run_main(
        [*args, "--priority", "high", "--token-file", token_file(served)], capsys
    )
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "queued 1 of 2 URLs (0 already known, 1 rejected)"
    assert lines[1].startswith("rejected 'mailto:ops@example.org': not a crawlable URL")
    assert len(lines) == 2
    wait_for_request(served, "/client-seeded-1.html")


def test_seed_reads_a_seeds_file_and_counts_known_urls(
    served: Served,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"# known, then malformed\n{served.web.seeds[0]}\nhttp://\n")
    monkeypatch.setenv("TRAWL_API_TOKEN", (served.data.parent / "token").read_text().strip())
    status, out, _ = run_main(["seed", "--seeds-file", str(seeds), "--api", served.base], capsys)
    assert status == 0
    assert out.splitlines()[0] == "queued 0 of 2 URLs (1 already known, 1 rejected)"
    assert out.splitlines()[1].startswith("rejected 'http://': ")


def test_seed_without_or_with_a_wrong_token_fails_clearly_and_queues_nothing(
    served: Served,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = home_url(served) + "client-seeded-refused.html"
    status, out, err = run_main(["seed", url, "--api", served.base], capsys)
    assert (status, out) == (2, "")
    assert_one_line_error(err)
    assert "401 missing operator token" in err
    assert "--token-file" in err
    wrong = tmp_path / "wrong-token"
    wrong.write_text("not-the-token\n")
    status, out, err = run_main(
        ["seed", url, "--api", served.base, "--token-file", str(wrong)], capsys
    )
    assert (status, out) == (2, "")
    assert_one_line_error(err)
    assert "403 forbidden: wrong operator token" in err
    monkeypatch.setenv("TRAWL_API_TOKEN", "also-wrong")
    assert run_main(["seed", url, "--api", served.base], capsys)[0] == 2
    time.sleep(1.5)
    assert not any(r.path == "/client-seeded-refused.html" for r in served.web.requests())


def test_events_over_the_api_equal_the_local_ones(
    served: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    status, remote, _ = run_main(["events", "--api", served.base, "--from", "3"], capsys)
    assert status == 0
    status, local, _ = run_main(["events", "--data", str(served.data), "--from", "3"], capsys)
    assert status == 0
    remote_lines, local_lines = remote.splitlines(), local.splitlines()
    overlap = min(len(remote_lines), len(local_lines))  # the crawl keeps adding events
    assert overlap >= 10
    assert remote_lines[:overlap] == local_lines[:overlap]
    assert json.loads(remote_lines[0])["offset"] == 3


class LineReader:
    """Lines of a child's stdout, read by a thread so a test can wait with a deadline."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self._lines: queue.Queue[bytes] = queue.Queue()
        self._thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self._thread.start()

    def _read(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self._lines.put(line)

    def next_line(self, timeout_s: float = 30) -> bytes:
        try:
            return self._lines.get(timeout=timeout_s)
        except queue.Empty:
            raise AssertionError(f"no line within {timeout_s} s") from None

    def line_with(self, needle: bytes, timeout_s: float = 30) -> bytes:
        deadline = time.monotonic() + timeout_s
        while needle not in (line := self.next_line(max(deadline - time.monotonic(), 0.01))):
            pass
        return line


@contextlib.contextmanager
def follower(
    api: str, stderr: Path, *extra: str
) -> Iterator[tuple[subprocess.Popen[bytes], LineReader]]:
    command = [sys.executable, "-m", "trawl", "events", "--api", api, "--follow", *extra]
    with stderr.open("wb") as err:
        proc = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=err, preexec_fn=interruptible
        )
    try:
        yield proc, LineReader(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        assert proc.stdout is not None
        proc.stdout.close()


def test_follow_prints_new_events_as_they_come(served: Served, tmp_path: Path) -> None:
    stderr = tmp_path / "stderr"
    with follower(served.base, stderr, "--from", "0") as (proc, lines):
        assert json.loads(lines.next_line())["type"] == "page.fetched"  # the old ones first
        # A new URL on a known page (the test web ignores the query): a fetch, so an event.
        new = home_url(served) + "?client-follow=1"
        status = main(["seed", new, "--api", served.base, "--priority", "high",
                       "--token-file", token_file(served)])  # fmt: skip
        assert status == 0
        event = json.loads(lines.line_with(b"client-follow"))
        assert event["url"].endswith("?client-follow=1")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 130
    assert b"Traceback" not in stderr.read_bytes()


def test_unreachable_api_is_a_one_line_error(tmp_path: Path) -> None:
    api = f"http://127.0.0.1:{free_port()}"
    for args in (["events", "--api", api], ["events", "--api", api, "--follow"],
                 ["seed", "http://a.test/", "--api", api]):  # fmt: skip
        result = subprocess.run(
            [sys.executable, "-m", "trawl", *args], capture_output=True, timeout=60
        )
        assert result.returncode == 2, args
        assert result.stderr.startswith(b"trawl: error: ")
        assert b"cannot reach the API" in result.stderr
        assert result.stderr.count(b"\n") == 1
        assert result.stdout == b""


class _EventsServer(ThreadingHTTPServer):
    daemon_threads = True
    events: list[int]


class _ScriptedEvents(BaseHTTPRequestHandler):
    """GET /v1/events answered from the server's list of offsets, as the API answers."""

    server: _EventsServer

    def do_GET(self) -> None:
        start = int(parse_qs(urlsplit(self.path).query)["from"][0])
        offsets = [o for o in self.server.events if o >= start]
        if not offsets:
            time.sleep(0.2)  # a short long-poll
        answer = {
            "events": [{"offset": o} for o in offsets],
            "next": max([start - 1, *offsets]) + 1,
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the test's output stays clean


class ScriptedApi:
    """A stand-in for the events endpoint on a fixed port, to stop and start again."""

    def __init__(self, port: int, events: list[int]) -> None:
        self._server = _EventsServer(("127.0.0.1", port), _ScriptedEvents)
        self._server.events = events
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(timeout=10)


def test_follow_resumes_by_offset_after_the_api_was_briefly_away(tmp_path: Path) -> None:
    port = free_port()
    stderr = tmp_path / "stderr"
    api = ScriptedApi(port, [0, 1])
    try:
        with follower(f"http://127.0.0.1:{port}", stderr) as (proc, lines):
            assert [json.loads(lines.next_line())["offset"] for _ in range(2)] == [0, 1]
            api.stop()
            deadline = time.monotonic() + 10
            while b"retrying from offset 2" not in stderr.read_bytes():
                assert time.monotonic() < deadline, stderr.read_bytes()
                time.sleep(0.1)
            api = ScriptedApi(port, [0, 1, 2, 3])
            assert [json.loads(lines.next_line())["offset"] for _ in range(2)] == [2, 3]
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=10) == 130
    finally:
        api.stop()
    notes = stderr.read_text().splitlines()
    assert notes
    assert all(n.startswith(f"trawl: http://127.0.0.1:{port}: ") for n in notes), notes
    assert all("retrying from offset 2" in n for n in notes), notes
