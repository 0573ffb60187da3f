"""Each vLLM behaviour the /explain page states (a `data-claim` span), shown on the simulator's
vLLM V1 core, which follows vLLM 0.33's scheduler rule by rule (tests/core/test_conformance.py
replays vLLM's own recordings). tests/frontend/test_explain.py runs one per claim and checks
that every claim on the page has one here."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.records import BlockTables, StepRecord
from servescope.core.request import RequestSpec
from servescope.scenarios.presets import load_preset
from servescope.scenarios.workloads import preset_workload
from support.factories import make_config, make_requests

CLAIMS: dict[str, Callable[[], None]] = {}


def claim(name: str) -> Callable[[Callable[[], None]], Callable[[], None]]:
    def register(fn: Callable[[], None]) -> Callable[[], None]:
        CLAIMS[name] = fn
        return fn
    return register


@cache
def preset_records(name: str) -> tuple[StepRecord, ...]:
    workload = preset_workload(name)
    return tuple(Engine(EngineConfig.from_dict(workload.base_config), workload.specs).run())


@cache
def preset_run(name: str, variant: str) -> dict[str, Any]:
    """The summary (and max ITL) of a preset's run, `variant` one of its variants' names ("" for
    the preset's own config)."""
    workload = preset_workload(name)
    config = EngineConfig.from_dict(workload.base_config)
    if variant:
        sets = {v["name"]: v.get("set", {}) for v in load_preset(name)[2]["variants"]}
        config = config.replace(**sets[variant])
    engine = Engine(config, workload.specs, records=False)
    engine.run_to_end()
    itl = [x for r in engine.request_metrics() for x in r["itl_ms"]]
    return {**engine.summary(), "max_itl_ms": max(itl)}


def running_before(records: tuple[StepRecord, ...]) -> list[tuple[StepRecord, list[str]]]:
    """Each record with the running list (admission order) its schedule() started from."""
    out, running = [], []
    for rec in records:
        out.append((rec, running))
        running = [r for r in rec.running if r not in rec.released]
    return out


@claim("admission-order")
def admission_order() -> None:
    """The running list is served first, in admission order, prefills and decodes alike: with
    long_prefill_token_threshold, a prompt admitted before a decoder takes its chunk first."""
    for rec, running in running_before(preset_records("demo")):
        ids = [e.id for e in rec.scheduled]
        kept = [r for r in running if r in ids]
        assert ids[:len(kept)] == kept, rec.step
    config = make_config(max_num_batched_tokens=16, long_prefill_token_threshold=6)
    engine = Engine(config, make_requests((30, 4), (2, 4)))
    engine.step()
    assert [(e.id, e.n, e.prefill) for e in engine.step().scheduled] == [
        ("r0", 6, True), ("r1", 1, False)]


@claim("budget-chunks")
def budget_chunks() -> None:
    """A prefill gets the rest of its prompt, cut to what is left of the budget."""
    tokens = {s.id: s.prompt_len for s in preset_workload("demo").specs}
    cut = 0
    for rec in preset_records("demo"):
        left = rec.token_budget
        for e in rec.scheduled:
            if e.prefill:
                assert e.n == min(tokens[e.id] - e.start, left), (rec.step, e)
                cut += e.n < tokens[e.id] - e.start
            left -= e.n
        for e in rec.scheduled:
            tokens[e.id] += e.sampled
    assert cut > 0


@claim("itl-budget")
def itl_budget() -> None:
    """The budget, not chunking, sets the ITL tail; and it trades TTFT against it."""
    lesson = "lesson-static-vs-continuous"
    v0, v1 = preset_run(lesson, "continuous"), preset_run(lesson, "continuous+chunked")
    assert v1["p99_itl_ms"] > v0["p99_itl_ms"] and v0["max_itl_ms"] > v1["max_itl_ms"]
    small, default, big = (preset_run("lesson-budget-sweep", b) for b in ("256", "", "16384"))
    assert small["p99_itl_ms"] < default["p99_itl_ms"] < big["p99_itl_ms"]
    assert small["mean_ttft_ms"] > default["mean_ttft_ms"]


def waiting_scenario(**overrides: Any) -> list[StepRecord]:
    """r0 (40-token prompt) holds 11 of 15 blocks when r1 (24 tokens: 6 blocks, its first
    7-token chunk 2) and r2 (4 tokens: 1 block) arrive at step 8."""
    config = make_config(max_num_batched_tokens=8, **overrides)
    specs = [RequestSpec("r0", 40, 12, arrival_step=0), RequestSpec("r1", 24, 2, arrival_step=8),
             RequestSpec("r2", 4, 2, arrival_step=8)]
    return list(Engine(config, specs).run())


def at_step(records: list[StepRecord], step: int) -> StepRecord:
    return next(r for r in records if r.step == step)


@claim("full-prompt-admission")
def full_prompt_admission() -> None:
    rec = at_step(waiting_scenario(), 8)
    assert rec.waiting[0] == "r1" and rec.num_free_blocks == 4  # its first chunk's 2 would fit
    assert "r1" in at_step(waiting_scenario(scheduler_reserve_full_isl=False), 8).new


@claim("head-of-line")
def head_of_line() -> None:
    rec = at_step(waiting_scenario(), 8)
    assert rec.waiting == ("r1", "r2") and not rec.new  # r2's one block is free: never tried


@claim("preempt-victim")
def preempt_victim() -> None:
    """The victim is the tail of the running list; it gives back every block, goes to the
    front of the queue, and nothing is admitted in that step."""
    tables, seen = BlockTables(), 0
    for rec, running in running_before(preset_records("kv-starvation")):
        tables.apply(rec)
        if rec.preempted:
            seen += 1
            victims = list(rec.preempted)
            assert running[-len(victims):] == victims[::-1], rec.step
            assert not rec.new and not rec.resumed and rec.waiting[:1] == (victims[-1],)
            assert not set(victims) & set(tables.tables)
        tables.after_update(rec)
    assert seen > 10


@claim("preempt-resume")
def preempt_resume() -> None:
    """A resume takes its cached blocks and recomputes the rest, chunked under the budget."""
    hits = [r.num_cached_tokens[i] for r in preset_records("shared-system-prompt")
            for i in r.resumed]
    assert hits and all(h > 0 for h in hits)
    config = make_config(num_gpu_blocks=16, max_num_batched_tokens=8)
    records = list(Engine(config, make_requests((20, 30), (20, 30))).run())
    resume = next(i for i, r in enumerate(records) if r.resumed)
    rid = records[resume].resumed[0]
    chunks = [e for r in records[resume:] for e in r.scheduled if e.id == rid and e.prefill]
    assert len(chunks) > 1 and all(e.n <= config.max_num_batched_tokens for e in chunks)


@claim("prefix-hit-limit")
def prefix_hit_limit() -> None:
    """Identical 16-token prompts: the second hits 3 of its 4 blocks, never the last token."""
    specs = [RequestSpec(f"r{i}", 16, 2, arrival_step=4 * i, prefix=(("sys", 16),))
             for i in range(2)]
    records = list(Engine(make_config(enable_prefix_caching=True), specs).run())
    assert [r.num_cached_tokens["r1"] for r in records if "r1" in r.new] == [12]


@claim("lazy-eviction")
def lazy_eviction() -> None:
    """A cached block loses its hash only when the pool hands it out again."""
    removed = 0
    for rec in preset_records("shared-system-prompt"):
        handed = {b for blocks in rec.new_blocks.values() for b in blocks}
        for ev in rec.block_events:
            if ev.kind == "removed":
                assert set(ev.block_ids) <= handed, rec.step
                removed += len(ev.block_ids)
    assert removed > 0


NGRAM3 = {"method": "ngram", "num_speculative_tokens": 3}


def speculative_rows(spec: dict[str, Any], specs: list[RequestSpec],
                     **config: Any) -> list[dict[str, Any]]:
    data = {"num_gpu_blocks": 64, "block_size": 4, "max_num_batched_tokens": 64,
            "async_scheduling": False, "speculative_config": spec, **config}
    return [r.to_dict() for r in Engine(EngineConfig.from_dict(data), specs).run()]


@claim("spec-budget")
def spec_budget() -> None:
    """A decode is 1 + drafts inside the budget; the last one's drafts are cut to fit."""
    specs = [RequestSpec("a", 2, 9, arrival_step=0), RequestSpec("b", 4, 9, arrival_step=0)]
    rows = speculative_rows(NGRAM3, specs, max_num_batched_tokens=6)
    assert [(s["id"], s["n"], s["drafts"]) for s in rows[1]["scheduled"]] == [
        ("a", 4, 3), ("b", 2, 1)]
    assert all(sum(s["n"] for s in r["scheduled"]) <= 6 for r in rows)


@claim("spec-lookahead")
def spec_lookahead() -> None:
    """An 8-token prompt in 4-token blocks: EAGLE-3 with K = 3 takes ceil(11 / 4) = 3 blocks,
    n-gram the prompt's 2."""
    one = [RequestSpec("a", 8, 4, arrival_step=0)]
    eagle = speculative_rows({"method": "eagle3", "num_speculative_tokens": 3}, one)
    assert len(eagle[0]["new_blocks"]["a"]) == 3
    assert len(speculative_rows(NGRAM3, one)[0]["new_blocks"]["a"]) == 2


@claim("spec-padding")
def spec_padding() -> None:
    """A prompt found whole in the cache is admitted as 1 + K, its placeholder drafts not
    accepted (nor do they use its spec_accepted entry)."""
    shared = (("sys", 8),)
    specs = [RequestSpec("a", 9, 6, arrival_step=0, prefix=shared),
             RequestSpec("b", 9, 4, arrival_step=3, prefix=shared, spec_accepted=(2,))]
    rows = speculative_rows(NGRAM3, specs, enable_prefix_caching=True)
    b = [(s["n"], s["drafts"], s["accepted"]) for r in rows for s in r["scheduled"]
         if s["id"] == "b"]
    assert b[:2] == [(4, 3, 0), (4, 3, 2)]


@claim("spec-rollback")
def spec_rollback() -> None:
    """1 of 3 accepted: 2 tokens, computed rolled back by 2; then the cut at max_tokens."""
    rows = speculative_rows(NGRAM3, [RequestSpec("a", 10, 6, arrival_step=0,
                                                 spec_accepted=(1, 3))])
    plan = [(s["n"], s["start"], s["drafts"], s["accepted"]) for r in rows
            for s in r["scheduled"]]
    assert plan == [(10, 0, 0, 0), (4, 10, 3, 1), (4, 12, 3, 3)]  # 10 + 4 - 2 = 12
    assert rows[-1]["finished"] == ["a"]  # 1 + 2 + 4 tokens, 6 kept


@claim("spec-async-placeholders")
def spec_async_placeholders() -> None:
    """Async: a verify that finishes a request leaves the step already planned for it wasted,
    its output discarded (accepted -1)."""
    specs = [RequestSpec(f"r{k}", 5 + k, 6 + 2 * k, arrival_step=k, spec_accepted=(3, 3, 3))
             for k in range(6)]
    rows = speculative_rows(NGRAM3, specs, async_scheduling=True)
    wasted = [(s["id"], r["step"]) for prev, r in zip(rows, rows[1:], strict=False)
              for s in r["scheduled"] if s["id"] in prev["finished"]]
    assert wasted
    for rid, step in wasted:
        entry = next(s for r in rows if r["step"] == step for s in r["scheduled"]
                     if s["id"] == rid)
        assert entry["accepted"] == -1
