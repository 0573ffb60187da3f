"""A session under async scheduling: the config key is taken, the run completes and its init
carries the flag; a policy that cannot run async, or a bad value, is refused by the field's
name."""

from __future__ import annotations

import json

from support.server import receive

ROWS = [{"id": f"q{i}", "arrival_step": i // 2, "prompt_len": 20 + 7 * i, "output_len": 4 + i}
        for i in range(6)]
TIGHT = {"block_size": 4, "num_gpu_blocks": 24, "max_num_seqs": 4,
         "max_num_batched_tokens": 32, "enable_prefix_caching": False}


def test_a_session_runs_async_scheduling(client) -> None:
    r = client.post("/api/sessions", json={"config": {**TIGHT, "async_scheduling": True},
                                           "workload": {"requests": ROWS}})
    assert r.status_code == 201, r.text
    sid = r.json()["session_id"]
    assert client.get(f"/api/sessions/{sid}/summary").json()[0]["summary"]["completed"] == 6
    with client.websocket_connect(f"/ws/sessions/{sid}") as ws:
        init = receive(ws)
        assert init["config"]["async_scheduling"] is True


def test_async_scheduling_with_another_policy_is_refused_by_name(client) -> None:
    r = client.post("/api/sessions", json={"config": {"policy": "static",
                                                      "async_scheduling": True}})
    assert r.status_code == 400
    assert r.json()["detail"]["field"] == "async_scheduling"
    with client.websocket_connect("/ws/sessions/new") as ws:
        ws.send_text(json.dumps({"type": "configure", "v": 1,
                                 "config": {"async_scheduling": "yes"}}))
        error = receive(ws)
        assert error["type"] == "error" and error["field"] == "async_scheduling"
