// The large label projection mode shows: which scheduling mode and config runs, in the lesson's
// plain words. Pure.

/** Plain name of an engine config's scheduling mode. */
export function modeName(config = {}) {
  const policy = config.policy ?? "vllm-v1";
  if (policy === "naive") return "naive (one request at a time)";
  if (policy === "static") return "static batching";
  if (policy === "vllm-v0" || config.enable_chunked_prefill === false) return "continuous batching, no chunked prefill";
  return "continuous batching + chunked prefill";
}

/** "mode · budget · seqs · blocks" for one config, or "compare: N configs" for several. */
export function modeLabel(configs) {
  if (!configs?.length) return "";
  if (configs.length > 1) return `Compare: ${configs.length} configs, same workload`;
  const c = configs[0];
  const parts = [modeName(c)];
  if (c.max_num_batched_tokens) parts.push(`budget ${c.max_num_batched_tokens} tokens`);
  if (c.max_num_seqs) parts.push(`${c.max_num_seqs} seqs`);
  if (c.enable_prefix_caching) parts.push("prefix caching");
  return parts.join(" · ");
}
