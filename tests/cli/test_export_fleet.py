"""`servescope export` of a fleet (a config asking for replicas behind a router): each request
row names its replica, the counts agree with the summary's per-replica objects, each replica
steps on its own trace process and carries its own `replica`-labelled series."""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from pathlib import Path

from support.trace_events import validate

from servescope.cli import main

REPLICAS = 3
FLEET = ["--preset", "decode-floor", "--set", f"replicas={REPLICAS}",
         "--set", "router=least-requests"]


def test_a_fleets_rows_name_their_replica_and_add_up_to_each_replicas_count(
        tmp_path: Path) -> None:
    bench, rows = tmp_path / "b.json", tmp_path / "r.csv"
    assert main(["export", *FLEET, "--bench", str(bench), "--csv", str(rows)]) == 0
    result = json.loads(bench.read_text())
    assert result["router"]["name"] == "least-requests"
    completed = {r["replica"]: r["completed"] for r in result["replicas"]}
    assert sorted(completed) == list(range(REPLICAS))
    assert Counter(result["servescope"]["replica"]) == Counter(
        {r: n for r, n in completed.items() if n})
    with rows.open() as f:
        table = list(csv.DictReader(f))
    assert len(table) == result["completed"]
    assert Counter(int(r["replica"]) for r in table) == Counter(result["servescope"]["replica"])


def test_a_fleets_trace_and_metrics_are_per_replica(tmp_path: Path) -> None:
    trace, metrics, bench = tmp_path / "t.json", tmp_path / "m.om.txt", tmp_path / "b.json"
    assert main(["export", *FLEET, "--perfetto", str(trace), "--openmetrics", str(metrics),
                 "--bench", str(bench), "--epoch", "0"]) == 0
    events = json.loads(trace.read_text())["traceEvents"]
    assert validate({"traceEvents": events}) == []
    processes = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    steppers = {processes[e["pid"]] for e in events if e.get("cat") == "step"}
    busy = {f"replica {r['replica']}" for r in json.loads(bench.read_text())["replicas"]
            if r["completed"]}
    assert steppers == busy and "engine" not in processes.values()
    # each replica's final success count is its own completed requests
    last: dict[str, float] = {}
    for line in metrics.read_text().splitlines():
        if line.startswith("vllm:request_success_total{"):
            replica = re.search(r'replica="(\d+)"', line)
            assert replica, line
            key = replica.group(1) + line[:line.index("}")]
            last[key] = float(line.rsplit(" ", 2)[1])
    done = Counter[str]()
    for key, value in last.items():
        done[key.split("vllm:")[0]] += int(value)
    assert done == Counter({str(r["replica"]): r["completed"]
                            for r in json.loads(bench.read_text())["replicas"]
                            if r["completed"]})


def test_one_replica_exports_as_the_single_engine(tmp_path: Path) -> None:
    metrics, bench = tmp_path / "m.om.txt", tmp_path / "b.json"
    assert main(["export", "--preset", "decode-floor", "--openmetrics", str(metrics),
                 "--bench", str(bench)]) == 0
    assert "replica=" not in metrics.read_text()
    result = json.loads(bench.read_text())
    assert "replicas" not in result and "replica" not in result["servescope"]
