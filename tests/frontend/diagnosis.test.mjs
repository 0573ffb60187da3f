import { test } from "node:test";
import assert from "node:assert/strict";
import { describeDiagnosis, diagnosisUrl, exportUrl, verdictRow } from "../../frontend/static/js/ui/diagnosis.js";

const DATA = {
  dominant: "kv_starvation", source: "replayed", complete: false, num_records: 12,
  verdicts: [
    { kind: "batch_slots", title: "Slots", score: 0.1, minor: true, evidence: [], recommendations: [] },
    { kind: "arrival_burst", title: "Burst", score: 0.5, minor: false, headline: "9 requests in 1 s",
      evidence: [], recommendations: [{ flag: "--tensor-parallel-size", value: 2, why: "more prefill",
        expected: { checked: false, reason: "name a model" } }] },
    { kind: "kv_starvation", title: "KV cache starvation", score: 0.9, headline: "7 preemptions",
      evidence: [{ name: "num_preemptions", value: 7, text: "requests preempted" }],
      recommendations: [
        { flag: "--gpu-memory-utilization", value: 0.95, why: "more KV",
          expected: { checked: true, outcome: "trade_off",
            text: "trade-off: p99_ttft_ms 900 -> 500 (-44%), but p99_itl_ms 40 -> 80 (+100%)" } },
        { flag: "--max-num-seqs", value: null, why: "fewer seqs", expected: null }],
      measure_next: ["KV usage"] }],
  missing: [{ metric: "p99_itl_ms", needed_for: "token_budget", still_concluded: "x" }],
};

test("the dominant verdict, not the first listed, heads the description", () => {
  const d = describeDiagnosis(DATA);
  assert.match(d.heading, /^KV cache starvation \(kv_starvation/);
  assert.equal(d.evidence[0], "num_preemptions = 7: requests preempted");
  assert.equal(d.headline, "7 preemptions");
  assert.equal(d.flags[0], "--gpu-memory-utilization 0.95: more KV · re-simulated, trade-off: " +
    "p99_ttft_ms 900 -> 500 (-44%), but p99_itl_ms 40 -> 80 (+100%)");
  // the other verdict that is not minor, with its knob; the minor one is left out
  assert.deepEqual(d.others, ["Burst (arrival_burst, score 0.500): 9 requests in 1 s",
    "  --tensor-parallel-size 2: more prefill · unchecked: name a model"]);
  assert.equal(d.flags[1], "--max-num-seqs: fewer seqs");
  assert.match(d.provenance, /replayed run, the first 12 steps/);
  assert.match(d.missing[0], /p99_itl_ms/);
});

test("no dominant verdict says so", () => {
  const d = describeDiagnosis({ ...DATA, dominant: null, complete: true });
  assert.match(d.heading, /No dominant bottleneck/);
  assert.deepEqual(d.evidence, []);
  assert.match(d.provenance, /whole run/);
});

test("urls escape the session id and carry engine, check and format", () => {
  assert.equal(diagnosisUrl("a/b", { engine: 1, check: true }),
    "/api/sessions/a%2Fb/diagnosis?engine=1&check=true");
  assert.equal(exportUrl("s1", "perfetto"), "/api/sessions/s1/export?format=perfetto&engine=0");
});

test("a compare row names the engine, its dominant verdict and that verdict's first knob", () => {
  const row = verdictRow({ ...DATA, engine: 1, label: "policy=static" });
  assert.deepEqual(row, { label: "policy=static", verdict: "KV cache starvation (kv_starvation)",
    knob: "--gpu-memory-utilization 0.95", scope: "first 12 steps" });
  const none = verdictRow({ ...DATA, dominant: null, complete: true, engine: 2 });
  assert.deepEqual(none, { label: "engine 2", verdict: "no dominant bottleneck", knob: "-",
    scope: "whole run" });
});
