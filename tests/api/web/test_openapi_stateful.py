"""schemathesis's stateful run against a real server: the OpenAPI document with links added
(create a session -> read, summary, export, diagnosis, overview, save as a scenario -> read it;
upload a trace -> read it) drives sequences of calls in which later ones use the ids earlier
ones returned; none may answer a 5xx. Bounded in cases (tens of seconds). By hand, over every
route for a given time: SERVESCOPE_FUZZ_SECONDS=300 pytest -s
tests/api/web/test_openapi_stateful.py"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from collections import Counter
from typing import Any

import schemathesis
from hypothesis import HealthCheck, settings
from support.server import Server

SESSION_READS = ["/api/sessions/{session_id}", "/api/sessions/{session_id}/summary",
                 "/api/sessions/{session_id}/export", "/api/sessions/{session_id}/diagnosis",
                 "/api/sessions/{session_id}/overview", "/api/sessions/{session_id}/percentiles",
                 "/api/sessions/{session_id}/follow-qr.svg"]
LINKS = [  # (source path, method, status, target path, method, parameter, value)
    *[("/api/sessions", "post", "201", p, "get", "session_id", "$response.body#/session_id")
      for p in SESSION_READS],
    ("/api/sessions", "post", "201", "/api/sessions/{session_id}/scenario", "post",
     "session_id", "$response.body#/session_id"),
    ("/api/sessions/{session_id}/scenario", "post", "201", "/api/scenarios/{scenario_id}", "get",
     "scenario_id", "$response.body#/id"),
    ("/api/traces", "post", "201", "/api/traces/{trace_id}", "get", "trace_id",
     "$response.body#/trace_id"),
]
MAX_EXAMPLES = 60  # scenarios in CI; each runs up to STEPS calls
STEPS = 8


def with_links(doc: dict[str, Any], every_route: bool) -> dict[str, Any]:
    for src, method, status, dst, dst_method, name, value in LINKS:
        op_id = doc["paths"][dst][dst_method]["operationId"]
        responses = doc["paths"][src][method]["responses"]
        links = responses.setdefault(status, {"description": "created"}).setdefault("links", {})
        links[f"{op_id}_{name}"] = {"operationId": op_id, "parameters": {name: value}}
    if not every_route:  # a valid sweep would start Ray: the stateless test covers its route
        doc["paths"] = {p: v for p, v in doc["paths"].items() if not p.startswith("/api/sweeps")}
    return doc


def machine(server: Server, statuses: Counter[int], every_route: bool) -> Any:
    with urllib.request.urlopen(server.url + "/openapi.json") as r:
        doc = with_links(json.loads(r.read()), every_route)
    base = schemathesis.openapi.from_dict(doc).as_state_machine()

    class Machine(base):  # type: ignore[misc, valid-type]
        def get_call_kwargs(self, case: schemathesis.Case) -> dict[str, Any]:
            return {"base_url": server.url, "timeout": 60}

        def validate_response(self, response: Any, case: schemathesis.Case,
                              *args: Any, **kwargs: Any) -> None:
            statuses[response.status_code] += 1
            assert response.status_code < 500, (case.method, case.path, response.text[:300])

    return Machine


def test_stateful_sequences_get_no_5xx(tmp_path):
    seconds = float(os.environ.get("SERVESCOPE_FUZZ_SECONDS", "0"))
    server = Server(tmp_path / "data", SERVESCOPE_JOB_TIMEOUT_S="20")
    statuses: Counter[int] = Counter()
    try:
        Machine = machine(server, statuses, every_route=seconds > 0)
        end, runs = time.monotonic() + seconds, 0
        while runs == 0 or time.monotonic() < end:
            Machine.run(settings=settings(
                max_examples=MAX_EXAMPLES, stateful_step_count=STEPS, deadline=None,
                derandomize=seconds == 0, database=None,
                suppress_health_check=list(HealthCheck)))
            runs += 1
    finally:
        server.stop()
    print("stateful schemathesis: runs", runs, "answers by status:", dict(statuses),
          "cases", sum(statuses.values()))
    assert statuses[201] > 0 and sum(statuses.values()) >= MAX_EXAMPLES
    assert not [s for s in statuses if s >= 500], statuses
