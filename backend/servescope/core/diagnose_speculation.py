"""Whether speculative decoding pays on this run: the cost model prices the run's typical
decode step with and without K drafts a request, and the acceptance (measured on the run when
it speculated, else the method's default) says how many tokens a verify yields:

  estimated speed-up = mean_acceptance_length x plain decode step / speculative decode step

Memory-bound decode (a small batch: the extra rows ride on the same weight read) gives well
above 1: speculate. A compute-bound batch with low acceptance gives below 1: turn it off.
The recommendation is then checked by re-simulation like every knob.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from servescope.core import cost_model
from servescope.core.acceptance import make_acceptance
from servescope.core.config import EngineConfig
from servescope.core.diagnose_verdict import ev, knob, verdict
from servescope.core.drafter_cost import SpeculativeStepTime

# What the lesson names as 2026's default drafting method, at vLLM's documented K = 3
# (docs/features/spec_decode: "num_speculative_tokens": 3 in every EAGLE example).
SUGGESTED = {"method": "eagle3", "num_speculative_tokens": 3}
# An estimated gain (or loss) under 5% is not worth a restart: knob_outcome.NEGLIGIBLE's figure.
MIN_GAIN = 0.05


def judge_speculation(stats: dict[str, Any], config: EngineConfig,
                      hardware: dict[str, Any]) -> dict[str, Any] | None:
    """A verdict when the estimate says to start (or stop) speculating, else None."""
    if not (config.gpu and (config.model or config.model_config)) or \
            "decode_batch_mean" not in stats:
        return None  # the estimate needs the cost model and the run's decode steps
    spec = config.speculative_config or SUGGESTED
    speculating = config.speculative_config is not None
    gain, length, ratio = estimate(stats, config, spec)
    if speculating and gain >= 1 - MIN_GAIN or not speculating and gain <= 1 + MIN_GAIN:
        return None
    batch = stats["decode_batch_mean"]
    evidence = [
        ev("decode_batch_mean", batch, "requests decoding in a decode step, on average"),
        ev("verify_cost_ratio", ratio, f"a step with {spec['num_speculative_tokens']} drafts a "
           "request (verify and drafter) over a plain decode step, by the cost model"),
        ev("mean_acceptance_length", length, "tokens a verify yields" + (
            " (measured on this run)" if "mean_acceptance_length" in stats else
            f" ({spec['method']}'s published default)")),
        ev("estimated_speedup", gain, "mean_acceptance_length / verify_cost_ratio"),
    ]
    if speculating:
        recs = [knob("--speculative-config", "off", {"speculative_config": None},
                     "each verify costs more than the tokens it yields",
                     [("output_throughput", "up"), ("median_itl_ms", "down")])]
        title, score = "Speculation costs more than it yields", 1.0 / gain - 1.0
        headline = (f"at {batch:.0f} decodes a step, a verify costs {ratio:.2f}x a plain step "
                    f"and yields {length:.2f} tokens: speculation slows decode {1 / gain:.2f}x")
    else:
        recs = [knob("--speculative-config", SUGGESTED, {"speculative_config": dict(SUGGESTED)},
                     "decode is memory-bound: drafts ride on the same weight read (needs an "
                     "EAGLE-3 head trained for the model)", [("median_itl_ms", "down")])]
        title, score = "Decode is memory-bound: speculation would pay", gain - 1.0
        headline = (f"at {batch:.0f} decodes a step, {spec['num_speculative_tokens']} drafts "
                    f"cost {ratio:.2f}x a plain step and would yield {length:.2f} tokens: "
                    f"about {gain:.2f}x faster decode")
    return verdict("speculation", title, score, evidence, recs,
                   ["acceptance rate per position on your own traffic (vLLM's "
                    "vllm:spec_decode_num_accepted_tokens_per_pos)"],
                   explains=("itl", "tpot", "e2el"), headline=headline)


def estimate(stats: dict[str, Any], config: EngineConfig,
             spec: dict[str, Any]) -> tuple[float, float, float]:
    """(estimated speed-up, mean acceptance length, verify cost ratio) at the run's mean
    decode batch and context."""
    batch = max(1, round(stats["decode_batch_mean"]))
    context = np.full(batch, round(stats.get("decode_context_mean", 0)), np.int64)
    plain_config = config.replace(speculative_config=None)
    spec_config = config.replace(speculative_config=spec)
    parsed = spec_config.speculative
    assert parsed is not None
    k = parsed.num_speculative_tokens
    plain = cost_model.make_step_time(plain_config)(np.ones(batch, np.int64), context)
    verify_fn = cost_model.make_step_time(spec_config)
    assert isinstance(verify_fn, SpeculativeStepTime)
    verify = verify_fn(np.full(batch, 1 + k, np.int64), context, batch * k)
    length = stats.get("mean_acceptance_length")
    if length is None or config.speculative_config is None:
        model, _ = make_acceptance(parsed.method, k, parsed.acceptance_rates)
        length = model.mean_acceptance_length() if model is not None else 1.0
    ratio = verify / plain
    return length / ratio, length, ratio
