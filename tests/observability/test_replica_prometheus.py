"""A real Prometheus scrapes a fleet's per-replica series: a query on the `replica` label finds
each replica's own, and the relabelling docs/metrics.md gives turns `replica` into the `pod`
llm-d's dashboards group by and the `instance` vLLM's dashboards group by."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from support.prometheus import Prometheus

from servescope.api.wire.serialize import normalize, request_info
from servescope.core.fleet import Fleet
from servescope.core.routers.make import make_router
from servescope.observability.families import engine_samples
from servescope.observability.fleet import replica_meters, replica_views
from servescope.observability.text import render
from servescope.scenarios.diagnosis_check import prepare
from servescope.scenarios.presets import load_preset

DOC = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"
DEADLINE_S = 60


def fleet_text(num_replicas: int) -> tuple[str, list[float]]:
    """/metrics of a fleet run to its end, and each replica's vllm:prompt_tokens_total."""
    config, specs, _ = load_preset("kv-starvation")
    config, step_time = prepare(config)
    configs = [config.to_dict()] * num_replicas
    meters = replica_meters(request_info(specs), configs)
    router = make_router("round-robin", num_replicas, {}, 0, config.block_size)
    for item in Fleet([config] * num_replicas, specs, router, [step_time] * num_replicas).run():
        if isinstance(item, tuple):  # (replica, its step record); routing events aside
            meters[item[0]].observe(normalize(item[1].to_dict()))
    views = replica_views(meters, "m", 0, "fleet1", configs, 4096)
    samples = [s for view, m in zip(views, meters, strict=True)
               for s in engine_samples(view, m.num_records - 1)]
    return render(samples), [m.row(m.num_records - 1)["prompt_tokens"] for m in meters]


def relabel_config() -> str:
    """The metric_relabel_configs block of docs/metrics.md, as the doc writes it."""
    text = DOC.read_text()
    start = text.index("    metric_relabel_configs:")
    return text[start:text.index("```", start)]


@pytest.fixture
def target() -> Iterator[tuple[str, list[float]]]:
    body, totals = fleet_text(3)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            data = body.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}", totals
    finally:
        server.shutdown()
        server.server_close()


def wait_for(prom: Prometheus, expr: str, count: int) -> list[dict]:
    deadline = time.monotonic() + DEADLINE_S
    while len(result := prom.query(expr)) < count and time.monotonic() < deadline:
        time.sleep(0.2)
    return result


def test_prometheus_finds_each_replicas_series_by_its_label(target, tmp_path) -> None:
    address, totals = target
    prom = Prometheus(tmp_path / "prometheus", targets=[address],
                      scrape_extra=relabel_config())
    try:
        by_replica = wait_for(prom, 'vllm:prompt_tokens_total{session="fleet1"}', 3)
        found = {r["metric"]["replica"]: float(r["value"][1]) for r in by_replica}
        assert found == {str(i): total for i, total in enumerate(totals)}
        assert all(t > 0 for t in totals)  # every replica served requests
        (one,) = prom.query('vllm:prompt_tokens_total{replica="1"}')
        assert float(one["value"][1]) == totals[1]
        pods = prom.query("sum by (pod) (vllm:prompt_tokens_total)")  # llm-d's grouping
        assert {r["metric"]["pod"] for r in pods} == {f"fleet1-replica-{i}" for i in range(3)}
        instances = prom.query("sum by (instance) (vllm:num_requests_running)")  # vLLM's
        assert {r["metric"]["instance"] for r in instances} == {
            f"{address}/replica-{i}" for i in range(3)}
        (fleet,) = prom.query("sum(vllm:prompt_tokens_total)")  # a fleet panel: the sum
        assert float(fleet["value"][1]) == sum(totals)
    finally:
        prom.stop()
