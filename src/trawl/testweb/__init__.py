"""The local test web: many small sites on 127.x.y.z that tests and `trawl demo` crawl.

- `sites.build_web(...) -> TestWeb`: the web, deterministic from a seed, and what a
  correct crawl of it fetches (`expected_fetches`, `expected_robots`). `freshness=True`
  adds live pages, sitemaps, copies and popular pages (`TestWeb.freshness()`).
  `scope_cases=True` adds the crawl-scope cases (`TestWeb.scope_cases()`).
  `script_cases=True` adds pages built by JavaScript and their look-alikes (issue 18,
  `TestWeb.script_cases()`, see below).
- `server` / `python -m trawl.testweb`: one process serving every site on one port,
  writing a JSON-lines request log.
- `process.TestWebProcess`: that server as a subprocess, for tests.
- `politeness.check_politeness`: judge a crawl from the request log.

Script-built sites (`script_cases.py`, bodies in `script_pages.py`; needs >= 3 sites):
`script-app.test` serves one create-react-app shell for every page and builds each page
from `/static/app.js` (and `/api/notes/N.json` by XHR); most of its pages are linked only
from rendered pages (`ScriptCases.render_only_urls`). Site 1 gets Next.js, Nuxt and React
pages rendered on the server and a login page (`no_render_urls`); site 2 a Vue shell, a
page loading a script and images from `script-cdn.test` (`foreign_site`, linked by no
`<a>`: any request there came from a browser) and a page that never settles (timers, a
refused WebSocket, endless polling). The first seed's home page links every case a plain
crawl should fetch; `TestWeb.expected_fetches_with_rendering` adds what rendering finds.
"""

from trawl.testweb.politeness import Violation, ViolationKind, check_politeness
from trawl.testweb.process import TestWebProcess
from trawl.testweb.request_log import RequestLogRecord, read_request_log
from trawl.testweb.sites import TestWeb, build_web

__all__ = [
    "RequestLogRecord",
    "TestWeb",
    "TestWebProcess",
    "Violation",
    "ViolationKind",
    "build_web",
    "check_politeness",
    "read_request_log",
]
