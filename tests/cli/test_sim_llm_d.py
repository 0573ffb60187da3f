"""`servescope sim --replicas 8 --router llm-d` on the Azure 2023 conversation trace (a window
of it, ../shared/traces), its arrivals compressed so that eight replicas are loaded (issue #35),
and an EndpointPickerConfig YAML as --router-config."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import shared_path

WINDOW_S = 120.0  # the trace's first two minutes
SCALE = 0.02  # 50x the rate: a few hundred requests a second against eight replicas
CONFIG = {"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100"}


def sim(trace: Path, config: Path, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "servescope.cli", "sim", "--trace", str(trace),
                           "--config", str(config), "--window-end-s", str(WINDOW_S),
                           "--replicas", "8", "--router", "llm-d", *args],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def rows_in_window(trace: Path) -> int:
    """Requests of the window with a prompt and an output, counted from the CSV itself."""
    from datetime import datetime
    with trace.open() as handle:
        rows = list(csv.DictReader(handle))
    first = datetime.fromisoformat(rows[0]["TIMESTAMP"][:26])
    return sum(1 for r in rows
               if (datetime.fromisoformat(r["TIMESTAMP"][:26]) - first).total_seconds() <= WINDOW_S
               and int(r["ContextTokens"]) > 0 and int(r["GeneratedTokens"]) > 0)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict, int]:
    trace = shared_path("traces", "AzureLLMInferenceTrace_conv.csv")
    config = tmp_path_factory.mktemp("llm_d") / "c.json"
    config.write_text(json.dumps(CONFIG))
    return (sim(trace, config), sim(trace, config, "--arrival-scale", str(SCALE)),
            rows_in_window(trace))


def test_eight_replicas_behind_llm_d_run_the_window(runs: tuple[dict, dict, int]) -> None:
    _, loaded, expected = runs
    assert loaded["completed"] == expected
    replicas = loaded["replicas"]
    assert [r["replica"] for r in replicas] == list(range(8))
    assert sum(r["completed"] for r in replicas) == expected
    assert all(r["completed"] > 0 for r in replicas)
    router = loaded["router"]
    assert router["name"] == "llm-d" and router["decisions"] == expected
    assert router["profile"] == {"queue-scorer": 2.0, "kv-cache-utilization-scorer": 2.0,
                                 "prefix-cache-scorer": 3.0}


def test_compressed_arrivals_load_every_replica(runs: tuple[dict, dict, int]) -> None:
    as_recorded, loaded, _ = runs
    # at the recorded rate each replica idles between requests; at 50x requests queue for KV
    # and compute on all eight at once
    assert loaded["mean_ttft_ms"] > 2 * as_recorded["mean_ttft_ms"]
    for calm, busy in zip(as_recorded["replicas"], loaded["replicas"], strict=True):
        assert busy["kv_usage_peak"] > 2 * calm["kv_usage_peak"]


def test_an_endpoint_picker_config_yaml_sets_the_profile(tmp_path: Path) -> None:
    trace = shared_path("traces", "AzureLLMInferenceTrace_conv.csv")
    (tmp_path / "c.json").write_text(json.dumps(CONFIG))
    (tmp_path / "epp.yaml").write_text(
        "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n"
        "- type: queue-scorer\n- type: active-request-scorer\nschedulingProfiles:\n"
        "- name: default\n  plugins:\n  - pluginRef: queue-scorer\n    weight: 1\n"
        "  - pluginRef: active-request-scorer\n    weight: 4\n")
    summary = sim(trace, tmp_path / "c.json", "--limit", "40", "--router-config",
                  str(tmp_path / "epp.yaml"))
    assert summary["router"]["profile"] == {"queue-scorer": 1.0, "active-request-scorer": 4.0}
