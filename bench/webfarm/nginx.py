"""nginx serving a generated web on loopback, one IP per site, with a JSON access log.

    with Nginx(root, spec, access_log=root / "logs" / "trawl.jsonl") as server:
        ...crawl spec.seeds with --hosts-file spec.hosts_file...
    records = read_access_log(server.access_log)

Use a fresh instance (and log path) per crawler run: the log then holds that run only.
Files live under `root/nginx/` (config, pid file, error log, temp paths); nginx runs in
the foreground as our child (`daemon off`), in its own process group, and is stopped with
SIGQUIT (graceful), then SIGTERM, then SIGKILL to that group if it does not exit in time.

One server block listens on every site's IP (`listen 127.10.B.C:80`, one socket each;
2,000 are fine) and serves `root ROOT/www/$host`, so the Host header picks the site's
directory ($host is lowercased by nginx, and has no port). Unknown hosts get 404.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import socket
import subprocess
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path
    from types import TracebackType

    from .generate import WebSpec

# The crawler shares this 2-core machine: one worker (one core) serves the static files
# with sendfile at well over the rate a polite crawl of 2,000 sites can ask for.
WORKER_PROCESSES = 1
START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0

# One JSON object per line; escape=json makes the strings safe. $msec is the request's end
# (epoch seconds, ms resolution), $request_time its duration (ms resolution).
LOG_FORMAT = (
    '{"msec":$msec,"request_time":$request_time,"host":"$host",'
    '"server_addr":"$server_addr","status":$status,"bytes":$body_bytes_sent,'
    '"method":"$request_method","uri":"$request_uri","ua":"$http_user_agent",'
    '"connection":$connection,"connection_requests":$connection_requests}'
)


def ensure_nginx() -> str:
    """The nginx binary's path, installing Debian's `nginx-light` first if we are root."""
    found = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/sbin")
    if found:
        return found
    if os.geteuid() != 0:
        raise RuntimeError("nginx is not installed; run: apt-get install nginx-light")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "nginx-light"], check=True, env=env)
    found = shutil.which("nginx", path="/usr/sbin:/sbin:" + os.environ.get("PATH", ""))
    if not found:
        raise RuntimeError("apt-get installed nginx-light but no nginx binary was found")
    return found


def _nofile_limit() -> int:
    """As many open files as nginx may ask for: even root cannot pass the hard limit here."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return 32768 if hard == resource.RLIM_INFINITY else min(32768, hard)


def render_config(
    spec: WebSpec, *, port: int, access_log: Path, state_dir: Path, gzip_static: bool = False
) -> str:
    """The whole nginx.conf for `spec`: self-contained, touching nothing under /etc or /var.
    With `gzip_static`, a client that accepts gzip gets the page's `.gz` copy
    (generate.write_gzipped), compressed beforehand so nginx spends no CPU on it."""
    ips = sorted({site.ip for site in spec.sites})
    listens = "".join(f"        listen {ip}:{port};\n" for ip in ips)
    tmp = state_dir / "tmp"
    temp_paths = "".join(
        f"    {kind}_temp_path {tmp / kind};\n"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    # As root, the worker would otherwise run as `nobody`, which may not read the web
    # (say, under /root); it serves static files on loopback only.
    user = "user root;\n" if os.geteuid() == 0 else ""
    return f"""# Written by bench/webfarm/nginx.py; regenerated on every start.
{user}daemon off;
master_process on;
worker_processes {WORKER_PROCESSES};  # the crawler needs the other core
worker_rlimit_nofile {_nofile_limit()};  # one socket per site IP plus 8192 connections
pid {state_dir / "nginx.pid"};
error_log {state_dir / "error.log"} warn;
lock_file {state_dir / "nginx.lock"};

events {{
    worker_connections 8192;
    multi_accept on;
}}

http {{
    types {{ text/html html; text/plain txt; }}
    default_type application/octet-stream;
    charset utf-8;
    server_tokens off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_requests 10000;
    keepalive_timeout 60s;
    # Every page is opened once per crawl, but robots.txt and the hot paths repeat.
    open_file_cache off;  # cached descriptors ran nginx out of files (500s) under load
    gzip_static {"on" if gzip_static else "off"};
    log_format bench escape=json '{LOG_FORMAT}';
    # Buffered: lines are written whole, at most 1 s late, and flushed on stop.
    access_log {access_log} bench buffer=64k flush=1s;
{temp_paths}
    server {{
{listens}        server_name _;
        root {spec.www_dir}/$host;
        index index.html;
        log_not_found off;  # 404s are expected (missing robots.txt): keep the error log short
        absolute_redirect off;
        location / {{ }}
    }}
}}
"""


class Nginx:
    """A private nginx for one crawler run; a context manager that starts and stops it."""

    def __init__(
        self,
        root: Path,
        spec: WebSpec,
        port: int = 80,
        *,
        access_log: Path | None = None,
        gzip_static: bool = False,
    ) -> None:
        self.root = root
        self.gzip_static = gzip_static
        self.spec = spec
        self.port = port
        self.state_dir = root / "nginx"
        self.access_log = access_log or self.state_dir / "access.jsonl"
        self.error_log = self.state_dir / "error.log"
        self.config = self.state_dir / "nginx.conf"
        self._process: subprocess.Popen[bytes] | None = None

    def __repr__(self) -> str:
        state = f"pid={self._process.pid}" if self._process else "stopped"
        return f"<Nginx {len(self.spec.sites)} sites port={self.port} {state} {self.access_log}>"

    def __enter__(self) -> Nginx:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Write the config, start nginx and wait until it answers on the first site's IP."""
        binary = ensure_nginx()
        (self.state_dir / "tmp").mkdir(parents=True, exist_ok=True)
        self.access_log.parent.mkdir(parents=True, exist_ok=True)
        self.error_log.write_bytes(b"")  # so a start failure shows this run's errors only
        self.config.write_text(
            render_config(
                self.spec,
                port=self.port,
                access_log=self.access_log,
                state_dir=self.state_dir,
                gzip_static=self.gzip_static,
            ),
            encoding="utf-8",
        )
        command = [binary, "-p", str(self.state_dir), "-c", str(self.config)]
        command += ["-e", str(self.error_log)]  # else startup errors go to the default log
        self._process = subprocess.Popen(command, start_new_session=True)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self) -> None:
        assert self._process is not None
        ip, deadline = self.spec.sites[0].ip, time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"nginx exited at start: {self._error_tail()}")
            with contextlib.suppress(OSError), socket.create_connection((ip, self.port), 0.5):
                return
            time.sleep(0.05)
        raise RuntimeError(f"nginx did not answer on {ip}:{self.port}: {self._error_tail()}")

    def _error_tail(self) -> str:
        with contextlib.suppress(OSError):
            return self.error_log.read_text(errors="replace")[-2000:].strip()
        return "(no error log)"

    def stop(self) -> None:
        """Graceful stop (SIGQUIT flushes the access log), then harder if it hangs."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        for sig in (signal.SIGQUIT, signal.SIGTERM):
            process.send_signal(sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(STOP_TIMEOUT_S)
                return
        # The master is stuck: kill its whole group (its workers too), which we created.
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
