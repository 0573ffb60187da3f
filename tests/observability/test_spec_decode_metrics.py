"""vLLM's spec-decode counters folded from hand-made records: each verify counted as
vllm/v1/spec_decode/metrics.py's SpecDecodingStats.observe_draft counts it (at
Scheduler.update_from_output), a verify's tokens as its accepted drafts plus one, and the
families written only for an engine that speculates."""

from __future__ import annotations

import re

import pytest

from servescope.observability.families import Families, engine_samples, engine_view
from servescope.observability.meter import Meter
from servescope.observability.spec_decode import num_speculative_tokens
from servescope.observability.text import render


class Prompts:
    def output_len_of(self, rid: str) -> int | None:
        return None

    def prompt_len_of(self, rid: str) -> int:
        return 8

    def arrival_s_of(self, rid: str) -> float | None:
        return 0.0


def entry(rid, drafts, accepted, sampled=True):
    return {"id": rid, "n": 1 + drafts, "start": 8, "sampled": sampled, "kind": "decode",
            "drafts": drafts, "accepted": accepted}


# step 0: both prefill; step 1: a accepts 2 of 3, b 0 of 3; step 2: a accepts 3 of 3, b's
# output is discarded (-1); step 3: a has no drafts (a prefill-like entry), b accepts 1 of 2
STEPS = [[{**entry("a", 0, 0), "kind": "prefill", "n": 8, "start": 0},
          {**entry("b", 0, 0), "kind": "prefill", "n": 8, "start": 0}],
         [entry("a", 3, 2), entry("b", 3, 0)],
         [entry("a", 3, 3), entry("b", 3, -1)],
         [entry("a", 0, 0), entry("b", 2, 1)]]


def folded() -> Meter:
    meter = Meter(Prompts(), enable_prefix_caching=False)
    for k, scheduled in enumerate(STEPS):
        meter.observe({"time_s": k * 0.01, "step_time_ms": 10.0, "scheduled": scheduled,
                       "arrivals": ["a", "b"] if k == 0 else [], "running": ["a", "b"],
                       "new": ["a", "b"] if k == 0 else [], "waiting": [], "kv_usage": 0.0})
    return meter


def test_each_applied_verify_counts_its_drafts_and_acceptances():
    counts = folded().spec_decode
    # verifies: a(3,2) b(3,0) a(3,3) b(2,1); b's discarded output (-1) is not one
    assert counts.at(0) == {"num_drafts": 0, "num_draft_tokens": 0, "num_accepted_tokens": 0}
    assert counts.at(1) == {"num_drafts": 2, "num_draft_tokens": 6, "num_accepted_tokens": 2}
    assert counts.at(3) == {"num_drafts": 4, "num_draft_tokens": 11, "num_accepted_tokens": 6}
    # per position: accepted 2 -> pos 0,1; 3 -> 0,1,2; 1 -> 0
    assert [counts.accepted_at(p, 3) for p in range(4)] == [3, 2, 1, 0]
    assert [counts.accepted_at(p, 1) for p in range(3)] == [1, 1, 0]


def test_a_verify_emits_its_accepted_drafts_plus_one_token():
    meter = folded()
    # step 1: (2 + 1) + (0 + 1); step 2: (3 + 1) + nothing; step 3: 1 + (1 + 1)
    gen = [meter.row(k)["generation_tokens"] for k in range(4)]
    assert gen == [2, 6, 10, 13]
    # one inter-token latency per output, not per token (vLLM's IterationStats)
    rows, _ = meter.observations("inter_token_latency")
    assert rows == [1, 1, 2, 3, 3]


def test_the_families_are_written_only_for_an_engine_that_speculates():
    meter = folded()
    spec = {"method": "ngram", "num_speculative_tokens": 3}
    text = render(engine_samples(engine_view(meter, "m", 0, "s",
                                             {"speculative_config": spec}, 64), 3))
    assert 'vllm:spec_decode_num_drafts_total{engine="0",model_name="m",session="s"} 4.0' in text
    per_pos = re.findall(r'num_accepted_tokens_per_pos_total\{.*position="(\d)".*\} (\S+)', text)
    assert per_pos == [("0", "3.0"), ("1", "2.0"), ("2", "1.0")]
    plain = engine_view(meter, "m", 0, "s", {}, 64)
    assert "spec_decode" not in render(engine_samples(plain, 3))
    families = Families()
    families.put(engine_samples(plain, 3))
    assert not [m for m in families if "spec_decode" in m.name]


def test_k_is_read_from_the_config_as_given():
    assert num_speculative_tokens({"speculative_config": '{"num_speculative_tokens": 5}'}) == 5
    assert num_speculative_tokens({"speculative_config": None}) == 0


def test_a_simulated_run_folds_to_the_engines_own_totals():
    """The meter over a speculating run's records against the engine's summary (its own
    counts, not folded from records): output tokens, accepted drafts and the acceptance rate."""
    from servescope.api.wire.serialize import normalize, request_info
    from servescope.core.config import EngineConfig
    from servescope.core.engine import Engine
    from servescope.core.request import RequestSpec

    specs = [RequestSpec(f"r{i}", 30 + i, 20 + 3 * i, arrival_step=i) for i in range(6)]
    config = EngineConfig.from_dict({
        "block_size": 4, "num_gpu_blocks": 80, "max_num_batched_tokens": 32,
        "speculative_config": {"method": "ngram", "num_speculative_tokens": 3}})
    engine = Engine(config, specs)
    meter = Meter(request_info(specs), enable_prefix_caching=True)
    for record in engine.run():
        meter.observe(normalize(record.to_dict()))
    summary, last = engine.summary(), meter.num_records - 1
    counts = meter.spec_decode.at(last)
    assert meter.row(last)["generation_tokens"] == summary["total_output_tokens"]
    assert counts["num_accepted_tokens"] == summary["num_accepted_tokens"]
    assert counts["num_accepted_tokens"] / counts["num_draft_tokens"] == pytest.approx(
        summary["acceptance_rate"])
