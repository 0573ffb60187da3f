"""A fleet preset chosen with no config of the page's own runs as a fleet (its replicas and
router from the preset), with the preset's own num_gpu_blocks."""

from __future__ import annotations

import json

from support.server import receive_until


def test_a_fleet_preset_runs_its_fleet(client):
    with client.websocket_connect("/ws/sessions/new") as ws:
        ws.send_text(json.dumps({"type": "configure", "v": 1,
                                 "workload": {"preset": "lesson-prefix-routing"}}))
        init = receive_until(ws, "status")[0]
        assert init["type"] == "init"
        assert init["engines"][0]["fleet"]["replicas"] == 4
        assert init["engines"][0]["fleet"]["router"] == "round-robin"
        assert init["config"]["num_gpu_blocks"] == 700
