"""A config's model, GPU and number formats resolved against the catalogs (or a Hugging Face
config.json given inline): what the memory sizing and the step cost both start from."""

from __future__ import annotations

from dataclasses import dataclass

from servescope.core import catalog
from servescope.core.catalog import Calibration, GpuSpec
from servescope.core.config import ConfigError, EngineConfig
from servescope.core.model_spec import ModelSpec, from_hf_config

GIB = float(1 << 30)
ACTIVATION_BYTES = 2  # activations, embeddings and the LM head stay in 16-bit under FP8 weights
NVFP4_BYTES = 4.5 / 8  # 4-bit values + one FP8 scale per 16 (NVIDIA's NVFP4 layout)
WEIGHT_BYTES = {"fp8": 1.0, "nvfp4": NVFP4_BYTES}


@dataclass(frozen=True)
class Hardware:
    """A config's model, GPU and number formats, resolved against the catalogs."""

    model: ModelSpec
    gpu: GpuSpec
    calibration: Calibration
    tensor_parallel_size: int
    activation_dtype: str
    weight_bytes: float  # bytes per linear-layer weight: 2 (16-bit), 1 (fp8), 0.5625 (nvfp4)
    kv_element_bytes: int
    expert_weight_bytes: float  # routed experts: weight_bytes unless the checkpoint packs them

    @property
    def linear_tflops(self) -> float:
        """FP8 (NVFP4) weights run FP8 (FP4) GEMMs where the GPU has those tensor cores;
        elsewhere (A100) vLLM upcasts them in a weight-only kernel (Marlin): 16-bit math."""
        if self.weight_bytes == NVFP4_BYTES and self.gpu.fp4_tflops is not None:
            return self.gpu.fp4_tflops
        if self.weight_bytes <= 1 and self.gpu.fp8_tflops is not None:
            return self.gpu.fp8_tflops
        return self.gpu.bf16_tflops


def resolve(config: EngineConfig) -> Hardware:
    if not (config.model or config.model_config) or not config.gpu:
        raise ConfigError("model", "the cost model needs both model and gpu")
    model, own_quantization = _model(config)
    gpu = catalog.gpu(config.gpu)
    tp = config.tensor_parallel_size
    heads, kv_heads = model.num_attention_heads, model.num_key_value_heads
    if heads % tp or (kv_heads % tp and tp % kv_heads):
        raise ConfigError("tensor_parallel_size", f"{model.name} has {heads} attention and "
                          f"{kv_heads} KV heads; TP {tp} does not divide them")
    quantization = config.quantization or own_quantization  # validated
    if quantization == "nvfp4" and gpu.fp4_tflops is None:
        raise ConfigError("quantization", f"NVFP4 needs FP4 tensor cores (Blackwell: B200, "
                          f"RTX PRO 6000); {gpu.key} has none")
    activation = catalog.dtype_name(config.dtype, model)
    weight = WEIGHT_BYTES.get(quantization or "", float(catalog.DTYPE_BYTES[activation]))
    expert = model.expert_weight_bits / 8 if model.expert_weight_bits else weight
    return Hardware(model=model, gpu=gpu, calibration=catalog.calibration(gpu.key),
                    tensor_parallel_size=tp, activation_dtype=activation, weight_bytes=weight,
                    kv_element_bytes=catalog.kv_dtype_bytes(config.kv_cache_dtype, activation),
                    expert_weight_bytes=min(expert, weight))


def _model(config: EngineConfig) -> tuple[ModelSpec, str | None]:
    """The catalog's model, or one read from the config's Hugging Face config.json values."""
    if config.model_config is not None:
        name = config.model or str(config.model_config.get("_name_or_path", "model_config"))
        quant = config.model_config.get("quantization_config") or {}
        method = quant.get("quant_method") if isinstance(quant, dict) else None
        return from_hf_config(name, config.model_config), ("fp8" if method == "fp8" else None)
    model_id, own = catalog.resolve_model(config.model or "")
    return catalog.MODELS[model_id], own
