"""A generator's shared_prefix gives every prompt the same leading tokens, and the lecture
preset built on it shows prefix-cache hits, chunked prefill and preemption in one run."""

from __future__ import annotations

from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.scenarios.presets import generate, load_preset


def test_shared_prefix_starts_every_prompt_and_adds_to_its_length():
    plain = generate({"seed": 3, "num_requests": 5, "prompt_len": [10, 20], "output_len": 4})
    shared = generate({"seed": 3, "num_requests": 5, "prompt_len": [10, 20], "output_len": 4,
                       "shared_prefix": {"key": "sys", "num_tokens": 64}})
    for p, s in zip(plain, shared, strict=True):
        assert s.prefix == (("sys", 64),) and p.prefix == ()
        assert s.prompt_len == p.prompt_len + 64


def test_the_lecture_preset_hits_the_prefix_cache_chunks_and_preempts():
    config, specs, _ = load_preset("shared-system-prompt")
    records = [r.to_dict() for r in Engine(config, specs).run()]
    assert any(n > 0 for r in records for n in r["num_cached_tokens"].values())
    assert any(r["preempted"] for r in records)
    prompt = {s.id: s.prompt_len for s in specs}
    assert any(e["kind"] == "prefill" and e["start"] + e["n"] < prompt[e["id"]]
               for r in records for e in r["scheduled"])
    assert config == EngineConfig.from_dict(config.to_dict())
    assert sum(len(r["finished"]) for r in records) == len(specs)
