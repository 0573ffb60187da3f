"""One trace and one config through every door (`servescope sim`, a sweep point, a page session
on the uploaded trace, the page's REST sweep) give the same effective config and the same
summary: each resolves the config with core/resolve.py (vLLM 0.33's defaults for an H100:
max_num_batched_tokens 8192, max_num_seqs 1024, async scheduling on), never the demo's."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from support.server import ORIGIN, UPLOAD_TOKEN, UPLOADS, make_settings, receive

from servescope.api.app import create_app
from servescope.cli import main
from servescope.sweep import plan as sweep_plan
from servescope.sweep.cost import prices
from servescope.sweep.point import run_point
from servescope.traces.load import read_requests
from servescope.traces.upload_options import UploadOptions

CONFIG = {"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100"}
ROWS = [{"id": f"r{i}", "arrival_s": 0.02 * i, "prompt_len": 200 + 97 * (i % 9),
         "output_len": 6 + i % 7} for i in range(16)]


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "trace.json").write_text(json.dumps(ROWS))
    (tmp_path / "config.json").write_text(json.dumps(CONFIG))
    return tmp_path / "trace.json", tmp_path / "config.json"


def _sim(trace: Path, config: Path, capsys: pytest.CaptureFixture[str]) -> tuple[dict, dict]:
    out = trace.parent / "summary.json"
    assert main(["sim", "--trace", str(trace), "--config", str(config),
                 "--summary", str(out)]) == 0
    line = next(x for x in capsys.readouterr().err.splitlines()
                if x.startswith("effective config: "))
    return json.loads(line.removeprefix("effective config: ")), json.loads(out.read_text())


def _sweep_point(trace: Path) -> tuple[dict, dict]:
    """The one point a grid of one GPU makes, run as a Ray task runs it."""
    plan = sweep_plan.make_plan(CONFIG, {"gpu": ["H100"]}, {})
    report = run_point(plan.points[0], read_requests(trace, UploadOptions())[1], {}, prices())
    return report["config"], report["summary"]


def _page_session(client: TestClient, trace_id: str) -> tuple[dict, dict]:
    with client.websocket_connect("/ws/sessions/new") as ws:
        ws.send_text(json.dumps({"type": "configure", "v": 1, "config": CONFIG,
                                 "workload": {"trace": trace_id,
                                              "upload_token": UPLOAD_TOKEN}}))
        init = receive(ws)
        assert init["type"] == "init", init
        headers = {"X-Session-Token": init.get("session_token", "")}
        summaries = client.get(f"/api/sessions/{init['session_id']}/summary", headers=headers)
        assert summaries.status_code == 200, summaries.text
    return init["engines"][0]["config"], summaries.json()[0]["summary"]


def _page_sweep(client: TestClient, trace_id: str) -> tuple[dict, dict]:
    body = {"workload": {"trace": trace_id}, "config": CONFIG, "grid": {"gpu": ["H100"]}}
    started = client.post("/api/sweeps", json=body)
    assert started.status_code == 202, started.text
    path, mine = f"/api/sweeps/{started.json()['sweep_id']}", {
        "X-Sweep-Token": started.json()["token"]}
    while (view := client.get(path, headers=mine).json())["status"] == "running":
        time.sleep(0.2)  # polls the job's own pace; the test's timeout bounds it
    assert view["status"] == "done", view
    return view["points"][0]["config"], view["points"][0]["summary"]


def test_every_door_runs_the_same_config_and_gives_the_same_summary(
        files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace, config = files
    answers = {"sim": _sim(trace, config, capsys), "sweep point": _sweep_point(trace)}
    app = create_app(make_settings(tmp_path, sweep_num_cpus=1))
    with TestClient(app, headers={**ORIGIN, **UPLOADS}) as client:
        uploaded = client.post("/api/traces", files={"file": ("t.json", trace.read_bytes())})
        assert uploaded.status_code == 201, uploaded.text
        trace_id = uploaded.json()["trace_id"]
        answers["page session"] = _page_session(client, trace_id)
        answers["page sweep"] = _page_sweep(client, trace_id)
    effective, summary = answers["sim"]
    assert (effective["max_num_batched_tokens"], effective["max_num_seqs"]) == (8192, 1024)
    assert effective["async_scheduling"] is True
    for door, (other_config, other_summary) in answers.items():
        assert {k: v for k, v in other_config.items() if v is not None} == effective, door
        assert other_summary == summary, door
