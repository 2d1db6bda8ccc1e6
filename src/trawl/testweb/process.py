"""Run the test web as a subprocess, for tests and `trawl demo`.

`TestWebProcess` starts `python -m trawl.testweb`, waits for its ready line, and rebuilds
the same `TestWeb` in-process (generation is deterministic) so callers can compute what
a correct crawl fetches and check the request log for politeness.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Self

from trawl.testweb.request_log import RequestLogRecord, read_request_log
from trawl.testweb.sites import TestWeb, build_web

if TYPE_CHECKING:
    from types import TracebackType

_STOP_WAIT_S = 5.0


class TestWebProcess:
    """The test web server as a child process; use as a context manager.

    Files (request log, hosts file, server stderr) go to `workdir`, or to a temporary
    directory that `__exit__` removes. `hostile=True` adds the hostile sites
    (`TestWeb.hostile_sites()`), `freshness=True` the freshness features
    (`TestWeb.freshness()`; needs `sites >= 12`), `robots_cases=True` the issue 13
    robots.txt files (`TestWeb.robots_cases()`; needs `sites >= 12`), `scope_cases=True`
    the crawl-scope cases (`TestWeb.scope_cases()`; needs `sites >= 4`), `script_cases=True`
    the script-built sites and pages (`TestWeb.script_cases()`; needs `sites >= 3`).
    """

    __test__: ClassVar[bool] = False  # not a pytest test class

    def __init__(
        self,
        *,
        sites: int = 12,
        pages: int = 20,
        seed: int = 1,
        workdir: Path | None = None,
        port: int | None = None,
        ready_timeout_s: float = 20.0,
        hostile: bool = False,
        freshness: bool = False,
        robots_cases: bool = False,
        scope_cases: bool = False,
        script_cases: bool = False,
    ) -> None:
        self._args = (sites, pages, seed)
        self._hostile = hostile
        self._freshness = freshness
        self._robots_cases = robots_cases
        self._scope_cases = scope_cases
        self._script_cases = script_cases
        self._own_dir = workdir is None
        self.workdir = (
            Path(tempfile.mkdtemp(prefix="trawl-testweb-")) if workdir is None else workdir
        )
        self.log_path = self.workdir / "requests.jsonl"
        self.hosts_file = self.workdir / "hosts"
        self._stderr_path = self.workdir / "testweb.stderr"
        self._wanted_port = port
        self._ready_timeout_s = ready_timeout_s
        self._proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.seeds: list[str] = []
        self.web: TestWeb = build_web(
            sites,
            pages,
            seed,
            hostile=hostile,
            freshness=freshness,
            robots_cases=robots_cases,
            scope_cases=scope_cases,
            script_cases=script_cases,
        )

    def __repr__(self) -> str:
        state = "stopped" if self._proc is None else f"pid={self._proc.pid}"
        return f"<TestWebProcess {state} port={self.port} sites={self._args[0]}>"

    def start(self) -> Self:
        """Start the server and wait for its ready line; raises RuntimeError on failure."""
        sites, pages, seed = self._args
        command = [sys.executable, "-m", "trawl.testweb", "--sites", str(sites)]
        command += ["--pages", str(pages), "--seed", str(seed), "--log", str(self.log_path)]
        command += ["--hosts-out", str(self.hosts_file), "--exit-with-stdin"]
        if self._wanted_port is not None:
            command += ["--port", str(self._wanted_port)]
        if self._hostile:
            command.append("--hostile")
        if self._freshness:
            command.append("--freshness")
        if self._robots_cases:
            command.append("--robots-cases")
        if self._scope_cases:
            command.append("--scope-cases")
        if self._script_cases:
            command.append("--script-cases")
        self.workdir.mkdir(parents=True, exist_ok=True)
        with self._stderr_path.open("wb") as stderr:
            # stdin: a pipe only this process holds, so the web ends with it however it ends.
            self._proc = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr
            )
        try:
            ready = self._wait_ready(self._proc)
        except BaseException:
            self.stop()
            raise
        port, seeds = ready.get("port"), ready.get("seeds")
        if not isinstance(port, int) or not isinstance(seeds, list):
            self.stop()
            raise RuntimeError(f"test web ready line lacks port or seeds: {ready!r}")
        self.port = port
        self.seeds = [str(url) for url in seeds]
        return self

    def _wait_ready(self, proc: subprocess.Popen[bytes]) -> dict[str, object]:
        assert proc.stdout is not None
        deadline = time.monotonic() + self._ready_timeout_s
        buffer = b""
        with selectors.DefaultSelector() as selector:
            selector.register(proc.stdout, selectors.EVENT_READ)
            while b"\n" not in buffer:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise RuntimeError(f"test web not ready after {self._ready_timeout_s}s")
                if not selector.select(remaining):
                    continue
                chunk = os.read(proc.stdout.fileno(), 4096)
                if not chunk:
                    raise RuntimeError(f"test web exited before ready: {self._stderr_tail()}")
                buffer += chunk
        ready: dict[str, object] = json.loads(buffer.split(b"\n", 1)[0])
        if ready.get("ready") is not True:
            raise RuntimeError(f"test web printed {buffer!r} instead of a ready line")
        return ready

    def _stderr_tail(self) -> str:
        return self._stderr_path.read_text(errors="replace")[-2000:]

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs (tests pause it with SIGSTOP)."""
        return None if self._proc is None else self._proc.pid

    def requests(self) -> list[RequestLogRecord]:
        """Every request logged so far (the log is written line by line)."""
        return read_request_log(self.log_path)

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after 5 s; returns the exit code (None if never started)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(_STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()
        return proc.returncode

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)
