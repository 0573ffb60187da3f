"""The page's reducer against the real engine: after every record, the blocks it shows as held
equal the engine's own count (usable minus free), for each scheduling policy."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.scenarios.workloads import preset_workload

FOLD = Path(__file__).with_name("fold_records.mjs")


@pytest.mark.parametrize("policy", ["static", "vllm-v1", "vllm-v0"])
def test_reducer_holds_what_the_engine_holds(policy: str) -> None:
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    workload = preset_workload("demo")
    config = EngineConfig.from_dict({**workload.base_config, "policy": policy})
    records = [r.to_dict() for r in Engine(config, workload.specs).run()]
    init = {"num_gpu_blocks": config.num_gpu_blocks, "block_size": config.block_size,
            "requests": [{"id": s.id} for s in workload.specs]}
    stream = "\n".join(json.dumps(x) for x in [init, *records])
    out = subprocess.run(["node", str(FOLD)], input=stream, capture_output=True, text=True,
                         check=True, timeout=60)
    held = json.loads(out.stdout)
    expected = [r["num_usable_blocks"] - r["num_free_blocks"] for r in records]
    assert len(held) == len(expected) > 10
    wrong = [(r["step"], h, e) for r, h, e in zip(records, held, expected, strict=True) if h != e]
    assert wrong == [], f"(step, page, engine) where they differ: {wrong[:5]}"


def test_reducer_holds_what_the_engine_held_after_each_async_update() -> None:
    """Under async scheduling a record's free count is taken after its update, when the next
    step is already scheduled; the page shows the blocks of the steps it has seen: the tables
    folded from the records (the finished released at their update), as vLLM held them then."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    from servescope.core.records import BlockTables

    workload = preset_workload("demo")
    config = EngineConfig.from_dict({**workload.base_config, "async_scheduling": True})
    engine = Engine(config, workload.specs)
    records, expected, tables = [], [], BlockTables()
    for record in engine.run():
        tables.apply(record)
        tables.after_update(record)
        expected.append(len({b for t in tables.tables.values() for b in t}))
        records.append(record.to_dict())
    assert any(r["num_usable_blocks"] - r["num_free_blocks"] != e
               for r, e in zip(records, expected, strict=True))  # the next step's blocks
    init = {"num_gpu_blocks": config.num_gpu_blocks, "block_size": config.block_size,
            "requests": [{"id": s.id} for s in workload.specs]}
    stream = "\n".join(json.dumps(x) for x in [init, *records])
    out = subprocess.run(["node", str(FOLD)], input=stream, capture_output=True, text=True,
                         check=True, timeout=60)
    assert json.loads(out.stdout) == expected


def test_reducer_drops_blocks_a_planned_step_appends_for_a_request_its_verify_finished() -> None:
    """Async speculation: step N's verify finishes a request (its accepted drafts reach
    max_tokens) after step N + 1, already scheduled, appended blocks for it; N's update frees
    the whole table (vLLM's Scheduler._free_request), so the page holds none of them."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    from servescope.core.records import BlockTables
    from servescope.core.request import RequestSpec

    config = EngineConfig.from_dict({
        "num_gpu_blocks": 64, "block_size": 2, "max_num_batched_tokens": 64,
        "async_scheduling": True,
        "speculative_config": {"method": "ngram", "num_speculative_tokens": 3}})
    specs = [RequestSpec(f"r{k}", 5 + k, 6 + 2 * k, arrival_step=k, spec_accepted=(3, 3, 3))
             for k in range(6)]
    records, expected, tables = [], [], BlockTables(async_scheduling=True)
    for record in Engine(config, specs).run():
        tables.apply(record)
        tables.after_update(record)
        expected.append(len({b for rid, t in tables.tables.items() if rid not in tables.held
                             for b in t}))
        records.append(record.to_dict())
    finished_then_planned = [r["step"] for prev, r in zip(records, records[1:], strict=False)
                             if set(prev["finished"]) & set(r["new_blocks"])]
    assert finished_then_planned, "no step appended blocks for a request finished before it"
    init = {"num_gpu_blocks": config.num_gpu_blocks, "block_size": config.block_size,
            "requests": [{"id": s.id, "output_len": s.output_len} for s in specs]}
    stream = "\n".join(json.dumps(x) for x in [init, *records])
    out = subprocess.run(["node", str(FOLD)], input=stream, capture_output=True, text=True,
                         check=True, timeout=60)
    assert json.loads(out.stdout) == expected
    assert expected[-1] == 0
