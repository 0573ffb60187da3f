"""The published measurements the cost model is calibrated and checked against (REFERENCE.md §5).

Each case rebuilds the measured run (model, GPU, engine settings, requests) and returns the
simulated figure for a candidate calibration, so the fit (bench/calibrate.py) and the report
(bench/fidelity.py) run exactly the same code. `role` is "fit" or "held-out".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from servescope.core import cost_model
from servescope.core.catalog import Calibration
from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.request import RequestSpec

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared"
SHAREGPT = SHARED / "traces" / "sharegpt_8k_filtered_stats_llama2_tokenizer.csv"

# LambdaLabsML/vllm-benchmark, vLLM 0.5.4, results/prompt_10/1xH100-80GB-SXM/*_len2000|len8000
# (run 2024-08-19): the ten ShareGPT prompts every 10-prompt run sent, their published input and
# output token counts (an output of 0 is a request that failed after its prefill), and which
# of them got their first token in the engine's first step (they reached the server first).
LAMBDA_70B_INPUTS = (12, 24, 26, 9, 328, 28, 398, 327, 204, 15)
LAMBDA_70B_OUTPUTS = (119, 769, 232, 193, 0, 740, 0, 0, 79, 391)
LAMBDA_70B_FIRST = (2, 3)  # TTFT 48 ms; the other seven 291-292 ms
LAMBDA_8B_INPUTS = (13, 25, 27, 10, 329, 29, 399, 328, 4, 205)
LAMBDA_8B_OUTPUTS = (120, 1, 1, 194, 0, 741, 0, 0, 6, 80)
LAMBDA_8B_FIRST = (3, 5)  # TTFT 41 ms; the others 60-61 ms
# The 320-prompt run's published totals (same prompts, same day, len16000 file header).
LAMBDA_320_INPUT_TOKENS = 65_578
LAMBDA_320_OUTPUT_TOKENS = 44_463

# vLLM 0.5.4 engine defaults for these runs: V0 scheduler, no chunked prefill below 32k
# context, max_num_batched_tokens = max(max_model_len, 2048), no prefix caching.
VLLM_054 = {"policy": "vllm-v0", "enable_chunked_prefill": False,
            "enable_prefix_caching": False, "max_num_seqs": 256}


@dataclass(frozen=True)
class Case:
    name: str
    gpu: str
    role: str
    published: float
    unit: str
    source: str
    predict: Callable[[Calibration | None], float]
    needs_shared: bool = False


def simulate(config: EngineConfig, specs: list[RequestSpec],
             calibration: Calibration | None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    config = cost_model.with_derived_blocks(config)
    engine = Engine(config, specs, cost_model.make_step_time(config, calibration), records=False)
    engine.run_to_end()
    return engine.summary(), engine.request_metrics()


def lambda_requests(inputs: tuple[int, ...], outputs: tuple[int, ...],
                    first: tuple[int, ...]) -> list[RequestSpec]:
    """Failed requests (output 0) still ran their prefill; they are kept with one token."""
    return [RequestSpec(f"q{i}", p, max(o, 1), arrival_s=0.0 if i in first else 0.001)
            for i, (p, o) in enumerate(zip(inputs, outputs, strict=True))]


def _lambda_config(model: str, max_model_len: int) -> EngineConfig:
    return EngineConfig.from_dict({**VLLM_054, "model": model, "gpu": "H100",
                                   "max_model_len": max_model_len,
                                   "max_num_batched_tokens": max(max_model_len, 2048)})


def _mean_tpot(rows: list[dict[str, Any]]) -> float:
    return float(np.mean([r["tpot_ms"] for r in rows if r["tpot_ms"] is not None]))


def _p99_ttft(rows: list[dict[str, Any]]) -> float:
    return float(np.percentile([r["ttft_ms"] for r in rows], 99))


def lambda_70b(calibration: Calibration | None) -> list[dict[str, Any]]:
    config = _lambda_config("neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8", 2000)
    specs = lambda_requests(LAMBDA_70B_INPUTS, LAMBDA_70B_OUTPUTS, LAMBDA_70B_FIRST)
    return simulate(config, specs, calibration)[1]


def lambda_8b(calibration: Calibration | None) -> list[dict[str, Any]]:
    config = _lambda_config("neuralmagic/Meta-Llama-3.1-8B-FP8", 8000)
    specs = lambda_requests(LAMBDA_8B_INPUTS, LAMBDA_8B_OUTPUTS, LAMBDA_8B_FIRST)
    return simulate(config, specs, calibration)[1]


def ci_latency(calibration: Calibration | None) -> float:
    """vLLM's benchmark_latency: one generate() of 8 prompts, 32 in / 128 out, V1 engine."""
    config = EngineConfig.from_dict({"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100",
                                     "max_num_batched_tokens": 16384, "max_num_seqs": 1024,
                                     "max_model_len": 2048})
    specs = [RequestSpec(f"b{i}", 32, 128, arrival_s=0.0) for i in range(8)]
    rows = simulate(config, specs, calibration)[1]
    return float(max(r["e2el_ms"] for r in rows))


def sharegpt_lengths(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """n (prompt, output) pairs from the ShareGPT length stats, filtered as vLLM's
    benchmark_serving filters ShareGPT (both >= 4, prompt <= 1024, total <= 2048)."""
    data = np.loadtxt(SHAREGPT, delimiter=",", skiprows=1, usecols=(0, 1)).astype(np.int64)
    p, o = data[:, 0], data[:, 1]
    keep = (p >= 4) & (o >= 4) & (p <= 1024) & (p + o <= 2048)
    rows = rng.choice(np.flatnonzero(keep), n, replace=False)
    return p[rows], o[rows]


def lambda_sharegpt(n: int) -> list[RequestSpec]:
    """n ShareGPT prompts at infinite rate, lengths scaled to the 320-prompt run's published
    mean input and output (the stats file counts whole conversations, Lambda's are one turn)."""
    prompts, outputs = sharegpt_lengths(np.random.default_rng(n), n)
    prompts = np.rint(prompts * (LAMBDA_320_INPUT_TOKENS / 320) / prompts.mean())
    outputs = np.rint(outputs * (LAMBDA_320_OUTPUT_TOKENS / 320) / outputs.mean())
    return [RequestSpec(f"s{i}", int(p), int(o), arrival_s=0.0) for i, (p, o) in
            enumerate(zip(np.maximum(prompts, 1), np.maximum(outputs, 1), strict=True))]


def lambda_320(calibration: Calibration | None) -> float:
    config = _lambda_config("neuralmagic/Meta-Llama-3.1-8B-FP8", 8000)
    return float(simulate(config, lambda_sharegpt(320), calibration)[0]["output_throughput"])


@lru_cache(maxsize=8)
def lambda_5000(model: str, tp: int, calibration: Calibration | None) -> dict[str, Any]:
    """benchmark_v0.md's version table, v0.5.4 row: 5000 prompts, max-num-seqs 256,
    max-seq-len 2048, chunked prefill on (V0's default budget then: 512 tokens)."""
    config = EngineConfig.from_dict({
        "policy": "vllm-v1", "enable_prefix_caching": False, "max_num_seqs": 256,
        "max_num_batched_tokens": 512, "max_model_len": 2048, "model": model, "gpu": "H100",
        "tensor_parallel_size": tp})
    return simulate(config, lambda_sharegpt(5000), calibration)[0]


LAMBDA = "LambdaLabsML/vllm-benchmark, vLLM 0.5.4"
L8B_FP8 = "neuralmagic/Meta-Llama-3.1-8B-FP8"
L70B = "meta-llama/Llama-3.1-70B-Instruct"
CASES = (
    Case("Lambda 70B FP8 H100, 10 prompts: mean TPOT", "H100", "fit", 33.11, "ms",
         f"{LAMBDA}, prompt_10 70B-Instruct-FP8 len2000", lambda c: _mean_tpot(lambda_70b(c))),
    Case("Lambda 70B FP8 H100, 10 prompts: p99 TTFT", "H100", "fit", 292.26, "ms",
         f"{LAMBDA}, same run (the published mean 155 ms averages in 3 failed requests at 0)",
         lambda c: _p99_ttft(lambda_70b(c))),
    Case("vLLM CI latency, 8B BF16 H100, batch 8, 32 in/128 out", "H100", "fit", 997.5, "ms",
         "vLLM CI latency benchmark (REFERENCE.md §5)", ci_latency),
    Case("Lambda 8B FP8 H100, 320 ShareGPT prompts: output tok/s", "H100", "fit", 3400.4,
         "tok/s", f"{LAMBDA}, benchmark_v0.md TP/DP table", lambda_320, needs_shared=True),
    Case("Lambda 8B FP8 H100, 10 prompts: mean TPOT", "H100", "fit", 6.27, "ms",
         f"{LAMBDA}, prompt_10 8B-FP8 len8000", lambda c: _mean_tpot(lambda_8b(c))),
    Case("Lambda 8B FP8 H100, 10 prompts: p99 TTFT", "H100", "held-out", 60.85, "ms",
         f"{LAMBDA}, same run (includes API-server time the engine does not model)",
         lambda c: _p99_ttft(lambda_8b(c))),
    Case("Lambda 8B FP8 H100, 5000 prompts: output tok/s", "H100", "held-out", 3032.04, "tok/s",
         f"{LAMBDA}, benchmark_v0.md version table", needs_shared=True,
         predict=lambda c: lambda_5000(L8B_FP8, 1, c)["output_throughput"]),
    Case("Lambda 8B FP8 H100, 5000 prompts: median TPOT", "H100", "held-out", 64.06, "ms",
         f"{LAMBDA}, same table", needs_shared=True,
         predict=lambda c: lambda_5000(L8B_FP8, 1, c)["median_tpot_ms"]),
    Case("Lambda 70B BF16 4xH100 TP4, 5000 prompts: output tok/s", "H100", "held-out", 1491.93,
         "tok/s", f"{LAMBDA}, same table", needs_shared=True,
         predict=lambda c: lambda_5000(L70B, 4, c)["output_throughput"]),
    Case("Lambda 70B BF16 4xH100 TP4, 5000 prompts: median TPOT", "H100", "held-out", 125.78,
         "ms", f"{LAMBDA}, same table", needs_shared=True,
         predict=lambda c: lambda_5000(L70B, 4, c)["median_tpot_ms"]),
)


def available_cases(role: str | None = None) -> list[Case]:
    return [c for c in CASES
            if (role is None or c.role == role) and (not c.needs_shared or SHAREGPT.exists())]
