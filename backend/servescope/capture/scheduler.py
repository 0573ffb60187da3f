"""Recording a live vLLM: scheduler classes for `vllm serve --scheduler-cls` that write
ServeScope step recordings (the JSONL `servescope sim --out` writes) to $SERVESCOPE_CAPTURE_PATH.

    vllm serve MODEL --scheduler-cls servescope.capture.RecordingScheduler
    vllm serve MODEL --scheduler-cls servescope.capture.RecordingAsyncScheduler  (async)

vLLM is imported only when one of the classes is first looked up, so importing this module
costs nothing without vLLM. See docs/capture.md.
"""

from __future__ import annotations

import atexit
import os
import time
from typing import Any

from servescope.capture.record import StepRecorder

PATH_ENV = "SERVESCOPE_CAPTURE_PATH"
CLASS_NAMES = ("RecordingScheduler", "RecordingAsyncScheduler")
_classes: dict[str, type] = {}


def capture_path() -> str:
    """$SERVESCOPE_CAPTURE_PATH ({pid} is replaced), else servescope-capture-PID.jsonl."""
    template = os.environ.get(PATH_ENV) or "servescope-capture-{pid}.jsonl"
    return template.replace("{pid}", str(os.getpid()))


def engine_config(scheduler: Any) -> dict[str, Any]:
    """The running vLLM's scheduling settings under ServeScope's EngineConfig names."""
    sc, cc = scheduler.scheduler_config, scheduler.cache_config
    return {
        "block_size": scheduler.block_size,
        "num_gpu_blocks": scheduler.kv_cache_config.num_blocks,
        "max_num_seqs": scheduler.max_num_running_reqs,
        "max_num_batched_tokens": scheduler.max_num_scheduled_tokens,
        "enable_chunked_prefill": bool(sc.enable_chunked_prefill),
        "long_prefill_token_threshold": int(sc.long_prefill_token_threshold),
        "enable_prefix_caching": bool(cc.enable_prefix_caching),
        "max_model_len": int(scheduler.max_model_len),
        "scheduler_reserve_full_isl": bool(sc.scheduler_reserve_full_isl),
        "watermark": float(sc.watermark),
        "scheduling_policy": scheduler.policy.value,
        "async_scheduling": bool(getattr(scheduler, "_async_scheduling", False)),
        **_speculative_config(scheduler),
    }


def _speculative_config(scheduler: Any) -> dict[str, Any]:
    """vLLM's speculative config as --speculative-config JSON ({} without one)."""
    spec = scheduler.vllm_config.speculative_config
    if spec is None:
        return {}
    given = {"method": spec.method, "num_speculative_tokens": spec.num_speculative_tokens}
    if spec.method == "ngram":
        given.update(prompt_lookup_max=spec.prompt_lookup_max,
                     prompt_lookup_min=spec.prompt_lookup_min)
    if spec.num_speculative_tokens_per_batch_size:
        given["num_speculative_tokens_per_batch_size"] = [
            list(entry) for entry in spec.num_speculative_tokens_per_batch_size]
    return {"speculative_config": given}


def _recording_mixin() -> type:
    class Recording:
        """Wraps schedule()/update_from_output(); reads vLLM's state, changes nothing."""

        _async_scheduling = False

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)  # type: ignore[call-arg]
            import vllm

            info = {"vllm_version": vllm.__version__, "scheduler_cls": type(self).__name__,
                    "async_scheduling": self._async_scheduling,
                    "model_runner": "v2" if getattr(self, "use_v2_model_runner", False)
                    else "v1"}
            lookahead = getattr(self, "num_hash_lookahead_tokens", 0)
            if lookahead:  # each block hash covers the tokens after it (docs/capture.md)
                info["num_hash_lookahead_tokens"] = lookahead
            self.servescope_recorder = StepRecorder(capture_path(), engine_config(self), info)
            _hook_block_pool(self.kv_cache_manager.block_pool, self.servescope_recorder)
            atexit.register(self.servescope_recorder.close)

        def add_request(self, request: Any) -> None:
            super().add_request(request)  # type: ignore[misc]
            self.servescope_recorder.on_add(request)

        def schedule(self, *args: Any, **kwargs: Any) -> Any:
            started = time.time()
            output = super().schedule(*args, **kwargs)  # type: ignore[misc]
            self.servescope_recorder.on_schedule(self, output, started)
            return output

        def _preempt_request(self, request: Any, *args: Any, **kwargs: Any) -> None:
            self.servescope_recorder.preempted.append(request.request_id)
            super()._preempt_request(request, *args, **kwargs)  # type: ignore[misc]

        def update_from_output(self, scheduler_output: Any, model_runner_output: Any) -> Any:
            accepted = _accepted(self, scheduler_output, model_runner_output)
            outputs = super().update_from_output(  # type: ignore[misc]
                scheduler_output, model_runner_output)
            self.servescope_recorder.on_update(self, scheduler_output, outputs, accepted)
            return outputs

        def finish_requests(self, request_ids: Any, finished_status: Any) -> Any:
            aborted = super().finish_requests(request_ids, finished_status)  # type: ignore[misc]
            if aborted:
                self.servescope_recorder.on_aborted(self, aborted)
            return aborted

        def shutdown(self) -> None:
            self.servescope_recorder.close()
            super().shutdown()  # type: ignore[misc]

    return Recording


def _accepted(scheduler: Any, output: Any, model_output: Any) -> dict[str, int]:
    """Drafts each scheduled request's verify accepts (update_from_output: sampled tokens
    minus the one it always samples); requests it skips (finished meanwhile) are left out."""
    if not scheduler.num_spec_tokens:
        return {}
    accepted: dict[str, int] = {}
    index = getattr(model_output, "req_id_to_index", None) or {}
    tokens = getattr(model_output, "sampled_token_ids", None) or []
    for rid in output.num_scheduled_tokens:
        request = scheduler.requests.get(rid)
        if request is None or request.is_finished() or rid not in index:
            continue
        sampled = tokens[index[rid]] if tokens else []
        drafts = output.scheduled_spec_decode_tokens.get(rid)
        accepted[rid] = max(len(sampled) - 1, 0) if drafts and sampled else 0
    return accepted


def _hook_block_pool(pool: Any, recorder: StepRecorder) -> None:
    """Per-instance wrappers on this scheduler's own block pool: frees, stores, evictions."""
    free_blocks, cache_full_blocks = pool.free_blocks, pool.cache_full_blocks
    evict = pool._maybe_evict_cached_block  # vLLM's own BlockPool method, patched to record

    def free_hook(ordered_blocks: Any) -> None:
        blocks = list(ordered_blocks)
        free_blocks(blocks)
        recorder.on_free(blocks)

    def cache_hook(request: Any, blocks: Any, num_cached_blocks: int, num_full_blocks: int,
                   *args: Any, **kwargs: Any) -> None:
        cache_full_blocks(request, blocks, num_cached_blocks, num_full_blocks, *args, **kwargs)
        if num_full_blocks > num_cached_blocks:
            recorder.on_stored(request, blocks[num_cached_blocks:num_full_blocks])

    def evict_hook(block: Any) -> bool:
        evicted = bool(evict(block))
        if evicted:
            recorder.on_evicted(block)
        return evicted

    pool.free_blocks = free_hook
    if pool.enable_caching:
        pool.cache_full_blocks = cache_hook
        pool._maybe_evict_cached_block = evict_hook


def __getattr__(name: str) -> type:
    if name not in CLASS_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if not _classes:
        from vllm.v1.core.sched.async_scheduler import AsyncScheduler
        from vllm.v1.core.sched.scheduler import Scheduler

        mixin = _recording_mixin()
        _classes["RecordingScheduler"] = type("RecordingScheduler", (mixin, Scheduler), {})
        _classes["RecordingAsyncScheduler"] = type(
            "RecordingAsyncScheduler", (mixin, AsyncScheduler), {"_async_scheduling": True})
        for cls in _classes.values():
            cls.__module__ = "servescope.capture"
    return _classes[name]
