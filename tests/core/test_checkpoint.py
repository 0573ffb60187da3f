"""An engine loaded from a checkpoint (core/checkpoint.py) takes the very steps the original
takes from there, on the cost model's clock (its step-time function is rebuilt on load)."""

from __future__ import annotations

from servescope.core.checkpoint import advance_to, dump_engine, load_engine
from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.invariants import check_invariants
from servescope.core.request import RequestSpec

CONFIG = EngineConfig.from_dict({"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100",
                                 "num_gpu_blocks": 300, "max_num_seqs": 16,
                                 "max_num_batched_tokens": 512})
SPECS = [RequestSpec(f"r{i}", 200 + 37 * (i % 7), 40 + 11 * (i % 5), arrival_s=0.02 * i,
                     prefix=(("sys", 64),) if i % 3 == 0 else ())
         for i in range(60)]


def test_a_loaded_checkpoint_goes_on_as_the_engine_does() -> None:
    engine = Engine(CONFIG, SPECS)
    advance_to(engine, 150)
    assert engine.iter == 150  # a quiet stretch is cut where asked
    loaded = load_engine(dump_engine(engine))
    assert loaded.step_time is not engine.step_time
    ours = []
    for record in loaded.run():
        check_invariants(loaded.scheduler, record)
        ours.append(record.to_dict())
    theirs = [r.to_dict() for r in engine.run()]
    assert ours == theirs and ours[0]["iter"] == 150
    assert any(r["preempted"] for r in ours)  # the small pool preempts after the checkpoint
