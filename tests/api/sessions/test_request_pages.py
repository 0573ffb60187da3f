"""GET /api/sessions/{id}/requests: a session's request list in pages (init carries only how
many), the pages concatenating to the workload's rows in order; bad offsets and limits are 422s
naming the field, unknown sessions and engines 404s."""

from __future__ import annotations

from support.server import receive, request_list

ROWS = [{"id": f"p{i}", "arrival_s": 0.25 * i, "prompt_len": 20 + 3 * i, "output_len": 2 + i % 4}
        for i in range(25)]
STEP_ROWS = [{"id": f"s{i}", "arrival_step": 2 * i, "prompt_len": 9, "output_len": 3}
             for i in range(3)]


def session(client, rows=ROWS, **body) -> str:
    r = client.post("/api/sessions", json={"workload": {"requests": rows}, **body})
    assert r.status_code == 201, r.text
    return str(r.json()["session_id"])


def expected(rows: list[dict]) -> list[dict]:
    """Init's entry shape: every key, the clock a row does not use as null."""
    return [{"id": r["id"], "prompt_len": r["prompt_len"], "output_len": r["output_len"],
             "arrival_s": r.get("arrival_s"), "arrival_step": r.get("arrival_step")}
            for r in rows]


def test_pages_concatenate_to_the_workloads_rows_for_every_engine(client):
    sid = session(client, configs=[{}, {"max_num_seqs": 2}])
    get = lambda path: client.get(path).json()  # noqa: E731
    for engine in (0, 1):
        assert request_list(get, sid, engine, limit=7) == expected(ROWS)
    page = get(f"/api/sessions/{sid}/requests?offset=21&limit=7")
    assert page == {"total": 25, "offset": 21, "requests": expected(ROWS)[21:]}
    assert get(f"/api/sessions/{sid}/requests?offset=25") == {
        "total": 25, "offset": 25, "requests": []}
    stepped = session(client, STEP_ROWS)
    assert request_list(get, stepped) == expected(STEP_ROWS)
    with client.websocket_connect(f"/ws/sessions/{sid}?follow=1") as ws:
        init = receive(ws)
    assert init["num_requests"] == 25 and "requests" not in init


def test_bad_offsets_and_limits_are_422s_naming_the_field(client):
    sid = session(client)
    for query, field in (("offset=-1", "offset"), ("offset=x", "offset"), ("limit=0", "limit"),
                         ("limit=10001", "limit"), ("engine=4", "engine")):
        r = client.get(f"/api/sessions/{sid}/requests?{query}")
        assert r.status_code == 422, query
        assert [e["loc"] for e in r.json()["detail"]] == [["query", field]], query
    r = client.get(f"/api/sessions/{sid}/requests?offset=26")
    assert r.status_code == 422
    detail = r.json()["detail"]
    assert detail["field"] == "offset" and "25" in detail["message"]


def test_unknown_sessions_and_engines_are_404s(client):
    r = client.get("/api/sessions/nope/requests")
    assert r.status_code == 404 and r.json()["detail"]["field"] == "session_id"
    r = client.get(f"/api/sessions/{session(client)}/requests?engine=1")
    assert r.status_code == 404 and r.json()["detail"]["field"] == "engine"
