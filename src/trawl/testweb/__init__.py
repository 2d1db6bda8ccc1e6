"""The local test web: many small sites on 127.x.y.z that tests and `trawl demo` crawl.

- `sites.build_web(...) -> TestWeb`: the web, deterministic from a seed, and what a
  correct crawl of it fetches (`expected_fetches`, `expected_robots`). `freshness=True`
  adds live pages, sitemaps, copies and popular pages (`TestWeb.freshness()`).
  `scope_cases=True` adds the crawl-scope cases (`TestWeb.scope_cases()`).
- `server` / `python -m trawl.testweb`: one process serving every site on one port,
  writing a JSON-lines request log.
- `process.TestWebProcess`: that server as a subprocess, for tests.
- `politeness.check_politeness`: judge a crawl from the request log.
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
