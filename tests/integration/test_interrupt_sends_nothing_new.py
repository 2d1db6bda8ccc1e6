"""A signal's stop (`RunState.interrupt`) sends no request that was still waiting for its IP,
so a stopping node hands its partitions over without waiting for a busy IP's queue; a limit's
stop (`request_stop`) lets it go out, so a crawl asked for N pages gets N (issue 19).

Through the crawl's real context and HTTP fetcher, against a server on a real socket: two
sites on one IP, whose gap (`per_ip_min_gap_s`) holds the second request back.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest

from trawl.clock import SystemClock
from trawl.config import Settings, with_overrides
from trawl.loop.requests import NotSent, SiteRequests
from trawl.wiring.embedded import build_context

if TYPE_CHECKING:
    from pathlib import Path

IP = "127.0.0.1"
GAP_S = 0.5


async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.readuntil(b"\r\n\r\n")
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok")
    await writer.drain()
    writer.close()


@pytest.mark.parametrize("stop", ["interrupt", "request_stop"])
def test_only_a_signals_stop_keeps_a_waiting_request_unsent(tmp_path: Path, stop: str) -> None:
    async def body() -> None:
        server = await asyncio.start_server(answer, IP, 0)
        port = server.sockets[0].getsockname()[1]
        settings = with_overrides(
            Settings(),
            crawl={"contact_url": "https://trawl.invalid/t"},
            network={"resolve": (f"a.test:{IP}", f"b.test:{IP}"), "allow_private": True},
            politeness={"per_ip_min_gap_s": GAP_S, "per_ip_max_in_flight": 1},
        )
        ctx = build_context(settings, tmp_path, SystemClock())
        nothing: Any = None  # sitemaps and stored content: a request never reaches them
        requests = SiteRequests(ctx, nothing, nothing)
        first = await requests.request(ctx.sites.state("a.test"), f"http://a.test:{port}/")
        assert first.status == 200
        waiting = asyncio.create_task(
            requests.request(ctx.sites.state("b.test"), f"http://b.test:{port}/")
        )
        await asyncio.sleep(GAP_S / 5)  # b.test waits for the IP's gap
        getattr(ctx.run, stop)()
        if stop == "interrupt":
            with pytest.raises(NotSent):
                await waiting
            assert ctx.ip_gate.in_flight(IP) == 0, "no IP slot kept"
        else:
            assert (await waiting).status == 200
        server.close()
        await ctx.durability.close()

    asyncio.run(body())
