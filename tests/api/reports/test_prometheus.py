"""A real Prometheus scrapes a real server while a session plays and finds data for every
expression of vLLM's official overview dashboard; a run exported as OpenMetrics backfills
with promtool and its vllm:num_requests_running matches the run's records."""

from __future__ import annotations

import asyncio
import bisect
import json
import math
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from support.live import Client
from support.prometheus import Prometheus, backfill
from support.server import ROOT

from servescope.core.engine import Engine
from servescope.scenarios.diagnosis_check import prepare
from servescope.scenarios.presets import load_preset

QUERIES = json.loads((Path(__file__).parent / "vllm_overview_queries.json").read_text())
# The dashboard's variables set to "All", Grafana's intervals for a 1 s scrape interval.
VARIABLES = {"$__rate_interval": "5s", "$__range": "5m", "$job": ".*", "$model_name": ".*",
             "$instance": ".*", "$ttft_slo": "1.0", "$tpot_slo": "0.1"}
DEADLINE_S = 150


def fill(expr: str) -> str:
    for name, value in VARIABLES.items():
        expr = expr.replace(name, value)
    return expr


def has_data(result: list[dict]) -> bool:
    """A finite value, as a Grafana panel shows (NaN reads 'No traffic')."""
    return any(math.isfinite(float(r["value"][1])) for r in result)


def post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def wait_for_every_panel(prom: Prometheus, server, sid: str) -> list[str]:
    """The panels still without data at the deadline (polling the session's REST description
    each round, as a dashboard viewer's page would: the HTTP panels need traffic)."""
    pending = [q for q in QUERIES["queries"] if "no_data_without" not in q]
    deadline = time.monotonic() + DEADLINE_S
    while pending and time.monotonic() < deadline:
        server.get(f"/api/sessions/{sid}")
        pending = [q for q in pending if not has_data(prom.query(fill(q["expr"])))]
        time.sleep(0.5)
    return [q["panel"] for q in pending]


def test_every_overview_panel_has_data_while_a_session_plays(server, tmp_path):
    session = post(server.url + "/api/sessions", {"workload": {"synthetic": {
        "num_requests": 3000, "request_rate": 20, "output_len_min": 8, "output_len_max": 64}}})
    sid = session["session_id"]
    prom = Prometheus(tmp_path / "prometheus", targets=[f"127.0.0.1:{server.port}"])

    async def main() -> list[str]:
        async with Client(server.ws_url + session["ws_path"]) as driver:
            await driver.until(lambda m: m["type"] == "status")
            await driver.send(type="play", speed=1.0)
            return await asyncio.to_thread(wait_for_every_panel, prom, server, sid)

    try:
        assert asyncio.run(main()) == []
        label = session["metrics_label"]
        running = prom.query(f'vllm:num_requests_running{{session="{label}"}}')
        assert running and all(sid not in json.dumps(r["metric"]) for r in running)
        for q in QUERIES["queries"]:  # no data in vLLM either without those features
            if "no_data_without" in q:
                prom.query(fill(q["expr"]))  # a valid query
        assert has_data(prom.query("sum(vllm:external_prefix_cache_queries_total)"))
    finally:
        prom.stop()


def records_of(preset: str) -> tuple[list, dict]:
    config, specs, _ = load_preset(preset)
    config, step_time = prepare(config)
    engine = Engine(config, specs, step_time)
    records = list(engine.run())
    return records, engine.summary()


def after_update(record: Any) -> int:
    """Running as vLLM samples it: after the step's update, its finished requests gone."""
    return len(set(record.running) - set(record.finished))


def test_an_exported_run_backfills_and_its_running_series_matches_the_records(tmp_path):
    epoch, interval = float(int(time.time()) - 3600), 0.5
    exported = tmp_path / "run.om.txt"
    subprocess.run([sys.executable, "-m", "servescope.cli", "export", "--preset",
                    "kv-starvation", "--openmetrics", str(exported), "--epoch", str(epoch),
                    "--interval-s", str(interval)], cwd=ROOT, check=True, timeout=120)
    backfill(exported, tmp_path / "tsdb")
    records, summary = records_of("kv-starvation")
    starts = [r.time_s for r in records]
    end = records[-1].time_s + records[-1].step_time_ms / 1000
    prom = Prometheus(tmp_path / "prometheus", data_dir=tmp_path / "tsdb")
    try:
        data = prom.api("query_range", query="vllm:num_requests_running", start=epoch,
                        end=epoch + end, step=interval)
        (series,) = data["result"]
        points = [(float(t) - epoch, float(v)) for t, v in series["values"]]
        assert len(points) == math.floor(end / interval) + 1
        for t, running in points:
            shown = bisect.bisect_right(starts, t + 1e-9) - 1
            assert running == after_update(records[shown]), t
        at_end = prom.api("query", query="vllm:generation_tokens_total", time=epoch + end)
        assert float(at_end["result"][0]["value"][1]) == summary["total_output_tokens"]
        assert float(prom.api("query", query="vllm:num_requests_running", time=epoch + end)
                     ["result"][0]["value"][1]) == after_update(records[-1])
    finally:
        prom.stop()
