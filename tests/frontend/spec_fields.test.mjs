// The config form's speculative decoding fields: the server's one speculative_config field shown
// as the three a user sets (method, num_speculative_tokens, model), read back into the object
// vLLM's --speculative-config takes, and refused by name when K is missing.
import assert from "node:assert/strict";
import test from "node:test";

import { CONFIG_FIELDS, fieldValue, setFieldSchema, validateForm } from "../../frontend/static/js/state/fields.js";

const SCHEMA = { config: [
  { name: "max_num_seqs", kind: "int", default: 256, nullable: false, min: 1, help: "" },
  { name: "speculative_config", kind: "dict", default: null, nullable: true, help: "" },
] };

test("speculative_config shows as its method, K and draft model", () => {
  setFieldSchema(SCHEMA);
  const names = CONFIG_FIELDS.map((f) => f.name);
  assert.deepEqual(names.filter((n) => n.startsWith("speculative_config")), [
    "speculative_config.method", "speculative_config.num_speculative_tokens", "speculative_config.model"]);
  const method = CONFIG_FIELDS.find((f) => f.name === "speculative_config.method");
  assert.ok(method.options.includes("eagle3") && method.options.includes("ngram"));
  assert.equal(method.none, "none"); // no method: speculation off
  const config = { speculative_config: { method: "ngram", num_speculative_tokens: 3 } };
  assert.equal(fieldValue(config, method), "ngram");
  assert.equal(fieldValue({}, method), undefined);
  setFieldSchema({ config: [{ ...SCHEMA.config[1], options: ["eagle3"] }] });
  assert.deepEqual(CONFIG_FIELDS[0].options, ["eagle3"]); // the server's list wins
});

test("the form reads back one speculative_config object, or null with no method", () => {
  setFieldSchema(SCHEMA);
  const form = (method, k, model) => validateForm(CONFIG_FIELDS, {
    max_num_seqs: "8", "speculative_config.method": method,
    "speculative_config.num_speculative_tokens": k, "speculative_config.model": model });
  const on = form("eagle3", "3", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B");
  assert.deepEqual(on.errors, {});
  assert.deepEqual(on.values, { max_num_seqs: 8, speculative_config: { method: "eagle3",
    num_speculative_tokens: 3, model: "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B" } });
  assert.deepEqual(form("ngram", "5", "").values.speculative_config,
    { method: "ngram", num_speculative_tokens: 5 });
  assert.equal(form("", "3", "").values.speculative_config, null);
  const bad = form("ngram", "0", "");
  assert.match(bad.errors["speculative_config.num_speculative_tokens"], /at least 1/);
  const missing = form("ngram", "", "");
  assert.match(missing.errors["speculative_config.num_speculative_tokens"], /required with a method/);
});

test("keys the form does not show are kept from the config it was filled with, same method only", () => {
  setFieldSchema(SCHEMA);
  const filled = { speculative_config: { method: "eagle3", num_speculative_tokens: 5, acceptance_rates: [0.3] } };
  const form = (method, k) => validateForm(CONFIG_FIELDS, {
    "speculative_config.method": method, "speculative_config.num_speculative_tokens": k,
    "speculative_config.model": "" }, filled);
  assert.deepEqual(form("eagle3", "3").values.speculative_config,
    { method: "eagle3", num_speculative_tokens: 3, acceptance_rates: [0.3] });
  assert.deepEqual(form("ngram", "3").values.speculative_config, { method: "ngram", num_speculative_tokens: 3 });
  assert.equal(form("", "3").values.speculative_config, null);
});
