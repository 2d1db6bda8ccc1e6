"""The live dashboard at `/` (being built for issue 6)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import APIRouter

if TYPE_CHECKING:
    from trawl.crawl_context import CrawlContext


def dashboard_router(ctx: CrawlContext) -> APIRouter:
    return APIRouter()
