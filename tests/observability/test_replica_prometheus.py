"""A real Prometheus scrapes a fleet's per-replica series: a query on the `replica` label finds
each replica's own, and the relabelling docs/metrics.md gives turns `replica` into the `pod`
llm-d's dashboards group by and the `instance` vLLM's dashboards group by; a P/D fleet's
engines, scraped by the same job, are found by `pool` and `replica`, each its own pod, with the
NIXL connector's failed-transfer counter on the decode replica whose load failed."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from support.prometheus import Prometheus

from servescope.api.records.pd_meters import fold, pd_meters
from servescope.api.wire.serialize import normalize, request_info
from servescope.core.fleet import Fleet
from servescope.core.pd_config import pd_fleet_from
from servescope.core.request import RequestSpec
from servescope.core.routers.make import make_router
from servescope.observability.families import engine_samples
from servescope.observability.fleet import replica_meters, replica_views
from servescope.observability.pd import pd_views, positions_at
from servescope.observability.text import render
from servescope.scenarios.diagnosis_check import prepare
from servescope.scenarios.presets import load_preset

DOC = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"
DEADLINE_S = 60
# A P/D fleet of one prefill and two decode replicas (round-robin: q0, q2 to D0; q1, q3 to D1)
PD = {"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100",
      "prefill": {"replicas": 1}, "decode": {"replicas": 2, "router": "round-robin"}}
PD_N, PD_PROMPT = 4, 400
PD_FAILS = frozenset({"q1"})  # its KV load fails (core/pd_fleet.py's fails: rule D5)


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


def pd_text() -> str:
    """/metrics of a P/D fleet run to its end (observability/pd.py, as a P/D session serves it)."""
    specs = [RequestSpec(f"q{i}", PD_PROMPT, 8, arrival_s=0.05 * i) for i in range(PD_N)]
    fleet = pd_fleet_from(PD, specs, records=True)
    fleet.fails = PD_FAILS
    meters = pd_meters(fleet, request_info(specs))
    fold(meters, fleet.run())
    views = pd_views(meters, "m", 0, "pd1", 4096)
    return render([s for view, pos in zip(views, positions_at(views, float("inf")), strict=True)
                   for s in engine_samples(view, pos)])


def relabel_config() -> str:
    """The metric_relabel_configs block of docs/metrics.md, as the doc writes it."""
    text = DOC.read_text()
    start = text.index("    metric_relabel_configs:")
    return text[start:text.index("```", start)]


@contextlib.contextmanager
def serving(body: str) -> Iterator[str]:
    """A loopback HTTP server answering every GET with `body` as /metrics text; its address."""

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
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def scraped(tmp_path_factory) -> Iterator[tuple[Prometheus, str, list[float]]]:
    """One Prometheus scraping a three-replica fleet's target and a P/D fleet's with the
    docs' relabelling; the fleet target's address and each replica's prompt tokens."""
    body, totals = fleet_text(3)
    with serving(body) as address, serving(pd_text()) as pd_address:
        prom = Prometheus(tmp_path_factory.mktemp("prometheus"), targets=[address, pd_address],
                          scrape_extra=relabel_config())
        try:
            yield prom, address, totals
        finally:
            prom.stop()


def wait_for(prom: Prometheus, expr: str, count: int) -> list[dict]:
    deadline = time.monotonic() + DEADLINE_S
    while len(result := prom.query(expr)) < count and time.monotonic() < deadline:
        time.sleep(0.2)
    return result


def test_prometheus_finds_each_replicas_series_by_its_label(scraped) -> None:
    prom, address, totals = scraped
    fleet1 = '{session="fleet1"}'
    by_replica = wait_for(prom, f"vllm:prompt_tokens_total{fleet1}", 3)
    found = {r["metric"]["replica"]: float(r["value"][1]) for r in by_replica}
    assert found == {str(i): total for i, total in enumerate(totals)}
    assert all(t > 0 for t in totals)  # every replica served requests
    (one,) = prom.query('vllm:prompt_tokens_total{session="fleet1", replica="1"}')
    assert float(one["value"][1]) == totals[1]
    pods = prom.query(f"sum by (pod) (vllm:prompt_tokens_total{fleet1})")  # llm-d's grouping
    assert {r["metric"]["pod"] for r in pods} == {f"fleet1-replica-{i}" for i in range(3)}
    instances = prom.query(f"sum by (instance) (vllm:num_requests_running{fleet1})")  # vLLM's
    assert {r["metric"]["instance"] for r in instances} == {
        f"{address}/replica-{i}" for i in range(3)}
    (fleet,) = prom.query(f"sum(vllm:prompt_tokens_total{fleet1})")  # a fleet panel: the sum
    assert float(fleet["value"][1]) == sum(totals)


def test_prometheus_finds_a_pd_fleets_engines_by_pool_and_its_failed_kv_load(scraped) -> None:
    prom = scraped[0]
    engines = wait_for(prom, 'vllm:num_requests_running{session="pd1"}', 3)
    assert {(r["metric"]["pool"], r["metric"]["replica"]) for r in engines} == {
        ("prefill", "0"), ("decode", "0"), ("decode", "1")}
    # the prefill replica computed every prompt (each request asked it for one token)
    (prefill,) = prom.query('vllm:prompt_tokens_total{session="pd1", pool="prefill"}')
    assert float(prefill["value"][1]) == PD_N * PD_PROMPT
    # each engine its own pod and instance: prefill 0 and decode 0 apart by their pool
    pods = prom.query('sum by (pod) (vllm:num_requests_running{session="pd1"})')
    assert {r["metric"]["pod"] for r in pods} == {
        "pd1-prefill-replica-0", "pd1-decode-replica-0", "pd1-decode-replica-1"}
    instances = prom.query('count by (instance) (vllm:num_requests_running{session="pd1"})')
    assert len(instances) == 3 and all(r["value"][1] == "1" for r in instances)
    # NIXL's counter: q1's load failed on D1 (round-robin), nowhere else
    failed = prom.query('vllm:nixl_num_failed_transfers_total{session="pd1"}')
    assert {(r["metric"]["pool"], r["metric"]["replica"]): float(r["value"][1])
            for r in failed} == {("prefill", "0"): 0, ("decode", "0"): 0, ("decode", "1"): 1}
