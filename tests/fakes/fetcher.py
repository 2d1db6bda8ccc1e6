"""ScriptedFetcher: the Fetcher port answered from a script, on an injected Clock.

Each URL's answer is scripted (`Answer`); an exchange takes `Answer.elapsed_s` on the clock,
so a loop test on a virtual clock runs in milliseconds. The FetchResult is what
AiohttpFetcher returns for the same exchange with a server answering the script byte for byte
(tests/contract/test_fetcher.py holds the two together): header names as sent, the status
line and request head as on the wire, the body read only for stored types, cut at the raw
byte cap and decoded by the same BodyDecoder, failures as `status=0` with `error_kind`.
"""

from __future__ import annotations

import http
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import yarl

from trawl.errors import FetchError
from trawl.fetch.decode import BodyDecoder
from trawl.fetch.http_common import ACCEPT, ACCEPT_ENCODING, DEFAULT_STORED_TYPES, MIB
from trawl.model import FetchResult, first_header

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from trawl.clock import Clock

DEFAULT_IP = "192.0.2.1"  # TEST-NET-1: never a real peer
# Failures before the request goes out: no on_sent, no request head, nothing logged.
_BEFORE_SENDING = frozenset({"dns", "connect", "blocked_address", "invalid_url"})
_MESSAGES = {
    "dns": "dns: {host}: Domain name not found",
    "connect": "Cannot connect to host {host}:{port} ssl:default [Connect call failed]",
    "timeout": "total deadline passed",
    "reset": "Server disconnected",
    "protocol": "Bad status line",
    "blocked_address": "{host}: {ip} is not a public address",
    "invalid_url": "{url}",
}


@dataclass(frozen=True, slots=True)
class Answer:
    """One scripted exchange. `error_kind` set: the exchange fails that way instead."""

    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""  # as sent on the wire (compressed if Content-Encoding says so)
    error_kind: str | None = None
    elapsed_s: float = 0.0


NOT_FOUND = Answer(status=404)


class SentRequest(NamedTuple):
    url: str
    sent_at: float
    headers: Mapping[str, str]


class ScriptedFetcher:
    """The Fetcher port from a script: `answers` maps a URL to its answer, or to answers in
    order (the last one repeats); other URLs get a bare 404.

    `hosts` maps host names to IPs (None: the name does not resolve); a host not in it
    resolves to `default_ip`, or fails like an unknown name if that is None.
    """

    def __init__(
        self,
        answers: Mapping[str, Answer | Sequence[Answer]],
        *,
        clock: Clock,
        hosts: Mapping[str, str | None] | None = None,
        default_ip: str | None = DEFAULT_IP,
        user_agent: str = "trawl/0 (+https://example.org/bot)",
        total_timeout_s: float = 10.0,
        max_body_bytes: int = 10 * MIB,
        max_decoded_bytes: int = 50 * MIB,
        stored_types: tuple[str, ...] = DEFAULT_STORED_TYPES,
    ) -> None:
        self._answers = {
            url: (a,) if isinstance(a, Answer) else tuple(a) for url, a in answers.items()
        }
        if any(not a for a in self._answers.values()):
            raise ValueError("every scripted URL needs at least one answer")
        self.clock = clock
        self.hosts = dict(hosts or {})
        self.default_ip = default_ip
        self.user_agent = user_agent
        self.total_timeout_s = total_timeout_s
        self.max_body_bytes = max_body_bytes
        self.max_decoded_bytes = max_decoded_bytes
        self.stored_types = tuple(t.lower() for t in stored_types)
        self.requests: list[SentRequest] = []  # what a server's log would show, in order
        self._served: dict[str, int] = {}
        self.closed = False

    def __repr__(self) -> str:
        return (
            f"<ScriptedFetcher urls={len(self._answers)} requests={len(self.requests)} "
            f"closed={self.closed}>"
        )

    async def resolve(self, host: str) -> str:
        name = host.rstrip(".").lower()
        ip = self.hosts.get(name, self.default_ip)
        if ip is None:
            raise FetchError("dns", f"{name}: Domain name not found")
        return ip

    async def close(self) -> None:
        self.closed = True

    def next_answer(self, url: str) -> Answer:
        """The answer the next fetch of `url` gets (and counts it as served)."""
        script = self._answers.get(url)
        if script is None:
            return NOT_FOUND
        n = self._served.get(url, 0)
        self._served[url] = n + 1
        return script[min(n, len(script) - 1)]

    async def fetch(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        read_any_type: bool = False,
        max_body_bytes: int | None = None,
        ip: str | None = None,
        on_sent: Callable[[], None] | None = None,
    ) -> FetchResult:
        started_at = self.clock.now()
        target = yarl.URL(url, encoded=True)
        host = target.raw_host or ""
        if ip is None:
            try:
                ip = await self.resolve(host)
            except FetchError as exc:
                return FetchResult.failed(url, started_at, self.clock.now(), exc.kind, str(exc))
        answer = self.next_answer(url)
        kind = answer.error_kind
        context = {"host": host, "port": target.port, "ip": ip, "url": url}
        if kind in _BEFORE_SENDING:
            await self._take(started_at, answer.elapsed_s)
            message = _MESSAGES.get(kind, kind).format(**context)
            return FetchResult.failed(url, started_at, self.clock.now(), kind, message, ip=ip)
        sent = self._request_headers(target, headers)
        self.requests.append(SentRequest(url, self.clock.now(), sent))
        if on_sent is not None:
            on_sent()
        head = _request_head(target, sent)
        if kind is None and answer.elapsed_s > self.total_timeout_s:
            kind = "timeout"  # the answer comes after the deadline: cut there
        await self._take(started_at, answer.elapsed_s)
        if kind is not None:
            message = _MESSAGES.get(kind, kind).format(**context)
            return FetchResult.failed(
                url, started_at, self.clock.now(), kind, message, ip=ip, request_head=head
            )
        cap = self.max_body_bytes if max_body_bytes is None else max_body_bytes
        return self._answered(url, started_at, ip, answer, head, read_any_type, cap)

    async def _take(self, started_at: float, elapsed_s: float) -> None:
        await self.clock.sleep_until(started_at + min(elapsed_s, self.total_timeout_s))

    def _answered(
        self,
        url: str,
        started_at: float,
        ip: str,
        answer: Answer,
        request_head: bytes,
        read_any_type: bool,
        max_body_bytes: int,
    ) -> FetchResult:
        body: bytes | None = None
        truncated = False
        error_kind = error = None
        mime = (first_header(answer.headers, "Content-Type") or "").split(";", 1)[0]
        if read_any_type or mime.strip().lower() in self.stored_types:
            raw = answer.body
            truncated = len(raw) > max_body_bytes
            decoder = BodyDecoder(
                first_header(answer.headers, "Content-Encoding"), self.max_decoded_bytes
            )
            decoder.feed(raw[:max_body_bytes])
            body = decoder.finish(expect_end=not truncated)
            if decoder.too_big:
                error_kind = "too_big"
                error = f"body decodes to more than {self.max_decoded_bytes} bytes"
            elif decoder.error is not None:
                error_kind, error = "decode", decoder.error
        failed = error_kind is not None
        return FetchResult(
            url=url,
            status=0 if failed else answer.status,
            headers=answer.headers,
            body=None if failed else body,
            started_at=started_at,
            elapsed_s=self.clock.now() - started_at,
            ip=ip,
            truncated=truncated,
            error_kind=error_kind,
            error=error,
            raw_headers_block=_status_block(answer),
            request_head=request_head,
        )

    def _request_headers(self, target: yarl.URL, extra: Mapping[str, str] | None) -> dict[str, str]:
        host = target.raw_host or ""
        if target.port is not None and not target.is_default_port():
            host = f"{host}:{target.port}"
        sent = {
            "Host": host,
            "User-Agent": self.user_agent,
            "Accept": ACCEPT,
            "Accept-Encoding": ACCEPT_ENCODING,
        }
        sent.update(extra or {})
        return sent


def _status_block(answer: Answer) -> bytes:
    try:
        reason = http.HTTPStatus(answer.status).phrase
    except ValueError:
        reason = ""
    lines = [f"HTTP/1.1 {answer.status} {reason}".encode("latin-1")]
    lines.extend(f"{k}: {v}".encode("latin-1", "replace") for k, v in answer.headers)
    return b"\r\n".join(lines) + b"\r\n\r\n"


def _request_head(target: yarl.URL, headers: Mapping[str, str]) -> bytes:
    lines = [f"GET {target.raw_path_qs} HTTP/1.1"]
    lines.extend(f"{name}: {value}" for name, value in headers.items())
    return "\r\n".join(lines).encode("latin-1", "replace") + b"\r\n\r\n"
