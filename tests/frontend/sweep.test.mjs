import assert from "node:assert/strict";
import test from "node:test";

import {
  baseConfig, costOf, explorerUrl, openable, parsePairs, plotColumns, progressText, sortPoints,
} from "../../frontend/static/js/state/sweep.js";
import { parseScenario } from "../../frontend/static/js/state/url.js";
import { bottleneck } from "../../frontend/static/js/ui/sweep_table.js";

const point = (index, usd, goodput, ttft, extra = {}) => ({
  index, status: "ok", point: { max_num_seqs: 8 * (index + 1) }, replicas: 1, meets_slo: ttft < 1000,
  request_goodput: goodput, summary: { p99_ttft_ms: ttft, p99_itl_ms: 10 + index },
  cost: { usd_per_m_output_tokens: usd, gpu_hours: index + 1 }, ...extra,
});

const view = {
  workload: { preset: "demo" }, base_config: { model: "m", gpu: "H100" }, cost_unit: "usd",
  slos: { p99_ttft_ms: 1000 }, pareto: [1, 2],
  points: [point(0, 3, 1, 2000), point(1, 1, 2, 900), point(2, 2, 5, 500),
    { index: 3, status: "does_not_fit", point: { max_num_seqs: 32 }, reason: "too big" }],
};

test("plot columns are sorted by cost, with the frontier and the SLO on that metric", () => {
  const { order, data } = plotColumns(view, "p99_ttft_ms");
  assert.deepEqual(order.map((p) => p.index), [1, 2, 0]); // the point that did not run is left out
  assert.deepEqual(data[0], [1, 2, 3]);
  assert.deepEqual(data[1], [900, 500, 2000]);
  assert.deepEqual(data[2], [900, 500, null]);
  assert.deepEqual(data[3], [1000, 1000, 1000]);
  assert.deepEqual(plotColumns(view, "request_goodput").data[3], [null, null, null]); // no SLO on goodput
  assert.deepEqual(plotColumns({ ...view, cost_unit: "gpu_hours" }, "request_goodput").data[0], [1, 2, 3]);
});

test("the table sorts by a column either way, ties in grid order, unrun points last", () => {
  assert.deepEqual(sortPoints(view.points, "request_goodput", -1).map((p) => p.index), [2, 1, 0, 3]);
  assert.deepEqual(sortPoints(view.points, "cost", 1).map((p) => p.index), [1, 2, 0, 3]);
  assert.deepEqual(sortPoints(view.points, "meets_slo", 1).map((p) => p.index), [1, 2, 0, 3]);
  assert.equal(costOf(view.points[3]), null);
});

test("a point opens in the explorer with the sweep's base, derived KV blocks and its values", () => {
  const url = explorerUrl(view, [view.points[2]]);
  const scenario = parseScenario(url.slice(url.indexOf("?")));
  assert.equal(scenario.preset, "demo");
  assert.deepEqual(scenario.config, { model: "m", gpu: "H100", num_gpu_blocks: null, max_num_seqs: 24 });
  assert.deepEqual(baseConfig({ base_config: { num_gpu_blocks: 99 } }), { num_gpu_blocks: 99 });
});

test("2-4 points open a compare of their values over the base; a trace stays the workload", () => {
  const traced = { ...view, workload: { trace: "abc123" } };
  const scenario = parseScenario(explorerUrl(traced, view.points.slice(0, 2)).slice(2));
  assert.equal(scenario.trace, "abc123");
  assert.equal(scenario.view, "compare");
  assert.deepEqual(scenario.compare, [{ max_num_seqs: 8 }, { max_num_seqs: 16 }]);
  assert.deepEqual(scenario.config, { model: "m", gpu: "H100", num_gpu_blocks: null });
  const withToken = parseScenario(explorerUrl(traced, view.points.slice(0, 1), "upload-token-0123456").slice(2));
  assert.equal(withToken.upload_token, "upload-token-0123456"); // the trace's owner token rides along
  assert.equal(parseScenario(explorerUrl(view, view.points.slice(0, 1), "tok-ignored-for-a-preset").slice(2)).upload_token, null);
});

test("replicated or unrun points cannot open: the explorer runs one engine", () => {
  assert.equal(openable(view.points[0]), true);
  assert.equal(openable({ ...view.points[0], replicas: 2 }), false);
  assert.equal(openable(view.points[3]), false);
});

test("SLO and price fields parse NAME=NUMBER lists and name a bad part", () => {
  assert.deepEqual(parsePairs("p99_ttft_ms=2000, p99_itl_ms = 100\n", "SLOs"), { p99_ttft_ms: 2000, p99_itl_ms: 100 });
  assert.deepEqual(parsePairs(" ", "SLOs"), {});
  assert.throws(() => parsePairs("p99_ttft_ms", "SLOs"), /SLOs: write NAME=NUMBER in "p99_ttft_ms"/);
  assert.throws(() => parsePairs("H100=cheap", "GPU prices"), /GPU prices: write a number after =/);
});

test("progress counts points by outcome", () => {
  assert.equal(progressText({ ...view, status: "running", done: 4, total: 6 }),
    "4 of 6 points (1 do not fit, 0 failed)");
  assert.equal(progressText({ ...view, status: "done", done: 4, total: 4 }),
    "4 of 4 points (1 do not fit, 0 failed) - done");
});

test("a point that misses an SLO shows the verdict on that latency, not the dominant one", () => {
  const missing = point(0, 3, 1, 2000, {
    diagnosis: { dominant: "token_budget" },
    why_fails: [{ metric: "p99_ttft_ms", kind: "arrival_burst", headline: "411 requests" }] });
  assert.equal(bottleneck(missing), "p99_ttft_ms: arrival_burst");
  assert.equal(bottleneck({ ...missing, why_fails: [{ metric: "p99_itl_ms", kind: null }] }),
    "p99_itl_ms: unexplained");
  assert.equal(bottleneck(point(1, 1, 2, 900, { diagnosis: { dominant: null }, why_fails: [] })), "none");
});
