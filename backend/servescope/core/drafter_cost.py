"""The drafter's time in a speculative step, by kind, on the same roofline as the target.

vLLM 0.33 drafts after the target's forward pass, in the same step
(`LLMBaseProposer.propose`, vllm/v1/spec_decode/llm_base_proposer.py): a first pass over
every token the step scheduled (the drafter keeps its own KV in step with the target's),
then K - 1 passes of one token per request, each sampling one draft per request:

  pass 1      tokens = sum(n), contexts c           -> draft 0
  pass 2..K   one token per request, context c+n+j  -> drafts 1..K-1

What runs in a pass depends on the method: an EAGLE / EAGLE-3 head is one decoder layer of
the target's width with an LM head of the target's vocabulary; an MTP module is one layer of
the target itself (an MoE layer for DeepSeek-V3); a draft model is its own catalog geometry;
n-gram lookup (and suffix decoding) is CPU work on the token ids, no GPU pass.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from servescope.core import catalog
from servescope.core.hardware import Hardware
from servescope.core.model_spec import ModelSpec
from servescope.core.step_cost import RooflineStepTime, coefficients

GPU_DRAFTERS = ("eagle", "eagle3", "mtp", "draft_model", "medusa", "dflash", "dspark")
# bench/ngram_cpu.py: vLLM 0.33's numba n-gram lookup on one core of this project's build
# machine: 0.99 / 2.59 / 6.49 us a request at 256 / 1024 / 4096 context tokens, fitted as a
# fixed part plus a part per context token (vLLM runs it sequentially below 8192 batch tokens).
NGRAM_US_PER_REQUEST = 0.5
NGRAM_NS_PER_CONTEXT_TOKEN = 1.5


def drafter_geometry(method: str, target: ModelSpec, draft_model: str | None) -> ModelSpec:
    """The network one draft pass runs; ValueError for a method priced on the CPU."""
    if method in ("eagle", "eagle3", "medusa", "dflash", "dspark"):
        # one dense decoder layer of the target's width (an EAGLE head over an MoE target is
        # dense too); Medusa's residual block is smaller, priced the same as an upper bound
        return dataclasses.replace(
            target, name=f"{target.name} {method} head", num_hidden_layers=1,
            num_local_experts=1, num_experts_per_tok=1, num_shared_experts=0,
            num_dense_layers=0, moe_intermediate_size=None)
    if method == "mtp":
        # DeepSeek-V3's MTP module is one MoE layer (its dense layers are the first ones)
        return dataclasses.replace(target, name=f"{target.name} MTP module",
                                   num_hidden_layers=1, num_dense_layers=0)
    if method == "draft_model":
        if not draft_model:
            raise ValueError("draft_model needs speculative_config.model")
        return catalog.model(draft_model)
    raise ValueError(f"{method} drafts on the CPU")


class DrafterCost:
    """Milliseconds the drafter adds to a step of scheduled tokens n over contexts c."""

    def __init__(self, method: str, num_speculative_tokens: int, hw: Hardware,
                 draft_model: str | None = None,
                 draft_tensor_parallel_size: int | None = None) -> None:
        self.method = method
        self.num_speculative_tokens = num_speculative_tokens
        self.gpu_pass: RooflineStepTime | None = None
        if method in GPU_DRAFTERS:
            model = drafter_geometry(method, hw.model, draft_model)
            tp = draft_tensor_parallel_size or hw.tensor_parallel_size
            k = coefficients(dataclasses.replace(hw, model=model, tensor_parallel_size=tp))
            # the step's own overheads (scheduling, sampling) are the target's, counted once
            self.gpu_pass = RooflineStepTime(dataclasses.replace(k, s_step=0.0,
                                                                 s_per_request=0.0))

    def __call__(self, num_scheduled: np.ndarray, num_context: np.ndarray) -> float:
        if len(num_scheduled) == 0:
            return 0.0
        if self.gpu_pass is None:  # n-gram lookup (suffix decoding priced alike)
            seen = float((num_context + num_scheduled).sum())
            return (len(num_scheduled) * NGRAM_US_PER_REQUEST * 1e-3
                    + seen * NGRAM_NS_PER_CONTEXT_TOKEN * 1e-6)
        if self.method == "medusa":  # K heads side by side over one hidden state each
            ones = np.ones(len(num_scheduled), np.int64)
            return self.num_speculative_tokens * self.gpu_pass(ones, num_context + num_scheduled)
        ms = self.gpu_pass(num_scheduled, num_context)
        ones = np.ones(len(num_scheduled), np.int64)
        after = num_context + num_scheduled
        for j in range(self.num_speculative_tokens - 1):
            ms += self.gpu_pass(ones, after + j)
        return ms


class SpeculativeStepTime:
    """A speculative step: the verify pass (the target over 1 + drafts tokens a request, the
    LM head over every draft) and then the drafter."""

    def __init__(self, target: RooflineStepTime, drafter: DrafterCost) -> None:
        self.target = target
        self.drafter = drafter

    def __call__(self, num_scheduled: np.ndarray, num_context: np.ndarray,
                 num_drafts: int = 0) -> float:
        return (self.target(num_scheduled, num_context, num_drafts)
                + self.drafter(num_scheduled, num_context))
