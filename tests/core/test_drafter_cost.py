"""The speculative clock: the verify pass and the drafter priced by kind."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from servescope.core import cost_model
from servescope.core.config import ConfigError, EngineConfig
from servescope.core.drafter_cost import (
    NGRAM_NS_PER_CONTEXT_TOKEN,
    NGRAM_US_PER_REQUEST,
    DrafterCost,
    SpeculativeStepTime,
    drafter_geometry,
)
from servescope.core.hardware import resolve
from servescope.core.step_cost import RooflineStepTime

L8B = "meta-llama/Llama-3.1-8B-Instruct"
DSV3 = "deepseek-ai/DeepSeek-V3"


def config(spec: dict[str, Any] | None, model: str = L8B, gpu: str = "H100",
           **kw: Any) -> EngineConfig:
    return EngineConfig(model=model, gpu=gpu, max_model_len=8192, speculative_config=spec, **kw)


def drafter(method: str, k: int, model: str = L8B, **kw: Any) -> DrafterCost:
    return DrafterCost(method, k, resolve(config(None, model)), **kw)


def decodes(batch: int, context: int, drafts: int = 0) -> tuple[np.ndarray, np.ndarray]:
    return np.full(batch, 1 + drafts, np.int64), np.full(batch, context, np.int64)


def test_an_eagle_head_costs_about_one_layer_in_32_of_the_target_per_pass() -> None:
    """Llama-3.1-8B has 32 layers; at batch 1 each pass reads one layer's weights plus the
    LM head (525M of 8B parameters), so a pass is well under the target's step."""
    target = cost_model.make_step_time(config(None))
    one_pass = drafter("eagle3", 1)(*decodes(1, 512))
    step = target(*decodes(1, 512))
    assert 0.05 * step < one_pass < 0.25 * step


def test_the_drafter_grows_by_one_pass_a_draft_position() -> None:
    costs = [drafter("eagle3", k)(*decodes(8, 1000, 3)) for k in (1, 2, 3, 5)]
    steps = np.diff(costs) / np.diff([1, 2, 3, 5])
    assert all(s > 0 for s in steps)
    assert max(steps) / min(steps) < 1.05  # each extra position one batch-sized pass


def test_the_first_draft_pass_covers_every_scheduled_token() -> None:
    """A 2048-token chunk runs 2 x 218M x 2048 = 0.9 TFLOP through the head's layer,
    over a millisecond on an H100; one decode reads 1.5 GB of weights, about half of one."""
    d = drafter("eagle", 1)
    chunk = d(np.array([2048]), np.array([0]))
    assert chunk > 2 * d(*decodes(1, 0))


def test_mtp_prices_one_moe_layer_of_the_target() -> None:
    target = resolve(config(None, DSV3, "H200", tensor_parallel_size=8)).model
    spec = drafter_geometry("mtp", target, None)
    assert spec.num_hidden_layers == 1 and spec.is_moe and spec.num_moe_layers == 1


def test_a_draft_model_is_priced_with_its_own_geometry() -> None:
    small = drafter("draft_model", 3, model="meta-llama/Llama-3.3-70B-Instruct",
                    draft_model=L8B)
    head = drafter("eagle", 3, model="meta-llama/Llama-3.3-70B-Instruct")
    assert small(*decodes(4, 500)) > 3 * head(*decodes(4, 500))


def test_ngram_is_the_measured_cpu_constant() -> None:
    ms = drafter("ngram", 3)(*decodes(4, 999))  # 4 requests over 1000 tokens each
    expected = 4 * NGRAM_US_PER_REQUEST * 1e-3 + 4000 * NGRAM_NS_PER_CONTEXT_TOKEN * 1e-6
    assert ms == pytest.approx(expected)


def test_the_verify_pass_scores_every_draft_in_the_lm_head() -> None:
    """Per verify at batch 256 with 3 drafts: 1024 head rows instead of 256 when compute
    bound; adding drafts to the rows never lowers the step."""
    fn = cost_model.make_step_time(config(None))
    assert isinstance(fn, RooflineStepTime)
    n, c = decodes(256, 1000, 3)
    assert fn(n, c, num_drafts=768) > fn(n, c)


def test_a_speculative_config_prices_verify_plus_drafter() -> None:
    fn = cost_model.make_step_time(config({"method": "eagle3", "num_speculative_tokens": 3}))
    assert isinstance(fn, SpeculativeStepTime)
    plain = cost_model.make_step_time(config(None))
    n, c = decodes(4, 800, 3)
    assert fn(n, c, 12) == pytest.approx(plain(n, c, 12) + drafter("eagle3", 3)(n, c))


def test_memory_bound_verify_is_nearly_free_and_compute_bound_is_not() -> None:
    """Batch 1: 4 tokens cost about what 1 does (weights dominate); batch 512: 4x the linear
    work past the weights' read (2048 tokens x 16 GFLOP), so the step grows by well over half:
    the reason speculation stops paying under load."""
    fn = cost_model.make_step_time(config(None))
    low = fn(*decodes(1, 500, 3), 3) / fn(*decodes(1, 500))
    high = fn(*decodes(512, 500, 3), 1536) / fn(*decodes(512, 500))
    assert low < 1.1 and high > 1.5


def test_an_unknown_draft_model_names_the_field() -> None:
    with pytest.raises(ConfigError, match="speculative_config.model"):
        cost_model.make_step_time(config({"method": "draft_model", "model": "no/such-model",
                                          "num_speculative_tokens": 3}))
