import assert from "node:assert/strict";
import test from "node:test";

import { measuredText, provenance, uploadStatus } from "../../frontend/static/js/state/provenance.js";

const TRACE = {
  trace_id: "t1", filename: "vllm_serve.log", format: "vllm-iteration-log", kind: "steps",
  num_rows: 4, skipped: {}, notes: ["no request ids"], unknown: ["request ids", "preemptions"],
  source: null, measured: null,
};

test("a preset run is simulated and named by its preset", () => {
  const p = provenance({ source: "simulated", preset: "demo", trace: null });
  assert.deepEqual([p.source, p.name, p.measured, p.facts], ["simulated", "demo", false, []]);
});

test("a replay is named by its file and says what the file does not record", () => {
  const p = provenance({ source: "replayed", preset: null, trace: TRACE }, "demo");
  assert.equal(p.source, "replayed");
  assert.equal(p.name, "vllm_serve.log");
  assert.match(p.badgeTitle, /replayed from vllm_serve\.log \(vllm-iteration-log\), not simulated/);
  assert.equal(p.facts[0], "Not in this vllm-iteration-log file: request ids; preemptions.");
  assert.ok(p.facts.includes("no request ids"));
});

test("a benchmark's measured figures stand beside the simulated ones, labelled", () => {
  const trace = { ...TRACE, format: "vllm-bench", kind: "requests", unknown: [], notes: [],
    measured: { mean_ttft_ms: 33, p99_itl_ms: 20.96 }, skipped: { failed: 1 } };
  const p = provenance({ source: "simulated", trace });
  assert.equal(p.measured, true);
  assert.deepEqual(p.facts, ["Skipped rows: 1 failed."]);
  assert.equal(measuredText(trace.measured, { mean_ttft_ms: 12.25, p99_itl_ms: NaN }, false),
    "mean TTFT: measured 33.0 ms, simulated 12.3 ms · P99 ITL: measured 21.0 ms, simulated - (simulated so far)");
  assert.equal(measuredText(null, {}, true), "");
});

test("the upload line says replayed or simulated", () => {
  assert.equal(uploadStatus("a.log", { format: "vllm-iteration-log", report: { kind: "steps" }, summary: { num_records: 4 } }),
    "a.log (vllm-iteration-log): 4 recorded steps, replayed");
  assert.equal(uploadStatus("b.json", { format: "vllm-bench", num_requests: 2, report: { kind: "requests" },
    summary: { measured: { mean_ttft_ms: 1 } } }), "b.json (vllm-bench): 2 requests, simulated; measured TTFT/ITL kept");
});

test("a live session is labelled live, not simulated or replayed, and names no file", () => {
  const p = provenance({ source: "live", preset: null, trace: null }, "demo");
  assert.deepEqual([p.source, p.name, p.measured, p.facts], ["live", "live endpoint", false, []]);
  assert.match(p.badgeTitle, /serve --openai/);
});
