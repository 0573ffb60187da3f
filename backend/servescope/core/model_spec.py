"""A decoder-only transformer's geometry (dense, MoE, MLA) with Hugging Face config.json names,
what it implies (parameters, weights per step, KV bytes per token), and reading a config.json."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from servescope.core.config import ConfigError


@dataclass(frozen=True)
class ModelSpec:
    """`intermediate_size` is the dense MLP's width; routed and shared experts have
    `moe_intermediate_size` (default: the same). MLA models (kv_lora_rank set) cache one latent
    of kv_lora_rank + qk_rope_head_dim per token and layer, replicated on every TP rank."""

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
    moe_intermediate_size: int | None = None
    num_shared_experts: int = 0
    num_dense_layers: int = 0  # layers that keep a dense MLP in an MoE model
    expert_weight_bits: float | None = None  # routed experts below 16 bits in the checkpoint
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_nope_head_dim: int | None = None
    qk_rope_head_dim: int | None = None
    v_head_dim: int | None = None

    @property
    def is_moe(self) -> bool:
        return self.num_local_experts > 1

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def num_moe_layers(self) -> int:
        return self.num_hidden_layers - self.num_dense_layers if self.is_moe else 0

    @property
    def attention_params_per_layer(self) -> int:
        h, heads = self.hidden_size, self.num_attention_heads
        if self.kv_lora_rank is not None:
            nope, rope = self.qk_nope_head_dim or 0, self.qk_rope_head_dim or 0
            v, q_rank = self.v_head_dim or 0, self.q_lora_rank
            q_in = q_rank or h  # without q_lora_rank the query is projected straight from h
            q = (h * q_rank if q_rank else 0) + q_in * heads * (nope + rope)
            kv = h * (self.kv_lora_rank + rope) + self.kv_lora_rank * heads * (nope + v)
            return q + kv + heads * v * h
        q_out = heads * self.head_dim
        kv_out = self.num_key_value_heads * self.head_dim
        return h * (2 * q_out + 2 * kv_out)

    @property
    def attention_dim(self) -> float:
        """Half the FLOPs per (query, key) pair and head: head_dim (QK^T and PV), or for MLA in
        its absorbed decode form (kv_lora_rank + rope) for QK^T plus kv_lora_rank for PV."""
        if self.kv_lora_rank is not None:
            return (2 * self.kv_lora_rank + (self.qk_rope_head_dim or 0)) / 2
        return float(self.head_dim)

    def _mlp(self, width: int) -> int:
        return (3 if self.mlp == "gated" else 2) * self.hidden_size * width

    @property
    def expert_params(self) -> int:
        """Parameters of one expert's MLP (the dense MLP when the model is not MoE)."""
        return self._mlp(self.moe_intermediate_size or self.intermediate_size)

    @property
    def dense_mlp_params(self) -> int:
        return self._mlp(self.intermediate_size)

    @property
    def embedding_params(self) -> int:
        """Token embedding plus the LM head, counted once when the two are tied."""
        tables = 1 if self.tie_word_embeddings else 2
        return tables * self.vocab_size * self.hidden_size

    def always_read_params(self) -> int:
        """Every layer's weights but the routed experts: attention, dense MLPs, shared experts,
        routers (embeddings and LM head not included)."""
        layers = self.num_hidden_layers
        if not self.is_moe:
            return layers * (self.attention_params_per_layer + self.dense_mlp_params)
        moe = self.num_moe_layers
        return (layers * self.attention_params_per_layer
                + self.num_dense_layers * self.dense_mlp_params
                + moe * (self.num_shared_experts * self.expert_params
                         + self.hidden_size * self.num_local_experts))

    def routed_expert_params(self, active: bool = False) -> int:
        experts = self.num_experts_per_tok if active else self.num_local_experts
        return self.num_moe_layers * experts * self.expert_params

    def geometry_params(self, active: bool = False) -> int:
        """Parameter count from the geometry (norms and biases left out: well under 1%)."""
        return (self.always_read_params() + self.routed_expert_params(active)
                + self.embedding_params)

    def kv_bytes_per_token(self, element_bytes: int, tensor_parallel_size: int = 1) -> int:
        """2 (K and V) x layers x KV heads per GPU x head_dim x element bytes; MLA: one latent
        of kv_lora_rank + qk_rope_head_dim per layer on every rank."""
        if self.kv_lora_rank is not None:
            width = self.kv_lora_rank + (self.qk_rope_head_dim or 0)
            return self.num_hidden_layers * width * element_bytes
        heads = max(1, self.num_key_value_heads // tensor_parallel_size)
        return 2 * self.num_hidden_layers * heads * self.head_dim * element_bytes


FIELD_NAMES = frozenset(f.name for f in fields(ModelSpec)) - {"name"}
REQUIRED = ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size",
            "vocab_size")
# Hugging Face spellings of the same quantity, by architecture family.
HF_SYNONYMS = {"n_routed_experts": "num_local_experts", "num_experts": "num_local_experts",
               "n_shared_experts": "num_shared_experts", "first_k_dense_replace":
               "num_dense_layers", "ffn_dim": "intermediate_size", "n_layer": "num_hidden_layers",
               "n_embd": "hidden_size", "n_head": "num_attention_heads",
               "max_seq_len": "max_position_embeddings", "dtype": "torch_dtype"}


def from_hf_config(name: str, config: dict[str, Any]) -> ModelSpec:
    """A ModelSpec from a Hugging Face config.json's values (a multimodal model's text_config
    is used); a needed field that is missing is named in a ConfigError on model_config."""
    if isinstance(config.get("text_config"), dict):
        config = {**config, **config["text_config"]}
    values = {HF_SYNONYMS.get(k, k): v for k, v in config.items()}
    missing = [k for k in REQUIRED if not _positive(values.get(k))]
    if missing:
        raise ConfigError("model_config", f"config.json lacks {', '.join(missing)} as whole "
                          "numbers of at least 1 (needed to size weights and KV)")
    if values.get("num_key_value_heads") is not None and \
            not _positive(values["num_key_value_heads"]):
        raise ConfigError("model_config", "config.json's num_key_value_heads must be a whole "
                          "number of at least 1")
    heads = values["num_attention_heads"]
    if values.get("num_key_value_heads") is None:
        values["num_key_value_heads"] = heads
    if not values.get("head_dim"):
        values["head_dim"] = values["hidden_size"] // heads
    if not _positive(values["head_dim"]):
        raise ConfigError("model_config", "config.json's head_dim (else hidden_size / "
                          "num_attention_heads) must be a whole number of at least 1")
    act = str(config.get("hidden_act", config.get("activation_function", "silu")))
    values["mlp"] = "plain" if act in ("relu", "gelu_new", "gelu") else "gated"  # OPT, GPT-2
    values.setdefault("tie_word_embeddings", False)
    values.setdefault("max_position_embeddings", 4096)
    values["torch_dtype"] = str(values.get("torch_dtype") or "bfloat16")
    if values["torch_dtype"] not in ("bfloat16", "float16"):
        values["torch_dtype"] = "bfloat16"
    values["num_parameters"] = 0.0
    kept = {k: v for k, v in values.items() if k in FIELD_NAMES and v is not None}
    spec = ModelSpec(name=name, **kept)
    return replace(spec, num_parameters=float(spec.geometry_params()))


def _positive(value: Any) -> bool:
    """A count a model cannot have none of (layers, heads, widths): a whole number >= 1."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1
