"""Driving vLLM's real V1 scheduler on a CPU, as vLLM's own unit tests do: no model, no weights.

A tiny local model config stands in for the hub; fake model outputs sample one token for each
request whose prefill is complete. Only the `servescope.capture` package imports vLLM.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")  # a CUDA wheel on a GPU-less host
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Model Runner V2, what 0.33 picks by default (VllmConfig.use_v2_model_runner), which falls
# back to the V1 runner only for want of Triton here; the scheduler reads no more of it
# than this flag (docs/capture.md, "Model Runner V2")
os.environ.setdefault("VLLM_USE_V2_MODEL_RUNNER", "1")

from servescope.capture.outputs import fake_output, propose_drafts  # noqa: E402

TOKEN_STRIDE = 1 << 22  # token id = stream index * stride + offset (streams never collide)


@dataclass
class DriverStep:
    """What the driver saw in one step: vLLM's own objects, before and after the update."""

    step: int
    output: Any  # vLLM SchedulerOutput
    block_tables: dict[str, list[int]]  # running requests, after schedule()
    running: list[str]
    waiting: list[str]
    finished: list[str]
    num_free_blocks: int  # after update_from_output()
    seconds: float  # schedule() + update_from_output() wall time


def effective_max_model_len(config: dict[str, Any], requests: list[dict[str, Any]]) -> int:
    if config.get("max_model_len"):
        return int(config["max_model_len"])
    longest = max((r["prompt_len"] + r["output_len"] for r in requests), default=0)
    return max(int(config.get("max_num_batched_tokens", 2048)), longest)


def build_scheduler(config: dict[str, Any], max_model_len: int,
                    scheduler_cls: type | None = None) -> Any:
    """A vLLM Scheduler (or subclass) for a ServeScope engine config, as create_scheduler does."""
    import torch
    from vllm.config import CacheConfig, ModelConfig, SchedulerConfig, VllmConfig
    from vllm.v1.core.sched.scheduler import Scheduler
    from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
    from vllm.v1.structured_output import StructuredOutputManager

    block_size = int(config.get("block_size", 16))
    num_blocks = int(config["num_gpu_blocks"])
    model_config = ModelConfig(model=_tiny_model_dir(max_model_len), skip_tokenizer_init=True,
                               dtype="float16", seed=0, max_model_len=max_model_len)
    scheduler_config = SchedulerConfig(
        max_num_seqs=int(config.get("max_num_seqs", 256)),
        max_num_batched_tokens=int(config.get("max_num_batched_tokens", 2048)),
        max_model_len=max_model_len,
        long_prefill_token_threshold=int(config.get("long_prefill_token_threshold", 0)),
        enable_chunked_prefill=bool(config.get("enable_chunked_prefill", True)),
        scheduler_reserve_full_isl=bool(config.get("scheduler_reserve_full_isl", True)),
        watermark=float(config.get("watermark", 0.0)),
        policy=config.get("scheduling_policy", "fcfs"),
        async_scheduling=False, is_encoder_decoder=False)
    cache_config = CacheConfig(block_size=block_size,
                               enable_prefix_caching=bool(config.get("enable_prefix_caching",
                                                                     True)))
    vllm_config = VllmConfig(scheduler_config=scheduler_config, model_config=model_config,
                             cache_config=cache_config,
                             speculative_config=_speculative(config, model_config))
    spec = FullAttentionSpec(block_size=block_size, num_kv_heads=1, head_size=1,
                             dtype=torch.float32)
    kv_cache_config = KVCacheConfig(num_blocks=num_blocks, kv_cache_tensors=[],
                                    kv_cache_groups=[KVCacheGroupSpec(["layer"], spec)])
    cache_config.num_gpu_blocks = num_blocks
    cls = scheduler_cls or Scheduler
    scheduler = cls(vllm_config=vllm_config, kv_cache_config=kv_cache_config,
                    structured_output_manager=StructuredOutputManager(vllm_config),
                    block_size=block_size, log_stats=True)
    _check_effective(scheduler, config)
    return scheduler


def _speculative(config: dict[str, Any], model_config: Any) -> Any:
    """vLLM's SpeculativeConfig from the engine config's speculative_config JSON, or None.
    ngram needs no draft; an EAGLE-family draft without a model is the target's tiny config
    (read, never run: the scheduler takes only num_lookahead_tokens from it)."""
    given = config.get("speculative_config")
    if not given:
        return None
    from vllm.config import ParallelConfig, SpeculativeConfig

    if given.get("method") in ("eagle", "eagle3") and not given.get("model"):
        given = {**given, "model": model_config.model}
    return SpeculativeConfig(**given, target_model_config=model_config,
                             target_parallel_config=ParallelConfig())


def _tiny_model_dir(max_model_len: int) -> str:
    """A local Llama-shaped config.json: ModelConfig needs one, the scheduler never runs it."""
    path = tempfile.mkdtemp(prefix="servescope-vllm-model-")
    with open(os.path.join(path, "config.json"), "w", encoding="utf-8") as handle:
        json.dump({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                   "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
                   "num_key_value_heads": 4, "num_hidden_layers": 1, "vocab_size": 32000,
                   "max_position_embeddings": max(max_model_len, 2048),
                   "torch_dtype": "float16"}, handle)
    return path


def _check_effective(scheduler: Any, config: dict[str, Any]) -> None:
    """vLLM's config hooks (platform, defaults) must not have changed what we asked for."""
    sc, cc = scheduler.scheduler_config, scheduler.cache_config
    seen = {"block_size": scheduler.block_size, "max_num_seqs": sc.max_num_seqs,
            "max_num_batched_tokens": sc.max_num_batched_tokens,
            "enable_chunked_prefill": sc.enable_chunked_prefill,
            "long_prefill_token_threshold": sc.long_prefill_token_threshold,
            "enable_prefix_caching": cc.enable_prefix_caching}
    for key, value in seen.items():
        if key in config and config[key] != value:
            raise RuntimeError(f"vLLM changed {key}: asked {config[key]}, got {value}")


class RequestFactory:
    """vLLM Requests whose token ids encode ServeScope's prefix model.

    Tokens of a shared prefix segment are (segment key, offset), every other token is
    (request id, position): two prompts share exactly the tokens ServeScope says they share.
    """

    def __init__(self, enable_prefix_caching: bool, block_size: int,
                 num_hash_lookahead_tokens: int = 0) -> None:
        from vllm.utils.hashing import sha256
        from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash

        self._streams: dict[str, int] = {}
        self.spec_accepted: dict[str, list[int]] = {}  # each row's, as its workload gives it
        self.num_verified: dict[str, int] = {}
        self.t_base = time.time()  # arrival_time: wall clock, strictly increasing in order
        self.block_hasher: Callable[..., Any] | None = None
        if enable_prefix_caching:
            init_none_hash(sha256)
            # as EngineCore builds it: EAGLE-family drafters with prefix caching hash each
            # block with the tokens after it (VllmConfig.num_hash_lookahead_tokens)
            self.block_hasher = get_request_block_hasher(block_size, sha256,
                                                         num_hash_lookahead_tokens)

    def stream(self, key: str) -> int:
        return self._streams.setdefault(key, len(self._streams) + 1) * TOKEN_STRIDE

    def prompt_tokens(self, row: dict[str, Any]) -> list[int]:
        tokens: list[int] = []
        for key, length in prefix_segments(row):
            base = self.stream("p:" + key)
            tokens.extend(base + i for i in range(min(length, row["prompt_len"] - len(tokens))))
        base = self.stream("u:" + row["id"])
        tokens.extend(base + i for i in range(len(tokens), row["prompt_len"]))
        return tokens

    def make(self, row: dict[str, Any], arrival_index: int) -> Any:
        from vllm.sampling_params import SamplingParams
        from vllm.v1.request import Request

        self.spec_accepted[row["id"]] = list(row.get("spec_accepted") or [])
        params = SamplingParams(max_tokens=row["output_len"], ignore_eos=True)
        return Request(request_id=row["id"], prompt_token_ids=self.prompt_tokens(row),
                       sampling_params=params, pooling_params=None,
                       arrival_time=self.t_base + arrival_index * 1e-6,
                       priority=row.get("priority", 0), block_hasher=self.block_hasher)

    def accepted(self, rid: str, num_drafts: int) -> int:
        """Drafts accepted at the request's next verify step: its spec_accepted entry (0
        past the end), at most num_drafts (issue #34's contract)."""
        index = self.num_verified.get(rid, 0)
        self.num_verified[rid] = index + 1
        wanted = self.spec_accepted.get(rid, [])
        return min(wanted[index] if index < len(wanted) else 0, num_drafts)

    def next_token(self, request: Any) -> int:
        """A token unique to (request, position): outputs never collide across requests."""
        return self.stream("u:" + request.request_id) + request.num_tokens


def prefix_segments(row: dict[str, Any]) -> list[tuple[str, int]]:
    """Shared-prefix segments of a workload row: `prefix` [[key, n], ...] or `shared_prefix`."""
    if row.get("prefix"):
        return [(str(k), int(n)) for k, n in row["prefix"]]
    shared = row.get("shared_prefix")
    return [(str(shared["id"]), int(shared["len"]))] if shared else []


class _Arrivals:
    """The requests not yet added, in arrival order (ties in list order). Before a step's
    schedule(), the recorder (if any) is told the step and the requests due by then join."""

    def __init__(self, scheduler: Any, requests: list[dict[str, Any]],
                 factory: RequestFactory) -> None:
        self.scheduler, self.factory = scheduler, factory
        self.recorder = getattr(scheduler, "servescope_recorder", None)
        self.pending = sorted(enumerate(requests),
                              key=lambda p: (p[1].get("arrival_step") or 0, p[0]))
        self.pending.reverse()  # the next to arrive is last
        self.num_arrived = 0

    def __bool__(self) -> bool:
        return bool(self.pending)

    def next_step(self) -> int:
        return self.pending[-1][1].get("arrival_step") or 0

    def admit(self, step: int) -> None:
        if self.recorder is not None:
            self.recorder.step = step
        while self.pending and self.next_step() <= step:
            request = self.factory.make(self.pending.pop()[1], self.num_arrived)
            self.scheduler.add_request(request)
            self.num_arrived += 1


def drive(scheduler: Any, requests: list[dict[str, Any]], factory: RequestFactory,
          observe: bool = True) -> Iterator[DriverStep]:
    """The step loop of ../shared/vllm-reference: arrivals join just before their step's
    schedule(); when nothing is runnable the step counter jumps to the next arrival."""
    from time import perf_counter

    from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT

    arrivals = _Arrivals(scheduler, requests, factory)
    step = 0
    while arrivals or scheduler.has_unfinished_requests():
        if not scheduler.has_unfinished_requests():
            step = max(step, arrivals.next_step())
        arrivals.admit(step)
        start = perf_counter()
        output = scheduler.schedule()
        scheduled_s = perf_counter() - start
        if not output.total_num_scheduled_tokens and not output.preempted_req_ids:
            scheduler.update_from_output(output, EMPTY_MODEL_RUNNER_OUTPUT)
            if not arrivals:
                raise RuntimeError("vLLM scheduled nothing and no arrivals are left")
            step = max(step + 1, arrivals.next_step())
            continue
        seen = _observe_schedule(scheduler) if observe else ({}, [], [])
        model_output = fake_output(scheduler, output, factory)
        start = perf_counter()
        engine_outputs = scheduler.update_from_output(output, model_output)
        seconds = scheduled_s + perf_counter() - start
        propose_drafts(scheduler, output, factory)
        finished = [o.request_id for outs in engine_outputs.values() for o in outs.outputs
                    if o.finish_reason is not None] if observe else []
        free = scheduler.kv_cache_manager.block_pool.get_num_free_blocks() if observe else 0
        yield DriverStep(step, output, *seen, finished, free, seconds)
        step += 1


def _observe_schedule(scheduler: Any) -> tuple[dict[str, list[int]], list[str], list[str]]:
    kv = scheduler.kv_cache_manager
    running = [r.request_id for r in scheduler.running]
    tables = {rid: list(kv.get_block_ids(rid)[0]) for rid in running}
    waiting = [r.request_id for q in (scheduler.kv_holding_waiting, scheduler.waiting) for r in q]
    return tables, running, waiting


def drive_pipelined(scheduler: Any, requests: list[dict[str, Any]],
                    factory: RequestFactory) -> Iterator[DriverStep]:
    """Async scheduling's order (an AsyncScheduler, as ../shared's async traces were driven):
    step N + 1 is scheduled before step N's update. Steps are yielded once updated."""
    from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT

    arrivals = _Arrivals(scheduler, requests, factory)
    step = 0
    inflight: tuple[int, Any, tuple[Any, ...], dict[str, bool]] | None = None
    while arrivals or scheduler.has_unfinished_requests() or inflight:
        if not scheduler.has_unfinished_requests() and not inflight:
            step = max(step, arrivals.next_step())
        arrivals.admit(step)
        output = scheduler.schedule()
        seen = _observe_schedule(scheduler)
        samples = {i: not scheduler.requests[i].is_prefill_chunk
                   for i in output.num_scheduled_tokens}
        updated = inflight is not None
        if inflight is not None:
            yield _update_inflight(scheduler, factory, *inflight)
            inflight = None
        if output.total_num_scheduled_tokens or output.preempted_req_ids:
            inflight = (step, output, seen, samples)
            step += 1
            continue
        scheduler.update_from_output(output, EMPTY_MODEL_RUNNER_OUTPUT)
        if updated:  # an empty plan while a step ran: that step's update may free what it needs
            step += 1
        elif arrivals:
            step = max(step + 1, arrivals.next_step())
        elif scheduler.has_unfinished_requests():
            raise RuntimeError("vLLM scheduled nothing and no arrivals are left")


def _update_inflight(scheduler: Any, factory: RequestFactory, step: int, output: Any,
                     seen: tuple[Any, ...], samples: dict[str, bool]) -> DriverStep:
    engine_outputs = scheduler.update_from_output(
        output, fake_output(scheduler, output, factory, samples))
    finished = [o.request_id for outs in engine_outputs.values() for o in outs.outputs
                if o.finish_reason is not None]
    free = scheduler.kv_cache_manager.block_pool.get_num_free_blocks()
    return DriverStep(step, output, *seen, finished, free, 0.0)
