"""Speculative decoding in vLLM 0.33's V1 scheduler: how many drafts a request holds and is
scheduled, the slots they take, and the verify update that keeps a prefix of them.

A decode with d drafts is scheduled n = 1 + d tokens; its verify samples min(a, d) + 1 and
rolls num_computed_tokens back by the d - min(a, d) rejected ones:

    known tokens | last | d1 d2 d3 |      scheduled: 1 + 3
    accepted a = 1:      | d1 |x  x |      computed -= 2, two tokens sampled
"""

from __future__ import annotations

from typing import Any, Protocol

from servescope.core.request import Request
from servescope.core.speculative import SpeculativeConfig

# vllm/config/speculative.py SpeculativeConfig.use_eagle(): drafters reading the target's
# hidden states
EAGLE_METHODS = ("eagle", "eagle3", "mtp", "dflash", "dspark")
# vllm/config/speculative.py SpeculativeConfig.needs_eagle_block_drop(): EAGLE-family drafters
# whose KV at a position reads the next token (dflash and dspark read the hidden state only)
NEXT_TOKEN_METHODS = ("eagle", "eagle3", "mtp")


class Acceptance(Protocol):
    """The engine's acceptance model (core/acceptance.py): drafts accepted at a verify step."""

    def accepted(self, request_id: str, verify_index: int, num_drafts: int) -> int: ...


def num_lookahead_tokens(spec: SpeculativeConfig) -> int:
    """KV slots reserved past the scheduled tokens (vllm/config/vllm.py
    VllmConfig.num_lookahead_tokens): K + 1 for dflash, K for the other EAGLE-family methods
    and draft models, 0 for ngram and suffix (no drafter KV)."""
    k = spec.num_speculative_tokens
    if spec.method == "dflash":
        return k + 1
    if spec.method in EAGLE_METHODS or spec.method == "draft_model":
        return k
    return 0


def num_prefill_lookahead_tokens(spec: SpeculativeConfig) -> int:
    """Prefill tokens past a chunk that the drafter reads (vllm/config/vllm.py
    VllmConfig.num_prefill_lookahead_tokens): 0 without an EAGLE-family drafter, K for a
    multi-module MTP (SpeculativeConfig.use_multi_module_mtp: min(num_nextn_predict_layers,
    K) > 1), else 1 (the next token)."""
    k = spec.num_speculative_tokens
    if spec.method not in EAGLE_METHODS:
        return 0
    if spec.method == "mtp" and min(spec.num_nextn_predict_layers, k) > 1:
        return k
    return 1


def reserve_prefill_lookahead(num_prefill_lookahead: int, num_tokens: int, num_computed: int,
                              num_new_tokens: int) -> int:
    """A prefill chunk never ends within num_prefill_lookahead tokens of the prefill's end
    (vllm/v1/core/sched/scheduler.py Scheduler._reserve_prefill_lookahead: a multi-module MTP
    drafter reads that many known tokens past a chunk): it ends there, or that many before.
    A no-op for lookahead 1 (EAGLE)."""
    remaining = num_tokens - num_computed - num_new_tokens
    if 0 < remaining < num_prefill_lookahead:
        num_new_tokens -= num_prefill_lookahead - remaining
    return max(num_new_tokens, 0)


def num_hash_lookahead_tokens(spec: SpeculativeConfig | None, enable_prefix_caching: bool
                              ) -> int:
    """Tokens after each block that its prefix-cache hash covers (vllm/config/vllm.py
    VllmConfig.num_hash_lookahead_tokens): with prefix caching and a drafter whose KV at a
    position is built from the next token (SpeculativeConfig.needs_eagle_block_drop: EAGLE,
    EAGLE-3, MTP), num_prefill_lookahead_tokens; else 0, the plain hashes."""
    if spec is None or not enable_prefix_caching or spec.method not in NEXT_TOKEN_METHODS:
        return 0
    return num_prefill_lookahead_tokens(spec)


def draft_slots(spec: SpeculativeConfig) -> int:
    """Input rows a drafter adds per scheduled request (vllm/config/speculative.py
    SpeculativeConfig.max_num_new_slots_for_drafting, without parallel drafting): 1 for a
    draft model, else 0."""
    return 1 if spec.method == "draft_model" else 0


def drafts_per_step(spec: SpeculativeConfig, num_scheduled: int, max_num_seqs: int) -> int:
    """K for the drafts proposed after a step of `num_scheduled` requests: the dynamic
    schedule when set (vllm/v1/core/sched/scheduler.py Scheduler.schedule,
    num_spec_tokens_to_schedule, from vllm/v1/spec_decode/dynamic/utils.py
    build_dynamic_sd_schedule_lookup: gaps and the tail carry the previous range's K, each
    capped at num_speculative_tokens), else num_speculative_tokens."""
    k = spec.num_speculative_tokens
    table = spec.num_speculative_tokens_per_batch_size
    if not table or num_scheduled == 0:
        return k
    size = min(num_scheduled, max_num_seqs)
    chosen = None
    for start, end, value in table:
        if start > size:
            break
        chosen = value  # size is in this range, or in the gap / tail after it
        if size <= end:
            break
    return min(k, chosen if chosen is not None else 0)


def pads_admission(spec: SpeculativeConfig) -> bool:
    """Whether a one-token admission is padded with K placeholder drafts (Scheduler.schedule:
    only with a fixed K, not the dynamic schedule)."""
    return not spec.num_speculative_tokens_per_batch_size


def take_accepted(request: Request, num_drafts: int, acceptance: Any) -> int:
    """Drafts accepted at the request's next verify step (issue #34): its spec_accepted
    entry, else the engine's acceptance model, else 0; never more than were drafted."""
    index = request.num_verify_steps
    request.num_verify_steps = index + 1
    if request.spec_accepted is not None:
        wanted = request.spec_accepted[index] if index < len(request.spec_accepted) else 0
    elif acceptance is not None:
        wanted = acceptance.accepted(request.id, index, num_drafts)
    else:
        wanted = 0
    return max(0, min(wanted, num_drafts))


def verify(request: Request, drafts: int, padded: bool, acceptance: Any, iteration: int,
           stale: bool = False) -> tuple[int, int]:
    """A sampled step's tokens for `request`: (drafts accepted, tokens kept).

    vllm/v1/core/sched/scheduler.py Scheduler.update_from_output: the rejected drafts roll
    num_computed_tokens (and, async, num_output_placeholders) back; _update_request_with_output
    appends accepted + 1 tokens, stops at max_tokens and takes the cut ones off
    num_computed_tokens too, then resolves all accepted + 1 placeholders. Padding drafts are
    never accepted and use no spec_accepted entry. Stale output (the request was preempted
    while the step ran, async) still appends its tokens but changes no counter.
    """
    accepted = 0
    if drafts and not padded:
        accepted = take_accepted(request, drafts, acceptance)
    rejected, tokens = drafts - accepted, accepted + 1
    kept = min(tokens, request.output_len - request.num_output_tokens)
    for _ in range(kept):
        request.add_token(iteration)
    if not stale:
        if request.num_computed_tokens > 0:
            request.num_computed_tokens -= rejected + tokens - kept
        if request.num_output_placeholders > 0:
            request.num_output_placeholders -= rejected + tokens
    return accepted, kept
