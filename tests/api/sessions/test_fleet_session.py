"""A session and the fleet (api/sessions/fleet_track.py, drill.py): a drill-down on an engine
that runs no fleet is refused naming the field, and changes nothing; a session of one engine
sends no fleet frames and says no fleet in init. (A session that runs a fleet needs fleet-core's
core/fleet.py: its tests come with the merge.)"""

from __future__ import annotations

import json

import pytest
from support.server import receive, receive_until, validate


def test_a_drill_down_on_an_engine_without_a_fleet_is_refused_naming_the_field(client):
    with client.websocket_connect("/ws/sessions/new") as ws:
        ws.send_text(json.dumps({"type": "configure", "v": 1, "workload": {"preset": "demo"}}))
        seen = receive_until(ws, "status")
        assert seen[0]["type"] == "init" and seen[0]["engines"][0]["fleet"] is None
        ws.send_text(json.dumps({"type": "step", "v": 1, "n": 3}))
        seen += receive_until(ws, "status")
        assert all(m["type"] != "fleet" for m in seen)
        ws.send_text(json.dumps({"type": "replica", "v": 1, "replica": 1}))
        error = receive_until(ws, "error")[-1]
        assert error["field"] == "engine" and "runs no fleet" in error["message"]
        ws.send_text(json.dumps({"type": "replica", "v": 1, "replica": 99}))
        assert receive_until(ws, "error")[-1]["field"] == "replica.replica"  # message.field
        ws.send_text(json.dumps({"type": "pause", "v": 1}))
        assert receive_until(ws, "status")[-1]["iters"] == [2]  # where it was


FLEET = {"replicas": 3, "router": "round-robin", "max_num_seqs": 4}
WORKLOAD = {"synthetic": {"num_requests": 12, "seed": 5}}


def configure_fleet(ws) -> list[dict]:
    ws.send_text(json.dumps({"type": "configure", "v": 1, "config": FLEET, "workload": WORKLOAD}))
    return receive_until(ws, "status")


def test_a_fleet_session_streams_the_viewed_replica_and_a_frame_of_every_replica(client):
    with client.websocket_connect("/ws/sessions/new") as ws:
        init = configure_fleet(ws)[0]
        fleet = init["engines"][0]["fleet"]
        assert (fleet["replicas"], fleet["router"], fleet["replica"]) == (3, "round-robin", 0)
        ws.send_text(json.dumps({"type": "seek", "v": 1, "time_s": 1000.0}))  # to the end
        seen = receive_until(ws, "status")
        frames = [m for m in seen if m["type"] == "fleet"]
        assert frames and len(frames[-1]["replicas"]) == 3
        routed = [a for f in frames for a in f["routed"]]
        # round-robin (vLLM production-stack's RoundRobinRouter): the k-th arrival to k mod 3
        assert [a["replica"] for a in routed] == [k % 3 for k in range(len(routed))]
        assert len(routed) == 12
        done = next(m for m in seen if m["type"] == "done")  # the fleet's summary
        assert [r["completed"] for r in done["summary"]["replicas"]] == [4, 4, 4]


def test_drill_down_views_another_replica_at_the_same_time_and_keeps_the_frames(client):
    with client.websocket_connect("/ws/sessions/new") as ws:
        configure_fleet(ws)
        ws.send_text(json.dumps({"type": "step", "v": 1, "n": 6}))
        before = receive_until(ws, "status")
        t = before[-1]["time_s"]
        routed = [a for m in before if m["type"] == "fleet" for a in m["routed"]]
        ws.send_text(json.dumps({"type": "replica", "v": 1, "replica": 2}))
        assert receive_until(ws, "init")[-1]["engines"][0]["fleet"]["replica"] == 2
        seen: list[dict] = []
        for _ in range(3):  # the configure's status, the seek's, the pause's
            seen += receive_until(ws, "status")
            if seen[-1]["time_s"] == t:
                break
        assert seen[-1]["time_s"] == t and not seen[-1]["playing"]
        frame = [m for m in seen if m["type"] == "fleet"][-1]
        assert frame["time_s"] == t
        # the same routing decisions as before the drill-down (the fleet is deterministic)
        assert frame["routed"] == routed[-64:]


def row(rid: str, arrival_s: float, output_len: int) -> dict:
    return {"id": rid, "arrival_s": arrival_s, "prompt_len": 32, "output_len": output_len}


MID_S = 1.0


def test_playback_goes_on_past_the_viewed_replicas_end_until_the_whole_fleet_ends(
        client, clock):
    # round-robin: the first arrival, 4 tokens long, is replica 0's only request; replicas 1
    # and 2 decode 400 tokens each, long after replica 0's last step
    requests = [row("short", 0.0, 4), row("long1", 0.001, 400), row("long2", 0.002, 400)]
    with client.websocket_connect("/ws/sessions/new") as ws:
        ws.send_text(json.dumps({"type": "configure", "v": 1, "config": FLEET,
                                 "workload": {"requests": requests}}))
        while not (progress := validate(json.loads(ws.receive_text())))["type"] == "progress" \
                or not progress["done"][0]:  # (read raw: `receive` skips progress frames)
            pass  # until the fleet has run to its end
        ws.send_text(json.dumps({"type": "play", "v": 1, "speed": 1.0}))
        assert receive_until(ws, "status")[-1]["playing"]
        clock.advance(MID_S)  # past replica 0's end, before the others' (checked below)
        while (msg := receive(ws))["type"] != "fleet" or msg["time_s"] < MID_S:
            assert msg["type"] != "status" or (msg["playing"] and not msg["done"])
        clock.advance(1e4)  # far past every replica's end: the next tick reaches it
        seen = []
        while not (seen := seen + receive_until(ws, "status"))[-1]["done"]:
            pass
        end = seen[-1]
        summary = next(m for m in seen if m["type"] == "done")["summary"]
        assert not end["playing"]
        last_frame = [m for m in seen if m["type"] == "fleet"][-1]
        durations = [r["duration"] for r in summary["replicas"]]
        assert durations[0] < MID_S < min(durations[1:])  # replica 0 ended early
        # the session's time reached the last replica's last step, not replica 0's
        # (the progress's time: the fleet's last step, its lanes' reach)
        assert end["time_s"] == last_frame["time_s"] >= progress["time_s"][0]
        assert end["time_s"] > durations[0]
        assert end["time_s"] > 0.9 * max(durations)
        assert all(r["p99_ttft_ms"] is not None for r in last_frame["replicas"])


def test_a_fleet_frames_ttft_adds_the_frontend_overhead_as_the_summary_does(client):
    with client.websocket_connect("/ws/sessions/new") as ws:
        ws.send_text(json.dumps({"type": "configure", "v": 1, "workload": WORKLOAD,
                                 "config": {**FLEET, "frontend_overhead_ms": 250.0}}))
        receive_until(ws, "status")
        ws.send_text(json.dumps({"type": "seek", "v": 1, "time_s": 1000.0}))  # to the end
        seen = receive_until(ws, "status")
        rows = [m for m in seen if m["type"] == "fleet"][-1]["replicas"]
        summary = next(m for m in seen if m["type"] == "done")["summary"]
        for frame_row, replica in zip(rows, summary["replicas"], strict=True):
            # the engine's TTFT (core/metrics.py's request_metrics) adds the API server's time
            assert frame_row["p99_ttft_ms"] == pytest.approx(replica["p99_ttft_ms"], abs=1e-3)
            assert frame_row["p99_ttft_ms"] > 250.0
