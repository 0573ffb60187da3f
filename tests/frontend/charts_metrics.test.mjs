import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { CHART_SPECS, metricsTooltip } from "../../frontend/static/js/render/charts.js";

// The names the server exports (backend/servescope/observability/vllm_metrics.py, and the
// spec-decode counters in spec_decode.py); counters are declared without the _total suffix the
// exposition adds.
const DECLARED = ["vllm_metrics.py", "spec_decode.py"].map((f) => readFileSync(
  new URL(`../../backend/servescope/observability/${f}`, import.meta.url), "utf8")).join("\n");

test("every chart names vLLM metrics the server exports, in its tooltip", () => {
  for (const spec of CHART_SPECS) {
    assert.ok(spec.metrics?.length, spec.key);
    for (const name of spec.metrics) {
      assert.match(name, /^vllm:[a-z_]+$/);
      assert.ok(DECLARED.includes(`"${name.replace(/_total$/, "")}"`), name);
      assert.ok(metricsTooltip(spec).includes(name), name);
    }
  }
  assert.equal(metricsTooltip(CHART_SPECS.find((s) => s.key === "kv")),
    "vLLM metric: vllm:kv_cache_usage_perc (GET /metrics; docs/metrics.md)");
});
