"""The fake model outputs the capture driver hands vLLM's scheduler: sampled tokens (with the
drafts a workload row accepts) and, for the sync engine loop, the drafter's proposals."""

from __future__ import annotations

from typing import Any


def fake_output(scheduler: Any, output: Any, factory: Any,
                samples: dict[str, bool] | None = None) -> Any:
    """One sampled token per request whose prefill completes (or is decoding) this step, plus
    the drafts its workload row accepts at this verify step (factory.accepted); `samples` is
    which ones, when the step was scheduled earlier (async order)."""
    from vllm.v1.outputs import ModelRunnerOutput

    ids = list(output.num_scheduled_tokens)
    requests = scheduler.requests
    if samples is None:
        samples = {i: not requests[i].is_prefill_chunk for i in ids}
    padded = {r.req_id for r in output.scheduled_new_reqs}
    padded |= set(output.scheduled_cached_reqs.resumed_req_ids)
    sampled = []
    for i in ids:
        request = requests.get(i)
        if not samples[i] or request is None or request.is_finished():
            sampled.append([])  # vLLM skips a request that finished meanwhile
            continue
        drafts = len(output.scheduled_spec_decode_tokens.get(i, ()))
        accepted = factory.accepted(i, drafts) if drafts and i not in padded else 0
        first = factory.next_token(request)
        sampled.append([first + j for j in range(accepted + 1)])
    return ModelRunnerOutput(req_ids=ids, req_id_to_index={i: k for k, i in enumerate(ids)},
                             sampled_token_ids=sampled)


def propose_drafts(scheduler: Any, output: Any, factory: Any) -> None:
    """What EngineCore.post_step hands the sync scheduler after a step: drafts (K, or the
    dynamic schedule's num_spec_tokens_to_schedule) for every request the step ran."""
    from vllm.v1.outputs import DraftTokenIds

    k = output.num_spec_tokens_to_schedule
    if not scheduler.num_spec_tokens or not k:
        return
    ids = [i for i in output.num_scheduled_tokens if i in scheduler.requests]
    drafts = [[factory.next_token(scheduler.requests[i]) + j for j in range(k)] for i in ids]
    scheduler.update_draft_token_ids(DraftTokenIds(ids, drafts))
