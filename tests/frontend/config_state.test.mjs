import { test } from "node:test";
import assert from "node:assert/strict";
import { baseConfig, blocksNote, configOverrides, sizedFromModel } from "../../frontend/static/js/state/config_state.js";

const DEMO = { block_size: 16, num_gpu_blocks: 513, max_num_seqs: 32, model: null, gpu: null };
const PRESETS = [{ name: "demo", config: DEMO },
  { name: "kv-starvation", config: { ...DEMO, num_gpu_blocks: 601, max_num_seqs: 128 } }];

test("a preset's own config sends no overrides; an edit sends just that key", () => {
  const base = baseConfig(PRESETS, "kv-starvation");
  assert.deepEqual(configOverrides(base, { ...base }), {});
  assert.deepEqual(configOverrides(base, { ...base, max_num_seqs: 4 }), { max_num_seqs: 4 });
  assert.deepEqual(configOverrides(base, { ...base, num_gpu_blocks: 99 }), { num_gpu_blocks: 99 });
});

test("synthetic and uploads bring no config: vLLM's defaults are left to the server unless typed", () => {
  assert.deepEqual(baseConfig(PRESETS, "synthetic"), {});
  assert.deepEqual(baseConfig(PRESETS, "uploaded"), {});
  const form = { ...DEMO, model: "m", gpu: "H100", max_num_batched_tokens: 512, async_scheduling: false };
  const sent = configOverrides({}, form);
  assert.deepEqual([sent.max_num_seqs, sent.max_num_batched_tokens, sent.async_scheduling], [null, null, null]);
  assert.equal(sent.model, "m");
  const typed = configOverrides({}, form, { typed: ["max_num_batched_tokens"] });
  assert.equal(typed.max_num_batched_tokens, 512);
  assert.equal(typed.max_num_seqs, null);
});

test("model and GPU size the pool unless blocks were typed", () => {
  const form = { ...DEMO, model: "m", gpu: "H100" };
  assert.ok(sizedFromModel(form, false) && !sizedFromModel(form, true));
  assert.deepEqual(configOverrides(DEMO, form), { model: "m", gpu: "H100", num_gpu_blocks: null });
  assert.deepEqual(configOverrides(DEMO, { ...form, num_gpu_blocks: 900 }, { blocksTyped: true }),
    { model: "m", gpu: "H100", num_gpu_blocks: 900 });
  const derivedBase = { ...DEMO, model: "m", gpu: "H100", num_gpu_blocks: null };
  assert.deepEqual(configOverrides(derivedBase, { ...form, num_gpu_blocks: 4242 }), {});
  assert.match(blocksNote(form, false), /sized from the model and GPU/);
  assert.match(blocksNote(form, true), /typed by you/);
  assert.match(blocksNote(DEMO, false), /as given/);
});

test("a priced preset's own num_gpu_blocks stands while its model and GPU stay", () => {
  const preset = { model: "m", gpu: "H100", num_gpu_blocks: 700, block_size: 16 };
  assert.deepEqual(configOverrides(preset, { ...preset }), {});
  assert.deepEqual(configOverrides(preset, { ...preset, gpu: "H200" }), { gpu: "H200", num_gpu_blocks: null });
});

test("over a P/D preset the form's changes are sent, its pools kept and no async_scheduling", () => {
  const base = { model: "m", gpu: "H100", prefill: { replicas: 1 }, decode: { replicas: 2 }, pd_threshold: 0 };
  const form = { model: "m", gpu: "H100", async_scheduling: true, max_num_seqs: 16 };
  assert.deepEqual(configOverrides(base, form), { max_num_seqs: 16 });
  assert.deepEqual(configOverrides({ model: "m", gpu: "H100" }, form), { async_scheduling: true, max_num_seqs: 16 });
});
