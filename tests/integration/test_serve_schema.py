"""`trawl serve` builds the API's OpenAPI schema on its own thread before serving (issue 17):
built at the first GET /openapi.json instead, its ~55 ms of Python held the GIL against the
crawl loop under a full-speed crawl."""

from __future__ import annotations

import asyncio
import socket
from types import SimpleNamespace
from unittest.mock import MagicMock

from trawl.api.app import build_app
from trawl.api.serve import _run_in_thread


class _Server:
    """Stands in for uvicorn's server: notes what the app held when serving began."""

    def __init__(self, app: object) -> None:
        self.config = SimpleNamespace(app=app)
        self.schema_at_serve: object = None

    async def serve(self, sockets: list[socket.socket]) -> None:
        self.schema_at_serve = self.config.app.openapi_schema  # type: ignore[attr-defined]


def test_the_schema_is_built_before_the_server_serves() -> None:
    app = build_app(MagicMock(), token="t")
    assert app.openapi_schema is None  # FastAPI builds it lazily
    server = _Server(app)
    view = MagicMock()

    async def run() -> None:
        with socket.socket() as sock:
            await _run_in_thread(server, sock, view)  # type: ignore[arg-type]

    asyncio.run(run())
    schema = server.schema_at_serve
    assert isinstance(schema, dict)
    assert "/v1/seeds" in schema["paths"]
    view.close_records.assert_called_once()
