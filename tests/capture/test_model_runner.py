"""Model Runner V1 against V2 (0.33's default, VllmConfig.use_v2_model_runner) as vLLM's
scheduler sees them, recorded with servescope.capture (optional: needs vllm).

The scheduler reads the runner only as a flag; with V2 it sends a resumed request as a new one
(Scheduler.schedule), which the recorder must still write as resumed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.vllm
pytest.importorskip("vllm", reason="vllm is not installed (optional extra `vllm`)")

from servescope import capture  # noqa: E402
from servescope.capture.driver import (  # noqa: E402
    RequestFactory,
    build_scheduler,
    drive,
    drive_pipelined,
    effective_max_model_len,
)
from servescope.capture.replay import first_difference, read_recording, replay, views  # noqa: E402

# 12 requests with long outputs in 40 blocks: preempted and resumed again and again
CONFIG = {"block_size": 16, "num_gpu_blocks": 40, "max_num_seqs": 16,
          "max_num_batched_tokens": 512, "enable_chunked_prefill": True,
          "long_prefill_token_threshold": 0, "enable_prefix_caching": False,
          "speculative_config": {"method": "ngram", "num_speculative_tokens": 3}}
ROWS = [{"id": f"r{i}", "arrival_step": i // 3, "prompt_len": 20 + 9 * i,
         "output_len": 60 + 5 * i, "spec_accepted": [(i + j) % 4 for j in range(60)]}
        for i in range(12)]
TIMES = ("time_s", "step_time_ms")


def record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runner: str,
           asynchronous: bool) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    path = tmp_path / f"{runner}.jsonl"
    monkeypatch.setenv(capture.PATH_ENV, str(path))
    monkeypatch.setenv("VLLM_USE_V2_MODEL_RUNNER", "1" if runner == "v2" else "0")
    cls = capture.RecordingAsyncScheduler if asynchronous else capture.RecordingScheduler
    scheduler = build_scheduler(CONFIG, effective_max_model_len(CONFIG, ROWS), cls)
    factory = RequestFactory(False, scheduler.block_size)
    for _ in (drive_pipelined if asynchronous else drive)(scheduler, ROWS, factory):
        pass
    scheduler.shutdown()
    return read_recording(path)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_v1_and_v2_runners_record_the_same_steps(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, asynchronous: bool) -> None:
    head_v1, rows_v1 = record(tmp_path, monkeypatch, "v1", asynchronous)
    head_v2, rows_v2 = record(tmp_path, monkeypatch, "v2", asynchronous)
    assert (head_v1["recorder"]["model_runner"], head_v2["recorder"]["model_runner"]) == (
        "v1", "v2")
    assert sum(len(r["resumed"]) for r in rows_v2) >= 3
    assert all(set(r["new"]).isdisjoint(r["resumed"]) for r in rows_v2)
    strip = [[{k: v for k, v in r.items() if k not in TIMES} for r in rows]
             for rows in (rows_v1, rows_v2)]
    assert strip[0] == strip[1]
    assert first_difference(list(views(replay(head_v2), asynchronous)),
                            list(views(rows_v2, asynchronous))) is None
