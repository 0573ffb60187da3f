import assert from "node:assert/strict";
import test from "node:test";

import * as fields from "../../frontend/static/js/state/fields.js";
import { parseField, serverError, setFieldSchema, validateForm } from "../../frontend/static/js/state/fields.js";
import { serverSchema } from "./schema.mjs";

setFieldSchema(serverSchema());
const { CONFIG_FIELDS, SYNTHETIC_FIELDS } = fields;

const field = (name) => CONFIG_FIELDS.find((f) => f.name === name);

test("block_size must be a power of two", () => {
  assert.equal(parseField(field("block_size"), "16"), 16);
  assert.throws(() => parseField(field("block_size"), "24"), /power of two, got 24/);
  assert.throws(() => parseField(field("block_size"), "0"), /at least 1/);
});

test("numbers are checked for type and range with the value in the message", () => {
  assert.throws(() => parseField(field("max_num_seqs"), "abc"), /expected a number, got "abc"/);
  assert.throws(() => parseField(field("max_num_seqs"), "2.5"), /whole number, got 2.5/);
  assert.throws(() => parseField(field("gpu_memory_utilization"), "0"), /must be in \(0, 1\], got 0/);
  assert.throws(() => parseField(field("gpu_memory_utilization"), "1.5"), /must be in \(0, 1\], got 1.5/);
  assert.equal(parseField(field("gpu_memory_utilization"), "0.9"), 0.9);
});

test("nullable fields accept empty, others do not", () => {
  assert.equal(parseField(field("num_gpu_blocks"), ""), null);
  assert.throws(() => parseField(field("max_num_batched_tokens"), " "), /required/);
});

test("choices and booleans", () => {
  assert.equal(parseField(field("policy"), "vllm-v0"), "vllm-v0");
  assert.throws(() => parseField(field("policy"), "sglang"), /one of vllm-v1, vllm-v0/);
  assert.equal(parseField(field("enable_prefix_caching"), false), false);
  assert.equal(parseField(field("enable_prefix_caching"), "on"), true);
});

test("a form reports every bad field by its flag name", () => {
  const { values, errors } = validateForm(CONFIG_FIELDS, {
    block_size: "12", max_num_seqs: "8", allocator: "max", policy: "vllm-v1",
    enable_prefix_caching: true,
  });
  assert.equal(values.max_num_seqs, 8);
  assert.match(errors.block_size, /^block_size: must be a power of two/);
  assert.match(errors.allocator, /cannot share prefix blocks/);
});

test("synthetic length ranges must be ordered", () => {
  const { errors } = validateForm(SYNTHETIC_FIELDS, { prompt_len_min: "500", prompt_len_max: "100" });
  assert.match(errors.prompt_len_max, /at least prompt_len_min \(500\)/);
});

test("model and gpu are catalog choices whose empty choice is the placeholder step time", () => {
  for (const name of ["model", "gpu"]) {
    assert.equal(field(name).kind, "catalog");
    assert.match(field(name).none, /placeholder step time/);
    assert.equal(parseField(field(name), ""), null);
  }
  assert.equal(parseField(field("model"), "meta-llama/Llama-3.1-8B-Instruct"), "meta-llama/Llama-3.1-8B-Instruct");
  assert.equal(parseField(field("gpu"), "H100"), "H100");
});

test("dtype offers what the cost model accepts; FP8 weights are quantization, none by default", () => {
  // catalog.dtype_name takes auto, bfloat16, float16 (and their aliases); fp8 is not a --dtype
  assert.deepEqual(field("dtype").options, ["auto", "bfloat16", "float16"]);
  assert.throws(() => parseField(field("dtype"), "fp8"), /one of auto, bfloat16, float16/);
  assert.equal(parseField(field("quantization"), ""), null);
  assert.equal(parseField(field("quantization"), "fp8"), "fp8");
  assert.throws(() => parseField(field("quantization"), "awq"), /one of fp8/);
  assert.equal(parseField(field("max_model_len"), ""), null);
  assert.throws(() => parseField(field("max_model_len"), "1"), /at least 2/);
});

test("a server error names its config field once, and says the refused configure changed nothing", () => {
  const refused = serverError({ code: "config", field: "model", message: "model: X does not fit" });
  assert.deepEqual(refused, { field: "model", text: "Not applied; the session runs as before. model: X does not fit" });
  const compare = serverError({ code: "config", field: "configs[1].block_size", message: "block_size: must be a power of two" });
  assert.equal(compare.field, "block_size");
  assert.match(compare.text, /before\. configs\[1\]\.block_size: must be a power of two$/);
  const bare = serverError({ code: "bad_message", field: "speed", message: "too fast" });
  assert.deepEqual(bare, { field: "speed", text: "speed: too fast" });
  assert.deepEqual(serverError({ code: "idle", field: null, message: "reaped" }), { field: null, text: "reaped" });
});

test("async_scheduling: vLLM's default with a model and a GPU, the V1 policy only", async () => {
  const { asyncDefault, asyncNote } = await import("../../frontend/static/js/state/fields.js");
  const gpu = { model: "meta-llama/Llama-3.1-8B-Instruct", gpu: "H100", policy: "vllm-v1" };
  assert.equal(asyncDefault(gpu), true);
  assert.equal(asyncDefault({ ...gpu, gpu: null }), false);
  assert.equal(asyncDefault({ ...gpu, policy: "static" }), false);
  assert.match(asyncNote({ ...gpu, async_scheduling: true }), /vllm serve runs on a GPU/);
  assert.match(asyncNote({ ...gpu, async_scheduling: false }), /--no-async-scheduling/);
  assert.match(asyncNote({ async_scheduling: false }), /synchronous/);
  const { errors } = validateForm(CONFIG_FIELDS, { async_scheduling: true, policy: "vllm-v0" });
  assert.match(errors.async_scheduling, /only the vllm-v1 policy/);
  assert.equal(parseField(field("async_scheduling"), true), true);
});
