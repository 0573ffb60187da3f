"""A reader for `vllm bench serve --save-result --save-detailed` JSON written against vLLM's
documented keys (../shared/REFERENCE.md section 3), as a comparison script would read it:
summary metrics in ms, per-request lists in seconds, every list optional."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

SETUP = ("date", "backend", "model_id", "num_prompts", "request_rate", "burstiness",
         "max_concurrency")
RESULTS = ("duration", "completed", "total_input_tokens", "total_output_tokens",
           "request_throughput", "output_throughput", "total_token_throughput")
LATENCY = tuple(f"{stat}_{metric}_ms" for metric in ("ttft", "tpot", "itl")
                for stat in ("mean", "median", "std", "p99"))
LISTS = ("input_lens", "output_lens", "ttfts", "itls", "latencies", "start_times")


def read(path: Path) -> dict[str, Any]:
    data = json.loads(Path(path).read_text())
    missing = [k for k in SETUP + RESULTS + LATENCY if k not in data]
    if missing:
        raise KeyError(f"missing keys: {missing}")
    rate = data["request_rate"]
    if not (rate == "inf" or isinstance(rate, int | float)):
        raise TypeError("request_rate must be a number or 'inf'")
    row = {k: float(data[k]) for k in RESULTS + LATENCY}
    lists = {k: data[k] for k in LISTS if k in data}
    if "ttfts" in lists:
        ttfts = [t for t in lists["ttfts"] if t is not None]
        row["mean_ttft_from_list_ms"] = statistics.fmean(ttfts) * 1000.0
    if "itls" in lists:
        itls = [x for per_request in lists["itls"] for x in per_request]
        row["mean_itl_from_list_ms"] = statistics.fmean(itls) * 1000.0 if itls else 0.0
        row["num_itls"] = len(itls)
    if "output_lens" in lists:
        row["sum_output_lens"] = sum(lists["output_lens"])
    return row
