"""Turns a `configure` message's workload (preset, synthetic, explicit requests) into request
specs over a base config, within the server's limits; uploaded traces are read in
trace_workload.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from servescope.core.config import ConfigError, check_rules
from servescope.core.request import RequestSpec
from servescope.core.resolve import resolve_config
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


# A run with no model and GPU has no memory to size its KV pool from (vLLM profiles the GPU):
# the page's workloads get the demo's pool, 512 usable 16-token blocks (8,192 tokens), unless
# the settings give num_gpu_blocks. Nothing else of the demo's is taken.
UNPRICED_NUM_GPU_BLOCKS = DEMO["config"]["num_gpu_blocks"]


def with_pool(given: dict[str, Any]) -> dict[str, Any]:
    """`given` with a KV pool to run on: its own, the one model and GPU size, else the
    unpriced run's (UNPRICED_NUM_GPU_BLOCKS)."""
    sized = (given.get("model") or given.get("model_config")) and given.get("gpu")
    if sized or given.get("num_gpu_blocks") is not None:
        return given
    return {**given, "num_gpu_blocks": UNPRICED_NUM_GPU_BLOCKS}


class WorkloadError(ValueError):
    """A workload the server cannot use; `code` is the protocol's error code."""

    def __init__(self, message: str, field: str | None = None, code: str = "workload") -> None:
        super().__init__(message)
        self.field = field
        self.code = code


@dataclass
class Workload:
    base_config: dict[str, Any]  # the settings it comes with (a preset's), resolved per engine
    specs: list[RequestSpec]
    preset: str | None = None
    records: list[dict[str, Any]] | None = None  # a recorded run to replay
    trace: dict[str, Any] | None = None  # what the uploaded file says about itself (trace_info)


def list_presets() -> list[dict[str, Any]]:
    """The preset menu; each entry's `config` is the full EngineConfig the preset runs on, its
    settings resolved as a configure resolves them (the form shows it when the preset is
    chosen)."""
    built_in = {"name": "demo", "title": DEMO["title"], "description": DEMO["description"],
                "verdict": None, "variants": [], "variant_sets": [],
                "config": DEMO["config"]}
    listed = [built_in, *(p for p in presets.list_presets() if p["name"] != "demo")]
    return [{**p, "config": resolve_config(p["config"]).config.to_dict()} for p in listed]


def preset_workload(name: str) -> Workload:
    if name == "demo" and not (presets.PRESET_DIR / "demo.json").is_file():
        specs = [s for g in DEMO["workload"]["generators"] for s in presets.generate(g)]
        return Workload(dict(DEMO["config"]), specs, preset="demo")
    if not name.replace("-", "").replace("_", "").isalnum():
        raise WorkloadError(f"no preset {name!r}", "preset")
    try:
        _, specs, data = presets.load_preset(name)
    except presets.PresetError as err:
        raise WorkloadError(str(err), "preset") from err
    return Workload(dict(data["config"]), specs, preset=name)


# The page's synthetic form, defined once: names, defaults, bounds and help (served to the page).
SYNTHETIC_FIELDS: list[dict[str, Any]] = [
    {"name": "num_requests", "kind": "int", "default": 32, "min": 1, "max": 1_000_000,
     "help": "requests in the workload"},
    {"name": "request_rate", "kind": "float", "default": 10.0, "gt": 0.0, "max": 1e6,
     "help": "requests per second (Poisson)"},
    {"name": "prompt_len_min", "kind": "int", "default": 32, "min": 1, "max": 10_000_000,
     "help": "shortest prompt (tokens)"},
    {"name": "prompt_len_max", "kind": "int", "default": 512, "min": 1, "max": 10_000_000,
     "help": "longest prompt (tokens)"},
    {"name": "output_len_min", "kind": "int", "default": 16, "min": 1, "max": 10_000_000,
     "help": "shortest output (tokens)"},
    {"name": "output_len_max", "kind": "int", "default": 128, "min": 1, "max": 10_000_000,
     "help": "longest output (tokens)"},
    {"name": "seed", "kind": "int", "default": 0, "min": 0, "max": 2**63 - 1,
     "help": "seed of arrivals and lengths"},
]


def synthetic_workload(params: dict[str, Any]) -> Workload:
    """The page's synthetic form: Poisson arrivals and uniform lengths."""
    unknown = sorted(set(params) - {f["name"] for f in SYNTHETIC_FIELDS})
    if unknown:
        raise WorkloadError(f"{unknown[0]}: unknown synthetic field", unknown[0])
    values = {f["name"]: _synthetic_value(f, params.get(f["name"], f["default"]))
              for f in SYNTHETIC_FIELDS}
    for what in ("prompt_len", "output_len"):
        if values[f"{what}_min"] > values[f"{what}_max"]:
            raise WorkloadError(f"{what}_max: must be at least {what}_min "
                                f"({values[f'{what}_min']})", f"{what}_max")
    generator = {
        "seed": values["seed"], "num_requests": values["num_requests"],
        "arrival": {"rate_per_s": values["request_rate"]},
        "prompt_len": [values["prompt_len_min"], values["prompt_len_max"]],
        "output_len": [values["output_len_min"], values["output_len_max"]],
    }
    return Workload({}, presets.generate(generator))


def _synthetic_value(field: dict[str, Any], value: Any) -> Any:
    name, kind = field["name"], field["kind"]
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            pass
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    if not numeric or (kind == "int" and not float(value).is_integer()):
        raise WorkloadError(f"{name}: expected {'an integer' if kind == 'int' else 'a number'}, "
                            f"got {value!r}", name)
    typed = int(value) if kind == "int" else float(value)
    try:
        check_rules(name, typed, field)
    except ConfigError as err:
        raise WorkloadError(str(err), name) from err
    return typed
