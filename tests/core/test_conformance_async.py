"""Every shared vLLM 0.33 async reference case (AsyncScheduler driven as vLLM's engine core
drives it: step N + 1 scheduled before step N's update) reproduced step for step."""

from __future__ import annotations

import json

import pytest
from support.paths import shared_path
from support.reference import run_case

from servescope.capture.replay import first_difference
from servescope.core.config import EngineConfig

CASES = ["a_small_ample_kv", "b_small_tight_kv", "c_long_prefill_chunked",
         "c2_long_prefill_lpt256", "p1_sysprompt_ample"]


@pytest.mark.parametrize("name", CASES)
def test_matches_vllm_async_step_for_step(name: str) -> None:
    directory = shared_path("vllm-reference")
    assert json.loads((directory / f"{name}.async.config.json").read_text())[
        "async_scheduling"] is True
    ours, theirs = run_case(directory, f"{name}.async")
    assert len(theirs) > 10
    keys = tuple(theirs[0])
    assert {"scheduled", "block_tables", "num_free_blocks", "admitted", "finished"} <= set(keys)
    assert first_difference(ours, theirs, keys) is None


@pytest.mark.parametrize("name", ["b_small_tight_kv", "p1_sysprompt_ample"])
def test_the_sync_scheduler_does_not_match_the_async_recording(name: str) -> None:
    """The comparison can fail: the synchronous engine on the same case diverges."""
    directory = shared_path("vllm-reference")
    config = json.loads((directory / f"{name}.async.config.json").read_text())
    sync = EngineConfig.from_dict({**config, "async_scheduling": False})
    ours, theirs = run_case(directory, f"{name}.async", sync)
    problem = first_difference(ours, theirs, tuple(theirs[0]))
    assert problem is not None
