"""The HTTP API fuzzed from its own OpenAPI document: no request gets a 5xx.

Schemathesis turns every operation of ``/openapi.json`` into a Hypothesis strategy of requests
(valid ones from the schemas, and bodies, paths and parameters around them), and each case is
sent to ``handrail demo`` running on loopback, signed in as a demo user. Bad input must always
get a clear 4xx, never a server error. The cases per operation are bounded so that the test
takes well under a minute.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error

from demo_server import TOKENS, DemoServer

EXAMPLES_PER_OPERATION = 30
AUTH = {"Authorization": f"Bearer {TOKENS['alice']}"}
#: Operations whose answer is a stream that never ends by itself (the per-user event stream):
#: a case is sent in stream mode and judged by its status line, then the stream is closed.
ENDLESS_STREAMS = frozenset({("GET", "/api/events")})


@pytest.fixture(scope="module")
def demo_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[schemathesis.BaseSchema]:
    with DemoServer.running(tmp_path_factory.mktemp("fuzz")) as server:
        yield schemathesis.openapi.from_url(server.url + "/openapi.json")


def test_no_request_gets_a_server_error(demo_api: schemathesis.BaseSchema) -> None:
    operations = [result.ok() for result in demo_api.get_all_operations()]
    assert len(operations) >= 15  # every route of the API, read from the live document
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def call(case: schemathesis.Case) -> None:
            if (case.method.upper(), case.path) in ENDLESS_STREAMS:
                kwargs = case.as_transport_kwargs(headers=AUTH)
                with requests.request(**kwargs, stream=True, timeout=30) as response:
                    assert response.status_code < 500, (case.as_curl_command(), response.text)
                return
            case.call_and_validate(headers=AUTH, checks=[not_a_server_error], timeout=30)

        call()
