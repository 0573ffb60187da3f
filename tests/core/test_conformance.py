"""Every shared vLLM 0.33 reference case must be reproduced step for step."""

from __future__ import annotations

import pytest
from support.paths import shared_path
from support.reference import run_case

from servescope.capture.replay import first_difference

CASES = ["a_small_ample_kv", "b_small_tight_kv", "c_long_prefill_chunked",
         "c2_long_prefill_lpt256", "p1_sysprompt_ample"]


@pytest.mark.parametrize("name", CASES)
def test_matches_vllm_step_for_step(name: str) -> None:
    directory = shared_path("vllm-reference")
    ours, theirs = run_case(directory, name)
    assert len(theirs) > 10
    keys = tuple(theirs[0])  # every field vLLM's trace has (kv events only where it kept them)
    assert {"scheduled", "block_tables", "num_free_blocks", "admitted"} <= set(keys)
    assert first_difference(ours, theirs, keys) is None
