// How a priced engine's KV pool was sized, in words, from the numbers the server used for the
// session (init.engines[k].memory_breakdown, per GPU): budget = weights + activations +
// non-torch memory + KV cache, and the KV cache cut into blocks.

const gib = (x) => x.toFixed(2);

/** The sentence for one init.engines entry; "" when the placeholder step time runs it. */
export function describeMemory(engine) {
  const b = engine?.memory_breakdown;
  if (!b) return "";
  const tp = engine.config?.tensor_parallel_size ?? 1;
  const util = engine.config?.gpu_memory_utilization;
  const sizing = `budget ${gib(b.budget_gib)} GiB` +
    (util === undefined ? "" : ` (${util} × ${gib(b.total_gib)})`) +
    ` = weights ${gib(b.weights_gib)} + activations ${gib(b.activation_gib)}` +
    ` + non-torch ${gib(b.non_torch_gib)} + KV cache ${gib(b.kv_cache_gib)} GiB` +
    (tp > 1 ? ` per GPU (TP ${tp})` : "") +
    ` = ${b.kv_capacity_tokens} tokens, ${b.num_gpu_blocks} blocks of ${engine.block_size}` +
    ` (${b.kv_bytes_per_token / 1024} KiB a token)`;
  if (engine.num_gpu_blocks === b.num_gpu_blocks) return `KV pool sized from memory: ${sizing}.`;
  return `KV pool: ${engine.num_gpu_blocks} blocks, set by num_gpu_blocks; sized from memory it ` +
    `would be ${sizing}. Empty num_gpu_blocks to use that.`;
}

/** What the cost model leaves out of the run (init.engines[k].not_modelled), as one line. */
export function describeNotModelled(engine) {
  const notes = engine?.not_modelled ?? [];
  return notes.length ? `Not modelled: ${notes.join("; ")}.` : "";
}
