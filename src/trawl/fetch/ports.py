"""What the crawl loop asks of its fetcher (a port).

The crawl's adapter is fetch.http1.Http1Fetcher (asyncio connections, llhttp);
fetch.fetcher.AiohttpFetcher is the reference it was held to, kept as a second adapter.
Adapters pass one contract suite (tests/contract/test_fetcher.py), so a test can put the
scripted fake (tests/fakes/fetcher.py) where the real fetcher goes and see the same results.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from trawl.model import FetchResult


class Fetcher(Protocol):
    async def resolve(self, host: str) -> str:
        """The IP a fetch of `host` would use; raises FetchError("dns") when the name does
        not resolve and BlockedAddress when the address may not be fetched."""

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
        """GET `url` once, never following a redirect; web failures come back as results
        (`status == 0` if and only if `error_kind` is set).

        The body is read only for stored types or when `read_any_type`; `max_body_bytes`
        overrides the raw body cap (hit: `truncated=True`); `ip` is an address from an earlier
        `resolve`; `on_sent` is called once, when the request head goes out.
        """

    async def close(self) -> None:
        """Release what the fetcher owns (its connections and the resolver it was built
        with); idempotent."""
