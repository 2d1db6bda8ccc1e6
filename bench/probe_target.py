"""Which trawl process this is, for the bench probes (bench/probed_speed.py). Imported at
every Python process's start-up during a probed run, so it imports nothing."""


def _args() -> list[bytes]:
    try:
        with open("/proc/self/cmdline", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def is_crawl() -> bool:
    """The `trawl crawl` or `trawl serve` process (the crawl loop's)."""
    args = _args()
    return (b"crawl" in args or b"serve" in args) and any(a.endswith(b"trawl") for a in args[:3])


def is_forkserver() -> bool:
    """The page workers' forkserver, which every worker is forked from."""
    return any(b"multiprocessing.forkserver" in a for a in _args())
