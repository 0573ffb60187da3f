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
