import assert from "node:assert/strict";
import test from "node:test";

import { catalogOptions, gpuOptions, modelOptions, withValue } from "../../frontend/static/js/state/catalog.js";
import { fetchCatalog } from "../../frontend/static/js/transport/catalog.js";

// Rows shaped as GET /api/models and /api/gpus give them (fields trimmed).
const MODELS = [
  { name: "meta-llama/Llama-3.1-8B-Instruct", num_parameters: 8.03e9, torch_dtype: "bfloat16" },
  { name: "facebook/opt-13b", num_parameters: 12.85e9, torch_dtype: "float16" },
];
const GPUS = [{ key: "H100", name: "NVIDIA H100 SXM5 80GB", memory_gb: 80 }];

test("a model's value is its Hugging Face id, a GPU's its short name", () => {
  assert.deepEqual(modelOptions(MODELS), [
    { value: "meta-llama/Llama-3.1-8B-Instruct", text: "meta-llama/Llama-3.1-8B-Instruct (8.03B, bfloat16)" },
    { value: "facebook/opt-13b", text: "facebook/opt-13b (12.9B, float16)" },
  ]);
  assert.deepEqual(gpuOptions(GPUS), [{ value: "H100", text: "H100: NVIDIA H100 SXM5 80GB, 80 GB" }]);
  assert.deepEqual(catalogOptions({ catalog: "gpus" }, { models: MODELS, gpus: GPUS }).map((o) => o.value), ["H100"]);
  assert.deepEqual(catalogOptions({ catalog: "models" }, null), []);
});

test("a value the catalog does not list stays chosen, as given; a listed or empty one adds nothing", () => {
  const options = gpuOptions(GPUS);
  assert.deepEqual(withValue(options, "H100-SXM").at(-1), { value: "H100-SXM", text: "H100-SXM (as given)" });
  assert.equal(withValue(options, "H100"), options);
  assert.equal(withValue(options, null), options);
  assert.equal(withValue(options, ""), options);
});

test("the catalogs come from /api/models and /api/gpus; a failure names the URL", async () => {
  const asked = [];
  const ok = async (url) => { asked.push(url); return { ok: true, json: async () => (url.endsWith("models") ? MODELS : GPUS) }; };
  assert.deepEqual(await fetchCatalog(ok), { models: MODELS, gpus: GPUS });
  assert.deepEqual(asked.sort(), ["/api/gpus", "/api/models"]);
  const down = async (url) => ({ ok: !url.endsWith("gpus"), status: 503, json: async () => [] });
  await assert.rejects(fetchCatalog(down), /\/api\/gpus: HTTP 503/);
});
