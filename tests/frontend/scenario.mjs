// A five-step hand-made run (16 blocks of 4 tokens): a prefills in two chunks, b joins and
// hits a's first cached block, a finishes, b is preempted.

import { entry, init, rec } from "./helpers.mjs";

export const INIT = init({
  requests: [
    { id: "a", prompt_len: 10, output_len: 3, arrival_s: 0 },
    { id: "b", prompt_len: 6, output_len: 4, arrival_s: 0 },
  ],
});

export const RECORDS = [
  rec({
    step: 0, iter: 0, time_s: 0, step_time_ms: 10, arrivals: ["a", "b"], new: ["a"],
    scheduled: [entry("a", 8, 0, "prefill", false)], new_blocks: { a: [1, 2] },
    kv_events: [{ type: "BlockStored", block_ids: [1, 2], req: "a" }],
    num_cached_tokens: { a: 0 }, running: ["a"], waiting: ["b"], token_budget: 8,
  }),
  rec({
    step: 1, iter: 1, time_s: 0.01, step_time_ms: 10, new: ["b"],
    scheduled: [entry("a", 2, 8, "prefill"), entry("b", 2, 4, "prefill")],
    new_blocks: { a: [3], b: [1, 4] }, num_cached_tokens: { b: 4 },
    running: ["a", "b"], waiting: [], token_budget: 8,
  }),
  rec({
    step: 2, iter: 2, time_s: 0.02, step_time_ms: 20,
    scheduled: [entry("a", 1, 10), entry("b", 1, 6)], running: ["a", "b"], token_budget: 8,
  }),
  rec({
    step: 3, iter: 3, time_s: 0.04, step_time_ms: 10,
    scheduled: [entry("a", 1, 11), entry("b", 1, 7)], running: ["a", "b"], finished: ["a"],
    freed_blocks: [3, 2], token_budget: 8,
  }),
  rec({
    step: 4, iter: 4, time_s: 0.05, step_time_ms: 10, preempted: ["b"], scheduled: [],
    running: [], waiting: ["b"], freed_blocks: [4, 1], token_budget: 8,
  }),
];
