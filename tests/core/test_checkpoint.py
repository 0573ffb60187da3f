"""An engine resumed from a checkpoint (core/checkpoint.py) takes the very steps the original
takes from there, on the cost model's clock (its step-time function is rebuilt), and with the
finished requests, clock and arrivals the checkpoint left out handed back, the same summary."""

from __future__ import annotations

from servescope.core.checkpoint import advance_to, arrivals, resume, take
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


def test_a_resumed_checkpoint_goes_on_as_the_engine_does() -> None:
    engine = Engine(CONFIG, SPECS)
    order = arrivals(engine)
    advance_to(engine, 150)
    assert engine.iter == 150  # a quiet stretch is cut where asked
    checkpoint = take(engine)
    assert engine.done_requests and engine.arrivals  # left out, counted
    assert len(checkpoint.blob) < 100_000
    theirs = [r.to_dict() for r in engine.run()]  # the original runs on to its end
    resumed = resume(checkpoint, engine, order)
    assert resumed.step_time is not engine.step_time
    ours = []
    for record in resumed.run():
        check_invariants(resumed.scheduler, record)
        ours.append(record.to_dict())
    assert ours == theirs and ours[0]["iter"] == 150
    assert any(r["preempted"] for r in ours)  # the small pool preempts after the checkpoint
    assert any(r["arrivals"] for r in ours)  # and requests arrive
    assert resumed.summary() == engine.summary()
