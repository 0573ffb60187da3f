// What a configure sends, so that the run is what the form shows: the form's config as
// overrides over the chosen workload's own base config (a preset's file, else the demo's), and
// how the KV pool is sized: from the model and GPU unless the user typed num_gpu_blocks. Pure.

const same = (a, b) => (a ?? null) === (b ?? null);

/** Whether the pool is sized from model and GPU: both chosen and no typed block count. */
export const sizedFromModel = (form, blocksTyped) => !!(form.model && form.gpu) && !blocksTyped;

/** The base config a workload choice runs on: a preset's own, else the demo's (synthetic
 * workloads and uploaded request traces run over the demo's config on the server). */
export function baseConfig(presets, choice) {
  const byName = (name) => presets.find((p) => p.name === name)?.config;
  return byName(choice) ?? byName("demo") ?? {};
}

/** The keys of `form` that differ from `base`; num_gpu_blocks null (re-sized by the server)
 * when the pool is sized from model and GPU. */
export function configOverrides(base, form, { blocksTyped = false } = {}) {
  const out = {};
  for (const [key, value] of Object.entries(form)) {
    if (key !== "num_gpu_blocks" && !same(value, base[key])) out[key] = value;
  }
  if (sizedFromModel(form, blocksTyped)) {
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
