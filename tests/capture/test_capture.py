"""servescope.capture against vLLM 0.33's real scheduler on a CPU (optional: needs vllm).

Run with a Python that has vLLM: `python -m pytest -m vllm tests/capture`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
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
from servescope.core.records import BlockTables  # noqa: E402

BASE = {"block_size": 16, "num_gpu_blocks": 2000, "max_num_seqs": 16,
        "max_num_batched_tokens": 512, "enable_chunked_prefill": True,
        "long_prefill_token_threshold": 0, "enable_prefix_caching": False}


def workload(seed: int, n: int, prompts: tuple[int, int], outputs: tuple[int, int],
             per_step: float = 0.5) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    steps = np.floor(np.cumsum(rng.exponential(1 / per_step, n))).astype(int)
    return [{"id": f"r{i}", "arrival_step": int(s), "prompt_len": int(p), "output_len": int(o)}
            for i, (s, p, o) in enumerate(zip(steps, rng.integers(*prompts, n),
                                              rng.integers(*outputs, n), strict=True))]


def shared_prefix_workload() -> list[dict[str, Any]]:
    rows = workload(3, 12, (300, 600), (5, 30))
    for i, row in enumerate(rows):
        row["prefix"] = [["sys", 200]] + ([["fam", 70 + 10 * i]] if i % 2 else [])
    return rows


def priority_workload() -> list[dict[str, Any]]:
    rows = workload(4, 14, (50, 400), (10, 60), per_step=2.0)
    for i, row in enumerate(rows):
        row["priority"] = (i * 7) % 3
    return rows


CASES = {
    "ample": (BASE, workload(1, 10, (50, 900), (5, 40))),
    "tight": ({**BASE, "num_gpu_blocks": 40}, workload(2, 12, (20, 120), (40, 120), 2.0)),
    "threshold": ({**BASE, "long_prefill_token_threshold": 128},
                  workload(5, 8, (100, 1500), (5, 30))),
    "prefix": ({**BASE, "num_gpu_blocks": 120, "enable_prefix_caching": True},
               shared_prefix_workload()),
    "priority": ({**BASE, "num_gpu_blocks": 60, "scheduling_policy": "priority"},
                 priority_workload()),
}


def record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: dict[str, Any],
           rows: list[dict[str, Any]], cls: str = "RecordingScheduler",
           between_steps: Any = None) -> tuple[list[dict[str, Any]], Path]:
    """Drive a recording scheduler; return what the driver itself saw, and the file."""
    path = tmp_path / "capture.jsonl"
    monkeypatch.setenv(capture.PATH_ENV, str(path))
    scheduler = build_scheduler(config, effective_max_model_len(config, rows),
                                getattr(capture, cls))
    factory = RequestFactory(scheduler.cache_config.enable_prefix_caching, scheduler.block_size)
    seen = []
    for i, step in enumerate(drive(scheduler, rows, factory)):
        seen.append({"step": step.step,
                     "scheduled": list(step.output.num_scheduled_tokens.items()),
                     "preempted": sorted(step.output.preempted_req_ids or ()),
                     "finished": sorted(step.finished), "block_tables": step.block_tables,
                     "num_free_blocks": step.num_free_blocks, "running": step.running,
                     "waiting": step.waiting})
        if between_steps:
            between_steps(i, scheduler, seen[-1])
    assert not path.exists(), "the recording appears only once complete"
    scheduler.shutdown()
    return seen, path


@pytest.mark.parametrize("case", list(CASES))
def test_recording_round_trips_and_our_engine_reproduces_it(
        case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config, rows = CASES[case]
    seen, path = record(tmp_path, monkeypatch, config, rows)
    head, records = read_recording(path)
    assert (head["format"], head["version"], head["source"]) == ("servescope-steps", 1,
                                                                  "recorded")
    for key, value in config.items():
        assert head["config"][key] == value, key
    assert [(r["id"], r["prompt_len"], r["output_len"], r["arrival_step"])
            for r in head["requests"]] == [
        (r["id"], r["prompt_len"], r["output_len"], r["arrival_step"]) for r in rows]
    assert len(records) == len(seen)
    tables = BlockTables()
    for row, driver in zip(records, seen, strict=True):
        record_ns = SimpleNamespace(**row)
        assert row["step"] == driver["step"]
        assert [(s["id"], s["n"]) for s in row["scheduled"]] == driver["scheduled"]
        assert sorted(row["preempted"]) == driver["preempted"]
        assert sorted(row["finished"]) == driver["finished"]
        assert tables.apply(record_ns) == driver["block_tables"]
        tables.after_update(record_ns)
        for key in ("num_free_blocks", "running", "waiting"):
            assert row[key] == driver[key], key
    assert first_difference(list(views(replay(head))), list(views(records))) is None


def test_shared_prefixes_are_recovered_from_block_hashes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config, rows = CASES["prefix"]
    _, path = record(tmp_path, monkeypatch, config, rows)
    head, _ = read_recording(path)
    recovered = {r["id"]: [tuple(s) for s in r.get("prefix", [])] for r in head["requests"]}
    bs = config["block_size"]
    for a in rows:
        for b in rows:
            if a is b:
                continue
            true_common = _common_tokens(a["prefix"], b["prefix"])
            full_blocks = min(true_common, a["prompt_len"], b["prompt_len"]) // bs * bs
            assert _common_tokens(recovered[a["id"]], recovered[b["id"]]) == full_blocks


def _common_tokens(x: list[Any], y: list[Any]) -> int:
    total = 0
    for (kx, nx), (ky, ny) in zip(x, y, strict=False):
        if kx != ky:
            break
        total += min(nx, ny)
        if nx != ny:
            break
    return total


@pytest.mark.parametrize("case", ["ample", "tight", "prefix"])
def test_async_class_round_trips_in_async_order(case: str, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """RecordingAsyncScheduler driven as async scheduling runs it: step N + 1 is scheduled
    before step N's update, so two records are open at once."""
    config, rows = CASES[case]
    path = tmp_path / "capture.jsonl"
    monkeypatch.setenv(capture.PATH_ENV, str(path))
    scheduler = build_scheduler(config, effective_max_model_len(config, rows),
                                capture.RecordingAsyncScheduler)
    factory = RequestFactory(scheduler.cache_config.enable_prefix_caching, scheduler.block_size)
    seen = list(drive_pipelined(scheduler, rows, factory))
    scheduler.shutdown()
    head, records = read_recording(path)
    assert head["recorder"]["async_scheduling"] is True
    assert head["config"]["async_scheduling"] is True
    assert len(records) == len(seen)
    tables = BlockTables()
    previous = None
    for row, step in zip(records, seen, strict=True):
        assert row["step"] == step.step
        assert [(s["id"], s["n"]) for s in row["scheduled"]] == list(
            step.output.num_scheduled_tokens.items())
        assert sorted(row["preempted"]) == sorted(step.output.preempted_req_ids or ())
        assert sorted(row["finished"]) == sorted(step.finished)
        # Step N's update (and its frees) comes after step N + 1's schedule.
        assert tables.apply(SimpleNamespace(**row)) == step.block_tables
        if previous is not None:
            tables.after_update(SimpleNamespace(**previous))
        previous = row
        assert (row["num_free_blocks"], row["running"], row["waiting"]) == (
            step.num_free_blocks, step.running, step.waiting)
    if not any(r["preempted"] for r in records):
        for spec in head["requests"]:
            mine = [s for r in records for s in r["scheduled"] if s["id"] == spec["id"]]
            assert sum(s["sampled"] for s in mine) == spec["output_len"]
            assert all(s["n"] == 1 for s in mine if s["kind"] == "decode")
    # Our engine's async scheduling makes every recorded decision.
    assert first_difference(list(views(replay(head), True)), list(views(records, True))) is None


def test_vllm_resolves_the_class_name_and_builds_it_as_the_engine_core_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vllm.config import SchedulerConfig

    name = "servescope.capture.RecordingScheduler"
    cls = SchedulerConfig(scheduler_cls=name, max_model_len=2048,
                          is_encoder_decoder=False).get_scheduler_cls()
    assert cls is capture.RecordingScheduler
    config, rows = CASES["ample"]
    monkeypatch.setenv(capture.PATH_ENV, str(tmp_path / "x-{pid}.jsonl"))
    template = build_scheduler(config, 2048)
    scheduler = cls(vllm_config=template.vllm_config, kv_cache_config=template.kv_cache_config,
                    structured_output_manager=template.structured_output_manager,
                    include_finished_set=False, log_stats=True, block_size=16,
                    hash_block_size=16)
    scheduler.shutdown()
    written = list(tmp_path.glob("x-*.jsonl"))
    assert len(written) == 1 and str(os.getpid()) in written[0].name
    head, records = read_recording(written[0])
    assert head["requests"] == [] and records == []


def test_an_abort_between_steps_lands_in_the_step_before(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vllm.v1.request import RequestStatus

    config, rows = CASES["ample"]
    aborted: dict[str, Any] = {}

    def abort(i: int, scheduler: Any, seen: dict[str, Any]) -> None:
        if i == 6 and seen["running"]:
            rid = seen["running"][0]
            request = scheduler.requests[rid]
            aborted.update(id=rid, blocks=list(seen["block_tables"][rid]),
                           outputs=request.num_output_tokens)
            scheduler.finish_requests(rid, RequestStatus.FINISHED_ABORTED)
            aborted["free"] = scheduler.kv_cache_manager.block_pool.get_num_free_blocks()

    _, path = record(tmp_path, monkeypatch, config, rows, between_steps=abort)
    head, records = read_recording(path)
    step = records[6]
    assert aborted["id"] in step["finished"] and aborted["id"] in step["released"]
    assert sorted(aborted["blocks"]) == sorted(set(step["freed_blocks"]) & set(aborted["blocks"]))
    assert step["num_free_blocks"] == aborted["free"]
    spec = next(r for r in head["requests"] if r["id"] == aborted["id"])
    assert spec["output_len"] == aborted["outputs"]
    assert all(aborted["id"] not in r["running"] for r in records[7:])


def test_steps_are_plain_json_lines_in_the_sim_out_shape(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from servescope.core.config import EngineConfig
    from servescope.core.engine import Engine
    from servescope.core.request import RequestSpec

    config, rows = CASES["ample"]
    _, path = record(tmp_path, monkeypatch, config, rows)
    lines = path.read_text().splitlines()
    simulated = next(Engine(EngineConfig.from_dict(config),
                            [RequestSpec("x", 10, 2, arrival_step=0)]).run()).to_dict()
    for line in lines[1:]:
        assert set(json.loads(line)) == set(simulated)


def test_the_documented_commands_parse_with_vllm_serve_and_resolve() -> None:
    import shlex

    from vllm.entrypoints.common.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    doc = (Path(__file__).resolve().parents[2] / "docs" / "capture.md").read_text()
    commands = [line for line in doc.splitlines() if " vllm serve " in f" {line}"]
    assert len(commands) == 2
    for line in commands:
        words = shlex.split(line)
        assert words[0] == f"{capture.PATH_ENV}=/tmp/servescope-{{pid}}.jsonl"
        args = make_arg_parser(FlexibleArgumentParser()).parse_args(words[3:])
        cls = getattr(capture, args.scheduler_cls.rsplit(".", 1)[1])
        assert args.scheduler_cls.startswith("servescope.capture.")
        runs_async = args.async_scheduling is not False  # None: vLLM's default, on for GPUs
        assert cls._async_scheduling == runs_async
