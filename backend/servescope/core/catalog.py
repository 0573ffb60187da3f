"""Model, GPU and calibration catalogs: package data read once at import, looked up by name.

The JSON files in servescope/data carry a source for every number; this module only parses
them into frozen specs and resolves the names users type (Hugging Face ids, nvidia-smi names).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

from servescope.core.config import DTYPE_ALIASES, KV_DTYPE_ALIASES, ConfigError
from servescope.core.model_spec import FIELD_NAMES, ModelSpec

DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "fp8": 1}
MODEL_CONFIG_HINT = ("or describe any other model with its Hugging Face config.json "
                     "(--model-config, or model_config in the engine config)")


@dataclass(frozen=True)
class GpuSpec:
    key: str
    name: str
    memory_gb: float
    memory_gib_visible: float
    memory_bandwidth_gb_s: float
    bf16_tflops: float
    fp8_tflops: float | None
    interconnect: str
    interconnect_gb_s: float
    link: str  # "nvlink", "pcie" or "xgmi": which all-reduce latency applies
    fp4_tflops: float | None = None

    @property
    def supports_fp8(self) -> bool:
        return self.fp8_tflops is not None


@dataclass(frozen=True)
class Calibration:
    """Efficiency constants of one GPU (see data/calibration.json for how they were fitted)."""

    gpu: str
    fitted_on: str  # the GPU whose published measurements produced these numbers
    bandwidth_efficiency: float
    compute_efficiency: float
    step_overhead_ms: float
    per_request_overhead_ms: float
    allreduce_latency_us: float = 10.0  # one all-reduce on this GPU's link (NVLink, PCIe, xGMI)
    kv_bandwidth_efficiency: float | None = None  # attention's paged KV reads; None: as weights
    frontend_ms: float = 0.0  # API server time per request, outside the engine's steps


def _load(name: str) -> dict[str, Any]:
    text = resources.files("servescope").joinpath("data", name).read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def _norm(name: str) -> str:
    return " ".join(name.lower().replace("_", "-").split())


def _build_models(data: dict[str, Any]) -> tuple[dict[str, ModelSpec],
                                                 dict[str, tuple[str, str | None]]]:
    """Specs by id, and every name users type -> (id, the checkpoint's own quantization)."""
    specs: dict[str, ModelSpec] = {}
    names: dict[str, tuple[str, str | None]] = {}
    for model_id, row in data["models"].items():
        specs[model_id] = ModelSpec(name=model_id,
                                    **{k: v for k, v in row.items() if k in FIELD_NAMES})
        own = row.get("checkpoint_quantization")
        for alias in [model_id, *row.get("aliases", [])]:
            names[alias.lower()] = (model_id, own)
        for checkpoint in row.get("fp8_checkpoints", []):
            names[checkpoint.lower()] = (model_id, "fp8")
        for checkpoint in row.get("nvfp4_checkpoints", []):
            names[checkpoint.lower()] = (model_id, "nvfp4")
    return specs, names


def _build_gpus(data: dict[str, Any]) -> tuple[dict[str, GpuSpec], dict[str, str]]:
    fields = set(GpuSpec.__dataclass_fields__) - {"key"}
    specs: dict[str, GpuSpec] = {}
    names: dict[str, str] = {}
    for key, row in data["gpus"].items():
        specs[key] = GpuSpec(key=key, **{k: v for k, v in row.items() if k in fields})
        for alias in [key, row["name"], *row.get("aliases", [])]:
            names[_norm(alias)] = key
    return specs, names


def _build_calibrations(data: dict[str, Any]) -> dict[str, Calibration]:
    fitted, links = data["fitted"], data["interconnect"]["allreduce_latency_us"]
    out = {}
    for gpu, source in data["assignments"].items():
        c = fitted[source]
        out[gpu] = Calibration(gpu=gpu, fitted_on=source,
                               bandwidth_efficiency=c["bandwidth_efficiency"],
                               compute_efficiency=c["compute_efficiency"],
                               step_overhead_ms=c["step_overhead_ms"],
                               per_request_overhead_ms=c["per_request_overhead_ms"],
                               kv_bandwidth_efficiency=c.get("kv_bandwidth_efficiency"),
                               allreduce_latency_us=links[GPUS[gpu].link],
                               frontend_ms=data["frontend"]["api_server_ms"])
    return out


_MODEL_DATA = _load("models.json")
MODELS, _MODEL_NAMES = _build_models(_MODEL_DATA)
# model id -> what of its architecture the cost model leaves out
MODEL_NOT_MODELLED = {k: row["not_modelled"] for k, row in _MODEL_DATA["models"].items()
                      if row.get("not_modelled")}
GPUS, _GPU_NAMES = _build_gpus(_load("gpus.json"))
_CALIBRATION_DATA = _load("calibration.json")
CALIBRATIONS = _build_calibrations(_CALIBRATION_DATA)
MEMORY = dict(_CALIBRATION_DATA["memory"])
INTERCONNECT = dict(_CALIBRATION_DATA["interconnect"])


def model(name: str) -> ModelSpec:
    return MODELS[resolve_model(name)[0]]


def resolve_model(name: str) -> tuple[str, str | None]:
    """(catalog model id, the checkpoint's own weight quantization: "fp8", "nvfp4" or None)."""
    found = _MODEL_NAMES.get(name.strip().lower())
    if found is None:
        raise ConfigError("model", f"unknown model {name!r}; known: {', '.join(MODELS)}; "
                          f"{MODEL_CONFIG_HINT}")
    return found


def gpu(name: str) -> GpuSpec:
    key = _GPU_NAMES.get(_norm(name))
    if key is None:
        raise ConfigError("gpu", f"unknown GPU {name!r}; known: {', '.join(GPUS)} "
                          "(or the name nvidia-smi prints); add one to "
                          "servescope/data/gpus.json with its datasheet figures")
    return GPUS[key]


def calibration(gpu_key: str) -> Calibration:
    return CALIBRATIONS[gpu_key]


def dtype_name(value: str, model_spec: ModelSpec) -> str:
    """vLLM's --dtype: 'auto' means the checkpoint's torch_dtype."""
    name = DTYPE_ALIASES.get(value.lower())
    if name is None:
        raise ConfigError("dtype", f"unsupported dtype {value!r}; one of auto, bfloat16, float16")
    return model_spec.torch_dtype if name == "auto" else name


def kv_dtype_bytes(value: str, activation_dtype: str) -> int:
    name = KV_DTYPE_ALIASES.get(value.lower())
    if name is None:
        raise ConfigError("kv_cache_dtype", f"unsupported kv_cache_dtype {value!r}; "
                          "one of auto, fp8, fp8_e4m3, fp8_e5m2")
    return DTYPE_BYTES[activation_dtype if name == "auto" else name]
