// Hand-made step records in StepRecord.to_dict() shape, with small explicit defaults.

export function rec(fields = {}) {
  return {
    step: 0, iter: 0, time_s: 0, step_time_ms: 10,
    arrivals: [], scheduled: [], new: [], resumed: [], preempted: [], finished: [],
    rejected: [], new_blocks: {}, freed_blocks: [], kv_events: [], num_cached_tokens: {},
    running: [], waiting: [], num_free_blocks: 15, num_usable_blocks: 15, kv_usage: 0,
    token_budget: 16, max_num_seqs: 4, kv_waste: {},
    ...fields,
  };
}

export function entry(id, n, start, kind = n > 1 ? "prefill" : "decode", sampled = true) {
  return { id, n, start, kind, sampled };
}

/** 16 blocks of 4 tokens, requests a (10 prompt, 3 out) and b (6 prompt, 2 out). */
export function init(fields = {}) {
  return {
    num_gpu_blocks: 16, block_size: 4,
    requests: [
      { id: "a", prompt_len: 10, output_len: 3, arrival_s: 0 },
      { id: "b", prompt_len: 6, output_len: 2, arrival_s: 0 },
    ],
    ...fields,
  };
}
