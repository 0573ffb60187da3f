// What a configure sends, so that the run is what the form shows: the form's config as
// overrides over the chosen workload's own base config (a preset's; synthetic workloads and
// uploads bring none), the settings vLLM defaults by GPU and model left to the server's one
// resolution (core/resolve.py) unless the user typed them, and how the KV pool is sized: from
// the model and GPU unless the user typed num_gpu_blocks. Pure.

const same = (a, b) => (a ?? null) === (b ?? null);

/** Whether the pool is sized from model and GPU: both chosen and no typed block count. */
export const sizedFromModel = (form, blocksTyped) => !!(form.model && form.gpu) && !blocksTyped;

/** The settings vLLM 0.33 defaults by GPU, model and usage context: sent as null (the
 * server resolves them) over a workload with no settings of its own, unless typed. */
export const RESOLVED = ["max_num_seqs", "max_num_batched_tokens", "async_scheduling"];

/** Whether a config is P/D (core/pd_config.py is_pd): it has a `prefill` or `decode` key. */
export const isPD = (config) => !!config && ("prefill" in config || "decode" in config);

/** A config as it runs: a P/D config's pools schedule synchronously (the connector rules are
 * vLLM's synchronous scheduler's; core/pd_fleet.py check_pool refuses async pools), so the
 * page's own async_scheduling (vLLM's GPU default, on) is not sent over one; a pool that asks
 * for it in its own object is still refused by the server, naming the key. */
export function runnable(config) {
  return isPD(config) ? withoutAsync(config) : config;
}

function withoutAsync(config) {
  if (!("async_scheduling" in config)) return config;
  const { async_scheduling: _, ...rest } = config;
  return rest;
}

/** The base config a workload choice runs on: a preset's own; synthetic workloads and
 * uploaded request traces bring none (the server resolves what the form leaves out). */
export function baseConfig(presets, choice) {
  return presets.find((p) => p.name === choice)?.config ?? {};
}

/** The keys of `form` that differ from `base`; num_gpu_blocks null (re-sized by the server)
 * when the pool is sized from model and GPU (not while a priced base's own stands); over an empty base, RESOLVED keys not in `typed`
 * null (vLLM's default for the GPU and model). */
export function configOverrides(base, form, { blocksTyped = false, typed = [] } = {}) {
  const out = overrides(base, form, blocksTyped, typed);
  return isPD(base) ? withoutAsync(out) : out; // the pools' scheduling: see runnable
}

function overrides(base, form, blocksTyped, typed) {
  const out = {};
  const own = Object.keys(base).length > 0;
  for (const [key, value] of Object.entries(form)) {
    if (!own && RESOLVED.includes(key) && !typed.includes(key)) out[key] = null;
    else if (key !== "num_gpu_blocks" && !same(value, base[key])) out[key] = value;
  }
  // a priced preset's own pool size stands as typed while its model and GPU stay
  const ownBlocks = !same(base.num_gpu_blocks, null) && !!(base.model && base.gpu)
    && same(form.model, base.model) && same(form.gpu, base.gpu);
  if (sizedFromModel(form, blocksTyped || ownBlocks)) {
    if (!same(base.num_gpu_blocks, null)) out.num_gpu_blocks = null;
  } else if ("num_gpu_blocks" in form && !same(form.num_gpu_blocks, base.num_gpu_blocks)) {
    out.num_gpu_blocks = form.num_gpu_blocks;
  }
  return out;
}

/** The note beside num_gpu_blocks: where the pool size comes from. */
export function blocksNote(form, blocksTyped) {
  if (!(form.model && form.gpu)) return "num_gpu_blocks: as given (choose a model and a GPU to size it from memory)";
  return blocksTyped ? "num_gpu_blocks: typed by you, so it overrides the sizing from model and GPU"
    : "num_gpu_blocks: sized from the model and GPU memory (type a number to override it)";
}
