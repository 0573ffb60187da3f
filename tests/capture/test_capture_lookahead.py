"""servescope.capture with lookahead block hashes (an EAGLE-3 drafter with prefix caching) on
vLLM 0.33's real scheduler (optional: needs vllm; `python -m pytest -m vllm tests/capture`)."""

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
    effective_max_model_len,
)
from servescope.capture.replay import first_difference, read_recording, replay, views  # noqa: E402

CONFIG = {"block_size": 16, "num_gpu_blocks": 200, "max_num_seqs": 16,
          "max_num_batched_tokens": 512, "enable_chunked_prefill": True,
          "long_prefill_token_threshold": 0, "enable_prefix_caching": True,
          "speculative_config": {"method": "eagle3", "num_speculative_tokens": 3}}


def _rows() -> list[dict[str, Any]]:
    """Two families under one system prompt; segment ends on and off block boundaries."""
    rows = []
    for i in range(8):
        prefix = [["sys", 192]] + ([["fam", 17 + 16 * (i % 3)]] if i % 2 else [])
        rows.append({"id": f"r{i}", "arrival_step": 2 * i, "prompt_len": 260 + 7 * i,
                     "output_len": 12, "prefix": prefix, "spec_accepted": [1, 3, 0, 2]})
    return rows


def _common(x: list[Any], y: list[Any]) -> int:
    total = 0
    for (kx, nx), (ky, ny) in zip(x, y, strict=False):
        if kx != ky:
            break
        total += min(nx, ny)
        if nx != ny:
            break
    return total


def test_segments_follow_lookahead_hashes_and_replay(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _rows()
    path = tmp_path / "capture.jsonl"
    monkeypatch.setenv(capture.PATH_ENV, str(path))
    scheduler = build_scheduler(CONFIG, effective_max_model_len(CONFIG, rows),
                                capture.RecordingScheduler)
    lookahead = scheduler.num_hash_lookahead_tokens
    assert lookahead == 1  # VllmConfig.num_hash_lookahead_tokens for EAGLE-3 with caching
    factory = RequestFactory(True, 16, lookahead)
    for _ in drive(scheduler, rows, factory, observe=False):
        pass
    scheduler.shutdown()
    head, records = read_recording(path)
    assert head["recorder"]["num_hash_lookahead_tokens"] == 1
    got = {r["id"]: r.get("prefix", []) for r in head["requests"]}
    for a in rows:
        for b in rows:
            if a is b:
                continue
            common = min(_common(a["prefix"], b["prefix"]), a["prompt_len"], b["prompt_len"])
            blocks = max(0, common - lookahead) // 16  # each hash needs its next token shared
            expected = blocks * 16 + lookahead if blocks else 0
            assert _common(got[a["id"]], got[b["id"]]) == expected, (a["id"], b["id"])
    assert sum(sum(r["num_cached_tokens"].values()) for r in records) > 0
    assert first_difference(list(views(replay(head))), list(views(records))) is None
