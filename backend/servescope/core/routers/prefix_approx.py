"""Approximate prefix-cache-aware routing: the router's own index of the block hashes it sent to
each replica (an LRU per replica, core/routers/prefix_index.py ApproxIndex), scored with load.

The profile is llm-d-inference-scheduler's sample for the estimate mode (commit 520af478,
deploy/config/epp-estimate-prefix-cache-config.yaml): prefix-cache-scorer 1.0 +
load-aware-scorer 1.0, max-score picker. Settings as the llm-d router's (core/routers/llm_d.py).
"""

from __future__ import annotations

from servescope.core.routers.llm_d import LlmDRouter, Profile


class PrefixApproxRouter(LlmDRouter):
    name = "prefix-approx"
    default_profile: Profile = (("prefix-cache-scorer", 1.0), ("load-aware-scorer", 1.0))
