"""Fleet frames on the wire (api/wire/fleet.py): what the server folds (api/records/
fleet_frames.py) is what its model sends, and what the browser's decoder and state/fleet.js
hold after the frames is the last frame's rows and the arrivals routed up to its time."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from support.factories import make_config

from servescope.api.records.fleet_frames import FleetFrames
from servescope.api.records.track_source import fleet_source
from servescope.api.wire import protocol as P
from servescope.api.wire.text import dump
from servescope.core.engine import Engine
from servescope.core.request import RequestSpec

HERE = Path(__file__).parent
NODE = shutil.which("node")


def fleet_frames() -> tuple[FleetFrames, float]:
    """Two replicas, requests dealt alternately, run to the end; the last record's time."""
    specs = [RequestSpec(f"q{i}", 12 + i, 3, arrival_s=0.003 * i) for i in range(8)]
    engines = [Engine(make_config(), specs[k::2]) for k in (0, 1)]
    items = sorted(((rec.time_s, k, rec) for k, e in enumerate(engines) for rec in e.run()),
                   key=lambda x: (x[0], x[1]))
    routed = [SimpleNamespace(request_id=s.id, arrival_s=s.arrival_s, replica=i % 2,
                              scores=(0.5, 0.25), reason="its turn") for i, s in enumerate(specs)]
    frames = FleetFrames(specs, [16, 16])
    list(iter(fleet_source(iter([*routed, *((k, r) for _, k, r in items)]), 0, frames), None))
    return frames, items[-1][0]


def sent(frames: FleetFrames, times: list[float]) -> list[str]:
    out, last = [], None
    for t in times:
        f = frames.frame(t, last)
        last = t
        out.append(dump(P.FleetFrame(engine=0, time_s=t, replicas=f["replicas"],
                                     routed=f["routed"])))
    return out


def test_a_fleet_frame_is_its_models_text_both_ways():
    frames, end = fleet_frames()
    for text in sent(frames, [0.0, end / 2, end]):
        msg = P.SERVER.validate_json(text)
        assert isinstance(msg, P.FleetFrame) and dump(msg) == text


def test_the_drill_down_message_names_its_field_when_bad():
    assert P.CLIENT.validate_python({"type": "replica", "replica": 3}).replica == 3
    with pytest.raises(ValueError, match="replica"):
        P.CLIENT.validate_python({"type": "replica", "replica": -1})


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_the_page_holds_the_last_frames_rows_and_the_arrivals_so_far(tmp_path):
    frames, end = fleet_frames()
    times = [0.0, 0.004, 0.01, end]
    texts = sent(frames, times)
    path = tmp_path / "fleet.json"
    info = {"replicas": 2, "router": "round-robin", "scrape_interval_ms": None, "replica": 0}
    path.write_text(json.dumps({"info": info, "frames": texts}))
    out = subprocess.run([NODE, str(HERE / "fleet_check.mjs"), str(path)], capture_output=True,
                         text=True, timeout=60, check=True)
    held = json.loads(out.stdout)
    last = json.loads(texts[-1])
    assert held["replicas"] == last["replicas"] and held["time_s"] == end
    assert [a["request_id"] for a in held["arrivals"]] == [f"q{i}" for i in range(8)]
