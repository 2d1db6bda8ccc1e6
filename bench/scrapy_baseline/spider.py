"""The Scrapy side of the benchmark: spider, hosts-file resolver, slot middleware, storage.

How this works: `BenchSpider` starts at the seeds and follows every `<a>`/`<area>` link
(PDFs too, as trawl does) within the hostnames of the hosts file. `HostsFileResolver`
answers DNS from that file only, so nothing leaves the local web. `SiteSlotMiddleware`
(optional) puts every request of one registered domain into one Scrapy download slot, the
way trawl's site clock works; without it Scrapy's slots are per hostname. `StorePipeline`
does the per-page work trawl's storage does (sha256 + gzip + append), so the comparison
is not flattered by skipped work.

Scrapy reads its components from settings by dotted path, so everything here is built
by Scrapy through `from_crawler`; the values they need travel as `BENCH_*` settings.
"""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Self

import scrapy
from isal import igzip
from scrapy import signals
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse
from scrapy.linkextractors import LinkExtractor
from scrapy.resolver import dnscache
from twisted.internet import defer
from twisted.internet.error import DNSLookupError
from twisted.internet.interfaces import IResolverSimple
from zope.interface import implementer

from trawl.urls.registered_domain import site_of

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterator, Sequence

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector
    from twisted.internet.base import ReactorBase

STORE_FILE = "pages.warcish.gz"  # concatenated gzip members, one per stored page
SITE_SLOT_SETTING = "BENCH_SLOT_BY_SITE"


def read_hosts(path: Path) -> dict[str, str]:
    """hostname -> IPv4 address from `IP host [host...]` lines; `#` comments allowed."""
    hosts: dict[str, str] = {}
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        ip, *names = line.split()
        if not names:
            raise ValueError(f"{path}:{n}: {raw!r} has an address but no hostname")
        for name in names:
            hosts[name.lower()] = ip
    return hosts


@implementer(IResolverSimple)
class HostsFileResolver:
    """Resolves names from the hosts file only; any other name fails as DNSLookupError.

    Installed with `installResolver`, which also makes Twisted wrap it as the reactor's
    `nameResolver` (what `HostnameEndpoint`, and so Scrapy's HTTP/1.1 handler, asks), so
    there is no path left to the system resolver.
    """

    def __init__(self, reactor: ReactorBase, hosts: dict[str, str]) -> None:
        self.reactor = reactor
        self._hosts = hosts
        # Scrapy's per-IP slot keys read this cache; fill it so that mode works too.
        dnscache.limit = max(dnscache.limit or 0, len(hosts) + 1)
        for name, ip in hosts.items():
            dnscache[name] = ip

    @classmethod
    def from_crawler(cls, crawler: Crawler, reactor: ReactorBase) -> Self:
        return cls(reactor, read_hosts(Path(crawler.settings["BENCH_HOSTS_FILE"])))

    def install_on_reactor(self) -> None:
        # mypy cannot see zope's @implementer (no mypy-zope plugin here).
        self.reactor.installResolver(self)  # type: ignore[arg-type]

    def getHostByName(self, name: str, timeout: Sequence[int] = ()) -> defer.Deferred[str]:
        ip = self._hosts.get(name.lower().rstrip("."))
        if ip is None:
            return defer.fail(DNSLookupError(f"{name!r} is not in the hosts file"))
        return defer.succeed(ip)


class SiteSlotMiddleware:
    """Downloader middleware: one download slot per registered domain, not per hostname.

    Scrapy's `download_slot` meta key is its documented way to group requests. Requests
    the spider makes already carry it (so the scheduler's per-slot queues agree); this
    catches the robots.txt requests Scrapy's RobotsTxtMiddleware makes on its own. It must
    run before that middleware (lower order number) so robots.txt waits in the same slot.
    """

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls()

    def process_request(self, request: scrapy.Request) -> None:
        request.meta.setdefault("download_slot", site_of(request.url))


class DeadlineGate:
    """Downloader middleware and deadline: after --max-time no request reaches the network.

    CLOSESPIDER_TIMEOUT only stops the engine taking requests from the scheduler; up to
    CONCURRENT_REQUESTS already sit in the per-site slot queues, and with a 1 s delay per
    site Scrapy then keeps crawling for minutes. Shortly after that close begins, the gate
    shuts: it fails every queued (not yet started) request with IgnoreRequest, and, as the
    last middleware before the downloader, every request that arrives later. It must be
    the last one because a request waiting for its robots.txt continues (unchecked) when
    the robots.txt request fails, and only a check after RobotsTxtMiddleware catches it.
    Transfers in progress (one per site, bounded by DOWNLOAD_TIMEOUT) finish normally.
    """

    ORDER = 990  # after every built-in downloader middleware (the largest is 900)
    _AFTER_CLOSE_S = 0.1  # let CloseSpider begin closing first, so no new requests come in

    def __init__(self, crawler: Crawler, deadline_s: float) -> None:
        self._crawler = crawler
        self._deadline_s = deadline_s
        self.is_shut = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        gate = cls(crawler, crawler.settings.getfloat("CLOSESPIDER_TIMEOUT"))
        crawler.signals.connect(gate.spider_opened, signal=signals.spider_opened)
        return gate

    def spider_opened(self) -> None:
        # Imported here: a module-level import would install Twisted's default reactor
        # before Scrapy installs the asyncio one it is configured for.
        from twisted.internet import reactor

        if self._deadline_s > 0:
            # zope interface methods lack `self`, so mypy misreads the signature.
            reactor.callLater(self._deadline_s + self._AFTER_CLOSE_S, self._shut)  # type: ignore[arg-type]

    def process_request(self, request: scrapy.Request) -> None:
        if self.is_shut:
            raise IgnoreRequest("max time reached")

    def _shut(self) -> None:
        self.is_shut = True
        engine = self._crawler.engine
        if engine is None or engine.spider is None:
            return  # the crawl already ended
        dropped = 0
        for slot in engine.downloader.slots.values():
            if slot.latercall is not None:
                slot.latercall.cancel()
                slot.latercall = None
            while slot.queue:
                _, waiting = slot.queue.popleft()
                waiting.errback(IgnoreRequest("max time reached"))
                dropped += 1
        assert self._crawler.stats is not None
        self._crawler.stats.set_value("bench/dropped_at_deadline", dropped)


class BenchSpider(scrapy.Spider):
    """Breadth-first crawl from the seeds, every link, within the hosts file's names."""

    name = "scrapy_baseline"

    def __init__(self, seeds: list[str], hostnames: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.seeds = seeds
        self.allowed_domains = hostnames
        # deny_extensions=[]: follow PDFs and other files, as trawl does (Scrapy skips ~200
        # extensions by default). Subdomains of allowed names pass Scrapy's offsite check,
        # but the resolver still fails any name the hosts file does not list.
        self._links = LinkExtractor(deny_extensions=[])
        self._slot_by_site = False

    async def start(self) -> AsyncIterator[Any]:
        self._slot_by_site = self.settings.getbool(SITE_SLOT_SETTING)
        for url in self.seeds:
            yield self._request(url)

    def parse(self, response: Response) -> Iterator[Any]:
        if not isinstance(response, HtmlResponse):
            return  # PDFs and other files are fetched but neither stored nor parsed
        yield {"url": response.url, "status": response.status, "body": response.body}
        if _says_nofollow(response):
            return
        for link in self._links.extract_links(response):
            yield self._request(link.url)

    def _request(self, url: str) -> scrapy.Request:
        meta = {"download_slot": site_of(url)} if self._slot_by_site else {}
        return scrapy.Request(url, callback=self.parse, meta=meta)


def _says_nofollow(response: HtmlResponse) -> bool:
    """Meta robots or X-Robots-Tag nofollow/none, which trawl honours and Scrapy does not."""
    values = response.xpath("//meta[translate(@name,'ROBTS','robts')='robots']/@content").getall()
    values += [v.decode("latin-1") for v in response.headers.getlist("X-Robots-Tag")]
    words = {w.strip().lower() for value in values for w in value.split(",")}
    return bool(words & {"nofollow", "none"})


class StorePipeline:
    """Per HTML page: sha256 of the body, gzip it, append it to one file; count pages."""

    def __init__(self, out_dir: Path, codec: str, stats: StatsCollector) -> None:
        self._path = out_dir / STORE_FILE
        self._stats = stats
        self._compress = _COMPRESSORS[codec]
        self._file: BinaryIO | None = None
        self.pages = 0
        self.body_bytes = 0
        self.stored_bytes = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        assert crawler.stats is not None
        codec = crawler.settings["BENCH_CODEC"]
        crawler.stats.set_value("bench/codec", codec)
        return cls(Path(crawler.settings["BENCH_OUT_DIR"]), codec, crawler.stats)

    def open_spider(self) -> None:
        self._file = self._path.open("ab")

    def close_spider(self) -> None:
        if self._file is not None:
            self._file.close()
        for key, value in self.counts().items():
            self._stats.set_value(f"bench/{key}", value)

    def process_item(self, item: dict[str, Any]) -> dict[str, Any]:
        assert self._file is not None, "open_spider was not called"
        body: bytes = item.pop("body")
        digest = hashlib.sha256(body).hexdigest()
        member = self._compress(body)
        self._file.write(member)
        self.pages += 1
        self.body_bytes += len(body)
        self.stored_bytes += len(member)
        item["sha256"] = digest  # keep the item small: the body is not kept
        return item

    def counts(self) -> dict[str, int]:
        return {
            "pages_stored": self.pages,
            "body_bytes": self.body_bytes,
            "stored_bytes": self.stored_bytes,
        }


def _gzip_zlib(data: bytes) -> bytes:
    """Stdlib gzip at its usual level 6."""
    return gzip.compress(data, compresslevel=6, mtime=0)


def _gzip_isal(data: bytes) -> bytes:
    """ISA-L gzip at level 2, what trawl's WARC writer uses (`store/warc_record.py`)."""
    compressed: bytes = igzip.compress(data, compresslevel=2, mtime=0)
    return compressed


_COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {"zlib": _gzip_zlib, "isal": _gzip_isal}
CODECS = tuple(_COMPRESSORS)
