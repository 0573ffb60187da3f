"""Precise prefix-cache-aware routing: where each block is cached, from the replicas' own KV
events (BlockStored / BlockRemoved, core/routers/prefix_index.py EventIndex), as llm-d's
precise-prefix-cache-scorer and Dynamo's KV router follow vLLM's ZMQ KV-event stream; each
event reaches the index `kv_event_delay_ms` after its replica emitted it.

The profile is llm-d-inference-scheduler's sample for it (commit 520af478,
deploy/config/epp-precise-prefix-cache-config.yaml): precise-prefix-cache-scorer 2.0 +
kv-cache-utilization-scorer 1.0 + queue-scorer 1.0, max-score picker. Settings as the llm-d
router's (core/routers/llm_d.py).
"""

from __future__ import annotations

from servescope.core.routers.llm_d import LlmDRouter, Profile


class PrefixPreciseRouter(LlmDRouter):
    name = "prefix-precise"
    default_profile: Profile = (("precise-prefix-cache-scorer", 2.0),
                                ("kv-cache-utilization-scorer", 1.0), ("queue-scorer", 1.0))
