import { test } from "node:test";
import assert from "node:assert/strict";
import { modeLabel, modeName } from "../../frontend/static/js/state/mode_label.js";

test("each lesson mode has its plain name", () => {
  assert.equal(modeName({ policy: "naive" }), "naive (one request at a time)");
  assert.equal(modeName({ policy: "static" }), "static batching");
  assert.equal(modeName({ policy: "vllm-v0" }), "continuous batching, no chunked prefill");
  assert.equal(modeName({ policy: "vllm-v1", enable_chunked_prefill: false }), "continuous batching, no chunked prefill");
  assert.equal(modeName({ policy: "vllm-v1", enable_chunked_prefill: true }), "continuous batching + chunked prefill");
});

test("the label names the budget and seqs, or the number of compared configs", () => {
  assert.equal(modeLabel([{ policy: "static", max_num_batched_tokens: 512, max_num_seqs: 32 }]),
    "static batching · budget 512 tokens · 32 seqs");
  assert.equal(modeLabel([{}, {}, {}]), "Compare: 3 configs, same workload");
  assert.equal(modeLabel([]), "");
});
