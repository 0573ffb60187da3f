"""One small file per trace format, written here in the layout docs/trace-format.md gives, with
what a reader should find in it (requests, arrivals, records) stated by hand."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.request import RequestSpec
from servescope.traces.recording import header, write_recording


@dataclass
class Sample:
    filename: str
    body: bytes
    num_requests: int  # what the upload reports
    ids: list[str] = field(default_factory=list)  # request traces: ids, in arrival order
    arrivals: list[float] = field(default_factory=list)  # their arrival_s
    prompt_lens: list[int] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)  # step traces: what each record says


def azure(_: Path) -> Sample:
    body = ("TIMESTAMP,ContextTokens,GeneratedTokens\n"
            "2023-11-16 18:17:03.9799600,120,10\n"
            "2023-11-16 18:17:04.2299600,300,0\n"  # no output: skipped
            "2023-11-16 18:17:04.4799600,80,12\n"
            "2023-11-16 18:17:04.97996,64,5\n")  # fewer fractional digits
    return Sample("azure_code.csv", body.encode(), 3, ["az0", "az2", "az3"], [0.0, 0.5, 1.0],
                  [120, 80, 64])


def burstgpt(_: Path) -> Sample:
    body = ("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
            "5,ChatGPT,100,20,120,Conversation log\n"
            "5.5,GPT-4,200,0,200,Conversation log\n"  # a failed request
            "6,ChatGPT,50,8,58,API log\n")
    return Sample("BurstGPT_1.csv", body.encode(), 2, ["bg0", "bg2"], [0.0, 1.0], [100, 50])


def mooncake(_: Path) -> Sample:
    rows = [{"timestamp": 0, "input_length": 600, "output_length": 10, "hash_ids": [0, 1]},
            {"timestamp": 250, "input_length": 700, "output_length": 6, "hash_ids": [0, 2]},
            {"timestamp": 500, "input_length": 100, "output_length": 4, "hash_ids": [3]}]
    body = "".join(json.dumps(r) + "\n" for r in rows)
    return Sample("conversation_trace.jsonl", body.encode(), 3, ["mc0", "mc1", "mc2"],
                  [0.0, 0.25, 0.5], [600, 700, 100])


def bailian(_: Path) -> Sample:  # two turns of chat 7 and a chat of its own
    rows = [{"chat_id": 7, "parent_chat_id": -1, "timestamp": 61.0, "input_length": 40,
             "output_length": 5, "type": "text", "turn": 1, "hash_ids": [1, 2, 3]},
            {"chat_id": 9, "parent_chat_id": -1, "timestamp": 61.5, "input_length": 20,
             "output_length": 3, "type": "text", "turn": 1, "hash_ids": [8, 9]},
            {"chat_id": 8, "parent_chat_id": 7, "timestamp": 62.0, "input_length": 70,
             "output_length": 4, "type": "text", "turn": 2, "hash_ids": [1, 2, 3, 4, 5]}]
    body = "".join(json.dumps(r) + "\n" for r in rows)
    return Sample("qwen_traceA_blksz_16.jsonl", body.encode(), 3, ["qb0", "qb1", "qb2"],
                  [0.0, 0.5, 1.0], [40, 20, 70])


def splitwise(_: Path) -> Sample:  # the Vidur layout (the SplitwiseSim one is a real copy)
    body = "arrived_at,num_prefill_tokens,num_decode_tokens\n2.0,256,8\n2.5,128,4\n"
    return Sample("vidur_trace.csv", body.encode(), 2, ["sw0", "sw1"], [0.0, 0.5], [256, 128])


def sharegpt_stats(_: Path) -> Sample:  # pairs sampled: 1000 requests at 0 by default
    body = ("num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n"
            "40,6,46,6.67\n0,5,5,0\n24,3,27,8.0\n")
    return Sample("sharegpt_stats.csv", body.encode(), 1000)


BENCH = {
    "date": "20250101-120000", "backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B-Instruct",
    "num_prompts": 3, "request_rate": "inf", "burstiness": 1.0, "max_concurrency": None,
    "duration": 1.5, "completed": 2, "failed": 1, "mean_ttft_ms": 33.0,
    "request_goodput:": 1.2,  # the key one vLLM version wrote
    "input_lens": [100, 200, 50], "output_lens": [4, 3, 5],
    "ttfts": [0.03, 0.036, 0.0], "itls": [[0.010, 0.012, 0.011], [0.020, 0.021], []],
    "latencies": [0.063, 0.077, 0.0], "start_times": [1000.0, 1000.2, 1000.4],
    "errors": ["", "", "timeout"],
}


def vllm_bench(_: Path) -> Sample:
    return Sample("bench.json", json.dumps(BENCH, indent=2).encode(), 2, ["b0", "b1"],
                  [0.0, 0.2], [100, 200])


def workload_json(_: Path) -> Sample:
    rows = [{"id": "chat-a", "arrival_s": 0.0, "prompt_len": 64, "output_len": 8},
            {"id": "chat-b", "arrival_s": 0.3, "prompt_len": 96, "output_len": 4,
             "shared_prefix": {"id": "sys", "len": 32}}]
    return Sample("workload.json", json.dumps(rows).encode(), 2, ["chat-a", "chat-b"],
                  [0.0, 0.3], [64, 96])


def servescope_steps(tmp: Path) -> Sample:
    specs = [RequestSpec(f"r{i}", 30 + 7 * i, 4, arrival_step=i) for i in range(5)]
    config = EngineConfig.from_dict({"block_size": 4, "num_gpu_blocks": 64})
    path = tmp / "run.jsonl"
    write_recording(path, header(config, specs, "simulated"), Engine(config, specs).run())
    steps = [json.loads(json.dumps(r.to_dict())) for r in Engine(config, specs).run()]
    return Sample("run.jsonl", path.read_bytes(), 5, steps=steps)


ITERATIONS = [  # (N, context requests, context tokens, generation requests/tokens, ms, usage %)
    (41, 2, 301, 0, 0, "20.5", "2.5"), (42, 0, 0, 2, 2, "8.25", "2.6"),
    (43, 1, 64, 2, 2, "12", "3.1"), (44, 0, 0, 3, 3, "8.5", "1.0")]


def vllm_iteration_log(_: Path) -> Sample:
    lines = ["INFO 12-02 11:00:00 [api_server.py:1] vLLM API server version 0.33.0"]
    for n, cr, ct, gr, gt, ms, usage in ITERATIONS:
        lines.append(f"(EngineCore_DP0 pid=7) INFO 12-02 11:00:01 [core.py:312] Iteration({n}): "
                     f"{cr} context requests, {ct} context tokens, {gr} generation requests, "
                     f"{gt} generation tokens, iteration elapsed time: {ms} ms, "
                     f"GPU KV cache usage: {usage}%")
        lines.append("INFO 12-02 11:00:01 [loggers.py:1] Avg prompt throughput: 1.0 tokens/s")
    elapsed = 0.0
    steps = []
    for n, cr, ct, gr, gt, ms, usage in ITERATIONS:
        steps.append({"step": n, "time_s": elapsed, "step_time_ms": float(ms),
                      "num_scheduled_tokens": ct + gt, "num_seqs": cr + gr,
                      "num_free_blocks": round(10000 * (1 - float(usage) / 100))})
        elapsed += float(ms) / 1000
    return Sample("vllm_serve.log", ("\n".join(lines) + "\n").encode(), 0, steps=steps)


def vllm_kv_events(_: Path) -> Sample:
    import msgpack

    def stored(hashes: list[int]) -> list[Any]:  # the older positional layout, tag first
        return ["BlockStored", hashes, None, list(range(16 * len(hashes))), 16, None, None]

    batches = [
        [100.0, [stored([11, 12, 13])], 0],
        {"ts": 100.5, "events": [{"type": "BlockRemoved", "block_hashes": [12]},
                                 {"type": "BlockStored", "block_hashes": [14],
                                  "parent_block_hash": 13, "token_ids": [], "block_size": 16}]},
        [101.0, [["BlockRemoved", [11], None]], 0],
        [101.2, [["AllBlocksCleared"]], 0],
    ]
    body = b"".join(msgpack.packb(b) for b in batches)
    # Each cached hash takes the lowest free slot: 14 takes 12's slot 2.
    cached = [{1, 2, 3}, {1, 2, 3}, {2, 3}, set()]
    steps = [{"time_s": t, "cached": c} for t, c in zip([0.0, 0.5, 1.0, 1.2], cached, strict=True)]
    return Sample("kv_events.bin", body, 0, steps=steps)


INFERENCE_PERF = """\
load:
  type: constant
  interval: 0
  stages:
  - {rate: 1, duration: 1}
  - {rate: 1, duration: 1}
  - {rate: 1, duration: 1}
  - {rate: 1, duration: 1}
data:
  type: shared_prefix
  shared_prefix: {num_groups: 1, num_prompts_per_group: 2, system_prompt_len: 32,
                  question_len: 16, output_len: 4}
"""


def inference_perf(_: Path) -> Sample:
    """Four one-request stages: each request goes out at its stage's end (1 s); the next stage
    starts interval (0) + the loadgen's 1 s lead after it."""
    return Sample("profile.yaml", INFERENCE_PERF.encode(), 4, ["ip0", "ip1", "ip2", "ip3"],
                  [1.0, 3.0, 5.0, 7.0], [48, 48, 48, 48])


def vllm_request_stats(_: Path) -> Sample:  # arrivals from arrival_time, in arrival order
    rows = [{"request_id": "a", "num_prompt_tokens": 100, "num_generation_tokens": 5,
             "arrival_time": 1700000000.5, "queued_ts": 50.0, "scheduled_ts": 50.1,
             "first_token_ts": 50.3, "last_token_ts": 50.7, "first_token_latency": 0.3},
            {"request_id": "b", "num_prompt_tokens": 30, "num_generation_tokens": 2,
             "arrival_time": 1700000000.0, "queued_ts": 49.5, "scheduled_ts": 49.5,
             "first_token_ts": 49.6, "last_token_ts": 49.7, "first_token_latency": 0.1}]
    body = "".join(json.dumps(r) + "\n" for r in rows)
    return Sample("vllm_requests.jsonl", body.encode(), 2, ["b", "a"], [0.0, 0.5], [30, 100])


def inference_perf_requests(_: Path) -> Sample:  # sends at 10.0 and 10.5 s; 8 -> 5 tokens
    rows = [{"start_time": 10.0 + 0.5 * i, "end_time": 10.4 + 0.5 * i, "request": "{}",
             "response": "", "error": None,
             "info": {"request_metrics": {"text": {"input_tokens": 8}},
                      "response_metrics": {"output_tokens": 5,
                                           "output_token_times": [10.1 + 0.5 * i,
                                                                  10.4 + 0.5 * i]}}}
            for i in range(2)]
    return Sample("per_request_lifecycle_metrics.json", json.dumps(rows).encode(), 2,
                  ["ip0", "ip1"], [0.0, 0.5], [8, 8])


SAMPLES = {
    "azure": azure, "bailian": bailian, "burstgpt": burstgpt, "mooncake": mooncake,
    "splitwise": splitwise,
    "sharegpt-stats": sharegpt_stats, "vllm-bench": vllm_bench, "workload-json": workload_json,
    "servescope-steps": servescope_steps, "vllm-iteration-log": vllm_iteration_log,
    "vllm-kv-events": vllm_kv_events, "inference-perf": inference_perf,
    "vllm-request-stats": vllm_request_stats, "inference-perf-requests": inference_perf_requests,
}
