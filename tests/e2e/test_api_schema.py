"""A schemathesis run against `trawl serve`'s /openapi.json: no operation answers a 5xx.

The fuzzer POSTs random seed URLs (with the operator token) into a live crawl, so the crawl
is held to loopback: `network.allow_networks = ["127.0.0.0/8"]` refuses any other address,
IP literals included, and `--dns-server` points at a closed loopback port so no name ever
reaches a real DNS server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import hypothesis
import pytest
import schemathesis
from hypothesis import HealthCheck
from schemathesis.checks import not_a_server_error
from tests.e2e.serve_support import TOKEN, Served, free_port, run_serve

from trawl.testweb.process import TestWebProcess

if TYPE_CHECKING:
    from collections.abc import Iterator

    from schemathesis import BaseSchema, Case

AUTH = {"Authorization": f"Bearer {TOKEN}"}
MAX_EXAMPLES = 100  # fuzzed cases per operation, after the schema's and boundary examples
LONG_POLL_CAP_S = 0.2  # GET /v1/events may wait up to 60 s; the fuzzer need not


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("schema")
    config = tmp / "trawl.toml"
    config.write_text('[network]\nallow_networks = ["127.0.0.0/8"]\n')
    no_dns = f"127.0.0.1:{free_port()}"  # nothing listens there: every lookup fails at once
    with (
        TestWebProcess(sites=12, pages=8, seed=23, workdir=tmp / "web") as web,
        run_serve(web, tmp, extra=("--config", str(config), "--dns-server", no_dns)) as served,
    ):
        yield served


@pytest.fixture(scope="module")
def api_schema(served: Served) -> BaseSchema:
    return schemathesis.openapi.from_url(served.base + "/openapi.json", timeout=10)


schema = schemathesis.pytest.from_fixture("api_schema")


@pytest.fixture(autouse=True)
def nodeid_for_schemathesis(request: pytest.FixtureRequest) -> None:
    # schemathesis 4.32's fixture-loaded schemas read and rename `item._nodeid`, which
    # pytest 9.2 no longer has (AttributeError before the first request); give it one.
    request.node._nodeid = request.node.nodeid


@schema.parametrize()
@hypothesis.settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,  # the same requests on every run
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_no_operation_answers_with_a_server_error(case: Case, served: Served) -> None:
    wait = (case.query or {}).get("wait")
    if isinstance(wait, int | float) and not isinstance(wait, bool) and 0 < wait <= 60:
        case.query["wait"] = min(wait, LONG_POLL_CAP_S)  # over 60 must stay a 422
    case.call_and_validate(headers=AUTH, checks=[not_a_server_error], timeout=30)
    assert served.proc.poll() is None, "trawl serve died under the fuzzer"
