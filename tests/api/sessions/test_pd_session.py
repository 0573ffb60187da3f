"""A P/D session (api/sessions/pd_track.py, records/pd_frames.py): a configure whose config is
P/D runs both pools; its fleet frames carry each pool's rows, the routed arrivals by pool and
the KV transfers about the session's time; a decode replica lists the requests waiting for
their remote KV; a drill-down names the pool; a bad P/D config is an error naming the field and
the session lives on."""

from __future__ import annotations

import json

from support.server import receive_until

# Llama 3.1 8B holds 131,072 KV bytes a token (32 layers x 8 KV heads x 128 x 2 x 2 bytes): a
# 64-token prompt is 8.4 MB, 0.84 s over a 0.01 GB/s link, far longer than a decode step.
PD = {"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100", "num_gpu_blocks": 256,
      "prefill": {"replicas": 1}, "decode": {"replicas": 2},
      "kv_link": {"kind": "pcie", "gbps": 0.01}}
REQUESTS = [{"id": f"r{k}", "arrival_s": 0.05 * k, "prompt_len": 64, "output_len": 4}
            for k in range(4)]


def configure(ws, config: dict) -> list[dict]:
    ws.send_text(json.dumps({"type": "configure", "v": 1, "config": config,
                             "workload": {"requests": REQUESTS}}))
    return receive_until(ws, "status")


def frames_at(ws, time_s: float) -> list[dict]:
    ws.send_text(json.dumps({"type": "seek", "v": 1, "time_s": time_s}))
    return [m for m in receive_until(ws, "status") if m["type"] == "fleet"]


def test_a_pd_session_frames_both_pools_the_transfers_and_the_requests_waiting_for_kv(client):
    with client.websocket_connect("/ws/sessions/new") as ws:
        fleet = configure(ws, PD)[0]["engines"][0]["fleet"]
        assert fleet["pools"] == {"prefill": {"replicas": 1, "router": "round-robin"},
                                  "decode": {"replicas": 2, "router": "round-robin"}}
        assert (fleet["replicas"], fleet["pool"], fleet["replica"]) == (3, "prefill", 0)
        assert fleet["kv_link"]["gbps"] == 0.01
        end = frames_at(ws, 1000.0)[-1]
        assert end["replicas"] == [] and len(end["pools"]["decode"]) == 2
        done = {t["request_id"]: t for t in end["transfers"]}
        assert set(done) == {r["id"] for r in REQUESTS}
        r0 = done["r0"]
        # 64 tokens of 16-token blocks; 8,388,608 bytes at 1e7 B/s (+ PCIe's latency)
        assert (r0["num_blocks"], r0["num_bytes"], r0["prefill_replica"]) == (4, 8388608, 0)
        assert 0.838 < r0["done_s"] - r0["start_s"] < 0.85
        routed = [a for f in frames_at(ws, 1000.0) for a in f["routed"]]
        assert {(a["request_id"], a["pool"]) for a in routed} >= {("r0", "decode"),
                                                                  ("r0", "prefill")}
        mid = frames_at(ws, (r0["start_s"] + r0["done_s"]) / 2)[-1]
        decode = mid["pools"]["decode"][r0["decode_replica"]]
        assert "r0" in decode["waiting_for_kv"] and decode["num_waiting_for_kv"] >= 1
        moving = next(t for t in mid["transfers"] if t["request_id"] == "r0")
        assert moving["start_s"] <= mid["time_s"] < moving["done_s"]


def test_drill_down_names_the_pool_and_streams_that_replicas_blocks(client):
    with client.websocket_connect("/ws/sessions/new") as ws:
        configure(ws, PD)
        ws.send_text(json.dumps({"type": "replica", "v": 1, "replica": 0}))
        error = receive_until(ws, "error")[-1]
        assert error["field"] == "pool"
        ws.send_text(json.dumps({"type": "replica", "v": 1, "pool": "decode", "replica": 2}))
        assert receive_until(ws, "error")[-1]["field"] == "replica"
        ws.send_text(json.dumps({"type": "replica", "v": 1, "pool": "decode", "replica": 0}))
        init = receive_until(ws, "init")[-1]
        assert (init["engines"][0]["fleet"]["pool"], init["engines"][0]["fleet"]["replica"]) \
            == ("decode", 0)
        receive_until(ws, "status")
        ws.send_text(json.dumps({"type": "seek", "v": 1, "time_s": 1000.0}))
        steps = [m for m in receive_until(ws, "status") if m["type"] in ("step", "keyframe")]
        assert steps  # the decode replica's own records come through


def test_a_bad_pd_config_is_an_error_naming_the_field_and_the_session_lives_on(client):
    with client.websocket_connect("/ws/sessions/new") as ws:
        ws.send_text(json.dumps({"type": "configure", "v": 1,
                                 "config": {**PD, "kv_link": {"gbps": -1}},
                                 "workload": {"requests": REQUESTS}}))
        assert receive_until(ws, "error")[-1]["field"] == "kv_link.gbps"
        ws.send_text(json.dumps({"type": "configure", "v": 1,
                                 "config": {**PD, "prefill": {"replicas": 15}},
                                 "workload": {"requests": REQUESTS}}))
        error = receive_until(ws, "error")[-1]  # 17 lanes: over the view's 16
        assert error["field"] == "prefill.replicas" and "at most 16" in error["message"]
        assert configure(ws, PD)[0]["type"] == "init"
