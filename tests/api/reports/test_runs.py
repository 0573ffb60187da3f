"""Exports read the run's store off the event loop and stay bounded: jsonl streams and stops at
max_export_bytes with a last line saying so; a whole-file export over it, or a Perfetto trace of
more than max_perfetto_records, is refused (413) naming the limit."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient
from support.server import make_settings

from servescope.api.app import create_app


def small_server(tmp_path, clock, **limits):
    return TestClient(create_app(make_settings(tmp_path, **limits), clock=clock))


def session(client) -> str:
    r = client.post("/api/sessions", json={"workload": {"preset": "demo"}})
    assert r.status_code == 201, r.text
    return r.json()["session_id"]


def test_jsonl_stops_at_max_export_bytes_with_a_line_saying_where(tmp_path, clock):
    with small_server(tmp_path, clock) as c:
        full = c.get(f"/api/sessions/{session(c)}/export?format=jsonl").text.splitlines()
    limit = len("\n".join(full[:5])) + 10  # five whole records fit, not six
    with small_server(tmp_path / "b", clock, max_export_bytes=limit) as c:
        r = c.get(f"/api/sessions/{session(c)}/export?format=jsonl")
    lines = r.text.splitlines()
    assert r.status_code == 200 and lines[:5] == full[:5] and len(lines) == 6
    assert json.loads(lines[5]) == {"error": f"export stopped at {len(chr(10).join(full[:5])) + 1}"
                                    f" bytes: this server's max_export_bytes is {limit}"}


def test_a_whole_export_over_the_limits_is_refused_naming_them(tmp_path, clock):
    with small_server(tmp_path, clock, max_export_bytes=100, max_perfetto_records=10) as c:
        sid = session(c)
        r = c.get(f"/api/sessions/{sid}/export?format=perfetto")
        assert r.status_code == 413 and "max_perfetto_records (10)" in r.json()["detail"]["message"]
        r = c.get(f"/api/sessions/{sid}/export?format=csv")
        assert r.status_code == 413 and "max_export_bytes (100)" in r.json()["detail"]["message"]
        assert r.json()["detail"]["field"] == "format"
