"""`servescope compare`: the lesson's four serving modes on one workload, priced alike."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from servescope.cli import CliError
from servescope.core import cost_model
from servescope.core.config import ConfigError, EngineConfig
from servescope.core.engine import Engine
from servescope.core.request import RequestSpec
from servescope.scenarios.exercises import MODES, lesson_config, lesson_workload

# Setups that fit in memory with room for the lesson's 8k prompts: (model, gpu, quantization).
DEFAULT_SETUPS = (("meta-llama/Llama-3.1-8B-Instruct", "H100", None),
                  ("meta-llama/Llama-3.3-70B-Instruct", "H200", "fp8"))
COLUMNS = (("output_throughput", "output tok/s", "{:10.0f}"),
           ("mean_ttft_ms", "mean TTFT ms", "{:12.0f}"),
           ("p99_itl_ms", "P99 ITL ms", "{:10.1f}"),
           ("kv_waste_pct", "KV waste %", "{:10.1f}"),
           ("num_preemptions", "preempt", "{:7d}"))


HELP = "compare naive, static, continuous and chunked serving on one workload"
DESCRIPTION = ("Run the lesson workload (60 requests at about 40 req/s, prompts from "
               "{128, 256, 512, 2048, 8192}, outputs 50-300, fixed seed) under naive, "
               "static, continuous (vLLM V0) and continuous + chunked prefill (vLLM V1) "
               "scheduling, every step priced by the same cost model. Without --model "
               "it runs Llama 3.1 8B on H100 and Llama 3.3 70B FP8 on H200.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", help="Hugging Face id, e.g. meta-llama/Llama-3.1-8B-Instruct")
    parser.add_argument("--gpu", default="H100",
                        help="with --model: H100, H200, A100-80GB, ... (default H100)")
    parser.add_argument("--quantization", choices=("fp8",),
                        help="with --model: weight quantization")
    parser.add_argument("--kv-cache-dtype", default="auto", help="auto or fp8")
    parser.add_argument("--tensor-parallel-size", type=int, default=1)
    parser.add_argument("--max-num-batched-tokens", type=int,
                        help="the token budget (default: the lesson's 8192, vLLM's on a "
                             ">= 70 GiB GPU)")
    parser.add_argument("--num-requests", type=int, default=60)
    parser.add_argument("--request-rate", type=float, default=40.0, help="requests per second")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")


def run(args: argparse.Namespace) -> int:
    setups = [(args.model, args.gpu, args.quantization)] if args.model else list(DEFAULT_SETUPS)
    specs = lesson_workload(args.num_requests, args.request_rate, args.seed)
    results = []
    for model, gpu, quantization in setups:
        try:
            base = lesson_config(model, gpu, quantization=quantization,
                                 kv_cache_dtype=args.kv_cache_dtype,
                                 tensor_parallel_size=args.tensor_parallel_size,
                                 max_num_batched_tokens=args.max_num_batched_tokens)
            results.append(compare(base, specs))
        except ConfigError as err:
            raise CliError(str(err)) from err
    if args.json:
        json.dump({"workload": workload_description(args), "setups": results}, sys.stdout,
                  indent=1)
        print()
    else:
        print(render(workload_description(args), results))
    return 0


def compare(base: EngineConfig, specs: list[RequestSpec]) -> dict[str, Any]:
    """Every mode on the same requests, KV pool and step-time function."""
    config = cost_model.with_derived_blocks(base)
    step_time = cost_model.make_step_time(config)
    rows = []
    for mode, overrides in MODES:
        engine = Engine(config.replace(**overrides), specs, step_time, records=False)
        engine.run_to_end()
        summary = engine.summary()
        row = {"mode": mode, "policy": overrides["policy"]}
        row.update({key: summary[key] for key, _, _ in COLUMNS if key in summary})
        row["kv_waste_pct"] = 100.0 * (1.0 - summary.get("kv_token_states_share", 1.0))
        row["completed"] = summary["completed"]
        rows.append(row)
    memory = cost_model.memory_breakdown(config)
    return {"config": config.to_dict(), "model": config.model, "gpu": config.gpu,
            "quantization": config.quantization,
            "tensor_parallel_size": config.tensor_parallel_size,
            "num_gpu_blocks": config.num_gpu_blocks,
            "kv_capacity_tokens": memory["kv_capacity_tokens"],
            "decode_step_ms_batch_1": cost_model.decode_step_ms(config, 1, 1024),
            "rows": rows}


def workload_description(args: argparse.Namespace) -> dict[str, Any]:
    return {"name": "lesson", "num_requests": args.num_requests,
            "request_rate": args.request_rate, "seed": args.seed,
            "prompt_lens": [128, 256, 512, 2048, 8192], "output_lens": [50, 300]}


def render(workload: dict[str, Any], results: list[dict[str, Any]]) -> str:
    lines = [f"lesson workload: {workload['num_requests']} requests at "
             f"{workload['request_rate']:g} req/s, seed {workload['seed']}"]
    for setup in results:
        quant = f" {setup['quantization']}" if setup["quantization"] else ""
        lines += ["", f"{setup['model']}{quant} on {setup['gpu']} x{setup['tensor_parallel_size']}"
                  f": {setup['kv_capacity_tokens']} KV tokens, one decode "
                  f"{setup['decode_step_ms_batch_1']:.1f} ms",
                  f"{'mode':20} " + " ".join(title for _, title, _ in COLUMNS)]
        for row in setup["rows"]:
            cells = [fmt.format(row[key]) for key, _, fmt in COLUMNS]
            lines.append(f"{row['mode']:20} " + " ".join(cells))
    return "\n".join(lines)
