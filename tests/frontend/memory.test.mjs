import assert from "node:assert/strict";
import test from "node:test";

import { describeMemory, describeNotModelled } from "../../frontend/static/js/state/memory.js";

// Llama 3.1 8B BF16 on one H100 with a 512-token budget, as the server sends it.
const BREAKDOWN = {
  total_gib: 79.22, budget_gib: 71.298, weights_gib: 14.95703125, non_torch_gib: 0.35,
  activation_gib: 0.078125, kv_cache_gib: 55.91284375, kv_bytes_per_token: 131072,
  block_bytes: 2097152, num_gpu_blocks: 28627, kv_capacity_tokens: 458032,
};
const engine = (over = {}) => ({
  num_gpu_blocks: 28627, block_size: 16, memory_breakdown: BREAKDOWN,
  config: { gpu_memory_utilization: 0.9, tensor_parallel_size: 1 }, ...over,
});

test("a pool sized from memory says budget = weights + activations + non-torch + KV", () => {
  assert.equal(describeMemory(engine()),
    "KV pool sized from memory: budget 71.30 GiB (0.9 × 79.22) = weights 14.96 + " +
    "activations 0.08 + non-torch 0.35 + KV cache 55.91 GiB = 458032 tokens, 28627 blocks " +
    "of 16 (128 KiB a token).");
});

test("a given num_gpu_blocks is named as what sized the pool, with what memory would give", () => {
  const text = describeMemory(engine({ num_gpu_blocks: 513 }));
  assert.match(text, /^KV pool: 513 blocks, set by num_gpu_blocks; sized from memory it would be budget 71\.30 GiB/);
  assert.match(text, /28627 blocks of 16 .*Empty num_gpu_blocks to use that\.$/);
});

test("tensor parallel figures are per GPU", () => {
  const text = describeMemory(engine({ config: { gpu_memory_utilization: 0.9, tensor_parallel_size: 4 } }));
  assert.match(text, /KV cache 55\.91 GiB per GPU \(TP 4\) = /);
});

test("an engine on the placeholder step time has no sizing to tell", () => {
  assert.equal(describeMemory({ num_gpu_blocks: 513, block_size: 16, memory_breakdown: null }), "");
  assert.equal(describeMemory(undefined), "");
});

test("what the cost model leaves out is one line, empty when nothing is", () => {
  assert.equal(describeNotModelled({ not_modelled: [] }), "");
  assert.equal(describeNotModelled({}), "");
  assert.equal(
    describeNotModelled({ not_modelled: ["sliding window priced as full", "one engine"] }),
    "Not modelled: sliding window priced as full; one engine.");
});
