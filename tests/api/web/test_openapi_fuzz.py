"""schemathesis over the OpenAPI document against a real server: a fixed, derandomized set of
cases per operation (seconds in all), none answered with a 5xx, every error JSON with the
security headers."""

from __future__ import annotations

import json
import urllib.request
from collections import Counter

import schemathesis
from hypothesis import HealthCheck, given, settings
from support.server import Server

CASES_PER_OPERATION = 15


def test_no_input_is_answered_with_a_5xx(tmp_path):
    server = Server(tmp_path / "data")
    statuses: Counter[int] = Counter()
    try:
        schema = schemathesis.openapi.from_url(server.url + "/openapi.json")
        operations = [result.ok() for result in schema.get_all_operations()]
        assert len(operations) >= 10
        known = real_ids(server)
        for operation in operations:
            run_cases(operation, server, known, statuses)
    finally:
        server.stop()
    assert sum(statuses.values()) >= 5 * len(operations)
    print("schemathesis answers by status:", dict(statuses))
    assert not [s for s in statuses if s >= 500], statuses


def real_ids(server: Server) -> dict[str, str]:
    """Ids that name something, so the cases reach past the 404 into each route."""
    sid = post(server, "/api/sessions", json.dumps({"workload": {"preset": "demo"}}).encode(),
               "application/json")["session_id"]
    rows = json.dumps([{"id": "a", "arrival_s": 0.0, "prompt_len": 8, "output_len": 2}])
    trace = post(server, "/api/traces", *multipart(rows))
    scenario = post(server, f"/api/sessions/{sid}/scenario", json.dumps({"name": "s"}).encode(),
                    "application/json")
    return {"session_id": sid, "trace_id": trace["trace_id"], "scenario_id": scenario["id"]}


def multipart(text: str) -> tuple[bytes, str]:
    body = (f"--b0\r\nContent-Disposition: form-data; name=\"file\"; filename=\"t.json\""
            f"\r\n\r\n{text}\r\n--b0--\r\n").encode()
    return body, "multipart/form-data; boundary=b0"


def post(server: Server, path: str, body: bytes, kind: str) -> dict:
    request = urllib.request.Request(server.url + path, body, {"Content-Type": kind})
    with urllib.request.urlopen(request) as r:
        return json.loads(r.read())


def run_cases(operation, server: Server, known: dict[str, str],
              statuses: Counter[int]) -> None:
    @given(case=operation.as_strategy())
    @settings(max_examples=CASES_PER_OPERATION, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    def check(case: schemathesis.Case) -> None:
        for name in case.path_parameters or {}:
            if name in known:  # unknown ids are a plain 404 (tests/api/routes/test_lookup.py)
                case.path_parameters[name] = known[name]
        response = case.call(base_url=server.url, timeout=30)
        statuses[response.status_code] += 1
        assert response.status_code < 500, (case.method, case.path, response.text[:300])
        if response.status_code >= 400 and case.path.startswith("/api/"):  # "/": a page
            headers = {k.lower(): v[0] for k, v in response.headers.items()}  # name: [values]
            assert headers["content-type"].startswith("application/json"), case.path
            assert headers["x-content-type-options"] == "nosniff"

    check()
