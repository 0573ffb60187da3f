"""A session and the fleet (api/sessions/fleet_track.py, drill.py): a drill-down on an engine
that runs no fleet is refused naming the field, and changes nothing; a session of one engine
sends no fleet frames and says no fleet in init. (A session that runs a fleet needs fleet-core's
core/fleet.py: its tests come with the merge.)"""

from __future__ import annotations

import json

from support.server import receive_until


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
