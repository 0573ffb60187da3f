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

DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "fp8": 1}


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer's geometry, with vLLM's (Hugging Face config) field names."""

    name: str
    mlp: str  # "gated" (SwiGLU: gate, up, down) or "plain" (fc1, fc2)
    num_hidden_layers: int
    hidden_size: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_word_embeddings: bool
    max_position_embeddings: int
    torch_dtype: str
    num_parameters: float
    num_local_experts: int = 1
    num_experts_per_tok: int = 1

    @property
    def is_moe(self) -> bool:
        return self.num_local_experts > 1

    @property
    def attention_params_per_layer(self) -> int:
        q_out = self.num_attention_heads * self.head_dim
        kv_out = self.num_key_value_heads * self.head_dim
        return self.hidden_size * (2 * q_out + 2 * kv_out)

    @property
    def expert_params(self) -> int:
        """Parameters of one expert's MLP (the dense MLP when the model is not MoE)."""
        mats = 3 if self.mlp == "gated" else 2
        return mats * self.hidden_size * self.intermediate_size

    @property
    def embedding_params(self) -> int:
        """Token embedding plus the LM head, counted once when the two are tied."""
        tables = 1 if self.tie_word_embeddings else 2
        return tables * self.vocab_size * self.hidden_size

    def layer_params(self, active: bool = False) -> int:
        experts = self.num_experts_per_tok if active else self.num_local_experts
        router = self.hidden_size * self.num_local_experts if self.is_moe else 0
        return self.attention_params_per_layer + experts * self.expert_params + router

    def geometry_params(self, active: bool = False) -> int:
        """Parameter count from the geometry (norms and biases left out: well under 1%)."""
        return self.num_hidden_layers * self.layer_params(active) + self.embedding_params

    def kv_bytes_per_token(self, element_bytes: int, tensor_parallel_size: int = 1) -> int:
        """2 (K and V) x layers x KV heads per GPU x head_dim x element bytes."""
        heads = max(1, self.num_key_value_heads // tensor_parallel_size)
        return 2 * self.num_hidden_layers * heads * self.head_dim * element_bytes


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


def _load(name: str) -> dict[str, Any]:
    text = resources.files("servescope").joinpath("data", name).read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def _norm(name: str) -> str:
    return " ".join(name.lower().replace("_", "-").split())


def _build_models(data: dict[str, Any]) -> tuple[dict[str, ModelSpec], dict[str, tuple[str, bool]]]:
    fields = set(ModelSpec.__dataclass_fields__) - {"name"}
    specs: dict[str, ModelSpec] = {}
    names: dict[str, tuple[str, bool]] = {}
    for model_id, row in data["models"].items():
        specs[model_id] = ModelSpec(name=model_id, **{k: v for k, v in row.items() if k in fields})
        names[model_id.lower()] = (model_id, False)
        for alias in row.get("aliases", []):
            names[alias.lower()] = (model_id, False)
        for checkpoint in row.get("fp8_checkpoints", []):
            names[checkpoint.lower()] = (model_id, True)
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
    fitted = data["fitted"]
    out = {}
    for gpu, source in data["assignments"].items():
        c = fitted[source]
        out[gpu] = Calibration(gpu=gpu, fitted_on=source,
                               bandwidth_efficiency=c["bandwidth_efficiency"],
                               compute_efficiency=c["compute_efficiency"],
                               step_overhead_ms=c["step_overhead_ms"],
                               per_request_overhead_ms=c["per_request_overhead_ms"])
    return out


MODELS, _MODEL_NAMES = _build_models(_load("models.json"))
GPUS, _GPU_NAMES = _build_gpus(_load("gpus.json"))
_CALIBRATION_DATA = _load("calibration.json")
CALIBRATIONS = _build_calibrations(_CALIBRATION_DATA)
MEMORY = dict(_CALIBRATION_DATA["memory"])
INTERCONNECT = dict(_CALIBRATION_DATA["interconnect"])


def model(name: str) -> ModelSpec:
    return MODELS[resolve_model(name)[0]]


def resolve_model(name: str) -> tuple[str, bool]:
    """(catalog model id, whether the name is a pre-quantized FP8 checkpoint)."""
    found = _MODEL_NAMES.get(name.strip().lower())
    if found is None:
        raise ConfigError("model", f"unknown model {name!r}; known: {', '.join(MODELS)}")
    return found


def gpu(name: str) -> GpuSpec:
    key = _GPU_NAMES.get(_norm(name))
    if key is None:
        raise ConfigError("gpu", f"unknown GPU {name!r}; known: {', '.join(GPUS)} "
                          "(or the name nvidia-smi prints)")
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
