"""inference-perf (kubernetes-sigs, its own Python >= 3.12 environment made by `make test`) runs a
short constant-rate profile against `servescope serve --openai` as a separate process, as its
users run it; its reported TTFT and inter-token latency agree with the endpoint's own summary of
the same run, vLLM's histograms on /metrics (issue #37's done-when).

Why the tolerance. The endpoint sends each token when wall time reaches the simulated end of the
step that made it, so a client sees every token late by a delivery delay d >= 0 (the event loop's
turn, the socket, inference-perf's own loop) and never early. Hence, in wall seconds:
  TTFT: client = server / time_scale + d_request + d_first >= server / time_scale, and above it
        by at most DELIVERY_S;
  ITL:  inference-perf's mean is over every token-to-token gap, sum(last - first) / sum(n - 1),
        and so is vLLM's histogram's (_sum / _count, one gap a step, one token a step); the
        delays cancel but for d_last - d_first, so they differ by at most
        DELIVERY_S / (OUTPUT_TOKENS - 1).
--time-scale 0.5 stretches a simulated step to twice its length on the wall, halving the same
jitter's share of it (the placeholder cost model's ~10 ms steps last ~20 ms)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.endpoint import CONFIG
from support.real_clients import PERF_VENV, Endpoint, make_tokenizer, scrape, total

from servescope.traces.inference_perf_report import REPORT_NAME, read_report

TIME_SCALE = 0.5
# a token's delivery delay on a loaded 2-core machine is bounded by this: a few of the kernel's
# scheduling periods (CFS's sched_latency, 6 ms x (1 + log2 CPUs) = 12 ms at 2 CPUs) plus an
# event-loop turn behind other streams; ours, and generous
DELIVERY_S = 0.05
TIMER_S = 0.001  # the two clocks' reading granularity, far above perf_counter's
OUTPUT_TOKENS = 16
RATE, DURATION_S = 4, 4  # 16 requests over 4 s: a few in flight at once


def profile(base_url: str, model: str, tokenizer: Path, out: Path) -> dict[str, Any]:
    """inference-perf's config.yaml (the keys of its examples/vllm configs): a fixed-length
    random prompt and answer, streamed, at a constant rate for one stage."""
    fixed = {"type": "fixed", "mean": 0, "std_dev": 0}
    return {
        "api": {"type": "completion", "streaming": True},
        "data": {"type": "random",
                 "input_distribution": {**fixed, "min": 64, "max": 64, "mean": 64},
                 "output_distribution": {**fixed, "min": OUTPUT_TOKENS, "max": OUTPUT_TOKENS,
                                         "mean": OUTPUT_TOKENS}},
        "load": {"type": "constant", "stages": [{"rate": RATE, "duration": DURATION_S}],
                 "num_workers": 1},
        "server": {"type": "vllm", "model_name": model, "base_url": base_url,
                   "ignore_eos": True},
        "tokenizer": {"pretrained_model_name_or_path": str(tokenizer)},
        "report": {"request_lifecycle": {"summary": True, "per_stage": False,
                                         "per_request": False}},
        "storage": {"local_storage": {"path": str(out)}},
    }


def run_inference_perf(config: dict[str, Any], workdir: Path) -> dict[str, Any]:
    path = workdir / "inference-perf.yaml"
    path.write_text(yaml.safe_dump(config))
    done = subprocess.run([str(PERF_VENV / "bin" / "inference-perf"), "--config_file",
                           str(path)], cwd=workdir, capture_output=True, text=True,
                          timeout=600)  # a bound against hanging; the run takes seconds
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return read_report(Path(config["storage"]["local_storage"]["path"]) / REPORT_NAME)


def mean(samples: dict[Any, float], family: str) -> tuple[float, float]:
    count = total(samples, family + "_count")
    return total(samples, family + "_sum") / count, count


def test_ttft_and_itl_agree_with_the_endpoints_own_histograms(tmp_path: Path) -> None:
    tokenizer = make_tokenizer(tmp_path / "tokenizer")  # skips when inference-perf is absent
    endpoint = Endpoint(tmp_path, CONFIG, "--time-scale", str(TIME_SCALE))
    try:
        report = run_inference_perf(
            profile(endpoint.url, endpoint.model(), tokenizer, tmp_path / "report"), tmp_path)
        served = scrape(endpoint.url + "/metrics")
    finally:
        endpoint.stop()
    assert report["failed"] == 0 and report["completed"] == RATE * DURATION_S
    assert total(served, "vllm:request_success_total", finished_reason="length") == (
        report["completed"])
    assert total(served, "vllm:generation_tokens_total") == report["completed"] * OUTPUT_TOKENS

    ttft_s, num_first = mean(served, "vllm:time_to_first_token_seconds")
    itl_s, num_gaps = mean(served, "vllm:inter_token_latency_seconds")
    assert num_first == report["completed"]
    assert num_gaps == report["completed"] * (OUTPUT_TOKENS - 1)  # one token a decode step
    ttft_wall, itl_wall = ttft_s / TIME_SCALE, itl_s / TIME_SCALE
    client_ttft, client_itl = report["mean_ttft_ms"] / 1000, report["mean_itl_ms"] / 1000
    print(json.dumps({"client_ttft_s": client_ttft, "endpoint_ttft_s": ttft_wall,
                      "client_itl_s": client_itl, "endpoint_itl_s": itl_wall}))
    assert ttft_wall - TIMER_S <= client_ttft <= ttft_wall + DELIVERY_S
    assert client_itl == pytest.approx(itl_wall, abs=DELIVERY_S / (OUTPUT_TOKENS - 1))
