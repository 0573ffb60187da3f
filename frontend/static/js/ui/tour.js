// The guided tour: lesson playback from the start of the run that stops at the first
// occurrence of each concept, says in words what just happened to which request, and links
// the concept's explainer (/explain).

const promptOf = (run, id) => run.reqs[run.index.get(id)]?.spec?.prompt_len;

const partial = (run, rec) => rec.scheduled.find((e) => e.kind === "prefill"
  && (promptOf(run, e.id) ?? Infinity) > e.start + e.n);

// kind -> (record, run) -> {text, anchor}
export const TOUR_STOPS = {
  chunked_prefill: (rec, run) => {
    const e = partial(run, rec);
    return { anchor: "chunked-prefill", text: `Notice: ${e?.id}'s ${promptOf(run, e?.id)}-token prompt gets ` +
      `${e?.n} tokens this step. Chunked prefill splits it over several steps, so the other requests' decodes go on.` };
  },
  prefix_cache_hit: (rec) => {
    const [id, n] = Object.entries(rec.num_cached_tokens).find(([, v]) => v > 0) ?? ["?", 0];
    return { anchor: "prefix-caching", text: `Notice: ${id} starts with ${n} tokens already in the pool: ` +
      "its first blocks hash the same as cached ones, so prefix caching reuses them instead of computing them again." };
  },
  finished: (rec) => ({ anchor: "block-pool", text: `Notice: ${rec.finished[0]} finishes and gives its ` +
    `${rec.freed_blocks.length} blocks back to the pool's free queue, where the next request takes them.` }),
  budget_blocked: (rec) => ({ anchor: "token-budget", text: `Notice: the ${rec.token_budget}-token budget is ` +
    `spent on the running requests, so ${rec.waiting[0]} waits this step even if blocks are free.` }),
  preemption: (rec) => ({ anchor: "preemption", text: `Notice: ${rec.preempted[0]} is preempted: the pool has ` +
    "no free block for the running batch, so it gives all its blocks back and will be recomputed later." }),
};

export const TOUR_START = { anchor: "paged-attention", text: "Tour: each request's KV cache lives in " +
  "blocks of the pool (left), found through its block table. The tour plays step by step and stops " +
  "at the first chunked prefill, prefix-cache hit, finished request, full budget and preemption. " +
  "Press L (Shift+L) or Space to go on." };
