"""Run the Scrapy baseline crawl and write DIR/scrapy_stats.json.

Run: python -m bench.scrapy_baseline.run --seeds-file F --hosts-file H --max-time S --out DIR
     [--concurrency 1000] [--slot site|host] [--codec isal|zlib]

Politeness, as far as Scrapy goes (what it cannot do is listed in `LIMITS`):
- robots.txt obeyed with Protego (Scrapy's default parser), fetched once per host:port;
- one request at a time per download slot and DOWNLOAD_DELAY=1 s between starts, no jitter;
  `--slot site` (default) makes the slot the registered domain, like trawl's site clock;
  `--slot host` is Scrapy's stock behaviour (one slot per hostname);
- CONCURRENT_REQUESTS_PER_IP=0: a non-zero value would *replace* the per-slot limit with a
  per-IP one (slot key = IP), dropping the per-site grouping; Scrapy cannot do both.
Throughput: breadth-first (DEPTH_PRIORITY=1 with FIFO queues) and Scrapy's
DownloaderAwarePriorityQueue, which keeps one queue per slot and pops from the slot with the
fewest active downloads, so every site stays busy instead of the LIFO default digging
deep into whichever site came first.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import sys
import time
from pathlib import Path
from typing import Any

import scrapy
from scrapy.crawler import CrawlerProcess

from bench.scrapy_baseline.spider import (
    CODECS,
    SITE_SLOT_SETTING,
    STORE_FILE,
    BenchSpider,
    DeadlineGate,
    read_hosts,
)

ROBOTS_TOKEN = "scrapy-baseline"
USER_AGENT = f"{ROBOTS_TOKEN}/1.0 (+https://trawl.invalid/bench)"
STATS_FILE = "scrapy_stats.json"
LOG_FILE = "scrapy.log"
LIMITS = (
    "no Crawl-delay from robots.txt (Scrapy ignores it)",
    "a 5xx robots.txt allows everything (RFC 9309 says: disallow all)",
    "no per-IP limit together with the per-site slot",
    "no back-off on 429/503 with Retry-After (retries are off)",
)
_MODULE = "bench.scrapy_baseline.spider"


def settings_for(args: argparse.Namespace) -> dict[str, Any]:
    """Scrapy settings for one run; each value is explained where it is not obvious."""
    return {
        "BOT_NAME": "scrapy-baseline",
        "USER_AGENT": USER_AGENT,
        "ROBOTSTXT_OBEY": True,
        "ROBOTSTXT_PARSER": "scrapy.robotstxt.ProtegoRobotParser",
        # Match robots groups on the product token alone: Protego matches substrings of the
        # whole User-Agent, and the contact URL "trawl.invalid" would select `trawl` groups.
        "ROBOTSTXT_USER_AGENT": ROBOTS_TOKEN,
        "CONCURRENT_REQUESTS": args.concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "CONCURRENT_REQUESTS_PER_IP": 0,
        "DOWNLOAD_DELAY": 1.0,
        "DOWNLOAD_DELAY_JITTER": 0.0,  # Scrapy >= 2.14 name for RANDOMIZE_DOWNLOAD_DELAY=False
        "AUTOTHROTTLE_ENABLED": False,
        "DEPTH_PRIORITY": 1,
        "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.DownloaderAwarePriorityQueue",
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
        "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
        # No DNS lookups leave the process, so the thread pool only serves odd jobs.
        "REACTOR_THREADPOOL_MAXSIZE": 4,
        "TWISTED_DNS_RESOLVER": f"{_MODULE}.HostsFileResolver",
        "DOWNLOAD_MAXSIZE": 10 * 1024 * 1024,
        "DOWNLOAD_WARNSIZE": 0,
        "DOWNLOAD_TIMEOUT": 10,
        "RETRY_ENABLED": False,
        "REDIRECT_ENABLED": True,
        "COOKIES_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "REMOTE_CONTROL_ENABLED": False,  # Scrapy >= 2.19 opens a control port otherwise
        "HTTPCACHE_ENABLED": False,
        "CLOSESPIDER_TIMEOUT": args.max_time,
        "LOG_LEVEL": "INFO",
        "LOG_FILE": str(args.out / LOG_FILE),
        "LOG_FILE_APPEND": False,
        "LOGSTATS_INTERVAL": 10.0,
        "DOWNLOADER_MIDDLEWARES": downloader_middlewares(args.slot),
        "ITEM_PIPELINES": {f"{_MODULE}.StorePipeline": 300},
        SITE_SLOT_SETTING: args.slot == "site",
        "BENCH_HOSTS_FILE": str(args.hosts_file),
        "BENCH_OUT_DIR": str(args.out),
        "BENCH_CODEC": args.codec,
    }


def downloader_middlewares(slot: str) -> dict[str, int]:
    """The deadline gate last of all; the site slot before RobotsTxtMiddleware (100)."""
    middlewares = {f"{_MODULE}.DeadlineGate": DeadlineGate.ORDER}
    if slot == "site":
        middlewares[f"{_MODULE}.SiteSlotMiddleware"] = 50
    return middlewares


def read_seeds(path: Path) -> list[str]:
    seeds = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    seeds = [s for s in seeds if s and not s.startswith("#")]
    for n, seed in enumerate(seeds, 1):
        if not seed.startswith(("http://", "https://")):
            raise SystemExit(f"{path}: seed {n}: {seed!r} is not an http(s) URL")
    return seeds


def crawl(args: argparse.Namespace) -> dict[str, Any]:
    """Run the crawl in this process (Twisted's reactor cannot restart) and return stats."""
    # Older Scrapy ignores TWISTED_DNS_RESOLVER (real DNS!) and DOWNLOAD_DELAY_JITTER.
    if scrapy.version_info < (2, 14):
        raise SystemExit(f"Scrapy {scrapy.__version__} is too old; need >= 2.14")
    seeds = read_seeds(args.seeds_file)
    hostnames = sorted(read_hosts(args.hosts_file))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / STORE_FILE).unlink(missing_ok=True)
    process = CrawlerProcess(settings_for(args))
    crawler = process.create_crawler(BenchSpider)
    started = time.monotonic()
    process.crawl(crawler, seeds=seeds, hostnames=hostnames)
    process.start()
    wall_s = time.monotonic() - started
    assert crawler.stats is not None
    if process.bootstrap_failed or crawler.stats.get_value("finish_reason") is None:
        raise SystemExit(f"the Scrapy crawl did not run; see {args.out / LOG_FILE} and stderr")
    return summary(crawler.stats.get_stats(), wall_s, args)


def summary(stats: dict[str, Any], wall_s: float, args: argparse.Namespace) -> dict[str, Any]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu_s = usage.ru_utime + usage.ru_stime
    pages = int(stats.get("bench/pages_stored", 0))
    elapsed_s = float(stats.get("elapsed_time_seconds", wall_s))
    return {
        "command": " ".join(sys.argv),
        "scrapy_version": scrapy.__version__,
        "python": platform.python_version(),
        "machine": f"{platform.node()} {platform.machine()}",
        "slot": args.slot,
        "codec": args.codec,
        "concurrency": args.concurrency,
        "max_time_s": args.max_time,
        "wall_s": round(wall_s, 3),
        "elapsed_s": round(elapsed_s, 3),
        "cpu_s": round(cpu_s, 3),
        "max_rss_mib": round(usage.ru_maxrss / 1024, 1),
        "pages_stored": pages,
        "pages_per_s": round(pages / elapsed_s, 3) if elapsed_s > 0 else 0.0,
        "responses": int(stats.get("downloader/response_count", 0)),
        "cpu_ms_per_page": round(1000 * cpu_s / pages, 3) if pages else None,
        "limits": list(LIMITS),
        "stats": {key: _jsonable(value) for key, value in sorted(stats.items())},
    }


def _jsonable(value: Any) -> Any:
    if isinstance(value, int | float | str | bool) or value is None:
        return value
    return str(value)  # datetimes


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seeds-file", type=Path, required=True, help="one URL per line")
    parser.add_argument("--hosts-file", type=Path, required=True, help="`IP host` lines")
    parser.add_argument("--max-time", type=float, required=True, help="crawl seconds")
    parser.add_argument("--out", type=Path, required=True, help="directory for log, stats")
    parser.add_argument("--concurrency", type=int, default=1000, help="CONCURRENT_REQUESTS")
    parser.add_argument(
        "--slot",
        choices=("site", "host"),
        default="site",
        help="politeness unit: registered domain (like trawl) or Scrapy's hostname",
    )
    parser.add_argument("--codec", choices=CODECS, default="isal", help="page compression")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    result = crawl(args)
    (args.out / STATS_FILE).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    keys = ("pages_stored", "elapsed_s", "pages_per_s", "cpu_s", "cpu_ms_per_page")
    print(json.dumps({key: result[key] for key in keys}))


if __name__ == "__main__":
    main()
