"""Checks of why a caption says a request waits: the cause must be the one the policy acted on
at that step (a claim of missing KV blocks comes with a step where the blocks did not fit)."""

from __future__ import annotations

import re

from support.caption_claims import Ctx, N, claim, fits_padded, num, reservation

HEAD = r"(?P<head>\S+) "
WHAT = rf"(whole prompt|whole sequence \(prompt and {N} output tokens?\)|first chunk)"


def head_of_queue(ctx: Ctx, m: re.Match[str], *policies: str) -> None:
    ctx.check(ctx.policy in policies, f"{ctx.policy} does not act so: {m[0]!r}")
    ctx.check(ctx.rec["waiting"][:1] == [m["head"]], f"not the head of the queue: {m[0]!r}")


def kv_phase(ctx: Ctx) -> str:
    """When the queue was tried: V0 before the step's decodes when it admitted nothing."""
    rec = ctx.rec
    quiet = not rec["new"] and not rec["resumed"]
    return "pre" if ctx.policy == "vllm-v0" and quiet else "mid"


@claim(HEAD + "waits: naive serving runs one request at a time, and this step is (?P<busy>\\S+)'s")
def naive(ctx: Ctx, m: re.Match[str]) -> None:
    head_of_queue(ctx, m, "naive")
    ctx.check(ctx.rec["running"] == [m["busy"]], m[0])


def batch_size(ctx: Ctx) -> int:
    return min(ctx.config.static_batch_size, ctx.config.max_num_seqs)


@claim(HEAD + r"waits for the next batch: this one is full \((?P<k>\d+) requests\)")
def static_full(ctx: Ctx, m: re.Match[str]) -> None:
    head_of_queue(ctx, m, "static")
    ctx.check(len(ctx.rec["new"]) == num(m["k"]) == batch_size(ctx), m[0])


@claim(HEAD + r"waits for the next batch: the KV cache holds only (?P<k>\d+) of this batch's "
       rf"padded reservations \(longest prompt \+ longest output, (?P<p>{N}) tokens each\)")
def static_kv(ctx: Ctx, m: re.Match[str]) -> None:
    head_of_queue(ctx, m, "static")
    new, specs = ctx.rec["new"], ctx.fold.specs
    ctx.check(len(new) == num(m["k"]) < batch_size(ctx), m[0])
    padded = max(specs[r].prompt_len for r in new) + max(specs[r].output_len for r in new)
    ctx.check(num(m["p"]) == padded, m[0])
    with_head = [*new, m["head"]]
    shape = (max(specs[r].prompt_len for r in with_head)
             + max(specs[r].output_len for r in with_head))
    ctx.check(fits_padded(ctx, shape) < len(with_head), f"the head's batch fits: {m[0]!r}")


@claim(HEAD + rf"waits for the next batch: static batching lets no one join until all (?P<n>{N}) "
       r"requests? of this batch are done( \((?P<done>\d+) of them (has|have) finished and holds? "
       r"(its|their) blocks idle\))?")
def static_running(ctx: Ctx, m: re.Match[str]) -> None:
    head_of_queue(ctx, m, "static")
    rec = ctx.rec
    ctx.check(not rec["new"] and len(rec["running"]) == num(m["n"]) > 0, m[0])
    done = sum(ctx.fold.finish_step.get(r, rec["step"]) < rec["step"] for r in rec["running"])
    ctx.check(num(m["done"]) == done, f"{done} finished: {m[0]!r}")


@claim(HEAD + r"waits for a batch to form: (?P<k>\d+) of (?P<s>\d+) requests are here"
       r"(, and the (?P<w>[\d.]+) s window has not closed)?")
def static_forming(ctx: Ctx, m: re.Match[str]) -> None:
    head_of_queue(ctx, m, "static")
    rec = ctx.rec
    ctx.check(not rec["new"] and not rec["running"], m[0])
    ctx.check(len(rec["waiting"]) == num(m["k"]) < num(m["s"]) == batch_size(ctx), m[0])


@claim(HEAD + r"waits: max_num_seqs \((?P<k>\d+)\) requests are already running")
def max_num_seqs(ctx: Ctx, m: re.Match[str]) -> None:
    head_of_queue(ctx, m, "vllm-v1", "vllm-v0")
    ctx.check(len(ctx.rec["running"]) >= num(m["k"]) == ctx.rec["max_num_seqs"], m[0])


@claim(HEAD + "waits: the token budget is spent")
def budget_head(ctx: Ctx, m: re.Match[str]) -> None:
    head_of_queue(ctx, m, "vllm-v1", "vllm-v0")
    ctx.check(ctx.used >= ctx.config.max_num_batched_tokens, m[0])


@claim(rf"the (?P<b>{N})-token budget is spent, so (?P<k>{N}) running requests? waits? for the "
       "next step")
def budget_running(ctx: Ctx, m: re.Match[str]) -> None:
    rec = ctx.rec
    ctx.check(ctx.policy == "vllm-v1" and ctx.used >= num(m["b"]) == rec["token_budget"], m[0])
    scheduled = {e["id"] for e in rec["scheduled"]}
    stalled = [r for r in rec["running"] if r not in scheduled and r not in rec["finished"]]
    ctx.check(len(stalled) == num(m["k"]), m[0])


@claim(HEAD + "waits: no request is admitted in a step that preempts")
def preempting(ctx: Ctx, m: re.Match[str]) -> None:
    head_of_queue(ctx, m, "vllm-v1")
    ctx.check(bool(ctx.rec["preempted"]), m[0])


@claim(HEAD + rf"waits: its (?P<t>{N})-token prompt does not fit the (?P<left>{N}) tokens left of "
       "the budget, and (chunked prefill is off|V0 prefills whole prompts)", "any")
def budget_unchunked(ctx: Ctx, m: re.Match[str]) -> None:
    if ctx.phase != "mid":
        return
    head_of_queue(ctx, m, "vllm-v1", "vllm-v0")
    ctx.check(num(m["t"]) == ctx.fold.tokens[m["head"]], m[0])
    budget = ctx.config.max_num_batched_tokens
    ctx.check(num(m["left"]) == budget - ctx.used, m[0])
    bs = ctx.config.block_size
    max_hit = (num(m["t"]) - 1) // bs * bs if ctx.config.enable_prefix_caching else 0
    ctx.check(num(m["t"]) - max_hit > num(m["left"]), m[0])


@claim(HEAD + rf"waits: its prompt does not fit the (?P<left>{N}) tokens left of the budget "
       r"\((chunked prefill is off|V0 prefills whole prompts)\) or the free KV blocks")
def budget_or_kv(ctx: Ctx, m: re.Match[str]) -> None:
    head_of_queue(ctx, m, "vllm-v1", "vllm-v0")
    ctx.check(num(m["left"]) == ctx.config.max_num_batched_tokens - ctx.used, m[0])


@claim(HEAD + rf"waits at the head of the queue: (not enough free KV blocks for its {WHAT}|its "
       rf"{WHAT}, (?P<t>{N}) tokens, needs (?P<need>{N}) KV blocks?( \(less any of its prefix "
       rf"cached in blocks running requests hold\))? and only (?P<free>{N}) (is|are) free"
       rf"(, (?P<wm>{N}) blocks? of them kept back as the watermark)?)", "any")
def kv_blocks(ctx: Ctx, m: re.Match[str]) -> None:
    """The prompt's blocks did not fit that step: free blocks against the blocks its whole
    sequence needs, less what of its prefix-cache hit running requests hold."""
    if ctx.phase != kv_phase(ctx):
        return
    head_of_queue(ctx, m, "vllm-v1", "vllm-v0")
    rec, fold, c = ctx.rec, ctx.fold, ctx.config
    head, free = m["head"], fold.num_free
    total = fold.tokens[head]
    need = -(-total // c.block_size)
    kept = (int(c.watermark * fold.num_usable)
            if ctx.policy == "vllm-v1" and rec["running"] else 0)
    least = need - fold.hits_in_use_bound(head, rec["running"])
    ctx.check(least + kept > free, f"{head} needs {least}+{kept} of {free} free: it fits")
    outputs = re.search(rf"prompt and ({N}) output", m[0])
    ctx.check(num(outputs and outputs[1]) == total - fold.specs[head].prompt_len, m[0])
    if m["t"]:
        ctx.check((num(m["t"]), num(m["need"]), num(m["free"]), num(m["wm"]))
                  == (total, need, free, kept), f"{(total, need, free, kept)}: {m[0]!r}")


@claim(HEAD + rf"waits at the head of the queue: no free contiguous run of (?P<n>{N}) KV blocks? "
       rf"for its (?P<t>{N})-token reservation( \((?P<free>{N}) (blocks are free, in smaller "
       r"pieces|is free|are free)\))?", "any")
def contiguous(ctx: Ctx, m: re.Match[str]) -> None:
    if ctx.phase != kv_phase(ctx):
        return
    head_of_queue(ctx, m, "vllm-v1", "vllm-v0")
    ctx.check(ctx.config.allocator != "paged", m[0])
    tokens, blocks = reservation(ctx, m["head"])
    ctx.check((num(m["t"]), num(m["n"])) == (tokens, blocks), f"{tokens}/{blocks}: {m[0]!r}")
    ctx.check(not ctx.fold.aligned_free_run(blocks), f"a free run of {blocks} exists: {m[0]!r}")
    ctx.check(not m["free"] or num(m["free"]) == ctx.fold.num_free, m[0])
