"""The scheduler a config asks for, over the KV cache manager its allocator and run need."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

from servescope.core.config import EngineConfig
from servescope.core.kv_cache_manager import KVCacheManager, PagedKVCacheManager
from servescope.core.kv_contiguous import ContiguousKVCacheManager
from servescope.core.kv_counting import CountingKVCacheManager
from servescope.core.request import RequestSpec
from servescope.core.scheduler import spec_decode
from servescope.core.scheduler.base import Scheduler
from servescope.core.scheduler.naive import NaiveScheduler
from servescope.core.scheduler.static import StaticScheduler
from servescope.core.scheduler.vllm_v0 import VllmV0Scheduler
from servescope.core.scheduler.vllm_v1 import VllmV1Scheduler
from servescope.core.scheduler.vllm_v1_async import VllmV1AsyncScheduler

# config.POLICIES' names -> their schedulers (async scheduling is vllm-v1's: VllmV1AsyncScheduler)
SCHEDULERS: dict[str, type[Scheduler]] = {
    "vllm-v1": VllmV1Scheduler,
    "vllm-v0": VllmV0Scheduler,
    "static": StaticScheduler,
    "naive": NaiveScheduler,
}


class Workload(list[RequestSpec]):
    """A workload's requests and what make_scheduler asks of them, each answered once (a
    fleet gives every replica's engine the whole workload: core/fleet.py)."""

    @cached_property
    def unique_ids(self) -> bool:
        return len({spec.id for spec in self}) == len(self)

    @cached_property
    def has_prefix(self) -> bool:
        return any(spec.prefix for spec in self)


def make_scheduler(config: EngineConfig, requests: Sequence[RequestSpec],
                   records: bool = True) -> Scheduler:
    """The policy's scheduler over its KV cache manager; `records=False` (nobody reads block
    ids) keeps vLLM V1's paged cache as counts where they decide the same (core/kv_counting)."""
    kv: KVCacheManager
    blocks, size = config.num_gpu_blocks or 0, config.block_size
    caching = config.enable_prefix_caching
    spec = config.speculative
    lookahead = (spec_decode.num_hash_lookahead_tokens(spec, caching),
                 0 if spec is None else spec_decode.num_prefill_lookahead_tokens(spec))
    workload = requests if isinstance(requests, Workload) else Workload(requests)
    unique = workload.unique_ids
    if config.allocator != "paged":
        kv = ContiguousKVCacheManager(blocks, size, config.allocator, config.max_model_len)
    elif (not records and unique and not config.async_scheduling
          and config.policy == VllmV1Scheduler.policy_name
          and not (caching and workload.has_prefix)):
        kv = CountingKVCacheManager(blocks, size, caching, config.watermark, *lookahead)
    else:
        kv = PagedKVCacheManager(blocks, size, caching, config.watermark, *lookahead)
    if isinstance(kv, PagedKVCacheManager):  # (a later request with an earlier one's id
        kv.unique_ids = unique  # looks up that one's own blocks: then they are kept as they come)
        if config.max_model_len is not None:
            kv.max_slot_tokens = min(kv.max_slot_tokens, config.max_model_len)
    if config.async_scheduling:
        return VllmV1AsyncScheduler(config, kv)
    return SCHEDULERS[config.policy](config, kv)
