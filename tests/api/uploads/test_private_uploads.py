"""An upload belongs to the client that made it: another visitor (another upload token, or
none) can neither list it, read it, run a session on it (REST or WebSocket) nor sweep it; the
owner can, with the token POST /api/traces answered."""

from __future__ import annotations

import json

from support.server import UPLOAD_TOKEN, receive

from servescope.api.uploads.owner import owner_of, valid_token

ROWS = [{"id": "a", "arrival_s": 0.0, "prompt_len": 40, "output_len": 5}]
OTHER = {"X-Upload-Token": "another-visitor-token"}
NOBODY = {"X-Upload-Token": ""}


def upload(client, headers=None):
    r = client.post("/api/traces", files={"file": ("t.json", json.dumps(ROWS).encode())},
                    headers=headers)
    assert r.status_code == 201, r.text
    return r.json()


def configure(client, workload: dict) -> dict:
    """The first answer to a configure: its init, or the error refusing it."""
    with client.websocket_connect("/ws/sessions/new") as ws:
        ws.send_text(json.dumps({"type": "configure", "v": 1, "workload": workload}))
        while (msg := receive(ws))["type"] not in ("init", "error"):
            pass
        return msg


def test_the_upload_answers_the_token_that_owns_it(client):
    mine = upload(client)
    assert mine["upload_token"] == UPLOAD_TOKEN  # the token presented is kept
    fresh = upload(client, NOBODY)  # none presented: a new one, which lists that upload only
    assert valid_token(fresh["upload_token"]) and fresh["upload_token"] != UPLOAD_TOKEN
    theirs = client.get("/api/traces", headers={"X-Upload-Token": fresh["upload_token"]})
    assert [t["trace_id"] for t in theirs.json()] == [fresh["trace_id"]]
    assert owner_of(fresh["upload_token"]) != owner_of(UPLOAD_TOKEN)


def test_another_visitor_can_neither_list_nor_read_it(client):
    mine = upload(client)
    assert [t["trace_id"] for t in client.get("/api/traces").json()] == [mine["trace_id"]]
    for headers in (OTHER, NOBODY):
        assert client.get("/api/traces", headers=headers).json() == []
        r = client.get(f"/api/traces/{mine['trace_id']}", headers=headers)
        assert r.status_code == 404 and r.json()["detail"]["field"] == "trace_id"
    assert client.get(f"/api/traces/{mine['trace_id']}").json()["trace_id"] == mine["trace_id"]


def test_another_visitor_cannot_run_a_session_on_it(client):
    mine = upload(client)
    for token in (OTHER["X-Upload-Token"], None):
        workload = {"trace": mine["trace_id"], **({"upload_token": token} if token else {})}
        err = configure(client, workload)
        assert err["type"] == "error" and err["field"] == "trace", err
        r = client.post("/api/sessions", json={"workload": workload})
        assert r.status_code == 400 and r.json()["detail"]["field"] == "trace", r.text
    init = configure(client, {"trace": mine["trace_id"], "upload_token": UPLOAD_TOKEN})
    assert init["type"] == "init" and init["trace"]["trace_id"] == mine["trace_id"]


def test_another_visitor_cannot_sweep_it(client):
    mine = upload(client)
    body = {"workload": {"trace": mine["trace_id"]}, "config": {"model": "m"},
            "grid": {"max_num_seqs": [4]}}
    r = client.post("/api/sweeps", json=body, headers=OTHER)
    assert r.status_code == 400 and r.json()["detail"]["field"] == "trace", r.text


def test_a_malformed_token_is_a_400_naming_the_header(client):
    for path in ("/api/traces", "/api/traces/0123456789abcdefghij"):
        r = client.get(path, headers={"X-Upload-Token": "short"})
        assert r.status_code == 400 and r.json()["detail"]["field"] == "X-Upload-Token"
    r = client.post("/api/traces", files={"file": ("t.json", b"[]")},
                    headers={"X-Upload-Token": "no spaces allowed in it"})
    assert r.status_code == 400 and r.json()["detail"]["field"] == "X-Upload-Token"
