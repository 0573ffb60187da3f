"""Whether speculative decoding pays on this run: the cost model prices the run's typical
decode step with and without K drafts a request, and the acceptance (measured on the run when
it speculated, else the method's default) says how many tokens a verify yields:

  estimated speed-up = mean_acceptance_length x plain decode step / speculative decode step

Memory-bound decode (a small batch: the extra rows ride on the same weight read) gives well
above 1: the decode floor's verdict suggests speculating. A compute-bound batch with low
acceptance gives below 1: this verdict says turn it off. Already speculating, the same
estimate for every K' from 1 to 2K (acceptance by position: the run's, extended past K at its
last position's conditional rate) may name a better num_speculative_tokens: smaller where the
verify is compute-bound or later positions are rarely accepted, larger where decode is
memory-bound and acceptance high. Each knob is then checked by re-simulation like every other.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
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
                      hardware: Mapping[str, float]) -> dict[str, Any] | None:
    """A verdict when the run speculates and the estimate says a verify costs more than it
    yields, or else that another num_speculative_tokens pays more (starting speculation is
    the decode floor's knob: core/diagnose_judges.py)."""
    if config.speculative_config is None or "decode_batch_mean" not in stats or \
            not (config.gpu and (config.model or config.model_config)):
        return None  # the estimate needs the cost model and the run's decode steps
    spec = config.speculative_config
    gain, length, ratio = estimate(stats, config, spec)
    if gain >= 1 - MIN_GAIN:
        return _judge_k(stats, config, spec)
    batch = stats["decode_batch_mean"]
    evidence = [
        ev("decode_batch_mean", batch, "requests decoding in a decode step, on average"),
        ev("verify_cost_ratio", ratio, "a step with the drafts (verify and drafter) over a "
           "plain decode step of the same batch, by the cost model"),
        ev("mean_acceptance_length", length, "tokens a verify yields" + (
            " (measured on this run)" if "mean_acceptance_length" in stats else
            " (the acceptance model's)")),
        ev("estimated_speedup", gain, "mean_acceptance_length / verify_cost_ratio"),
    ]
    recs = [knob("--speculative-config", "off", {"speculative_config": None},
                 "each verify costs more than the tokens it yields",
                 [("output_throughput", "up"), ("median_itl_ms", "down")])]
    headline = (f"at {batch:.0f} decodes a step, a verify costs {ratio:.2f}x a plain step and "
                f"yields {length:.2f} tokens: speculation slows decode {1 / gain:.2f}x")
    return verdict("speculation", "Speculation costs more than it yields", 1.0 / gain - 1.0,
                   evidence, recs,
                   ["acceptance rate per position on your own traffic (vLLM's "
                    "vllm:spec_decode_num_accepted_tokens_per_pos)",
                    "the same load with speculation off"],
                   explains=("itl", "tpot", "e2el"), headline=headline)


def _judge_k(stats: dict[str, Any], config: EngineConfig,
             spec: dict[str, Any]) -> dict[str, Any] | None:
    """A verdict when another num_speculative_tokens is estimated faster by MIN_GAIN."""
    k = int(spec["num_speculative_tokens"])
    gains = speedup_by_k(stats, config, spec)
    best = max(gains, key=lambda c: gains[c])
    if best == k or gains[best] < gains[k] * (1 + MIN_GAIN):
        return None
    rates = spec.get("acceptance_rates")
    change = {**spec, "num_speculative_tokens": best}
    if rates:  # at most K rates (core/speculative.py)
        change["acceptance_rates"] = rates[:best]
    batch = stats["decode_batch_mean"]
    accepted = acceptance_by_position(stats, config, spec, len(gains))
    evidence = [
        ev("decode_batch_mean", batch, "requests decoding in a decode step, on average"),
        ev("acceptance_by_position", [round(float(a), 4) for a in accepted[:k]],
           "share of verifies accepting draft position 1, 2, ..." + (
               " (measured on this run)" if stats.get("acceptance_rate_per_position")
               else " (the acceptance model's)")),
        ev("estimated_speedup", gains[k], f"at num_speculative_tokens = {k}"),
        ev("estimated_speedup_best", gains[best], f"at num_speculative_tokens = {best}"),
    ]
    why = ("later drafts are rarely accepted or the verify is compute-bound: fewer drafts "
           "cost less than they yield" if best < k else
           "decode is memory-bound and drafts are accepted: more drafts ride on the same "
           "weight read")
    recs = [knob("--speculative-config", json.dumps(change), {"speculative_config": change},
                 why, [("output_throughput", "up"), ("median_tpot_ms", "down")])]
    headline = (f"at {batch:.0f} decodes a step, num_speculative_tokens = {best} is estimated "
                f"{gains[best]:.2f}x plain decode against {gains[k]:.2f}x at {k}")
    return verdict("speculation", f"num_speculative_tokens = {best} pays more than {k}",
                   gains[best] / gains[k] - 1.0, evidence, recs,
                   ["acceptance rate per position on your own traffic (vLLM's "
                    "vllm:spec_decode_num_accepted_tokens_per_pos)"],
                   explains=("itl", "tpot", "e2el"), headline=headline)


def speedup_by_k(stats: dict[str, Any], config: EngineConfig,
                 spec: dict[str, Any]) -> dict[int, float]:
    """{K': estimated speed-up} for K' in 1..2K (our choice of range: a step at a time either
    way is what a user tries next), at the run's mean decode batch and context."""
    k_max = 2 * int(spec["num_speculative_tokens"])
    accepted = acceptance_by_position(stats, config, spec, k_max)
    gains = {}
    for k in range(1, k_max + 1):
        ratio = _verify_ratio(stats, config, {**spec, "num_speculative_tokens": k,
                                              "acceptance_rates": None})
        gains[k] = (1.0 + float(accepted[:k].sum())) / ratio
    return gains


def acceptance_by_position(stats: dict[str, Any], config: EngineConfig,
                           spec: dict[str, Any], num_positions: int) -> np.ndarray:
    """Share of verifies accepting each draft position (vLLM's accepted_tokens_per_pos over
    num_drafts): the run's measure, extended past its K at the last position's conditional
    rate; without one, the acceptance model's."""
    measured = list(stats.get("acceptance_rate_per_position") or [])
    k = int(spec["num_speculative_tokens"])
    if not measured:
        parsed = config.replace(speculative_config=spec).speculative
        assert parsed is not None
        model, _ = make_acceptance(parsed.method, num_positions, parsed.acceptance_rates)
        if model is None:
            return np.zeros(num_positions)
        return np.cumprod(model.rates)
    shares = np.zeros(max(num_positions, k))
    shares[:len(measured)] = measured[:len(shares)]
    before = shares[k - 2] if k >= 2 else 1.0
    last_rate = shares[k - 1] / before if before > 0 else 0.0
    for i in range(k, len(shares)):
        shares[i] = shares[i - 1] * last_rate
    return shares[:num_positions]


def _verify_ratio(stats: dict[str, Any], config: EngineConfig, spec: dict[str, Any]) -> float:
    """A decode step with K drafts a request (verify and drafter) over a plain one, by the
    cost model, at the run's mean decode batch and context."""
    batch = max(1, round(stats["decode_batch_mean"]))
    context = np.full(batch, round(stats.get("decode_context_mean", 0)), np.int64)
    spec_config = config.replace(speculative_config=spec)
    parsed = spec_config.speculative
    assert parsed is not None
    k = parsed.num_speculative_tokens
    plain = cost_model.make_step_time(config.replace(speculative_config=None))(
        np.ones(batch, np.int64), context)
    verify_fn = cost_model.make_step_time(spec_config)
    assert isinstance(verify_fn, SpeculativeStepTime)
    return float(verify_fn(np.full(batch, 1 + k, np.int64), context, batch * k) / plain)


def estimate(stats: dict[str, Any], config: EngineConfig,
             spec: dict[str, Any]) -> tuple[float, float, float]:
    """(estimated speed-up, mean acceptance length, verify cost ratio) at the run's mean
    decode batch and context."""
    parsed = config.replace(speculative_config=spec).speculative
    assert parsed is not None
    ratio = _verify_ratio(stats, config, spec)
    length = stats.get("mean_acceptance_length")
    if length is None or config.speculative_config is None:
        model, _ = make_acceptance(parsed.method, parsed.num_speculative_tokens,
                                   parsed.acceptance_rates)
        length = model.mean_acceptance_length() if model is not None else 1.0
    return length / ratio, length, ratio
