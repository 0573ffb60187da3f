"""A property-based fuzz of the whole HTTP API (issue 33, part 7): schemathesis generates
requests from the server's own OpenAPI schema, with ids that name real things where a path
takes one, and no answer may be a 5xx. The quick run (the ordinary test command) takes a few
derandomized cases an operation, under a minute on a 2-core machine; `make test-hostile` runs
many more, randomized."""

from __future__ import annotations

import json
import time
from collections import Counter

import schemathesis
from hypothesis import HealthCheck, given, settings
from support.hostile_shares import HOSTILE_ALL, TINY, call, multipart, trace_of

CASES = 100 if HOSTILE_ALL else 10  # per operation
BUDGET_S = 900 if HOSTILE_ALL else 60


def test_no_request_the_schema_allows_is_answered_with_a_5xx(serve):
    server = serve(client_max_uploads_per_hour=10_000, client_max_sessions=64)
    known = real_ids(server)
    schema = schemathesis.openapi.from_url(server.url + "/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    statuses: Counter[int] = Counter()
    failures: list[str] = []
    t0 = time.monotonic()
    for operation in operations:
        run_cases(operation, server.url, known, statuses, failures)
    elapsed = time.monotonic() - t0
    print(f"{sum(statuses.values())} cases in {elapsed:.1f} s:", dict(statuses))
    assert not failures, failures[:5]
    assert sum(statuses.values()) >= len(operations)
    assert elapsed < BUDGET_S


def real_ids(server) -> dict[str, str]:
    """Ids that name something, so cases reach past the 404 into each route."""
    session = call(server, "POST", "/api/sessions", {"workload": TINY})[1]
    body, kind = multipart(trace_of(300))
    trace = call(server, "POST", "/api/traces", raw=body, kind=kind)[1]
    scenario = call(server, "POST", f"/api/sessions/{session['session_id']}/scenario",
                    {"name": "s"})[1]
    return {"session_id": session["session_id"], "trace_id": trace["trace_id"],
            "scenario_id": scenario["id"]}


def run_cases(operation, url: str, known: dict[str, str], statuses: Counter[int],
              failures: list[str]) -> None:
    @given(case=operation.as_strategy())
    @settings(max_examples=CASES, derandomize=not HOSTILE_ALL, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    def check(case: schemathesis.Case) -> None:
        for name in case.path_parameters or {}:
            if name in known:
                case.path_parameters[name] = known[name]
        response = case.call(base_url=url, timeout=60)
        statuses[response.status_code] += 1
        if response.status_code >= 500:
            failures.append(f"{case.method} {case.path} {json.dumps(case.path_parameters)}"
                            f" -> {response.status_code}: {response.text[:200]}")

    check()
