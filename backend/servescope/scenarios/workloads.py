"""Turns a `configure` message's workload (preset, synthetic, explicit requests) into request
specs over a base config, within the server's limits; uploaded traces are read in
trace_workload.py."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from servescope.core.config import EngineConfig
from servescope.core.request import RequestSpec
from servescope.scenarios import presets

DEMO: dict[str, Any] = {
    "title": "Demo: 48 requests, mixed prompt lengths",
    "description": "Short chats and a few long documents share a 512-token budget; watch chunked "
                   "prefill split the long prompts while decodes keep flowing.",
    "config": {"block_size": 16, "num_gpu_blocks": 513, "max_num_seqs": 32,
               "max_num_batched_tokens": 512, "enable_prefix_caching": True},
    "workload": {"generators": [
        {"seed": 7, "num_requests": 36, "id_prefix": "chat", "arrival": {"rate_per_s": 30},
         "prompt_len": [32, 384], "output_len": [16, 120]},
        {"seed": 8, "num_requests": 12, "id_prefix": "doc", "arrival": {"rate_per_s": 9},
         "prompt_len": [1024, 3072], "output_len": [24, 64]},
    ]},
}


class WorkloadError(ValueError):
    """A workload the server cannot use; `code` is the protocol's error code."""

    def __init__(self, message: str, field: str | None = None, code: str = "workload") -> None:
        super().__init__(message)
        self.field = field
        self.code = code


@dataclass
class Workload:
    base_config: dict[str, Any]
    specs: list[RequestSpec]
    preset: str | None = None
    records: list[dict[str, Any]] | None = None  # a recorded run to replay
    trace: dict[str, Any] | None = None  # what the uploaded file says about itself (trace_info)


def list_presets() -> list[dict[str, Any]]:
    built_in = {"name": "demo", "title": DEMO["title"], "description": DEMO["description"],
                "verdict": None}
    return [built_in, *(p for p in presets.list_presets() if p["name"] != "demo")]


def preset_workload(name: str) -> Workload:
    if name == "demo" and not (presets.PRESET_DIR / "demo.json").is_file():
        specs = [s for g in DEMO["workload"]["generators"] for s in presets.generate(g)]
        return Workload(dict(DEMO["config"]), specs, preset="demo")
    if not name.replace("-", "").replace("_", "").isalnum():
        raise WorkloadError(f"no preset {name!r}", "preset")
    try:
        config, specs, _ = presets.load_preset(name)
    except presets.PresetError as err:
        raise WorkloadError(str(err), "preset") from err
    return Workload(explicit_config(config), specs, preset=name)


def explicit_config(config: EngineConfig) -> dict[str, Any]:
    defaults = EngineConfig().to_dict()
    return {k: v for k, v in config.to_dict().items() if v != defaults[k]}


def synthetic_workload(params: dict[str, Any]) -> Workload:
    """The page's synthetic form: Poisson arrivals and uniform lengths."""
    try:
        generator = {
            "seed": int(params.get("seed", 0)),
            "num_requests": int(params.get("num_requests", 32)),
            "arrival": {"rate_per_s": float(params.get("request_rate", 10.0))},
            "prompt_len": [int(params.get("prompt_len_min", 32)),
                           int(params.get("prompt_len_max", 512))],
            "output_len": [int(params.get("output_len_min", 16)),
                           int(params.get("output_len_max", 128))],
        }
    except (TypeError, ValueError) as err:
        raise WorkloadError(f"synthetic: {err}", "synthetic") from err
    if not math.isfinite(generator["arrival"]["rate_per_s"]):  # "nan" and "inf" as text
        raise WorkloadError("synthetic: request_rate must be a finite number", "request_rate")
    lo_hi = (generator["prompt_len"], generator["output_len"])
    if generator["num_requests"] < 1 or generator["arrival"]["rate_per_s"] <= 0 or any(
            lo < 1 or hi < lo for lo, hi in lo_hi):
        raise WorkloadError("synthetic: counts, rate and lengths must be positive, min <= max",
                            "synthetic")
    if generator["num_requests"] > 1_000_000:
        raise WorkloadError("synthetic: too many requests", "num_requests", "limit")
    return Workload(dict(DEMO["config"]), presets.generate(generator))
