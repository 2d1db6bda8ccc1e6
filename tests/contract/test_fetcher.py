"""The Fetcher contract, against every adapter: AiohttpFetcher, Http1Fetcher and the
ScriptedFetcher fake.

Each case is a script (path -> `Answer`s) and a check. The real adapters meet a raw
asyncio server on 127.0.0.1 that writes each answer byte for byte (status line, the
scripted headers and nothing else, the body) and a loopback DNS server that knows no name;
the fake gets the same script. A `connect` answer's path is put on a port that refuses
connections, a `dns` answer's on a name that does not resolve, so both adapters meet the
same failure. The checks spell out the exact FetchResult, so the fake cannot drift from
what the real fetcher returns.
"""

from __future__ import annotations

import asyncio
import functools
import gzip
import http
import socket
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, TypeAlias

import pytest
from tests.fakes.fetcher import Answer, ScriptedFetcher
from tests.servers.dns import DnsServer
from tests.servers.raw_http import response_head

from trawl.errors import FetchError
from trawl.fetch.dns import CachingResolver, HostMap
from trawl.fetch.fetcher import AiohttpFetcher
from trawl.fetch.http1 import Http1Fetcher
from trawl.model import first_header

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from trawl.fetch.ports import Fetcher

pytestmark = pytest.mark.timeout(30)

UA = "trawl/0.1 (+https://example.org/bot)"
HOST = "site.test"
NOWHERE = "nowhere.test"
TIMEOUT_S = 0.5
HTML = (("Content-Type", "text/html; charset=utf-8"),)
BASE_HEAD = (
    "User-Agent: " + UA + "\r\n"
    "Accept: text/html,application/xhtml+xml;q=0.9,*/*;q=0.1\r\n"
    "Accept-Encoding: gzip, deflate, br\r\n"
)

Script = dict[str, Answer | list[Answer]]


def sized(headers: tuple[tuple[str, str], ...], body: bytes) -> tuple[tuple[str, str], ...]:
    return (*headers, ("Content-Length", str(len(body))))


def _answers(script: Script, path: str) -> Sequence[Answer]:
    answers = script[path]
    return [answers] if isinstance(answers, Answer) else answers


def _host_port(script: Script, path: str, live: int, dead: int) -> tuple[str, int]:
    kind = _answers(script, path)[0].error_kind if path in script else None
    if kind == "connect":
        return HOST, dead
    if kind == "dns":
        return NOWHERE, live
    return HOST, live


class Harness(Protocol):
    fetcher: Fetcher

    def url(self, path: str) -> str:
        """Where the script's `path` is served (a refusing port or a dead name for failures)."""

    def sent(self) -> list[tuple[str, dict[str, str]]]:
        """(path, headers) of every request that reached the server, in order."""

    def now(self) -> float:
        """The adapter's clock (results' started_at and elapsed_s are on it)."""


Check: TypeAlias = Callable[[Harness], Coroutine[object, object, None]]


# --- the real adapters against a raw loopback server -----------------------------------------


@dataclass
class ScriptServer:
    """Writes each scripted answer verbatim; logs the requests it read."""

    script: Script
    log: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    served: dict[str, int] = field(default_factory=dict)
    tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.tasks.add(task)
        try:
            while await self._answer_one(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def _answer_one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        head = await reader.readuntil(b"\r\n\r\n")
        request_line, *lines = head.decode("latin-1").split("\r\n")[:-2]
        path = request_line.split(" ")[1]
        headers = dict(line.split(": ", 1) for line in lines)
        self.log.append((path, headers))
        answer = self._next(path)
        if answer.error_kind == "reset":
            return False
        await asyncio.sleep(answer.elapsed_s)
        writer.write(_wire(answer))
        await writer.drain()
        # Keep the connection only while its framing holds; otherwise the close ends the body.
        bodiless = answer.status in (204, 304) or answer.status < 200
        length = first_header(answer.headers, "Content-Length")
        return bodiless or length == str(len(answer.body))

    def _next(self, path: str) -> Answer:
        if path not in self.script:
            return Answer(status=404, headers=(("Content-Length", "0"),))
        answers = _answers(self.script, path)
        n = self.served.get(path, 0)
        self.served[path] = n + 1
        return answers[min(n, len(answers) - 1)]


def _wire(answer: Answer) -> bytes:
    status = f"{answer.status} {http.HTTPStatus(answer.status).phrase}"
    return response_head(status, answer.headers) + answer.body


class RealHarness:
    def __init__(self, fetcher: Fetcher, server: ScriptServer, live: int, dead: int):
        self.fetcher: Fetcher = fetcher
        self.server = server
        self.live, self.dead = live, dead

    def url(self, path: str) -> str:
        host, port = _host_port(self.server.script, path, self.live, self.dead)
        return f"http://{host}:{port}{path}"

    def sent(self) -> list[tuple[str, dict[str, str]]]:
        return list(self.server.log)

    def now(self) -> float:
        return time.time()


REAL_ADAPTERS = {"aiohttp": AiohttpFetcher, "http1": Http1Fetcher}


async def _run_real(adapter: str, script: Script, check: Check) -> None:
    server = ScriptServer(script)
    http_server = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    live = http_server.sockets[0].getsockname()[1]
    refusing = socket.socket()  # bound, never listening: connections to it are refused
    refusing.bind(("127.0.0.1", 0))
    loop = asyncio.get_running_loop()
    dns_transport, _ = await loop.create_datagram_endpoint(
        lambda: DnsServer({}), local_addr=("127.0.0.1", 0)
    )
    resolver = CachingResolver(
        HostMap.from_options([f"{HOST}:127.0.0.1"], None),
        dns_server=f"127.0.0.1:{dns_transport.get_extra_info('sockname')[1]}",
    )
    fetcher = REAL_ADAPTERS[adapter](
        user_agent=UA, resolver=resolver, allow_private=True, total_timeout_s=TIMEOUT_S
    )
    try:
        await check(RealHarness(fetcher, server, live, refusing.getsockname()[1]))
    finally:
        await fetcher.close()
        http_server.close()
        for task in list(server.tasks):
            task.cancel()
        await asyncio.gather(*server.tasks, return_exceptions=True)
        await http_server.wait_closed()
        dns_transport.close()
        refusing.close()


# --- the scripted fake on a virtual clock ----------------------------------------------------


class VirtualClock:
    def __init__(self) -> None:
        self.t = 1_000_000.0

    def now(self) -> float:
        return self.t

    async def sleep_until(self, at: float) -> None:
        self.t = max(self.t, at)
        await asyncio.sleep(0)

    async def wait_for(self, event: asyncio.Event, timeout_s: float) -> bool:
        self.t += 0.0 if event.is_set() else timeout_s
        return event.is_set()


FAKE_LIVE, FAKE_DEAD = 8080, 8081


class ScriptedHarness:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.clock = VirtualClock()
        answers: dict[str, Answer | Sequence[Answer]] = {
            self.url(path): answers for path, answers in script.items()
        }
        self.scripted = ScriptedFetcher(
            answers,
            clock=self.clock,
            hosts={HOST: "127.0.0.1", NOWHERE: None},
            default_ip=None,
            user_agent=UA,
            total_timeout_s=TIMEOUT_S,
        )
        self.fetcher: Fetcher = self.scripted

    def url(self, path: str) -> str:
        host, port = _host_port(self.script, path, FAKE_LIVE, FAKE_DEAD)
        return f"http://{host}:{port}{path}"

    def sent(self) -> list[tuple[str, dict[str, str]]]:
        paths = [(r.url.split("/", 3)[3], dict(r.headers)) for r in self.scripted.requests]
        return [("/" + path, {k: v for k, v in h.items() if k != "Host"}) for path, h in paths]

    def now(self) -> float:
        return self.clock.now()


ADAPTERS = [*REAL_ADAPTERS, "scripted"]


def run(adapter: str, script: Script, check: Check) -> None:
    if adapter in REAL_ADAPTERS:
        asyncio.run(_run_real(adapter, script, check))
    else:
        asyncio.run(check(ScriptedHarness(script)))


def request_head(h: Harness, path: str, extra: Mapping[str, str] | None = None) -> bytes:
    authority = h.url(path).split("/")[2]
    lines = "".join(f"{k}: {v}\r\n" for k, v in (extra or {}).items())
    return f"GET {path} HTTP/1.1\r\nHost: {authority}\r\n{BASE_HEAD}{lines}\r\n".encode()


def server_headers(sent: dict[str, str]) -> dict[str, str]:
    """The request headers without Host (the raw server sees it, the fake's log leaves it)."""
    return {k: v for k, v in sent.items() if k != "Host"}


# --- the cases -------------------------------------------------------------------------------

PAGE = b"<!doctype html><title>t</title><p>hello</p>"


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_status_headers_and_body_come_back_as_sent(adapter: str) -> None:
    headers = (*sized(HTML, PAGE), ("X-Trawl", "a"), ("x-trawl", "b"))
    script: Script = {"/page": Answer(200, headers, PAGE)}

    async def check(h: Harness) -> None:
        before = h.now()
        result = await h.fetcher.fetch(h.url("/page"))
        assert (result.url, result.status, result.body) == (h.url("/page"), 200, PAGE)
        assert result.headers == headers  # names as sent, repeats kept, in order
        assert result.header("X-TRAWL") == "a"
        assert result.raw_headers_block == (
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n"
            b"Content-Length: %d\r\nX-Trawl: a\r\nx-trawl: b\r\n\r\n" % len(PAGE)
        )
        assert (result.ip, result.truncated, result.error_kind, result.error) == (
            "127.0.0.1",
            False,
            None,
            None,
        )
        assert before <= result.started_at <= h.now()
        assert 0 <= result.elapsed_s <= h.now() - before

    run(adapter, script, check)


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_gzip_body_comes_back_decoded(adapter: str) -> None:
    wire = gzip.compress(PAGE)
    script: Script = {"/z": Answer(200, sized((*HTML, ("Content-Encoding", "gzip")), wire), wire)}

    async def check(h: Harness) -> None:
        result = await h.fetcher.fetch(h.url("/z"))
        assert (result.status, result.body, result.truncated) == (200, PAGE, False)
        assert result.header("Content-Encoding") == "gzip"

    run(adapter, script, check)


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_conditional_headers_are_sent_and_a_304_has_no_body(adapter: str) -> None:
    script: Script = {"/c": Answer(304, (("ETag", '"v1"'),))}
    conditional = {"If-None-Match": '"v1"', "If-Modified-Since": "Sun, 01 Nov 2026 10:00:00 GMT"}

    async def check(h: Harness) -> None:
        result = await h.fetcher.fetch(h.url("/c"), headers=conditional)
        assert (result.status, result.body, result.header("ETag")) == (304, None, '"v1"')
        [(path, sent)] = h.sent()
        assert path == "/c"
        assert server_headers(sent) == {
            "User-Agent": UA,
            "Accept": "text/html,application/xhtml+xml;q=0.9,*/*;q=0.1",
            "Accept-Encoding": "gzip, deflate, br",
            **conditional,
        }

    run(adapter, script, check)


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_request_head_is_recorded_as_sent(adapter: str) -> None:
    script: Script = {"/p?q=1&r=%C3%A9": Answer(200, sized(HTML, PAGE), PAGE)}

    async def check(h: Harness) -> None:
        path = "/p?q=1&r=%C3%A9"
        result = await h.fetcher.fetch(h.url(path), headers={"If-None-Match": '"x"'})
        assert result.request_head == request_head(h, path, {"If-None-Match": '"x"'})
        assert [p for p, _ in h.sent()] == [path]

    run(adapter, script, check)


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_redirect_is_returned_not_followed(adapter: str) -> None:
    script: Script = {
        "/old": Answer(301, (("Location", "/new"), ("Content-Length", "0"))),
        "/new": Answer(200, sized(HTML, PAGE), PAGE),
    }

    async def check(h: Harness) -> None:
        result = await h.fetcher.fetch(h.url("/old"))
        assert (result.status, result.header("location"), result.body) == (301, "/new", None)
        assert [p for p, _ in h.sent()] == ["/old"]

    run(adapter, script, check)


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_type_not_stored_is_not_read_unless_asked(adapter: str) -> None:
    text = b"User-agent: *\nDisallow: /private\n"
    plain = (("Content-Type", "text/plain"),)
    script: Script = {"/robots.txt": Answer(200, sized(plain, text), text)}

    async def check(h: Harness) -> None:
        skipped = await h.fetcher.fetch(h.url("/robots.txt"))
        read = await h.fetcher.fetch(h.url("/robots.txt"), read_any_type=True)
        assert (skipped.status, skipped.body, skipped.error_kind) == (200, None, None)
        assert skipped.header("Content-Type") == "text/plain"
        assert (read.status, read.body) == (200, text)

    run(adapter, script, check)


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_max_body_bytes_truncates_the_raw_body(adapter: str) -> None:
    big = b"<p>" + b"x" * 997
    script: Script = {
        "/big": Answer(200, sized(HTML, big), big),
        "/exact": Answer(200, sized(HTML, big[:100]), big[:100]),
    }

    async def check(h: Harness) -> None:
        cut = await h.fetcher.fetch(h.url("/big"), max_body_bytes=100)
        exact = await h.fetcher.fetch(h.url("/exact"), max_body_bytes=100)
        whole = await h.fetcher.fetch(h.url("/big"))
        assert (cut.status, cut.body, cut.truncated) == (200, big[:100], True)
        assert (exact.body, exact.truncated) == (big[:100], False)
        assert (whole.body, whole.truncated) == (big, False)

    run(adapter, script, check)


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_scripted_answers_come_in_order_and_the_last_repeats(adapter: str) -> None:
    script: Script = {
        "/flaky": [Answer(503, (("Content-Length", "0"),)), Answer(200, sized(HTML, PAGE), PAGE)]
    }

    async def check(h: Harness) -> None:
        statuses = [(await h.fetcher.fetch(h.url("/flaky"))).status for _ in range(3)]
        missing = await h.fetcher.fetch(h.url("/missing"))
        assert statuses == [503, 200, 200]
        assert (missing.status, missing.body) == (404, None)

    run(adapter, script, check)


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_on_sent_is_called_once_per_request_that_goes_out(adapter: str) -> None:
    script: Script = {
        "/a": Answer(200, sized(HTML, PAGE), PAGE),
        "/slow": Answer(200, sized(HTML, PAGE), PAGE, elapsed_s=0.2),
        "/refused": Answer(error_kind="connect"),
    }

    async def check(h: Harness) -> None:
        calls: list[str] = []
        for path in ("/a", "/slow", "/a", "/refused"):
            result = await h.fetcher.fetch(
                h.url(path), on_sent=functools.partial(calls.append, path)
            )
            assert result.status == (0 if path == "/refused" else 200)
        assert calls == ["/a", "/slow", "/a"]  # a refused connection sends nothing
        assert [p for p, _ in h.sent()] == calls

    run(adapter, script, check)


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_on_sent_comes_before_the_answer(adapter: str) -> None:
    script: Script = {"/slow": Answer(200, sized(HTML, PAGE), PAGE, elapsed_s=0.2)}

    async def check(h: Harness) -> None:
        start = h.now()
        sent_at: list[float] = []
        result = await h.fetcher.fetch(h.url("/slow"), on_sent=lambda: sent_at.append(h.now()))
        assert len(sent_at) == 1
        assert sent_at[0] - start < 0.15  # not after the server's 0.2 s wait
        assert result.elapsed_s >= 0.19

    run(adapter, script, check)


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_connection_refused_is_a_connect_failure(adapter: str) -> None:
    script: Script = {"/x": Answer(error_kind="connect")}

    async def check(h: Harness) -> None:
        result = await h.fetcher.fetch(h.url("/x"))
        authority = h.url("/x").split("/")[2]
        assert (result.status, result.error_kind, result.body, result.headers) == (
            0,
            "connect",
            None,
            (),
        )
        assert result.error is not None
        assert result.error.startswith(f"Cannot connect to host {authority} ssl:default [")
        assert (result.ip, result.request_head, result.raw_headers_block) == (
            "127.0.0.1",
            b"",
            b"",
        )
        assert h.sent() == []

    run(adapter, script, check)


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_an_answer_after_the_deadline_is_a_timeout(adapter: str) -> None:
    script: Script = {"/late": Answer(200, sized(HTML, PAGE), PAGE, elapsed_s=3.0)}

    async def check(h: Harness) -> None:
        sent: list[float] = []
        result = await h.fetcher.fetch(h.url("/late"), on_sent=lambda: sent.append(h.now()))
        assert (result.status, result.error_kind, result.error) == (
            0,
            "timeout",
            "total deadline passed",
        )
        assert (result.body, result.headers, result.ip) == (None, (), "127.0.0.1")
        assert result.request_head == request_head(h, "/late")
        assert len(sent) == 1
        assert TIMEOUT_S - 0.01 <= result.elapsed_s < 2.0

    run(adapter, script, check)


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_an_unresolvable_host_is_a_dns_failure(adapter: str) -> None:
    script: Script = {"/": Answer(error_kind="dns")}

    async def check(h: Harness) -> None:
        url = h.url("/")
        assert NOWHERE in url
        with pytest.raises(FetchError) as info:
            await h.fetcher.resolve(NOWHERE)
        assert info.value.kind == "dns"
        assert await h.fetcher.resolve(HOST) == "127.0.0.1"
        calls: list[None] = []
        result = await h.fetcher.fetch(url, on_sent=lambda: calls.append(None))
        assert (result.status, result.error_kind, result.ip, result.request_head) == (
            0,
            "dns",
            None,
            b"",
        )
        assert result.error is not None
        assert result.error.startswith(f"dns: {NOWHERE}: ")
        assert (calls, h.sent()) == ([], [])

    run(adapter, script, check)


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_given_ip_is_used_without_resolving(adapter: str) -> None:
    script: Script = {"/": Answer(200, sized(HTML, PAGE), PAGE)}

    async def check(h: Harness) -> None:
        ip = await h.fetcher.resolve(HOST)
        result = await h.fetcher.fetch(h.url("/"), ip=ip)
        assert (result.status, result.ip) == (200, "127.0.0.1")

    run(adapter, script, check)


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_close_is_idempotent(adapter: str) -> None:
    script: Script = {"/": Answer(200, sized(HTML, PAGE), PAGE)}

    async def check(h: Harness) -> None:
        assert (await h.fetcher.fetch(h.url("/"))).status == 200
        await h.fetcher.close()
        await h.fetcher.close()

    run(adapter, script, check)


# --- the real adapters only -------------------------------------------------------------------


@pytest.mark.parametrize("adapter", list(REAL_ADAPTERS))
def test_a_body_cut_short_by_the_server_is_a_reset_real_adapter_only(adapter: str) -> None:
    # The fake has no wire: its script says what arrives, not how a connection breaks half
    # way through a body, so only the real adapters meet a short Content-Length.
    script: Script = {"/short": Answer(200, (*HTML, ("Content-Length", "5000")), PAGE)}

    async def check(h: Harness) -> None:
        result = await h.fetcher.fetch(h.url("/short"))
        assert (result.status, result.error_kind, result.body) == (0, "reset", None)
        assert result.header("Content-Length") == "5000"  # the head had arrived

    run(adapter, script, check)
