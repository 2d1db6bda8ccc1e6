"""The exception tree.

Failures are sorted by whose fault they are (STYLE §5):

    TrawlError
    ├── WebError            the web is bad: record an outcome on that URL and go on
    │   ├── InvalidUrl      a URL that cannot be normalised (bad scheme, host, port, ...)
    │   └── FetchError      a fetch that failed: DNS, connect, timeout, reset, protocol, refused
    │       └── BlockedAddress   the SSRF guard refused the resolved address
    └── UsageError          we (or the operator) are wrong: stop with a one-line message
        ├── ConfigError     a bad config file, flag or seeds file
        └── DataError       a damaged or incompatible data directory
            └── StoreUnavailable   a shared store (cluster mode) cannot be reached now
"""

from __future__ import annotations


class TrawlError(Exception):
    """Base of every error trawl raises on purpose."""


class WebError(TrawlError):
    """The web handed us something bad; the URL gets a recorded outcome."""


class InvalidUrl(WebError, ValueError):
    """A URL that cannot be normalised into an http(s) URL."""


class FetchError(WebError):
    """A fetch failed; `kind` is a short stable label used in records and stats."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind


class BlockedAddress(FetchError):
    """The resolved address is loopback/private/link-local/multicast and was not allowed."""

    def __init__(self, message: str) -> None:
        super().__init__("blocked_address", message)


class UsageError(TrawlError):
    """Operator or programming error: report in one line and stop."""


class ConfigError(UsageError):
    """A config file, flag or seeds file is wrong."""


class DataError(UsageError):
    """The data directory is damaged or incompatible."""


class StoreUnavailable(DataError):
    """A cluster's shared store did not answer (the server stopped, the connection broke):
    an outage the node rides out (cluster.store_outages), not damaged data. A crawl turn
    that meets it gives its page back to the queue instead of stopping the node."""
