"""The vector decode path makes exactly the decisions the per-request path makes."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.invariants import check_invariants
from servescope.core.request import RequestSpec
from servescope.core.scheduler import vector_decode

rows_st = st.lists(st.tuples(st.integers(1, 90), st.integers(1, 60), st.integers(0, 40),
                             st.sampled_from([(), (("sys", 32),), (("sys", 20),)])),
                   min_size=1, max_size=24)
config_st = st.fixed_dictionaries({
    "block_size": st.sampled_from([1, 4, 16]),
    "num_gpu_blocks": st.integers(8, 400),
    "max_num_seqs": st.integers(4, 48),
    "max_num_batched_tokens": st.integers(8, 256),
    "long_prefill_token_threshold": st.sampled_from([0, 16]),
    "enable_prefix_caching": st.booleans(),
})


def _serialized(config: EngineConfig, specs: list[RequestSpec], min_rows: int,
                monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(vector_decode, "MIN_ROWS", min_rows)
    engine = Engine(config, specs, fast_forward=False)
    lines = []
    for record in engine.run():
        check_invariants(engine.scheduler, record)
        lines.append(json.dumps(record.to_dict(), sort_keys=True))
    summary = json.dumps(engine.summary(), sort_keys=True)
    return "\n".join(lines) + summary


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(config=config_st, rows=rows_st)
def test_vector_and_per_request_paths_agree(config: dict, rows: list,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = EngineConfig.from_dict(config)
    specs = [RequestSpec(f"r{i}", p, o, arrival_step=a, prefix=pre)
             for i, (p, o, a, pre) in enumerate(rows)]
    vector = _serialized(cfg, specs, 1, monkeypatch)
    per_request = _serialized(cfg, specs, 10**9, monkeypatch)
    assert vector == per_request


def test_the_vector_path_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    original = vector_decode.schedule_chunk

    def spy(*args: object) -> int:
        taken = original(*args)  # type: ignore[arg-type]
        calls.append(taken)
        return taken

    monkeypatch.setattr(vector_decode, "schedule_chunk", spy)
    cfg = EngineConfig.from_dict({"block_size": 4, "num_gpu_blocks": 200,
                                  "enable_prefix_caching": False})
    specs = [RequestSpec(f"r{i}", 5, 30, arrival_step=0) for i in range(12)]
    list(Engine(cfg, specs, fast_forward=False).run())
    assert sum(calls) > 12 * 20
